/* prov_cabinet_input.c: the checks of what a cabinet request sends (the
 * bodies of POST /v1/keys, PUT /v1/keys/{id}/budget and PATCH /v1/keys/{id}, GET /v1/usage's
 * query and a key id in a path). Each refusal is a 400 INVALID_REQUEST
 * whose param and message name the field, so that the page can show it
 * next to the input. Credits arrive as JSON numbers and are read from the
 * number's own text (prov_money_parse), never through a binary float. */
#include <stdlib.h>
#include <string.h>
#include <apr_time.h>
#include "prov_cabinet.h"
#include "prov_money.h"
#include "prov_cidr.h"

static apr_status_t bad(prov_error_t **err, const char *field, const char *msg, apr_pool_t *p)
{
    *err = prov_error_make(p, PROV_E_INVALID_REQUEST, field, "%s", msg);
    return APR_EINVAL;
}

/* UTF-8 code points in s (the body parser has checked the encoding). */
static apr_size_t chars(const char *s)
{
    apr_size_t n = 0;
    for (; *s; s++)
        n += (((unsigned char)*s & 0xC0) != 0x80);
    return n;
}

static apr_status_t name_read(prov_cabinet_key_req_t *out, prov_error_t **err, json_object *v,
                              apr_pool_t *p)
{
    const char *s;
    const unsigned char *c;
    if (!v || json_object_is_type(v, json_type_null))
        return bad(err, "name", "name is required: a label for the key (e.g. the "
                   "application using it).", p);
    if (!json_object_is_type(v, json_type_string))
        return bad(err, "name", "name must be a string.", p);
    s = json_object_get_string(v);
    if (!*s || strspn(s, " ") == strlen(s))
        return bad(err, "name", "name must not be empty.", p);
    if (chars(s) > PROV_CABINET_NAME_MAX)
        return bad(err, "name", apr_psprintf(p, "name must be at most %d characters.",
                                             PROV_CABINET_NAME_MAX), p);
    if (strlen(s) != (apr_size_t)json_object_get_string_len(v))
        return bad(err, "name", "name must not contain control characters.", p);
    for (c = (const unsigned char *)s; *c; c++) {
        if (*c < 0x20 || *c == 0x7f)
            return bad(err, "name", "name must not contain control characters.", p);
    }
    out->name = apr_pstrdup(p, s);
    return APR_SUCCESS;
}

/* weekly_budget: null (no budget) or a number of credits >= 0 with at most
 * six decimals, written plainly (12.5, not 1.25e1). */
static apr_status_t budget_read(prov_cabinet_key_req_t *out, prov_error_t **err,
                                json_object *v, apr_pool_t *p)
{
    const char *text;
    apr_status_t rv;
    out->has_budget = 0;
    out->budget = 0;
    if (!v || json_object_is_type(v, json_type_null))
        return APR_SUCCESS;
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return bad(err, "weekly_budget", "weekly_budget must be a number of credits, or "
                   "null for no budget.", p);
    text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    if (*text == '-')
        return bad(err, "weekly_budget", "weekly_budget must not be negative.", p);
    rv = prov_money_parse(&out->budget, text, 0);
    if (rv == APR_ERANGE || (rv == APR_SUCCESS && out->budget > PROV_AMOUNT_MAX))
        return bad(err, "weekly_budget", "weekly_budget is too large.", p);
    if (rv != APR_SUCCESS)
        return bad(err, "weekly_budget", "weekly_budget must be a plain decimal number of "
                   "credits with at most 6 decimals (e.g. 25 or 12.5).", p);
    out->has_budget = 1;
    return APR_SUCCESS;
}

/* The body as an object whose members are all in `known`. */
static apr_status_t body_read(json_object **o, prov_error_t **err, const char *body,
                              apr_size_t len, const char *const *known, apr_pool_t *p)
{
    const char *why = NULL;
    *o = prov_json_parse_body(body ? body : "", body ? len : 0, &why, p);
    if (!*o)
        return bad(err, NULL, why, p);
    json_object_object_foreach(*o, k, v) {
        int i, found = 0;
        (void)v;
        for (i = 0; known[i]; i++)
            found |= !strcmp(k, known[i]);
        if (!found)
            return bad(err, apr_pstrdup(p, k), apr_psprintf(p, "Unknown field %s.",
                       prov_json_dump(prov_json_own(json_object_new_string(k), p), p)), p);
    }
    return APR_SUCCESS;
}

apr_status_t prov_cabinet_key_parse(prov_cabinet_key_req_t *out, prov_error_t **err,
                                    const char *body, apr_size_t len, apr_pool_t *p)
{
    static const char *const known[] = { "name", "weekly_budget", NULL };
    prov_cabinet_key_req_t r = { NULL, 0, 0 };
    json_object *o = NULL;
    apr_status_t rv = body_read(&o, err, body, len, known, p);
    if (rv == APR_SUCCESS)
        rv = name_read(&r, err, json_object_object_get(o, "name"), p);
    if (rv == APR_SUCCESS)
        rv = budget_read(&r, err, json_object_object_get(o, "weekly_budget"), p);
    if (rv == APR_SUCCESS)
        *out = r;
    return rv;
}

apr_status_t prov_cabinet_budget_parse(prov_cabinet_key_req_t *out, prov_error_t **err,
                                       const char *body, apr_size_t len, apr_pool_t *p)
{
    static const char *const known[] = { "weekly_budget", NULL };
    prov_cabinet_key_req_t r = { NULL, 0, 0 };
    json_object *o = NULL, *v = NULL;
    apr_status_t rv = body_read(&o, err, body, len, known, p);
    if (rv != APR_SUCCESS)
        return rv;
    if (!json_object_object_get_ex(o, "weekly_budget", &v))
        return bad(err, "weekly_budget", "weekly_budget is required: a number of credits, "
                   "or null for no budget.", p);
    rv = budget_read(&r, err, v, p);
    if (rv == APR_SUCCESS)
        *out = r;
    return rv;
}

apr_status_t prov_cabinet_usage_args(int *days, prov_usage_by_e *by, prov_error_t **err,
                                     const char *days_arg, const char *by_arg, apr_pool_t *p)
{
    static const struct { const char *name; prov_usage_by_e by; } groups[] = {
        { "day", PROV_USAGE_BY_DAY }, { "key", PROV_USAGE_BY_KEY },
        { "model", PROV_USAGE_BY_MODEL }
    };
    int d = 7, i;
    prov_usage_by_e b = PROV_USAGE_BY_DAY;
    if (days_arg) {
        apr_size_t n = strlen(days_arg);
        if (n < 1 || n > 2 || strspn(days_arg, "0123456789") != n
            || (d = atoi(days_arg)) < 1 || d > PROV_CABINET_DAYS_MAX)
            return bad(err, "days", apr_psprintf(p, "days must be a whole number from 1 to %d.",
                                                 PROV_CABINET_DAYS_MAX), p);
    }
    if (by_arg) {
        for (i = 0; i < 3 && strcmp(by_arg, groups[i].name); i++)
            ;
        if (i == 3)
            return bad(err, "by", "by must be day, key or model.", p);
        b = groups[i].by;
    }
    *days = d;
    *by = b;
    return APR_SUCCESS;
}

apr_status_t prov_cabinet_key_id(apr_int64_t *id, const char *segment)
{
    apr_size_t n = segment ? strlen(segment) : 0;
    apr_int64_t v = 0;
    if (n < 1 || n > 18 || strspn(segment, "0123456789") != n)
        return APR_NOTFOUND;
    for (; *segment; segment++)
        v = v * 10 + (*segment - '0');
    if (v <= 0)
        return APR_NOTFOUND;
    *id = v;
    return APR_SUCCESS;
}

const char *prov_cabinet_time(apr_int64_t t, apr_pool_t *p)
{
    apr_time_exp_t x;
    apr_time_exp_gmt(&x, apr_time_from_sec(t));
    return apr_psprintf(p, "%04d-%02d-%02dT%02d:%02d:%02dZ", x.tm_year + 1900, x.tm_mon + 1,
                        x.tm_mday, x.tm_hour, x.tm_min, x.tm_sec);
}

/* ---- PATCH /v1/keys/{id}: the key's controls ---- */

/* An array of 1..max strings as const char * elements, for field. */
static apr_status_t strings_read(apr_array_header_t **out, prov_error_t **err, json_object *v,
                                 const char *field, int max, apr_pool_t *p)
{
    apr_size_t i, n;
    if (!json_object_is_type(v, json_type_array))
        return bad(err, field, apr_psprintf(p, "%s must be a list of strings, or null.",
                                            field), p);
    n = json_object_array_length(v);
    if (n == 0 || n > (apr_size_t)max)
        return bad(err, field, apr_psprintf(p, "%s must have from 1 to %d items (null: no "
                                            "restriction).", field, max), p);
    *out = apr_array_make(p, (int)n, sizeof(const char *));
    for (i = 0; i < n; i++) {
        json_object *it = json_object_array_get_idx(v, i);
        if (!json_object_is_type(it, json_type_string))
            return bad(err, field, apr_psprintf(p, "%s must be a list of strings.", field), p);
        APR_ARRAY_PUSH(*out, const char *) = apr_pstrdup(p, json_object_get_string(it));
    }
    return APR_SUCCESS;
}

/* A whole number from 1 to max, or null (0). */
static apr_status_t count_read(apr_int64_t *out, prov_error_t **err, json_object *v,
                               const char *field, apr_int64_t max, apr_pool_t *p)
{
    if (json_object_is_type(v, json_type_null)) {
        *out = 0;
        return APR_SUCCESS;
    }
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1
        || json_object_get_int64(v) > max)
        return bad(err, field, apr_psprintf(p, "%s must be a whole number from 1 to %"
                                            APR_INT64_T_FMT ", or null for no limit.", field,
                                            max), p);
    *out = json_object_get_int64(v);
    return APR_SUCCESS;
}

static apr_status_t lists_read(prov_key_change_t *ch, prov_error_t **err, json_object *o,
                               apr_pool_t *p)
{
    apr_array_header_t *items = NULL;
    const char *badv = NULL;
    json_object *v;
    if (json_object_object_get_ex(o, "models", &v)) {
        ch->fields |= PROV_KC_MODELS;
        if (v && (strings_read(&items, err, v, "models", PROV_KEY_MODELS_MAX, p) != APR_SUCCESS
                  || prov_key_models_parse(&ch->to.models, &badv, items, p) != APR_SUCCESS))
            return *err ? APR_EINVAL : bad(err, "models", apr_psprintf(p, "models: '%s' is "
                                           "not a model id.", badv ? badv : ""), p);
    }
    if (json_object_object_get_ex(o, "addresses", &v)) {
        ch->fields |= PROV_KC_ADDRESSES;
        if (v && (strings_read(&items, err, v, "addresses", PROV_CIDR_LIST_MAX, p)
                  != APR_SUCCESS
                  || prov_cidr_list_parse(&ch->to.addresses, &badv, items, p) != APR_SUCCESS))
            return *err ? APR_EINVAL : bad(err, "addresses", apr_psprintf(p, "addresses: '%s' "
                                           "is not an IPv4 or IPv6 address or CIDR range "
                                           "(e.g. 192.0.2.0/24, 2001:db8::/32).",
                                           badv ? badv : ""), p);
    }
    return APR_SUCCESS;
}

apr_status_t prov_cabinet_controls_parse(prov_key_change_t *out, prov_error_t **err,
                                         const char *body, apr_size_t len, apr_pool_t *p)
{
    static const char *const known[] = { "expires_at", "models", "addresses", "rpm",
                                         "max_in_flight", NULL };
    prov_key_change_t ch;
    json_object *o = NULL, *v;
    apr_status_t rv = body_read(&o, err, body, len, known, p);
    if (rv != APR_SUCCESS)
        return rv;
    memset(&ch, 0, sizeof(ch));
    *err = NULL;
    if (json_object_object_get_ex(o, "expires_at", &v)) {
        ch.fields |= PROV_KC_EXPIRES;
        if (v && (!json_object_is_type(v, json_type_string)
                  || prov_key_time_parse(&ch.to.expires_at, json_object_get_string(v))
                     != APR_SUCCESS))
            return bad(err, "expires_at", "expires_at must be an RFC 3339 date and time "
                       "(e.g. 2027-01-31T00:00:00Z), or null for never.", p);
    }
    if ((rv = lists_read(&ch, err, o, p)) != APR_SUCCESS)
        return rv;
    if (json_object_object_get_ex(o, "rpm", &v)) {
        ch.fields |= PROV_KC_RPM;
        if ((rv = count_read(&ch.to.rpm, err, v, "rpm", PROV_KEY_RPM_MAX, p)) != APR_SUCCESS)
            return rv;
    }
    if (json_object_object_get_ex(o, "max_in_flight", &v)) {
        ch.fields |= PROV_KC_IN_FLIGHT;
        if ((rv = count_read(&ch.to.max_in_flight, err, v, "max_in_flight",
                             PROV_KEY_IN_FLIGHT_MAX, p)) != APR_SUCCESS)
            return rv;
    }
    if (!ch.fields)
        return bad(err, NULL, "Nothing to change: send any of expires_at, models, addresses, "
                   "rpm, max_in_flight.", p);
    *out = ch;
    return APR_SUCCESS;
}
