/* prov_window.c: the rolling windows over usage buckets (see
 * prov_window.h): bucket arithmetic, a window's sum or its buckets, what a
 * batch adds before it writes, when capacity returns, and an account's plan
 * windows. The only SQL it runs is the store's labelled bucket and
 * subscription reads. */
#include <string.h>
#include "prov_window.h"

apr_int64_t prov_bucket_of(apr_int64_t t, apr_int64_t len)
{
    apr_int64_t b = t - (t % len);
    return (t < 0 && t % len) ? b - len : b;
}

static void window_push(prov_window_t *w, apr_int64_t start, prov_micro_t amount, apr_pool_t *p)
{
    if (w->n == w->cap) {
        int cap = w->cap ? w->cap * 2 : 16;
        apr_int64_t *ns = apr_palloc(p, cap * sizeof(*ns));
        prov_micro_t *na = apr_palloc(p, cap * sizeof(*na));
        if (w->n) {
            memcpy(ns, w->start, w->n * sizeof(*ns));
            memcpy(na, w->amount, w->n * sizeof(*na));
        }
        w->start = ns;
        w->amount = na;
        w->cap = cap;
    }
    w->start[w->n] = start;
    w->amount[w->n] = amount;
    w->n++;
}

apr_status_t prov_window_load(prov_window_t *w, prov_store_t *s, const char *scope,
                              apr_int64_t id, apr_int64_t len, apr_int64_t span, int plan,
                              apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;

    memset(w, 0, sizeof(*w));
    w->len = len;
    w->span = span;
    w->listed = 1;
    w->scope = scope;
    w->id = id;
    w->plan = plan;
    w->now = now;
    /* A bucket counts while any of it overlaps (now - span, now]. */
    rv = prov_store_select(s, &res, "bill_buckets",
                           PROV_ARGS(scope, prov_i64(id, p),
                                     prov_i64(prov_bucket_of(now - span, len), p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        prov_micro_t a = prov_store_get_i64(s, row, plan ? 2 : 1, 0);
        window_push(w, prov_store_get_i64(s, row, 0, 0), a, p);
        w->sum = prov_i64_add_sat(w->sum, a);
    }
    return rv == APR_EOF ? APR_SUCCESS : rv;
}

apr_status_t prov_window_sum(prov_window_t *w, prov_store_t *s, const char *scope,
                             apr_int64_t id, apr_int64_t len, apr_int64_t span, int plan,
                             apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;

    memset(w, 0, sizeof(*w));
    w->len = len;
    w->span = span;
    w->scope = scope;
    w->id = id;
    w->plan = plan;
    w->now = now;
    rv = prov_store_select_one(&row, s, "bill_bucket_sum",
                               PROV_ARGS(scope, prov_i64(id, p),
                                         prov_i64(prov_bucket_of(now - span, len), p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    w->sum = prov_store_get_i64(s, row, plan ? 1 : 0, 0);
    w->oldest = prov_store_get_i64(s, row, plan ? 3 : 2, 0);
    return APR_SUCCESS;
}

apr_status_t prov_window_list(prov_window_t *w, prov_store_t *s, apr_pool_t *p)
{
    prov_micro_t pending = w->pending;
    apr_int64_t at = w->pending_at;
    apr_status_t rv;
    if (w->listed)
        return APR_SUCCESS;
    rv = prov_window_load(w, s, w->scope, w->id, w->len, w->span, w->plan, w->now, p);
    if (rv == APR_SUCCESS && pending)
        prov_window_add(w, at, pending, p);
    return rv;
}

void prov_window_add(prov_window_t *w, apr_int64_t t, prov_micro_t amount, apr_pool_t *p)
{
    apr_int64_t b = prov_bucket_of(t, w->len);
    if (!w->listed) {
        w->sum = prov_i64_add_sat(w->sum, amount);
        w->pending = prov_i64_add_sat(w->pending, amount);
        w->pending_at = t;
        if (!w->oldest && amount > 0)
            w->oldest = b;
        return;
    }
    w->sum = prov_i64_add_sat(w->sum, amount);
    if (w->n && w->start[w->n - 1] == b)
        w->amount[w->n - 1] = prov_i64_add_sat(w->amount[w->n - 1], amount);
    else
        window_push(w, b, amount, p);
}

apr_int64_t prov_window_retry_after(const prov_window_t *w, prov_micro_t need,
                                    prov_micro_t limit, apr_int64_t now)
{
    prov_micro_t leaving = 0;
    int i;
    if (prov_i64_add_sat(w->sum, need) <= limit)
        return 0;
    if (need > limit)
        return -1;
    for (i = 0; i < w->n; i++) {
        leaving = prov_i64_add_sat(leaving, w->amount[i]);
        if (prov_i64_add_sat(prov_i64_sub_sat(w->sum, leaving), need) <= limit) {
            apr_int64_t t = w->start[i] + w->len + w->span - now;
            return t > 0 ? t : 1;
        }
    }
    return -1;
}

apr_int64_t prov_window_reset(const prov_window_t *w, apr_int64_t now)
{
    int i;
    if (!w->listed) {
        apr_int64_t t = w->oldest + w->len + w->span - now;
        return w->oldest ? (t > 0 ? t : 1) : 0;
    }
    for (i = 0; i < w->n; i++) {
        if (w->amount[i] > 0) {
            apr_int64_t t = w->start[i] + w->len + w->span - now;
            return t > 0 ? t : 1;
        }
    }
    return 0;
}

apr_int64_t prov_window_full(const prov_window_t *w, apr_int64_t now)
{
    int i;
    for (i = w->n - 1; i >= 0; i--) {
        if (w->amount[i] > 0) {
            apr_int64_t t = w->start[i] + w->len + w->span - now;
            return t > 0 ? t : 1;
        }
    }
    return 0;
}

/* The plan of user at now and its windows' use; has_plan 0 when none. */
apr_status_t prov_window_plan(prov_plan_windows_t *pw, prov_window_t *w5,
                              prov_window_t *w7, prov_store_t *s, apr_int64_t user_id,
                              apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *uid = prov_i64(user_id, p), *n = prov_i64(now, p);
    apr_status_t rv = prov_store_select(s, &res, "bill_subscription", PROV_ARGS(uid, n, n), p);
    memset(pw, 0, sizeof(*pw));
    if (rv != APR_SUCCESS)
        return rv;
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        if (!pw->has_plan) {
            pw->has_plan = 1;
            pw->quota_5h = prov_store_get_i64(s, row, 0, 0);
            pw->quota_7d = prov_store_get_i64(s, row, 1, 0);
            pw->plan_name = prov_store_get(s, row, 2);
            pw->until_at = prov_store_get_i64(s, row, 3, 0);
        }
    }
    if (rv != APR_EOF)
        return rv;
    if (!pw->has_plan)
        return APR_SUCCESS;
    if ((rv = prov_window_sum(w5, s, "user:m", user_id, PROV_BUCKET_MINUTES, PROV_WINDOW_5H, 1,
                              now, p)) != APR_SUCCESS
        || (rv = prov_window_sum(w7, s, "user:h", user_id, PROV_BUCKET_HOUR, PROV_WINDOW_7D, 1,
                                 now, p)) != APR_SUCCESS)
        return rv;
    pw->used_5h = w5->sum;
    pw->used_7d = w7->sum;
    pw->reset_5h = prov_window_reset(w5, now);
    pw->reset_7d = prov_window_reset(w7, now);
    return APR_SUCCESS;
}
