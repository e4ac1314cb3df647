/* prov_billing_int.h: what the two halves of the spend engine share inside
 * libprovider: the queued operation, the batch executor (prov_billing_batch.c)
 * and the window arithmetic that the batch and the status functions both use.
 * Not for callers outside core/prov_billing*.c. */
#ifndef PROV_BILLING_INT_H
#define PROV_BILLING_INT_H

#include <pthread.h>
#include "prov_billing.h"

typedef enum {
    PROV_OP_RESERVE = 0,
    PROV_OP_SETTLE,
    PROV_OP_SWEEP
} prov_op_kind_e;

typedef struct prov_op_t {
    prov_op_kind_e kind;
    apr_pool_t *p;                  /* the caller's pool: results go here */
    apr_int64_t now;
    /* reserve */
    const prov_auth_t *auth;
    apr_int64_t model_id;
    const char *transport;
    const char *request_id;
    prov_micro_t hold;
    /* settle / release */
    prov_reservation_t *res;
    prov_tokens_t tokens;
    prov_micro_t charge;
    const char *status;
    /* results */
    apr_status_t rv;
    prov_reservation_t *out;        /* reserve: the reservation, or NULL ... */
    prov_error_t *err;              /* ... and the refusal */
    int swept;                      /* sweep: holds expired */
    int done;
    int async;                      /* a copied settlement nobody waits for */
    pthread_cond_t cond;            /* signalled when done, or to lead */
    struct prov_op_t *next;
} prov_op_t;

/* Runs ops (a list) in one transaction on s; sweep: also expire stale holds
 * older than hold_timeout. Sets each op's results; returns non-success only
 * when the transaction failed (then every op failed with it). */
apr_status_t prov_billing_run_batch(prov_store_t *s, prov_op_t *ops, int sweep,
                                    apr_int64_t hold_timeout, apr_pool_t *p);

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

/* The plan of user at now with both windows loaded (w5, w7); has_plan 0
 * when the account has no active subscription. */
apr_status_t prov_billing_plan_windows(prov_plan_windows_t *pw, prov_window_t *w5,
                                       prov_window_t *w7, prov_store_t *s, apr_int64_t user_id,
                                       apr_int64_t now, apr_pool_t *p);

#endif
