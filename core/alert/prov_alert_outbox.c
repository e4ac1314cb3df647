/* prov_alert_outbox.c: the outbox (table alerts). A crossing becomes a row
 * with its id and its JSON body, written once: the row's unique key
 * (subject, kind, window_start) makes a second writer's insert a no-op, so
 * two nodes that see one crossing send one alert. Also the outbox's list,
 * counts and retention purge (providerctl alerts, the purge thread) and a
 * user's own balance threshold (table alert_settings; the cabinet's
 * /v1/account/alerts). */
#include <string.h>
#include "prov_alert.h"
#include "prov_json.h"

/* "alrt_" and 24 hex digits: the receiver's idempotency key. */
static apr_status_t alert_id(const char **id, apr_pool_t *p)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char rnd[12];
    char *out = apr_palloc(p, 5 + 24 + 1);
    int i;
    if (apr_generate_random_bytes(rnd, sizeof(rnd)) != APR_SUCCESS)
        return APR_EGENERAL;
    memcpy(out, "alrt_", 5);
    for (i = 0; i < 12; i++) {
        out[5 + 2 * i] = hex[rnd[i] >> 4];
        out[6 + 2 * i] = hex[rnd[i] & 15];
    }
    out[29] = '\0';
    *id = out;
    return APR_SUCCESS;
}

static const char *subject_of(const prov_alert_t *a, apr_pool_t *p)
{
    return a->key_id ? apr_psprintf(p, "key:%" APR_INT64_T_FMT, a->key_id)
                     : apr_psprintf(p, "user:%" APR_INT64_T_FMT, a->user_id);
}

/* The amounts' members, by kind. */
static void body_amounts(json_object *o, const prov_alert_t *a)
{
    int pct = prov_alert_kind_percent(a->kind);
    if (pct) {
        json_object_object_add(o, "threshold_percent", json_object_new_int(pct));
        json_object_object_add(o, "used", prov_json_credits(a->used));
        json_object_object_add(o, "limit", prov_json_credits(a->limit));
    } else if (a->kind == PROV_ALERT_BALANCE_BELOW) {
        json_object_object_add(o, "balance", prov_json_credits(a->used));
        json_object_object_add(o, "balance_below", prov_json_credits(a->limit));
    }
}

/* The body: what happened, to whom, never a secret (a key by its id, name
 * and the short display prefix the cabinet shows). */
static apr_status_t body_of(const char **body, prov_store_t *s, const char *id,
                            const prov_alert_t *a, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    json_object *o, *u;
    apr_status_t rv = prov_store_select_one(&row, s, "alert_subject",
                                            PROV_ARGS(prov_i64(a->key_id, p),
                                                      prov_i64(a->user_id, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    o = prov_json_own(json_object_new_object(), p);
    json_object_object_add(o, "id", json_object_new_string(id));
    json_object_object_add(o, "type", json_object_new_string(prov_alert_kind_name(a->kind)));
    json_object_object_add(o, "created", json_object_new_int64(a->at));
    json_object_object_add(o, "window_start", json_object_new_int64(a->window_start));
    u = json_object_new_object();
    json_object_object_add(u, "id", json_object_new_int64(a->user_id));
    json_object_object_add(u, "email", json_object_new_string(prov_store_get(s, row, 0)));
    json_object_object_add(o, "user", u);
    if (a->key_id) {
        json_object *k = json_object_new_object();
        const char *name = prov_store_get(s, row, 1), *display = prov_store_get(s, row, 2);
        json_object_object_add(k, "id", json_object_new_int64(a->key_id));
        json_object_object_add(k, "name", name ? json_object_new_string(name) : NULL);
        json_object_object_add(k, "display", display ? json_object_new_string(display) : NULL);
        json_object_object_add(o, "key", k);
    }
    body_amounts(o, a);
    *body = prov_json_dump(o, p);
    return APR_SUCCESS;
}

apr_status_t prov_alert_raise(int *created, prov_store_t *s, const prov_alert_t *a,
                              apr_pool_t *p)
{
    const char *id = NULL, *body = NULL;
    int n = 0;
    apr_status_t rv = alert_id(&id, p);
    if (rv == APR_SUCCESS)
        rv = body_of(&body, s, id, a, p);
    if (rv == APR_SUCCESS)
        rv = prov_store_exec(s, &n, "alert_insert",
                             PROV_ARGS(id, subject_of(a, p), prov_alert_kind_name(a->kind),
                                       prov_i64(a->window_start, p), prov_i64(a->user_id, p),
                                       a->key_id ? prov_i64(a->key_id, p) : NULL, body,
                                       prov_i64(a->at, p), prov_i64(a->at, p)), p);
    if (rv == APR_SUCCESS)
        *created = n > 0;
    return rv;
}

apr_status_t prov_alert_user_blocked(prov_store_t *s, apr_int64_t user_id, apr_int64_t now,
                                     apr_pool_t *p)
{
    prov_alert_t a;
    int created = 0;
    memset(&a, 0, sizeof(a));
    a.kind = PROV_ALERT_USER_BLOCKED;
    a.user_id = user_id;
    a.window_start = now;
    a.at = now;
    return prov_alert_raise(&created, s, &a, p);
}

static void *row_of(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_alert_row_t *r = apr_pcalloc(p, sizeof(*r));
    r->id = prov_store_get(s, row, 0);
    r->kind = prov_store_get(s, row, 1);
    r->subject = prov_store_get(s, row, 2);
    r->user_id = prov_store_get_i64(s, row, 3, 0);
    r->window_start = prov_store_get_i64(s, row, 4, 0);
    r->created_at = prov_store_get_i64(s, row, 5, 0);
    r->attempts = prov_store_get_i64(s, row, 6, 0);
    r->next_at = prov_store_get_i64(s, row, 7, 0);
    r->sent_at = prov_store_get_i64(s, row, 8, 0);
    r->last_error = prov_store_get(s, row, 9);
    return r;
}

apr_status_t prov_alert_list(apr_array_header_t **rows, prov_store_t *s, int pending_only,
                             int limit, apr_pool_t *p)
{
    return prov_store_list_args(rows, s, "alert_list",
                                PROV_ARGS(pending_only ? "1" : "0", apr_itoa(p, limit)),
                                row_of, p);
}

apr_status_t prov_alert_counts(apr_int64_t *pending, apr_int64_t *sent, prov_store_t *s,
                               apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "alert_counts", PROV_NOARGS, p);
    if (rv != APR_SUCCESS)
        return rv;
    *pending = prov_store_get_i64(s, row, 0, 0);
    *sent = prov_store_get_i64(s, row, 1, 0);
    return APR_SUCCESS;
}

apr_status_t prov_alert_purge_before(int *removed, prov_store_t *s, apr_int64_t before,
                                     int batch, apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "alert_purge",
                                      PROV_ARGS(prov_i64(before, p), prov_i64(before, p),
                                                apr_itoa(p, batch)), p);
    if (rv == APR_SUCCESS)
        *removed = n;
    return rv;
}

apr_status_t prov_alert_setting_get(int *set, prov_micro_t *below, prov_store_t *s,
                                    apr_int64_t user_id, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "alert_setting_get",
                                            PROV_ARGS(prov_i64(user_id, p)), p);
    *set = 0;
    *below = 0;
    if (rv == APR_NOTFOUND)
        return APR_SUCCESS;
    if (rv != APR_SUCCESS)
        return rv;
    if (prov_store_get(s, row, 0)) {
        *set = 1;
        *below = prov_store_get_i64(s, row, 0, 0);
    }
    return APR_SUCCESS;
}

apr_status_t prov_alert_setting_put(prov_store_t *s, apr_int64_t user_id, int set,
                                    prov_micro_t below, apr_pool_t *p)
{
    int n = 0;
    return prov_store_exec(s, &n, "alert_setting_put",
                           PROV_ARGS(prov_i64(user_id, p), set ? prov_i64(below, p) : NULL), p);
}

static apr_status_t bad(prov_error_t **err, const char *msg, apr_pool_t *p)
{
    *err = prov_error_make(p, PROV_E_INVALID_REQUEST, "balance_below", "%s", msg);
    return APR_EINVAL;
}

apr_status_t prov_alert_setting_parse(int *set, prov_micro_t *below, prov_error_t **err,
                                      const char *body, apr_size_t len, apr_pool_t *p)
{
    const char *why = NULL, *text;
    json_object *o = prov_json_parse(body, len, &why, p), *v = NULL;
    prov_micro_t amount = 0;
    apr_status_t rv;
    if (!o || !json_object_is_type(o, json_type_object))
        return bad(err, "The body must be a JSON object: {\"balance_below\": CREDITS or null}.",
                   p);
    json_object_object_foreach(o, k, unused) {
        (void)unused;
        if (strcmp(k, "balance_below"))
            return bad(err, apr_psprintf(p, "Unknown field %s.", k), p);
    }
    if (!json_object_object_get_ex(o, "balance_below", &v))
        return bad(err, "balance_below is required: a number of credits, or null for the "
                   "service's default.", p);
    if (!v || json_object_is_type(v, json_type_null)) {
        *set = 0;
        *below = 0;
        return APR_SUCCESS;
    }
    if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
        return bad(err, "balance_below must be a number of credits, or null.", p);
    text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    if (*text == '-')
        return bad(err, "balance_below must not be negative.", p);
    rv = prov_money_parse(&amount, text, 0);
    if (rv == APR_ERANGE || (rv == APR_SUCCESS && amount > PROV_AMOUNT_MAX))
        return bad(err, "balance_below is too large.", p);
    if (rv != APR_SUCCESS)
        return bad(err, "balance_below must be a plain decimal number of credits with at "
                   "most 6 decimals (e.g. 5 or 2.5).", p);
    *set = 1;
    *below = amount;
    return APR_SUCCESS;
}

json_object *prov_alert_setting_json(int set, prov_micro_t below, prov_micro_t default_below,
                                     apr_pool_t *p)
{
    json_object *o = prov_json_own(json_object_new_object(), p);
    json_object_object_add(o, "balance_below", set ? prov_json_credits(below) : NULL);
    json_object_object_add(o, "default_balance_below",
                           default_below > 0 ? prov_json_credits(default_below) : NULL);
    return o;
}
