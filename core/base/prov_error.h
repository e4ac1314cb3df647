/* prov_error.h: the error table, the one place that says what each service
 * error code is on the wire: its HTTP status and its type in each transport's
 * error family (OpenAI and Anthropic), and how the error bodies are written. */
#ifndef PROV_ERROR_H
#define PROV_ERROR_H

#include "prov_common.h"

typedef enum {
    PROV_E_INVALID_REQUEST = 0,   /* 400 */
    PROV_E_INVALID_API_KEY,       /* 401 */
    PROV_E_USER_BLOCKED,          /* 403 */
    PROV_E_NOT_FOUND,             /* 404, a path the service does not serve */
    PROV_E_MODEL_NOT_FOUND,       /* 404 */
    PROV_E_METHOD_NOT_ALLOWED,    /* 405 */
    PROV_E_REQUEST_TOO_LARGE,     /* 413 */
    PROV_E_UNSUPPORTED_MEDIA_TYPE,/* 415 */
    PROV_E_INSUFFICIENT_CREDITS,  /* 402 */
    PROV_E_KEY_BUDGET_EXCEEDED,   /* 429 API_KEY_CREDIT_BUDGET_EXCEEDED */
    PROV_E_QUOTA_EXCEEDED,        /* 429 SUBSCRIPTION_QUOTA_EXCEEDED */
    PROV_E_IDENTITY_ALREADY_LINKED, /* 409 */
    PROV_E_NOT_SIGNED_IN,         /* 401, a cabinet request without a live session */
    PROV_E_CROSS_SITE,            /* 403, a state-changing cabinet request from another site */
    PROV_E_LAST_IDENTITY,         /* 409, unlinking the user's last way to sign in */
    PROV_E_KEY_NOT_FOUND,         /* 404, a cabinet key id that is not one of the user's keys */
    PROV_E_INTERNAL,              /* 500 */
    PROV_E_GATEWAY_ERROR,         /* 502 */
    PROV_E_SERVICE_UNAVAILABLE,   /* 503 (database, schema, configuration) */
    PROV_E_MODEL_NOT_PRICED,      /* 503, the model has no input/output rate yet */
    PROV_E_GATEWAY_TIMEOUT,       /* 504 */
    PROV_E_STREAM_MAX_DURATION,   /* 504, a stream that reached ProviderStreamMaxDuration */
    /* The model's own conditions, passed on from the gateway under the codes
     * clients act on (OpenAI's; Anthropic's type names in that family). */
    PROV_E_CONTEXT_LENGTH,        /* 400 context_length_exceeded */
    PROV_E_UPSTREAM_RATE_LIMIT,   /* 429 rate_limit_exceeded, the gateway's 429 */
    PROV_E_UPSTREAM_OVERLOADED,   /* 503 (Anthropic: 529) server_is_overloaded */
    /* A key's own controls (prov_key_controls.h), checked right after the key. */
    PROV_E_KEY_EXPIRED,           /* 401 API_KEY_EXPIRED */
    PROV_E_MODEL_NOT_ALLOWED,     /* 403, a model outside the key's list */
    PROV_E_ADDRESS_NOT_ALLOWED,   /* 403, a client address outside the key's CIDRs */
    PROV_E_KEY_RATE_LIMITED,      /* 429 API_KEY_RATE_LIMITED, the key's rpm */
    PROV_E_KEY_IN_FLIGHT_LIMIT,   /* 429 API_KEY_IN_FLIGHT_LIMIT, the key's max_in_flight */
    PROV_E_KEY_NAME_TAKEN,        /* 409, another live key of the user has the name */
    PROV_E__COUNT
} prov_errcode_e;

typedef struct prov_errinfo_t {
    const char *code;            /* wire code, e.g. "API_KEY_CREDIT_BUDGET_EXCEEDED" */
    int status;                  /* HTTP status */
    const char *openai_type;     /* error.type in the OpenAI family */
    const char *anthropic_type;  /* error.type in the Anthropic family */
    int anthropic_status;        /* the Anthropic family's status when it differs, else 0 */
} prov_errinfo_t;

typedef struct prov_error_t {
    prov_errcode_e code;
    const char *message;         /* for humans; never a secret or an internal URL */
    const char *param;           /* the offending request field, or NULL */
    apr_int64_t retry_after;     /* seconds for Retry-After; 0 = none */
} prov_error_t;

/* Returns the table row for code (never NULL for a valid code). */
const prov_errinfo_t *prov_error_info(prov_errcode_e code);
/* The HTTP status of code in a family (anthropic: nonzero for Messages). */
int prov_error_status(prov_errcode_e code, int anthropic);
/* Returns the table row whose wire code is name, or NULL. */
const prov_errinfo_t *prov_error_by_name(const char *name);
/* Makes an error in p; param may be NULL. */
prov_error_t *prov_error_make(apr_pool_t *p, prov_errcode_e code, const char *param,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* {"error":{"message","type","param","code"}} */
const char *prov_error_openai_json(const prov_error_t *e, apr_pool_t *p);
/* {"type":"error","error":{"type","message","code"}} */
const char *prov_error_anthropic_json(const prov_error_t *e, apr_pool_t *p);

#endif
