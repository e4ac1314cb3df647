/* core/cabinet/: the cabinet's JSON API without HTTP (the
 * contract is the README's "Cabinet API"): what a signed-in user may see and
 * change of their own account, and the checks of what they send. It
 * composes account (the user, keys and their usage, favorites, the usage
 * reports) and billing (the balance, what requests in flight hold, the
 * plan's windows and a key's week, from the same window code as the 429s),
 * with identity only for a sign-in's placeholder email. It calls base,
 * store, account, billing and identity; nothing below calls it.
 *
 * prov_cabinet.h: the answers (json_object trees owned by the pool) and
 * the request checks. A key is always one of the user's own live keys: an
 * id of another user's key, a deleted one or no id at all is APR_NOTFOUND,
 * alike. */
#ifndef PROV_CABINET_H
#define PROV_CABINET_H

#include "prov_common.h"
#include "prov_error.h"
#include "prov_json.h"
#include "prov_store.h"
#include "prov_usage.h"
#include "prov_key_controls.h"

/* The most a key name may have, in characters (UTF-8 code points). */
#define PROV_CABINET_NAME_MAX 100
/* The most days a usage report may cover. */
#define PROV_CABINET_DAYS_MAX 30
/* The most a cabinet request body may have, in bytes. */
#define PROV_CABINET_BODY_MAX 16384

/* What POST /v1/keys and PUT /v1/keys/{id}/budget carry. */
typedef struct prov_cabinet_key_req_t {
    const char *name;           /* POST: required */
    int has_budget;             /* weekly_budget is a number (else null or absent) */
    prov_micro_t budget;
} prov_cabinet_key_req_t;

/* ---- request checks (prov_cabinet_input.c): APR_EINVAL with *err a 400
 * INVALID_REQUEST whose message and param name the field ---- */

/* POST /v1/keys: {"name": string (1-100 characters, no control
 * characters), "weekly_budget": credits >= 0 | null (optional)}; no other
 * member. */
apr_status_t prov_cabinet_key_parse(prov_cabinet_key_req_t *out, prov_error_t **err,
                                    const char *body, apr_size_t len, apr_pool_t *p);
/* PUT /v1/keys/{id}/budget: {"weekly_budget": credits >= 0 | null}, required. */
apr_status_t prov_cabinet_budget_parse(prov_cabinet_key_req_t *out, prov_error_t **err,
                                       const char *body, apr_size_t len, apr_pool_t *p);
/* PATCH /v1/keys/{id}: any of {"expires_at": RFC 3339 | null, "models":
 * [public id, ...] | null, "addresses": [CIDR, ...] | null, "rpm": 1-1e6 |
 * null, "max_in_flight": 1-1e4 | null}, at least one; no other member. */
apr_status_t prov_cabinet_controls_parse(prov_key_change_t *out, prov_error_t **err,
                                         const char *body, apr_size_t len, apr_pool_t *p);
/* GET /v1/usage's query values (NULL: the default): days 1-30 (7), by
 * day|key|model (day). */
apr_status_t prov_cabinet_usage_args(int *days, prov_usage_by_e *by, prov_error_t **err,
                                     const char *days_arg, const char *by_arg, apr_pool_t *p);
/* A key id from a path segment: 1-18 digits, not 0; else APR_NOTFOUND. */
apr_status_t prov_cabinet_key_id(apr_int64_t *id, const char *segment);

/* ---- answers ---- */

/* "2026-11-24T07:00:00Z" for t (seconds since the epoch, UTC). */
const char *prov_cabinet_time(apr_int64_t t, apr_pool_t *p);

/* GET /v1/account (prov_cabinet_account.c): who, the balance, what requests
 * in flight hold of it, what is available, and the plan with both windows
 * (quota, used, remaining, when capacity returns, when it is full again) or
 * null. APR_NOTFOUND when there is no such user. */
apr_status_t prov_cabinet_account(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                  apr_int64_t now, apr_pool_t *p);
/* GET /v1/usage: the user's own usage over the last `days` UTC days (today
 * included), grouped by day, key (with its name) or model. */
apr_status_t prov_cabinet_usage(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                int days, prov_usage_by_e by, apr_int64_t now, apr_pool_t *p);

/* Keys (prov_cabinet_keys.c). A key object: id, name, prefix, created_at,
 * reissued_at, weekly_budget, its controls (expires_at, models, addresses,
 * rpm, max_in_flight: prov_key_controls_json), week_used (the budget's own rolling week),
 * today and last_7_days (requests, the four token kinds, credits) and daily
 * (the last seven UTC days, oldest first). */
/* GET /v1/keys: {"data": [the user's live keys]}. */
apr_status_t prov_cabinet_keys(json_object **out, prov_store_t *s, apr_int64_t user_id,
                               apr_int64_t now, apr_pool_t *p);
/* POST /v1/keys: the new key's object with "secret", its only copy. */
apr_status_t prov_cabinet_key_create(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                     const prov_cabinet_key_req_t *req, apr_int64_t now,
                                     apr_pool_t *p);
/* POST /v1/keys/{id}/reissue: the key's object with its new "secret"; the
 * old secret is refused from now on. */
apr_status_t prov_cabinet_key_reissue(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                      apr_int64_t key_id, apr_int64_t now, apr_pool_t *p);
/* DELETE /v1/keys/{id}. */
apr_status_t prov_cabinet_key_delete(prov_store_t *s, apr_int64_t user_id, apr_int64_t key_id,
                                     apr_pool_t *p);
/* PUT /v1/keys/{id}/budget: the key's object after the change. */
apr_status_t prov_cabinet_key_budget(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                     apr_int64_t key_id, const prov_cabinet_key_req_t *req,
                                     apr_int64_t now, apr_pool_t *p);
/* PATCH /v1/keys/{id}: the key's object after the change of its controls;
 * APR_ENOENT with *bad_model a model id not in the catalog. */
apr_status_t prov_cabinet_key_controls(json_object **out, const char **bad_model,
                                       prov_store_t *s, apr_int64_t user_id,
                                       apr_int64_t key_id, const prov_key_change_t *ch,
                                       apr_int64_t now, apr_pool_t *p);

/* GET /v1/requests (prov_cabinet_requests.c): the user's requests one by
 * one, newest first, from the ledger. */
#define PROV_CABINET_REQUESTS_DEFAULT 50
#define PROV_CABINET_REQUESTS_MAX 200
typedef struct prov_cabinet_requests_q_t {
    apr_int64_t key_id;         /* 0 = every key */
    const char *status;         /* a ledger status name, "" = any */
    int limit;                  /* 1..PROV_CABINET_REQUESTS_MAX */
    apr_int64_t before;         /* a ledger row id (the previous answer's next), 0 = newest */
    apr_int64_t before_refusal; /* a refusals row id, the same way */
    int ledger, refusals;       /* which of the two the status asks for */
    int http_status;            /* refusals of this HTTP status only, 0 = any */
    const char *code;           /* refusals of this error code only, "" = any */
} prov_cabinet_requests_q_t;
/* The query's values (NULL or "": the default): key an id, status a ledger
 * status name ("refused" also takes the refusals before a reservation), an
 * HTTP status (400-599) or an error code (both: refusals only), limit 1-200
 * (50), before a `next` value ("L.R", or a ledger id alone); else
 * APR_EINVAL and *err a 400 INVALID_REQUEST naming the parameter. */
apr_status_t prov_cabinet_requests_args(prov_cabinet_requests_q_t *q, prov_error_t **err,
                                        const char *key, const char *status, const char *limit,
                                        const char *before, apr_pool_t *p);
/* {"data": [{request_id, created_at, key_id, key_name, model, transport,
 * status, status_text, the four token kinds, credits, plan_credits,
 * source, http_status, error_code, count}], "next": a `before` value for
 * the next page | null}: the ledger's rows and the refusals (status
 * "refused", http_status and error_code set, count the refusals the row
 * folds) merged newest first. Another user's key id simply matches
 * nothing. */
apr_status_t prov_cabinet_requests(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                   const prov_cabinet_requests_q_t *q, apr_pool_t *p);

#endif
