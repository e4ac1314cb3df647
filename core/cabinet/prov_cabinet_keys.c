/* prov_cabinet_keys.c: a user's own API keys as the cabinet shows and
 * changes them. The changes are account's (prov_key_*: a secret is made
 * as `providerctl key create` makes it, shown once and stored as a digest);
 * this file makes sure the key is the user's and live first, so that
 * another user's key id answers exactly as an unknown one, and renders a
 * key with its use: today and the last seven days from the ledger
 * (prov_usage_key_summary, as providerctl shows), the seven UTC days one by
 * one, and the week its budget counts (billing's window, the one the 429
 * API_KEY_CREDIT_BUDGET_EXCEEDED is decided by). A reissued or deleted
 * key's old secret is refused by the very next request on any node: the
 * reservation re-reads the key's digest inside its transaction whatever a
 * child's lookup cache holds (docs/internals/billing.md). */
#include <string.h>
#include "prov_cabinet_int.h"
#include "prov_account.h"
#include "prov_billing.h"
#include "prov_log.h"

#define DAYS_SHOWN 7

/* The user's live key key_id; APR_NOTFOUND when it is unknown, deleted or
 * another user's. */
static apr_status_t own_key(prov_key_t **k, prov_store_t *s, apr_int64_t user_id,
                            apr_int64_t key_id, apr_pool_t *p)
{
    prov_key_t *found = NULL;
    apr_status_t rv = prov_key_get(&found, s, key_id, p);
    if (rv == APR_SUCCESS && (found->user_id != user_id || found->deleted_at))
        rv = APR_NOTFOUND;
    if (rv == APR_SUCCESS)
        *k = found;
    return rv;
}

/* The last DAYS_SHOWN UTC days of the key, oldest first, days without use
 * included: {date, requests, credits, tokens (all four kinds)}. */
static apr_status_t daily_json(json_object **out, prov_store_t *s, apr_int64_t key_id,
                               apr_int64_t now, apr_pool_t *p)
{
    prov_usage_filter_t f = { 0, 0, 0, 0, 0, PROV_USAGE_BY_DAY };
    apr_int64_t day0 = now - now % PROV_CABINET_DAY;
    apr_array_header_t *rows = NULL;
    json_object *a;
    int d, r = 0;
    apr_status_t rv;

    f.key_id = key_id;
    f.since = day0 - (DAYS_SHOWN - 1) * PROV_CABINET_DAY;
    f.until = now + 1;
    if ((rv = prov_usage_report(&rows, s, &f, p)) != APR_SUCCESS)
        return rv;
    a = json_object_new_array();
    for (d = DAYS_SHOWN - 1; d >= 0; d--) {
        const char *date = apr_pstrndup(p, prov_cabinet_time(day0 - d * PROV_CABINET_DAY, p),
                                        10);
        const prov_usage_row_t *u = NULL;
        json_object *e = json_object_new_object();
        if (r < rows->nelts
            && !strcmp(APR_ARRAY_IDX(rows, r, prov_usage_row_t *)->group, date))
            u = APR_ARRAY_IDX(rows, r++, prov_usage_row_t *);
        json_object_object_add(e, "date", json_object_new_string(date));
        json_object_object_add(e, "requests", json_object_new_int64(u ? u->requests : 0));
        json_object_object_add(e, "credits", prov_json_credits(u ? u->credits : 0));
        json_object_object_add(e, "tokens", json_object_new_int64(u ? u->tokens.input
                               + u->tokens.output + u->tokens.cache + u->tokens.reasoning : 0));
        json_object_array_add(a, e);
    }
    *out = a;
    return APR_SUCCESS;
}

static apr_status_t key_json(json_object **out, prov_store_t *s, const prov_key_t *k,
                             apr_int64_t now, apr_pool_t *p)
{
    prov_usage_key_t ku;
    prov_micro_t week = 0;
    apr_int64_t reset = 0;
    json_object *o, *daily = NULL;
    apr_status_t rv = prov_usage_key_summary(&ku, s, k->id, now, p);
    if (rv == APR_SUCCESS)
        rv = prov_billing_key_status(&week, &reset, s, k->id, now, p);
    if (rv == APR_SUCCESS)
        rv = daily_json(&daily, s, k->id, now, p);
    if (rv != APR_SUCCESS)
        return rv;
    o = prov_json_own(json_object_new_object(), p);
    json_object_object_add(o, "id", prov_cabinet_id(k->id, p));
    json_object_object_add(o, "name", k->name ? json_object_new_string(k->name) : NULL);
    json_object_object_add(o, "prefix", json_object_new_string(k->display ? k->display : ""));
    json_object_object_add(o, "last4", k->last4 ? json_object_new_string(k->last4) : NULL);
    json_object_object_add(o, "created_at",
                           json_object_new_string(prov_cabinet_time(k->created_at, p)));
    json_object_object_add(o, "reissued_at", k->reissued_at
                           ? json_object_new_string(prov_cabinet_time(k->reissued_at, p))
                           : NULL);
    json_object_object_add(o, "weekly_budget",
                           k->has_budget ? prov_json_credits(k->weekly_budget) : NULL);
    prov_key_controls_json(o, &k->controls, p);
    json_object_object_add(o, "week_used", prov_json_credits(week));
    /* when the oldest of the week's spend leaves it (the cabinet shows an
     * exhausted key's "accepted again" time from it), null if none */
    json_object_object_add(o, "budget_returns_at", reset > 0
                           ? json_object_new_string(prov_cabinet_time(now + reset, p)) : NULL);
    json_object_object_add(o, "today",
                           prov_usage_fields(json_object_new_object(), &ku.today));
    json_object_object_add(o, "last_7_days",
                           prov_usage_fields(json_object_new_object(), &ku.week));
    json_object_object_add(o, "daily", daily);
    *out = o;
    return APR_SUCCESS;
}

/* The key's object as it is now, read again after a change; with the
 * secret when there is one to show. */
static apr_status_t key_answer(json_object **out, prov_store_t *s, apr_int64_t key_id,
                               const char *secret, apr_int64_t now, apr_pool_t *p)
{
    prov_key_t *k = NULL;
    apr_status_t rv = prov_key_get(&k, s, key_id, p);
    if (rv == APR_SUCCESS)
        rv = key_json(out, s, k, now, p);
    if (rv == APR_SUCCESS && secret)
        json_object_object_add(*out, "secret", json_object_new_string(secret));
    return rv;
}

apr_status_t prov_cabinet_keys(json_object **out, prov_store_t *s, apr_int64_t user_id,
                               apr_int64_t now, apr_pool_t *p)
{
    apr_array_header_t *keys = NULL;
    json_object *o, *a;
    int i;
    apr_status_t rv;
    if (user_id <= 0)
        return APR_EINVAL;
    if ((rv = prov_key_list(&keys, s, user_id, 0, p)) != APR_SUCCESS)
        return rv;
    o = prov_json_own(json_object_new_object(), p);
    a = json_object_new_array();
    json_object_object_add(o, "data", a);
    for (i = 0; i < keys->nelts; i++) {
        json_object *k = NULL;
        rv = key_json(&k, s, APR_ARRAY_IDX(keys, i, prov_key_t *), now, p);
        if (rv != APR_SUCCESS)
            return rv;
        json_object_array_add(a, json_object_get(k));
    }
    *out = o;
    return APR_SUCCESS;
}

apr_status_t prov_cabinet_key_create(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                     const prov_cabinet_key_req_t *req, apr_int64_t now,
                                     apr_pool_t *p)
{
    prov_key_t *k = NULL;
    const char *secret = NULL;
    apr_status_t rv;
    if (!req->name || !*req->name)
        return APR_EINVAL;
    rv = prov_key_create(&k, &secret, s, user_id, req->name, req->has_budget, req->budget,
                         p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV00600: key %" APR_INT64_T_FMT " (%s...) made in the "
             "cabinet by user %" APR_INT64_T_FMT, k->id, k->display, user_id);
    return key_answer(out, s, k->id, secret, now, p);
}

apr_status_t prov_cabinet_key_reissue(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                      apr_int64_t key_id, apr_int64_t now, apr_pool_t *p)
{
    prov_key_t *k = NULL;
    const char *secret = NULL;
    apr_status_t rv = own_key(&k, s, user_id, key_id, p);
    if (rv == APR_SUCCESS)
        rv = prov_key_reissue(&secret, s, key_id, p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV00601: key %" APR_INT64_T_FMT " reissued in the cabinet "
             "by user %" APR_INT64_T_FMT, key_id, user_id);
    return key_answer(out, s, key_id, secret, now, p);
}

apr_status_t prov_cabinet_key_delete(prov_store_t *s, apr_int64_t user_id, apr_int64_t key_id,
                                     apr_pool_t *p)
{
    prov_key_t *k = NULL;
    apr_status_t rv = own_key(&k, s, user_id, key_id, p);
    if (rv == APR_SUCCESS)
        rv = prov_key_delete(s, key_id, p);
    if (rv == APR_SUCCESS)
        prov_log(PROV_LOG_INFO, 0, "PROV00602: key %" APR_INT64_T_FMT " deleted in the "
                 "cabinet by user %" APR_INT64_T_FMT, key_id, user_id);
    return rv;
}

apr_status_t prov_cabinet_key_budget(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                     apr_int64_t key_id, const prov_cabinet_key_req_t *req,
                                     apr_int64_t now, apr_pool_t *p)
{
    prov_key_t *k = NULL;
    apr_status_t rv = own_key(&k, s, user_id, key_id, p);
    if (rv == APR_SUCCESS)
        rv = prov_key_set_budget(s, key_id, req->has_budget, req->budget, p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV00603: key %" APR_INT64_T_FMT " budget set in the "
             "cabinet by user %" APR_INT64_T_FMT, key_id, user_id);
    return key_answer(out, s, key_id, NULL, now, p);
}

apr_status_t prov_cabinet_key_controls(json_object **out, const char **bad_model,
                                       prov_store_t *s, apr_int64_t user_id,
                                       apr_int64_t key_id, const prov_key_change_t *ch,
                                       apr_int64_t now, apr_pool_t *p)
{
    prov_key_t *k = NULL;
    apr_status_t rv = own_key(&k, s, user_id, key_id, p);
    if (rv == APR_SUCCESS)
        rv = prov_key_set_controls(NULL, NULL, bad_model, s, key_id, ch, p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV01307: key %" APR_INT64_T_FMT " controls changed in the "
             "cabinet by user %" APR_INT64_T_FMT, key_id, user_id);
    return key_answer(out, s, key_id, NULL, now, p);
}
