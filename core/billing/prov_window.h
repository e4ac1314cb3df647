/* prov_window.h: the bottom of the billing engine, the rolling windows.
 * Usage is kept in buckets (usage_buckets: five minutes for the plan's
 * 5-hour window, an hour for the 7-day window and a key's week); a window is
 * the buckets of one scope still overlapping (now - span, now], so that a
 * check costs O(buckets in the window), never O(requests). Here: which
 * bucket a time falls in, loading a window (as a sum, or bucket by bucket
 * when a refusal needs its Retry-After), adding what a batch holds before it
 * is written, when capacity returns, and an account's plan with both of its
 * windows. Reads the store; calls nothing else of billing. */
#ifndef PROV_WINDOW_H
#define PROV_WINDOW_H

#include "prov_billing.h"
#include "prov_store.h"

/* The buckets of one scope still overlapping a window, oldest first. */
typedef struct prov_window_t {
    int n, cap;
    apr_int64_t *start;
    prov_micro_t *amount;
    prov_micro_t sum;
    apr_int64_t len;                /* bucket length */
    apr_int64_t span;               /* window length */
    /* A window read as a sum only (the usual case) lists its buckets when a
     * refusal needs Retry-After: what to read, and what was added since. */
    int listed;
    const char *scope;
    apr_int64_t id;
    int plan;
    apr_int64_t now;
    apr_int64_t oldest;             /* first bucket with usage, 0 = none */
    prov_micro_t pending;           /* added in this batch, at pending_at */
    apr_int64_t pending_at;
} prov_window_t;

/* The start of the bucket of length len that holds time t (t < 0 too). */
apr_int64_t prov_bucket_of(apr_int64_t t, apr_int64_t len);
/* Loads scope/id's buckets overlapping [now - span, now]; plan: sum the
 * plan_credits column instead of credits. */
apr_status_t prov_window_load(prov_window_t *w, prov_store_t *s, const char *scope,
                              apr_int64_t id, apr_int64_t len, apr_int64_t span, int plan,
                              apr_int64_t now, apr_pool_t *p);
/* The same as one sum (and the oldest bucket with usage): the check path. */
apr_status_t prov_window_sum(prov_window_t *w, prov_store_t *s, const char *scope,
                             apr_int64_t id, apr_int64_t len, apr_int64_t span, int plan,
                             apr_int64_t now, apr_pool_t *p);
/* Lists the buckets of a window read as a sum (keeping what was added). */
apr_status_t prov_window_list(prov_window_t *w, prov_store_t *s, apr_pool_t *p);
/* Adds amount at the bucket of t (in-batch usage not yet written). */
void prov_window_add(prov_window_t *w, apr_int64_t t, prov_micro_t amount, apr_pool_t *p);
/* Seconds until enough usage has left the window for sum + need <= limit:
 * 0 when it fits now, -1 when it never will (need > limit). */
apr_int64_t prov_window_retry_after(const prov_window_t *w, prov_micro_t need,
                                    prov_micro_t limit, apr_int64_t now);
/* Seconds until the oldest usage leaves the window (0 when none). */
apr_int64_t prov_window_reset(const prov_window_t *w, apr_int64_t now);
/* Seconds until the newest usage leaves the window, when the whole limit is
 * back (0 when none). w must be listed (prov_window_load or _list). */
apr_int64_t prov_window_full(const prov_window_t *w, apr_int64_t now);

/* The plan of user at now with both windows loaded (w5, w7); has_plan 0
 * when the account has no active subscription. */
apr_status_t prov_window_plan(prov_plan_windows_t *pw, prov_window_t *w5,
                              prov_window_t *w7, prov_store_t *s, apr_int64_t user_id,
                              apr_int64_t now, apr_pool_t *p);

#endif
