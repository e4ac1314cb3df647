/* prov_billing.c: reserve and settle (DESIGN §4 steps 4-8). A reservation is
 * one write transaction that re-reads the key's rolling 7-day spend from the
 * usage buckets, takes the hold from the prepaid balance only if it is there,
 * adds the hold to the key's and the account's buckets, and writes the
 * request's ledger row as "reserved". Settlement is one transaction that
 * completes that row (only if still reserved: never twice) and moves balance
 * and buckets by the difference between the charge and the hold. */
#include "prov_billing.h"
#include "prov_log.h"

prov_micro_t prov_billing_estimate(const prov_rates_t *eff, apr_int64_t input_tokens_est,
                                   apr_int64_t max_output)
{
    prov_tokens_t t = { input_tokens_est, max_output, 0, 0 };
    return prov_money_charge(eff, &t);
}

apr_int64_t prov_billing_input_estimate(apr_size_t prompt_bytes, int n_messages)
{
    /* Tokenizers average 3-4 bytes per token on prose; take 3 and a per-message
     * overhead, so that the hold errs on the side of covering the charge. */
    return (apr_int64_t)(prompt_bytes / 3) + 8 * (apr_int64_t)n_messages + 16;
}

static apr_int64_t bucket_of(apr_int64_t t)
{
    return t - (t % PROV_BUCKET_SECONDS);
}

static apr_status_t bucket_add(prov_store_t *s, const char *scope, apr_int64_t id,
                               apr_int64_t bucket, prov_micro_t delta, int requests,
                               apr_pool_t *p)
{
    return prov_store_exec(s, NULL, "bill_bucket_add",
                           PROV_ARGS(scope, prov_i64(id, p), prov_i64(bucket, p),
                                     prov_i64(delta, p), requests ? "1" : "0"), p);
}

/* The key's spend in the rolling week: buckets that still overlap it. */
static apr_status_t key_week_spend(prov_micro_t *out, prov_store_t *s, apr_int64_t key_id,
                                   apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t after = bucket_of(now - PROV_WINDOW_KEY_WEEK) - 1;
    apr_status_t rv = prov_store_select(s, &res, "bill_key_window",
                                        PROV_ARGS(prov_i64(key_id, p), prov_i64(after, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    *out = 0;
    while (prov_store_row(s, res, &row, p) == APR_SUCCESS)
        *out = prov_store_get_i64(s, row, 0, 0);
    return APR_SUCCESS;
}

apr_status_t prov_billing_reserve(prov_reservation_t **r, prov_error_t **err, prov_store_t *s,
                                  const prov_auth_t *auth, apr_int64_t model_id,
                                  const char *transport, const char *request_id,
                                  prov_micro_t hold, apr_int64_t now, apr_pool_t *p)
{
    prov_reservation_t *res;
    prov_error_t *refusal = NULL;
    apr_int64_t bucket = bucket_of(now);
    int n = 0;
    apr_status_t rv;

    if (hold < 0)
        hold = 0;
    if ((rv = prov_store_begin(s, p)) != APR_SUCCESS)
        return rv;

    if (auth->has_budget) {
        prov_micro_t spent = 0;
        if ((rv = key_week_spend(&spent, s, auth->key_id, now, p)) != APR_SUCCESS)
            goto fail;
        if (spent + hold > auth->weekly_budget) {
            refusal = prov_error_make(p, PROV_E_KEY_BUDGET_EXCEEDED, NULL,
                "This API key's weekly credit budget is used up (%s of %s credits in the "
                "last 7 days; this request may cost up to %s). Raise this key's budget, "
                "or wait until earlier usage leaves the 7-day window.",
                prov_money_format(spent, p), prov_money_format(auth->weekly_budget, p),
                prov_money_format(hold, p));
            goto refuse;
        }
    }

    if ((rv = prov_store_exec(s, &n, "bill_hold_balance",
                              PROV_ARGS(prov_i64(hold, p), prov_i64(auth->user_id, p),
                                        prov_i64(hold, p)), p)) != APR_SUCCESS)
        goto fail;
    if (n != 1) {
        refusal = prov_error_make(p, PROV_E_INSUFFICIENT_CREDITS, NULL,
            "Not enough credits: this request may cost up to %s credits and the account's "
            "balance does not cover it. Add credits to the balance.",
            prov_money_format(hold, p));
        goto refuse;
    }

    if ((rv = bucket_add(s, "key", auth->key_id, bucket, hold, 1, p)) != APR_SUCCESS
        || (rv = bucket_add(s, "user", auth->user_id, bucket, hold, 1, p)) != APR_SUCCESS
        || (rv = prov_store_exec(s, NULL, "bill_ledger_reserve",
                                 PROV_ARGS(request_id, prov_i64(auth->user_id, p),
                                           prov_i64(auth->key_id, p), prov_i64(model_id, p),
                                           transport, prov_i64(hold, p), prov_i64(now, p)),
                                 p)) != APR_SUCCESS)
        goto fail;
    if ((rv = prov_store_commit(s, p)) != APR_SUCCESS)
        return rv;

    res = apr_pcalloc(p, sizeof(*res));
    res->request_id = apr_pstrdup(p, request_id);
    res->user_id = auth->user_id;
    res->key_id = auth->key_id;
    res->model_id = model_id;
    res->transport = apr_pstrdup(p, transport);
    res->hold = hold;
    res->created_at = now;
    *r = res;
    *err = NULL;
    return APR_SUCCESS;

refuse:
    prov_store_rollback(s, p);
    *r = NULL;
    *err = refusal;
    return APR_SUCCESS;
fail:
    prov_store_rollback(s, p);
    return rv;
}

static apr_status_t finish(prov_store_t *s, prov_reservation_t *r, const prov_tokens_t *t,
                           prov_micro_t charge, const char *status, apr_int64_t now,
                           apr_pool_t *p)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    prov_micro_t delta = charge - r->hold;
    apr_int64_t bucket = bucket_of(r->created_at);
    int n = 0;
    apr_status_t rv;

    if (r->settled)
        return APR_EINCOMPLETE;
    if (!t)
        t = &none;
    if ((rv = prov_store_begin(s, p)) != APR_SUCCESS)
        return rv;
    if ((rv = prov_store_exec(s, &n, "bill_ledger_settle",
                              PROV_ARGS(prov_i64(t->input, p), prov_i64(t->output, p),
                                        prov_i64(t->cache, p), prov_i64(t->reasoning, p),
                                        prov_i64(charge, p), status, prov_i64(now, p),
                                        r->request_id), p)) != APR_SUCCESS)
        goto fail;
    if (n != 1) {
        /* Already settled (or swept): the money has been moved once already. */
        prov_store_rollback(s, p);
        r->settled = 1;
        return APR_EINCOMPLETE;
    }
    if (delta != 0) {
        if ((rv = prov_store_exec(s, NULL, "bill_adjust_balance",
                                  PROV_ARGS(prov_i64(-delta, p), prov_i64(r->user_id, p)),
                                  p)) != APR_SUCCESS
            || (rv = bucket_add(s, "key", r->key_id, bucket, delta, 0, p)) != APR_SUCCESS
            || (rv = bucket_add(s, "user", r->user_id, bucket, delta, 0, p)) != APR_SUCCESS)
            goto fail;
    }
    if ((rv = prov_store_commit(s, p)) != APR_SUCCESS)
        return rv;
    r->settled = 1;
    return APR_SUCCESS;
fail:
    prov_store_rollback(s, p);
    return rv;
}

apr_status_t prov_billing_settle(prov_store_t *s, prov_reservation_t *r, const prov_tokens_t *t,
                                 prov_micro_t charge, const char *status, apr_int64_t now,
                                 apr_pool_t *p)
{
    return finish(s, r, t, charge < 0 ? 0 : charge, status, now, p);
}

apr_status_t prov_billing_release(prov_store_t *s, prov_reservation_t *r, const char *status,
                                  apr_int64_t now, apr_pool_t *p)
{
    return finish(s, r, NULL, 0, status, now, p);
}
