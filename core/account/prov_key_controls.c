/* prov_key_controls.c: an API key's controls (prov_key_controls.h): the
 * lists' parsing and canonical text, RFC 3339 times in and out, the JSON the
 * cabinet and providerctl show, and the one change of a key's controls
 * (read, merged, checked against the catalog, written in one UPDATE). */
#include <stdlib.h>
#include <string.h>
#include <apr_time.h>
#include "prov_key_controls.h"
#include "prov_account.h"
#include "prov_models.h"
#include "prov_log.h"

int prov_key_controls_any(const prov_key_controls_t *c)
{
    return c->expires_at > 0 || c->models || c->addresses || c->rpm > 0
        || c->max_in_flight > 0;
}

int prov_key_model_allowed(const char *list, const char *public_id)
{
    apr_size_t n;
    if (!list)
        return 1;
    if (!public_id || !*public_id)
        return 0;
    n = strlen(public_id);
    while (*list) {
        const char *comma = strchr(list, ',');
        apr_size_t k = comma ? (apr_size_t)(comma - list) : strlen(list);
        if (k == n && !memcmp(list, public_id, n))
            return 1;
        if (!comma)
            break;
        list = comma + 1;
    }
    return 0;
}

apr_status_t prov_key_models_parse(const char **list, const char **bad,
                                   const apr_array_header_t *ids, apr_pool_t *p)
{
    const char *out = NULL;
    int i;
    *bad = NULL;
    if (ids->nelts == 0 || ids->nelts > PROV_KEY_MODELS_MAX)
        return APR_EINVAL;
    for (i = 0; i < ids->nelts; i++) {
        const char *id = APR_ARRAY_IDX(ids, i, const char *);
        if (!id || !prov_model_id_valid(id)) {
            *bad = id ? id : "";
            return APR_EINVAL;
        }
        if (out && prov_key_model_allowed(out, id))
            continue;                           /* a repeat */
        out = out ? apr_pstrcat(p, out, ",", id, NULL) : apr_pstrdup(p, id);
    }
    *list = out;
    return APR_SUCCESS;
}

apr_array_header_t *prov_key_list_split(const char *list, apr_pool_t *p)
{
    apr_array_header_t *a = apr_array_make(p, 4, sizeof(const char *));
    while (list && *list) {
        const char *comma = strchr(list, ',');
        APR_ARRAY_PUSH(a, const char *) = comma
            ? apr_pstrndup(p, list, (apr_size_t)(comma - list)) : apr_pstrdup(p, list);
        list = comma ? comma + 1 : NULL;
    }
    return a;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil). */
static apr_int64_t days_from_civil(apr_int64_t y, int m, int d)
{
    apr_int64_t era, yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char *s, int n)
{
    int i, v = 0;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

apr_status_t prov_key_time_parse(apr_int64_t *t, const char *s)
{
    static const int mdays[12] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int y, mo, d, h, mi, sec, off = 0;
    const char *z;
    if (!s || strlen(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't')
        || s[13] != ':' || s[16] != ':')
        return APR_EINVAL;
    y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    h = digits(s + 11, 2), mi = digits(s + 14, 2), sec = digits(s + 17, 2);
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h < 0 || h > 23
        || mi < 0 || mi > 59 || sec < 0 || sec > 60)
        return APR_EINVAL;
    if (mo == 2 && d == 29 && (y % 4 || (y % 100 == 0 && y % 400)))
        return APR_EINVAL;
    z = s + 19;
    if (*z == '.') {
        for (z++; *z >= '0' && *z <= '9'; z++)
            ;
        if (z == s + 20)
            return APR_EINVAL;
    }
    if ((*z == 'Z' || *z == 'z') && !z[1])
        off = 0;
    else if ((*z == '+' || *z == '-') && strlen(z) == 6 && z[3] == ':') {
        int oh = digits(z + 1, 2), om = digits(z + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return APR_EINVAL;
        off = (oh * 60 + om) * 60 * (*z == '-' ? -1 : 1);
    }
    else
        return APR_EINVAL;
    *t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + (sec > 59 ? 59 : sec) - off;
    return *t > 0 && *t <= PROV_KEY_EXPIRES_MAX ? APR_SUCCESS : APR_EINVAL;
}

const char *prov_key_time_text(apr_int64_t t, apr_pool_t *p)
{
    apr_time_exp_t x;
    apr_time_exp_gmt(&x, apr_time_from_sec(t));
    return apr_psprintf(p, "%04d-%02d-%02dT%02d:%02d:%02dZ", x.tm_year + 1900, x.tm_mon + 1,
                        x.tm_mday, x.tm_hour, x.tm_min, x.tm_sec);
}

static json_object *list_json(const char *list, apr_pool_t *p)
{
    apr_array_header_t *items;
    json_object *a;
    int i;
    if (!list)
        return NULL;
    items = prov_key_list_split(list, p);
    a = json_object_new_array();
    for (i = 0; i < items->nelts; i++)
        json_object_array_add(a, json_object_new_string(APR_ARRAY_IDX(items, i, const char *)));
    return a;
}

void prov_key_controls_json(json_object *o, const prov_key_controls_t *c, apr_pool_t *p)
{
    json_object_object_add(o, "expires_at", c->expires_at > 0
                           ? json_object_new_string(prov_key_time_text(c->expires_at, p))
                           : NULL);
    json_object_object_add(o, "models", list_json(c->models, p));
    json_object_object_add(o, "addresses", list_json(c->addresses, p));
    json_object_object_add(o, "rpm", c->rpm > 0 ? json_object_new_int64(c->rpm) : NULL);
    json_object_object_add(o, "max_in_flight", c->max_in_flight > 0
                           ? json_object_new_int64(c->max_in_flight) : NULL);
}

static void merge(prov_key_controls_t *c, const prov_key_change_t *ch)
{
    if (ch->fields & PROV_KC_EXPIRES)
        c->expires_at = ch->to.expires_at;
    if (ch->fields & PROV_KC_MODELS)
        c->models = ch->to.models;
    if (ch->fields & PROV_KC_ADDRESSES)
        c->addresses = ch->to.addresses;
    if (ch->fields & PROV_KC_RPM)
        c->rpm = ch->to.rpm;
    if (ch->fields & PROV_KC_IN_FLIGHT)
        c->max_in_flight = ch->to.max_in_flight;
}

/* Every model of list in the catalog; else APR_ENOENT and *bad the first. */
static apr_status_t models_known(const char **bad, prov_store_t *s, const char *list,
                                 apr_pool_t *p)
{
    apr_array_header_t *ids = prov_key_list_split(list, p);
    int i;
    for (i = 0; i < ids->nelts; i++) {
        prov_model_t *m = NULL;
        const char *id = APR_ARRAY_IDX(ids, i, const char *);
        apr_status_t rv = prov_model_find(&m, s, id, p);
        if (rv == APR_NOTFOUND) {
            *bad = id;
            return APR_ENOENT;
        }
        if (rv != APR_SUCCESS)
            return rv;
    }
    return APR_SUCCESS;
}

static const char *opt_i64(apr_int64_t v, apr_pool_t *p)
{
    return v > 0 ? prov_i64(v, p) : NULL;
}

apr_status_t prov_key_set_controls(prov_key_controls_t *before, prov_key_controls_t *after,
                                   const char **bad_model, prov_store_t *s,
                                   apr_int64_t key_id, const prov_key_change_t *ch,
                                   apr_pool_t *p)
{
    prov_key_t *k = NULL;
    prov_key_controls_t c;
    int n = 0;
    apr_status_t rv = prov_key_get(&k, s, key_id, p);
    if (rv == APR_SUCCESS && k->deleted_at)
        rv = APR_NOTFOUND;
    if (rv != APR_SUCCESS)
        return rv;
    if (ch->to.rpm < 0 || ch->to.rpm > PROV_KEY_RPM_MAX || ch->to.max_in_flight < 0
        || ch->to.max_in_flight > PROV_KEY_IN_FLIGHT_MAX || ch->to.expires_at < 0
        || ch->to.expires_at > PROV_KEY_EXPIRES_MAX)
        return APR_EINVAL;
    if ((ch->fields & PROV_KC_MODELS) && ch->to.models
        && (rv = models_known(bad_model, s, ch->to.models, p)) != APR_SUCCESS)
        return rv;
    c = k->controls;
    merge(&c, ch);
    rv = prov_store_exec(s, &n, "key_controls",
                         PROV_ARGS(opt_i64(c.expires_at, p), c.models, c.addresses,
                                   opt_i64(c.rpm, p), opt_i64(c.max_in_flight, p),
                                   prov_i64(key_id, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    if (n == 0)
        return APR_NOTFOUND;
    prov_log(PROV_LOG_INFO, 0, "PROV01300: key %" APR_INT64_T_FMT " controls set: expires %s, "
             "models %s, addresses %s, rpm %s, in flight %s", key_id,
             c.expires_at ? prov_key_time_text(c.expires_at, p) : "never",
             c.models ? c.models : "all", c.addresses ? c.addresses : "any",
             c.rpm ? prov_i64(c.rpm, p) : "no limit",
             c.max_in_flight ? prov_i64(c.max_in_flight, p) : "no limit");
    if (before)
        *before = k->controls;
    if (after)
        *after = c;
    return APR_SUCCESS;
}
