/* prov_cabinet_account.c: GET /v1/account and GET /v1/usage. The account
 * is the user's row (account) and what billing says of it: the balance,
 * what requests in flight hold of it, and the plan's two windows read by
 * the window code the reservations use (prov_billing_account_status), so
 * that the figures here are those a 429 quotes. Usage is the ledger's
 * report (prov_usage_report, or prov_usage_sessions by agent session)
 * limited to the user and to whole UTC days. */
#include "prov_cabinet_int.h"
#include "prov_account.h"
#include "prov_billing.h"
#include "prov_identity.h"

json_object *prov_cabinet_id(apr_int64_t id, apr_pool_t *p)
{
    return json_object_new_string(prov_i64(id, p));
}

static json_object *time_or_null(apr_int64_t now, apr_int64_t in, apr_pool_t *p)
{
    return in > 0 ? json_object_new_string(prov_cabinet_time(now + in, p)) : NULL;
}

/* One window: its quota, use and remainder, when capacity starts to come
 * back (the oldest usage leaves) and when all of it is back (the newest). */
static json_object *window_json(const char *name, prov_micro_t quota, prov_micro_t used,
                                apr_int64_t reset, apr_int64_t full, apr_int64_t now,
                                apr_pool_t *p)
{
    json_object *w = json_object_new_object();
    json_object_object_add(w, "window", json_object_new_string(name));
    json_object_object_add(w, "quota", prov_json_credits(quota));
    json_object_object_add(w, "used", prov_json_credits(used));
    json_object_object_add(w, "remaining", prov_json_credits(used < quota ? quota - used : 0));
    json_object_object_add(w, "returns_at", time_or_null(now, reset, p));
    json_object_object_add(w, "full_at", time_or_null(now, full, p));
    return w;
}

static json_object *plan_json(const prov_account_status_t *st, apr_int64_t now, apr_pool_t *p)
{
    const prov_plan_windows_t *pw = &st->windows;
    json_object *o, *a;
    if (!pw->has_plan)
        return NULL;
    o = json_object_new_object();
    a = json_object_new_array();
    json_object_object_add(o, "name", json_object_new_string(pw->plan_name ? pw->plan_name
                                                                           : ""));
    json_object_array_add(a, window_json("5h", pw->quota_5h, pw->used_5h, pw->reset_5h,
                                         st->full_5h, now, p));
    json_object_array_add(a, window_json("7d", pw->quota_7d, pw->used_7d, pw->reset_7d,
                                         st->full_7d, now, p));
    json_object_object_add(o, "windows", a);
    return o;
}

apr_status_t prov_cabinet_account(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                  apr_int64_t now, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    prov_account_status_t st;
    prov_micro_t available;
    json_object *o;
    apr_status_t rv = prov_user_find(&u, s, prov_i64(user_id, p), p);
    if (rv == APR_SUCCESS)
        rv = prov_billing_account_status(&st, s, user_id, now, p);
    if (rv != APR_SUCCESS)
        return rv;
    available = prov_i64_sub_sat(st.balance, st.held);
    o = prov_json_own(json_object_new_object(), p);
    json_object_object_add(o, "id", prov_cabinet_id(u->id, p));
    json_object_object_add(o, "email", prov_identity_email_is_placeholder(u->email) ? NULL
                           : json_object_new_string(u->email));
    json_object_object_add(o, "name", u->name ? json_object_new_string(u->name) : NULL);
    json_object_object_add(o, "balance", prov_json_credits(st.balance));
    json_object_object_add(o, "held", prov_json_credits(st.held));
    json_object_object_add(o, "available", prov_json_credits(available > 0 ? available : 0));
    json_object_object_add(o, "plan", plan_json(&st, now, p));
    *out = o;
    return APR_SUCCESS;
}

/* key id -> name (NULL when it has none) of every key of the user, deleted
 * ones too: their usage stays in the report. */
static apr_status_t key_names(apr_hash_t **names, prov_store_t *s, apr_int64_t user_id,
                              apr_pool_t *p)
{
    apr_array_header_t *keys = NULL;
    apr_hash_t *h = apr_hash_make(p);
    int i;
    apr_status_t rv = prov_key_list(&keys, s, user_id, 1, p);
    if (rv != APR_SUCCESS)
        return rv;
    for (i = 0; i < keys->nelts; i++) {
        const prov_key_t *k = APR_ARRAY_IDX(keys, i, prov_key_t *);
        apr_hash_set(h, prov_i64(k->id, p), APR_HASH_KEY_STRING, k->name ? k->name : "");
    }
    *names = h;
    return APR_SUCCESS;
}

/* by=session's entries: each session with its key (id and name) and its
 * first and last request's times. */
static apr_status_t session_entries(json_object *a, prov_store_t *s,
                                    const prov_usage_filter_t *f, apr_pool_t *p)
{
    apr_array_header_t *rows = NULL;
    apr_hash_t *names = NULL;
    apr_status_t rv;
    int i;
    if ((rv = prov_usage_sessions(&rows, s, f, p)) != APR_SUCCESS
        || (rv = key_names(&names, s, f->user_id, p)) != APR_SUCCESS)
        return rv;
    for (i = 0; i < rows->nelts; i++) {
        const prov_usage_session_t *u = APR_ARRAY_IDX(rows, i, prov_usage_session_t *);
        const char *key = prov_i64(u->key_id, p), *n = apr_hash_get(names, key,
                                                                     APR_HASH_KEY_STRING);
        json_object *e = json_object_new_object();
        json_object_object_add(e, "group", json_object_new_string(u->sums.group));
        json_object_object_add(e, "key", json_object_new_string(key));
        json_object_object_add(e, "name", n && *n ? json_object_new_string(n) : NULL);
        json_object_object_add(e, "first_request_at",
                               json_object_new_string(prov_cabinet_time(u->first_at, p)));
        json_object_object_add(e, "last_request_at",
                               json_object_new_string(prov_cabinet_time(u->last_at, p)));
        json_object_array_add(a, prov_usage_session_fields(e, u));
    }
    return APR_SUCCESS;
}

apr_status_t prov_cabinet_usage(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                int days, prov_usage_by_e by, apr_int64_t now, apr_pool_t *p)
{
    static const char *const by_names[] = { "total", "day", "key", "model", "session" };
    prov_usage_filter_t f = { 0, 0, 0, 0, 0, PROV_USAGE_BY_DAY };
    apr_array_header_t *rows = NULL;
    apr_hash_t *names = NULL;
    json_object *o, *a;
    int i;
    apr_status_t rv;

    if (user_id <= 0 || days < 1 || days > PROV_CABINET_DAYS_MAX || by < PROV_USAGE_BY_DAY
        || by > PROV_USAGE_BY_SESSION)
        return APR_EINVAL;
    f.user_id = user_id;
    f.since = now - now % PROV_CABINET_DAY - (apr_int64_t)(days - 1) * PROV_CABINET_DAY;
    f.until = now + 1;
    f.by = by;
    if (by != PROV_USAGE_BY_SESSION
        && ((rv = prov_usage_report(&rows, s, &f, p)) != APR_SUCCESS
            || (by == PROV_USAGE_BY_KEY && (rv = key_names(&names, s, user_id, p))
                                           != APR_SUCCESS)))
        return rv;
    o = prov_json_own(json_object_new_object(), p);
    a = json_object_new_array();
    json_object_object_add(o, "days", json_object_new_int(days));
    json_object_object_add(o, "by", json_object_new_string(by_names[by]));
    json_object_object_add(o, "data", a);
    if (by == PROV_USAGE_BY_SESSION) {
        if ((rv = session_entries(a, s, &f, p)) == APR_SUCCESS)
            *out = o;
        return rv;
    }
    for (i = 0; rows && i < rows->nelts; i++) {
        const prov_usage_row_t *u = APR_ARRAY_IDX(rows, i, prov_usage_row_t *);
        json_object *e = json_object_new_object();
        json_object_object_add(e, "group", json_object_new_string(u->group));
        if (names) {
            const char *n = apr_hash_get(names, u->group, APR_HASH_KEY_STRING);
            json_object_object_add(e, "name", n && *n ? json_object_new_string(n) : NULL);
        }
        json_object_array_add(a, prov_usage_fields(e, u));
    }
    *out = o;
    return APR_SUCCESS;
}
