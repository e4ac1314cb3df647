/* prov_alert_scan.c: finding crossings, off every request's path. One node
 * at a time takes the scan's turn (a row of alert_turns, leased for the
 * scan's interval), reads the same windows the billing engine checks (the
 * usage buckets: a key's rolling week of credits, a plan's 5-hour and
 * 7-day windows of plan credits) for the keys and plans used in the last
 * two hours, and the balances against their thresholds, less what holds
 * and leases take until they are settled (a worst case held is not spent),
 * and raises each crossing into the outbox (prov_alert_outbox.c), whose
 * unique key makes a crossing seen twice one row. A balance alert is armed while the balance
 * is seen at or above its threshold and fires once when it is seen below. */
#include <string.h>
#include "prov_alert.h"

/* Usage seen since then makes a key or a plan worth reading. */
#define RECENT (2 * 3600)
#define HOUR 3600
#define FIVE_MINUTES 300

static apr_int64_t bucket_of(apr_int64_t t, apr_int64_t len)
{
    return t - (t % len + len) % len;
}

/* What holds and leases take now: by key, by user from the plan, by user
 * from the balance (id -> prov_micro_t). */
typedef struct held_t {
    apr_hash_t *key, *plan, *balance;
} held_t;

static void held_add(apr_hash_t *m, apr_int64_t id, prov_micro_t amount, apr_pool_t *p)
{
    prov_micro_t *v = apr_hash_get(m, &id, sizeof(id));
    if (!v) {
        apr_int64_t *k = apr_palloc(p, sizeof(*k));
        *k = id;
        v = apr_pcalloc(p, sizeof(*v));
        apr_hash_set(m, k, sizeof(*k), v);
    }
    *v = prov_i64_add_sat(*v, amount);
}

static prov_micro_t held_of(apr_hash_t *m, apr_int64_t id)
{
    prov_micro_t *v = apr_hash_get(m, &id, sizeof(id));
    return v ? *v : 0;
}

/* The amount less what is held of it, never below 0. */
static prov_micro_t settled(prov_micro_t amount, prov_micro_t held)
{
    return amount > held ? amount - held : 0;
}

static apr_status_t held_load(held_t *h, prov_store_t *s, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select(s, &res, "alert_held", PROV_NOARGS, p);
    h->key = apr_hash_make(p);
    h->plan = apr_hash_make(p);
    h->balance = apr_hash_make(p);
    while (rv == APR_SUCCESS && (rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        const char *source = prov_store_get(s, row, 2);
        prov_micro_t amount = prov_store_get_i64(s, row, 3, 0);
        apr_int64_t user = prov_store_get_i64(s, row, 1, 0);
        held_add(h->key, prov_store_get_i64(s, row, 0, 0), amount, p);
        held_add(source && !strcmp(source, "plan") ? h->plan : h->balance, user, amount, p);
    }
    return rv == APR_EOF ? APR_SUCCESS : rv;
}

/* Raises a usage kind when used has reached its percent of limit. */
static apr_status_t usage(int *raised, prov_store_t *s, prov_alert_kind_e kind,
                          apr_int64_t user_id, apr_int64_t key_id, prov_micro_t used,
                          prov_micro_t limit, apr_int64_t now, apr_pool_t *p)
{
    prov_alert_t a;
    int created = 0;
    apr_status_t rv;
    if (!prov_alert_reached(used, limit, prov_alert_kind_percent(kind)))
        return APR_SUCCESS;
    a.kind = kind;
    a.user_id = user_id;
    a.key_id = key_id;
    a.window_start = prov_alert_window_start(kind, now);
    a.at = now;
    a.used = used;
    a.limit = limit;
    rv = prov_alert_raise(&created, s, &a, p);
    *raised += created;
    return rv;
}

static apr_status_t scan_budgets(int *raised, prov_store_t *s, const held_t *h, apr_int64_t now,
                                 apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select(s, &res, "alert_scan_budgets",
        PROV_ARGS(prov_i64(bucket_of(now - 7 * 86400, HOUR), p),
                  prov_i64(bucket_of(now - RECENT, HOUR), p)), p);
    while (rv == APR_SUCCESS && (rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        apr_int64_t key = prov_store_get_i64(s, row, 0, 0), user = prov_store_get_i64(s, row, 1, 0);
        prov_micro_t budget = prov_store_get_i64(s, row, 2, 0);
        prov_micro_t spent = settled(prov_store_get_i64(s, row, 3, 0), held_of(h->key, key));
        if ((rv = usage(raised, s, PROV_ALERT_BUDGET_80, user, key, spent, budget, now, p))
            == APR_SUCCESS)
            rv = usage(raised, s, PROV_ALERT_BUDGET_100, user, key, spent, budget, now, p);
    }
    return rv == APR_EOF ? APR_SUCCESS : rv;
}

static apr_status_t scan_plans(int *raised, prov_store_t *s, const held_t *h, apr_int64_t now,
                               apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *t = prov_i64(now, p);
    apr_status_t rv = prov_store_select(s, &res, "alert_scan_plans",
        PROV_ARGS(prov_i64(bucket_of(now - 5 * 3600, FIVE_MINUTES), p),
                  prov_i64(bucket_of(now - 7 * 86400, HOUR), p), t, t,
                  prov_i64(bucket_of(now - RECENT, HOUR), p)), p);
    while (rv == APR_SUCCESS && (rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        apr_int64_t user = prov_store_get_i64(s, row, 0, 0);
        prov_micro_t held = held_of(h->plan, user);
        if ((rv = usage(raised, s, PROV_ALERT_PLAN_5H_90, user, 0,
                        settled(prov_store_get_i64(s, row, 3, 0), held),
                        prov_store_get_i64(s, row, 1, 0), now, p)) == APR_SUCCESS)
            rv = usage(raised, s, PROV_ALERT_PLAN_7D_90, user, 0,
                       settled(prov_store_get_i64(s, row, 4, 0), held),
                       prov_store_get_i64(s, row, 2, 0), now, p);
    }
    return rv == APR_EOF ? APR_SUCCESS : rv;
}

/* Arms the balances at or above their threshold, then fires the armed ones
 * below it once what holds take of them is back: the alert's window is the
 * time it was armed. */
static apr_status_t scan_balances(int *raised, prov_store_t *s, const held_t *h, apr_int64_t now,
                                  prov_micro_t default_below, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *dflt = prov_i64(default_below > 0 ? default_below : 0, p);
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "alert_arm", PROV_ARGS(prov_i64(now, p), dflt, dflt),
                                      p);
    if (rv == APR_SUCCESS)
        rv = prov_store_select(s, &res, "alert_balance_due", PROV_ARGS(dflt, dflt), p);
    while (rv == APR_SUCCESS && (rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        prov_alert_t a;
        int created = 0;
        a.kind = PROV_ALERT_BALANCE_BELOW;
        a.user_id = prov_store_get_i64(s, row, 0, 0);
        a.key_id = 0;
        a.used = prov_i64_add_sat(prov_store_get_i64(s, row, 1, 0),
                                  held_of(h->balance, a.user_id));
        a.limit = prov_store_get_i64(s, row, 2, 0);
        if (a.used >= a.limit)
            continue;
        a.window_start = prov_store_get_i64(s, row, 3, 0);
        a.at = now;
        if ((rv = prov_alert_raise(&created, s, &a, p)) == APR_SUCCESS)
            rv = prov_store_exec(s, &n, "alert_disarm",
                                 PROV_ARGS(prov_i64(a.user_id, p), prov_i64(a.window_start, p)),
                                 p);
        *raised += created;
    }
    return rv == APR_EOF ? APR_SUCCESS : rv;
}

apr_status_t prov_alert_scan(int *ran, int *raised, prov_store_t *s, apr_int64_t now,
                             apr_int64_t every, prov_micro_t default_below, apr_pool_t *p)
{
    held_t h;
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "alert_turn",
                                      PROV_ARGS(prov_i64(now + (every > 0 ? every : 1) - 1, p),
                                                prov_i64(now, p)), p);
    *ran = 0;
    *raised = 0;
    if (rv != APR_SUCCESS || n == 0)
        return rv;
    *ran = 1;
    if ((rv = held_load(&h, s, p)) == APR_SUCCESS
        && (rv = scan_budgets(raised, s, &h, now, p)) == APR_SUCCESS
        && (rv = scan_plans(raised, s, &h, now, p)) == APR_SUCCESS)
        rv = scan_balances(raised, s, &h, now, default_below, p);
    return rv;
}
