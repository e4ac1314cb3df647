/* prov_metrics.h: the server's counters (docs/internals/metrics.md), kept
 * in one block of memory that the module puts in shared memory so that
 * every child of the server adds to the same figures, and their rendering
 * in Prometheus's text format 0.0.4. Every update is a relaxed atomic add
 * on a fixed slot: no lock, no allocation, nothing that can fail. The
 * label space is fixed: transports, HTTP status classes, a bounded table
 * of model ids (filled as the catalog's models are first used, then an
 * "other" bucket), the checks that refuse, the gateway's error classes. A
 * NULL prov_metrics_t * makes every update a no-op (the CLI, the tests). */
#ifndef PROV_METRICS_H
#define PROV_METRICS_H

#include "prov_common.h"
#include "prov_ratelimit.h"

typedef struct prov_metrics_t prov_metrics_t;

#define PROV_MX_MODELS 64           /* model ids with a label of their own */
#define PROV_MX_MODEL_LEN 64        /* longer ids count as "other" */

typedef enum {
    PROV_MX_CHAT = 0, PROV_MX_MESSAGES, PROV_MX_RESPONSES, PROV_MX_TRANSPORTS
} prov_mx_transport_e;

/* Why a request was refused before the gateway. */
typedef enum {
    PROV_MX_REFUSED_KEY = 0,     /* missing, malformed or unknown key */
    PROV_MX_REFUSED_BLOCKED,     /* the key's user is blocked */
    PROV_MX_REFUSED_BUDGET,      /* the key's weekly budget */
    PROV_MX_REFUSED_WINDOW,      /* a plan's 5-hour or 7-day window */
    PROV_MX_REFUSED_BALANCE,     /* the account's remainder */
    PROV_MX_REFUSED_RATE_LIMIT,  /* + prov_rl_class_e: an anonymous endpoint's limit */
    PROV_MX_REFUSALS = PROV_MX_REFUSED_RATE_LIMIT + PROV_RL_CLASSES
} prov_mx_refusal_e;

typedef enum {
    PROV_MX_GW_TIMEOUT = 0,      /* no answer in time */
    PROV_MX_GW_UNREACHABLE,      /* no connection, or it broke */
    PROV_MX_GW_AUTH,             /* it refused our service token */
    PROV_MX_GW_RATE_LIMIT,       /* its 429 */
    PROV_MX_GW_OVERLOADED,       /* its 529 */
    PROV_MX_GW_CLIENT,           /* another 4xx about the request */
    PROV_MX_GW_SERVER,           /* a 5xx */
    PROV_MX_GW_STREAM,           /* an error event inside a stream */
    PROV_MX_GW_MALFORMED,        /* an answer that could not be read */
    PROV_MX_GW_ERRORS
} prov_mx_gwerror_e;

/* Scalars: counters (_TOTAL) and gauges. */
typedef enum {
    PROV_MX_CREDITS_PLAN = 0, PROV_MX_CREDITS_BALANCE,       /* micro-credits */
    PROV_MX_TOKENS_INPUT, PROV_MX_TOKENS_OUTPUT, PROV_MX_TOKENS_CACHE,
    PROV_MX_TOKENS_REASONING,
    PROV_MX_HOLDS_LEASE, PROV_MX_HOLDS_DATABASE,              /* holds taken */
    PROV_MX_HOLDS_IN_FLIGHT, PROV_MX_HELD_IN_FLIGHT,          /* gauges; micro-credits */
    PROV_MX_INFER_STARTED, PROV_MX_INFER_IN_FLIGHT,           /* counter, gauge */
    PROV_MX_STREAMS_OPEN,                                     /* gauge */
    PROV_MX_JOURNAL_UNWRITTEN,                                /* gauge */
    PROV_MX_WRITERS,                                          /* gauge */
    PROV_MX_SIGNINS, PROV_MX_OAUTH_TOKENS,
    PROV_MX_SCALARS
} prov_mx_scalar_e;

typedef enum {
    PROV_MX_H_GATEWAY = 0,       /* gateway call duration, microseconds */
    PROV_MX_H_DB_WAIT,           /* database connection wait, microseconds */
    PROV_MX_H_BATCH,             /* billing batch size, operations */
    PROV_MX_HISTOGRAMS
} prov_mx_hist_e;

#define PROV_MX_BUCKETS_MAX 16

/* Bytes the block needs. */
apr_size_t prov_metrics_size(void);
/* Zeroes the block at mem (prov_metrics_size() bytes, 8-aligned) and
 * returns it as counters. */
prov_metrics_t *prov_metrics_init(void *mem);

/* The process's counters, for the core's own updates (billing batches, the
 * journal, the gateway): set by the module in each child; NULL until. */
void prov_metrics_use(prov_metrics_t *m);
prov_metrics_t *prov_metrics_current(void);

/* The transport named as the ledger names it ("chat", "messages",
 * "responses"); PROV_MX_TRANSPORTS for anything else. */
prov_mx_transport_e prov_metrics_transport(const char *name);
/* A finished request: its transport, model id (NULL: none was found) and
 * HTTP status. */
void prov_metrics_request(prov_metrics_t *m, prov_mx_transport_e t, const char *model,
                          int status);
void prov_metrics_add(prov_metrics_t *m, prov_mx_scalar_e s, apr_int64_t v);
void prov_metrics_refused(prov_metrics_t *m, prov_mx_refusal_e why);
void prov_metrics_gateway_error(prov_metrics_t *m, prov_mx_gwerror_e cls);
void prov_metrics_observe(prov_metrics_t *m, prov_mx_hist_e h, apr_int64_t v);

/* A scalar's value, or a request count (for /server-status and the tests). */
apr_int64_t prov_metrics_get(const prov_metrics_t *m, prov_mx_scalar_e s);

/* The bucket index of v among n upper bounds (n: above them all, +Inf). */
int prov_metrics_bucket(const apr_int64_t *bounds, int n, apr_int64_t v);

/* Every metric in Prometheus's text format 0.0.4, HELP and TYPE lines
 * included; series that are 0 and carry a model label are left out. */
const char *prov_metrics_render(const prov_metrics_t *m, apr_pool_t *p);

#endif
