/* mod_provider_infer.h: the API of mod_provider_infer.c, the inference steps
 * shared by the transports: the key, the model, the hold, the settlement
 * staged and committed, the release, a gateway's failure or refusal. A step
 * returns PROVIDER_GO to go on (provider_step_t, mod_provider.h). */
#ifndef MOD_PROVIDER_INFER_H
#define MOD_PROVIDER_INFER_H

#include "mod_provider.h"
#include "prov_cache.h"
#include "prov_account.h"
#include "prov_models.h"
#include "prov_billing.h"
#include "prov_worst.h"
#include "prov_estimate.h"
#include "prov_ending.h"
#include "prov_gateway.h"
#include "prov_gwerror.h"
#include "mod_provider_keyctl.h"

/* A request as the driver sees it, whatever its transport's rules. */
typedef struct provider_call_t {
    void *req;                    /* the transport's own parsed request */
    const char *model;            /* the public model id asked for */
    apr_size_t prompt_bytes;      /* for the input estimate */
    int n_messages;
    apr_int64_t max_output;       /* the request's output cap; -1 when none */
    apr_int64_t choices;          /* answers asked for (chat's n); 0 or 1: one */
    int stream;                   /* answered as an event stream */
} provider_call_t;

typedef struct provider_infer_t {
    request_rec *r;
    provider_srv_conf *conf;
    prov_cache_t *lookups;        /* r's server's lookup cache, or NULL */
    provider_family_e family;
    const char *transport;        /* "chat", "messages", "responses" */
    const char *request_id;
    prov_store_t *store;          /* open from begin until reserve */
    const char *secret;           /* the API key as sent */
    prov_auth_t *auth;
    provider_keyctl_slot_t *in_flight; /* the key's in-flight count taken, or NULL */
    int auth_fresh;               /* auth was read from the database, not the cache */
    const char *body;             /* the request body (NUL-terminated) */
    apr_size_t len;
    provider_call_t call;         /* the parsed request */
    prov_model_t *model;
    prov_rates_t eff;             /* the model's effective rates */
    prov_micro_t hold;
    prov_worst_t worst;           /* what the hold covers (prov_worst.h) */
    apr_int64_t cap;              /* the output cap of each choice the gateway is sent */
    apr_int64_t forward_cap;      /* cap when the body must carry it (the client set
                                   * none, or a larger one); 0: the client's own */
    apr_int64_t input_estimate;   /* the input tokens an estimate charges */
    apr_int64_t max_output;       /* the output a settlement believes: cap for each
                                   * choice */
    prov_reservation_t *res;
    prov_micro_t charge;          /* after provider_infer_settle */
    /* The settlement staged until the answer is out (provider_infer_commit). */
    int staged;                   /* one is staged */
    prov_status_e staged_status;  /* its ledger status */
    int staged_release;           /* no charge */
    prov_tokens_t staged_tokens;
    const char *model_sent;       /* the model as the client named it, once read */
} provider_infer_t;

/* Key (Bearer; also x-api-key when allowed), blocked user, the key's
 * controls (expiry, address, rate, in flight: mod_provider_keyctl.h),
 * method (POST), body (size limit). */
provider_step_t provider_infer_begin(provider_infer_t **in, request_rec *r,
                                     provider_family_e family, const char *transport,
                                     int allow_x_api_key);
/* For a request that holds nothing (count_tokens), whose key no billing
 * transaction re-checks: a key taken from the lookup cache is read again from
 * the database (401 when gone, 403 when its user is now blocked). */
provider_step_t provider_infer_recheck_key(provider_infer_t *in);
/* The driver is done with the request: the key's in-flight count is given
 * back (also done, at the latest, by r's pool cleanup). NULL: nothing. */
void provider_infer_done(provider_infer_t *in);
/* The key's model list (403 MODEL_NOT_ALLOWED), then the catalog model: known, enabled, priced; with messages_only also of the
 * messages family and enabled for it. */
provider_step_t provider_infer_model(provider_infer_t *in, const char *public_id,
                                     int messages_only);
/* Holds the request's worst case (prov_worst.h: its body, in->call's cap
 * and choices, the model's maximum output) and releases the database
 * connection; a request without a cap of its own may be held, and capped,
 * for less (in->cap, told in x-provider-output-cap). input_estimate is what
 * an estimate charges for the input. */
provider_step_t provider_infer_reserve(provider_infer_t *in, apr_int64_t input_estimate);
/* Releases the phase-one database connection early (idempotent). */
void provider_infer_close(provider_infer_t *in);
/* A stream's progress for this process's journal (d: what was delivered
 * so far, as if the stream broke now): the charge it would be settled at,
 * charged by the replay should the process die before the settlement.
 * Nothing when nothing was delivered (the replay then charges the floor).
 * Returns whether a record was made. */
int provider_infer_progress(provider_infer_t *in, const prov_delivery_t *d);
/* Stages the charge of the gateway's usage t at the model's rates (an absurd
 * t: at most the hold, with a warning; no input at all: the input estimate)
 * as a complete answer (status ok) and sets x-provider-credits while headers
 * are unsent; returns the charge. Nothing is committed before
 * provider_infer_commit or provider_infer_answer. The same as
 * provider_infer_bill of a complete answer with that final usage. */
prov_micro_t provider_infer_settle(provider_infer_t *in, const prov_tokens_t *t);
/* Stages the settlement of what d delivered by prov_estimate's rule (the
 * reported usage, an estimate at most the hold, or a release), its ledger
 * status the one prov_ending_status gives a request that ended so, and sets
 * x-provider-credits while headers are unsent; returns the charge. Logs an
 * absurd report (PROV00300), unreadable ones (PROV00305) and a report of no
 * input replaced by the estimate (PROV00306). */
prov_micro_t provider_infer_bill(provider_infer_t *in, const prov_delivery_t *d,
                                 prov_ending_e end);
/* Commits the staged settlement: completes the ledger row. */
void provider_infer_commit(provider_infer_t *in);
/* Writes json as the 200 answer; commits the staged settlement once the
 * answer was handed to the client (or the client left), else releases the
 * hold (provider_infer_undelivered). Returns what the handler returns. */
int provider_infer_answer(provider_infer_t *in, const char *json);
/* The answer could not be delivered by the module's own fault (write, a
 * PROVIDER_WRITE_* result): releases the hold with status "undelivered" and,
 * when nothing was sent, answers 500 INTERNAL_ERROR in the transport's
 * shape. Returns what the handler returns. */
int provider_infer_undelivered(provider_infer_t *in, int write);
/* Returns the hold without a charge now; the ledger row records the status
 * of a release of a request that ended so (prov_ending_status). */
void provider_infer_release(provider_infer_t *in, prov_ending_e end);
/* A gateway transport failure (prov_gateway_* result): release, 504/502. */
int provider_infer_gateway_failed(provider_infer_t *in, apr_status_t rv);

/* A non-200 gateway answer in the family's shape, in our words
 * (prov_gwerror_client): 400 for request errors (4xx), 502 with Retry-After
 * when it is busy (429), 502 otherwise; never the gateway's text. That text
 * is logged, masked (provider_log_gateway_error). */
int provider_gateway_refusal(request_rec *r, provider_family_e family,
                             const prov_gateway_response_t *resp);
/* Logs a gateway's error with its text masked (prov_redact): info, or warn
 * when the gateway refused the service token. */
void provider_log_gateway_error(request_rec *r, const prov_gwerror_t *g);

#endif
