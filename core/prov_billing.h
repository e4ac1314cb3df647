/* prov_billing.h: the spend engine's request-time half (DESIGN §4 steps 4-8):
 * the estimate of a request's worst-case cost, the reservation that checks the
 * key's weekly budget and the account's remainder and holds the estimate in one
 * transaction, and the settlement that replaces the hold with the real charge
 * (or releases it) and completes the request's ledger row. */
#ifndef PROV_BILLING_H
#define PROV_BILLING_H

#include "prov_common.h"
#include "prov_error.h"
#include "prov_money.h"
#include "prov_store.h"
#include "prov_account.h"
#include "prov_models.h"

/* Usage buckets are this many seconds long: windows are exact to it. */
#define PROV_BUCKET_SECONDS 300
#define PROV_WINDOW_KEY_WEEK (7 * 24 * 3600)

/* The account's plan windows as seen by a reservation (for clients that show
 * quota, e.g. Codex's rate-limit headers). Amounts in micro-credits; reset_*
 * = seconds until enough of the window's usage leaves it for its use to drop
 * (0 when nothing is used). */
typedef struct prov_plan_windows_t {
    int has_plan;
    prov_micro_t quota_5h, used_5h;
    apr_int64_t reset_5h;
    prov_micro_t quota_7d, used_7d;
    apr_int64_t reset_7d;
} prov_plan_windows_t;

typedef struct prov_reservation_t {
    const char *request_id;
    apr_int64_t user_id;
    apr_int64_t key_id;
    apr_int64_t model_id;
    const char *transport;
    prov_micro_t hold;
    apr_int64_t created_at;
    int settled;              /* settled or released: nothing more to do */
    prov_plan_windows_t windows;  /* filled when the account has a plan */
} prov_reservation_t;

/* The worst-case cost: input_tokens_est input tokens plus max_output output
 * tokens at the effective rates. */
prov_micro_t prov_billing_estimate(const prov_rates_t *effective, apr_int64_t input_tokens_est,
                                   apr_int64_t max_output);
/* A generous input-token estimate from the bytes of the prompt text. */
apr_int64_t prov_billing_input_estimate(apr_size_t prompt_bytes, int n_messages);

/* Checks the key's weekly budget and the account's remainder and holds hold
 * micro-credits, atomically. On a refusal returns APR_SUCCESS with *r NULL and
 * *err set (429 API_KEY_CREDIT_BUDGET_EXCEEDED or 402 INSUFFICIENT_CREDITS);
 * on a database failure returns the error (the caller answers 503). */
apr_status_t prov_billing_reserve(prov_reservation_t **r, prov_error_t **err, prov_store_t *s,
                                  const prov_auth_t *auth, apr_int64_t model_id,
                                  const char *transport, const char *request_id,
                                  prov_micro_t hold, apr_int64_t now, apr_pool_t *p);
/* Replaces the hold by charge for tokens t and completes the ledger row with
 * status ("ok", "cut", ...). Safe to call once only: a second call finds the
 * row already settled and returns APR_EINCOMPLETE without touching money. */
apr_status_t prov_billing_settle(prov_store_t *s, prov_reservation_t *r, const prov_tokens_t *t,
                                 prov_micro_t charge, const char *status, apr_int64_t now,
                                 apr_pool_t *p);
/* Returns the hold: no charge, the ledger row records status (e.g. "failed"). */
apr_status_t prov_billing_release(prov_store_t *s, prov_reservation_t *r, const char *status,
                                  apr_int64_t now, apr_pool_t *p);

/* What an account has and has used, for `balance show`, `subscription show`
 * and the cabinet: the balance, and the plan windows when a subscription is
 * active at now (windows.has_plan). */
typedef struct prov_account_status_t {
    prov_micro_t balance;
    prov_micro_t held;            /* reserved by requests in flight */
    prov_plan_windows_t windows;
} prov_account_status_t;

apr_status_t prov_billing_account_status(prov_account_status_t *st, prov_store_t *s,
                                         apr_int64_t user_id, apr_int64_t now, apr_pool_t *p);
/* A key's spend in its rolling week and, when it has a budget, the seconds
 * until enough of it leaves the window for the spend to drop (0 if none). */
apr_status_t prov_billing_key_status(prov_micro_t *spent_7d, apr_int64_t *reset, prov_store_t *s,
                                     apr_int64_t key_id, apr_int64_t now, apr_pool_t *p);

#endif
