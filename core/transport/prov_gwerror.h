/* prov_gwerror.h: what a gateway's error may tell a client. A gateway error
 * (the body of a non-200 answer, an `error` event in a Messages stream, an
 * `error` chunk in a Chat Completions stream) is read in either family's
 * shape, but only this much of it reaches the client: the class of its HTTP
 * status, a kind from a fixed list (with that kind's allow-listed type
 * name), token counts read as digits from a context-length refusal, and a
 * message written here. The gateway's own text is kept for the server's log
 * only: mask it with prov_redact before logging it, because a gateway may put
 * its address or a token into it. */
#ifndef PROV_GWERROR_H
#define PROV_GWERROR_H

#include "prov_common.h"
#include "prov_error.h"

/* The gateway text kept for the log (bytes; prov_redact bounds it again). */
#define PROV_GWERROR_TEXT_MAX 1000

typedef enum {
    PROV_GWERR_UNKNOWN = 0,      /* nothing recognised */
    PROV_GWERR_INVALID_REQUEST,  /* a 4xx about the request */
    PROV_GWERR_CONTEXT_LENGTH,   /* the prompt does not fit the model's context window */
    PROV_GWERR_RATE_LIMIT,       /* 429, rate_limit_error */
    PROV_GWERR_OVERLOADED,       /* 529, overloaded_error */
    PROV_GWERR_AUTH,             /* 401/403: the gateway refused our service token */
    PROV_GWERR_NOT_FOUND,        /* 404 */
    PROV_GWERR_SERVER            /* 5xx, api_error, server_error */
} prov_gwerr_kind_e;

typedef struct prov_gwerror_t {
    int status;                  /* the gateway's HTTP status; 0: an error inside a stream */
    prov_gwerr_kind_e kind;
    const char *type;            /* the kind's allow-listed Anthropic type name */
    const char *text;            /* the gateway's own message (or body), raw and bounded;
                                    NULL when none. Never for a client. */
    apr_int64_t prompt_tokens;   /* from "N tokens > M" in a context-length refusal, else 0 */
    apr_int64_t limit_tokens;
    apr_int64_t retry_after;     /* seconds the gateway asked to wait (its Retry-After), else 0 */
    int early;                   /* an error inside a stream (status 0) before any output:
                                    answered as a refusal (nothing was charged) */
} prov_gwerror_t;

/* The longest Retry-After passed on (seconds); a longer one is not kept. */
#define PROV_GWERROR_RETRY_MAX 3600

/* Reads an error body or event data (either family's shape, or no JSON at
 * all) with the gateway's status (0 for an error inside a stream) into *e;
 * the text is copied into p. */
void prov_gwerror_read(prov_gwerror_t *e, int status, const char *body, apr_size_t len,
                       apr_pool_t *p);

/* Takes the gateway's Retry-After header (NULL: none): whole seconds from 1
 * to PROV_GWERROR_RETRY_MAX, else ignored (an HTTP date is not read). */
void prov_gwerror_retry_after(prov_gwerror_t *e, const char *header);

/* The error the client gets, in its own words. The model's own conditions
 * keep their meaning, under the codes clients act on: a context-length
 * refusal is context_length_exceeded (400) saying "prompt is too long" (with
 * the counts when known), the gateway's 429 is rate_limit_exceeded (429,
 * Retry-After the gateway's or 1 s, "try again in N s"), an overload
 * (529, or a 5xx of type overloaded_error or code server_is_overloaded) is
 * server_is_overloaded (503; 529 in the Anthropic family; Retry-After when
 * the gateway gave one). Another request refusal (4xx) is 400
 * INVALID_REQUEST, the rest 502 GATEWAY_ERROR naming the gateway's HTTP
 * status. Inside a stream (status 0) the same codes, the rest
 * GATEWAY_ERROR, with a message saying the answer was interrupted. */
prov_error_t *prov_gwerror_client(const prov_gwerror_t *e, apr_pool_t *p);

/* The `error` event a Messages stream client gets for e:
 * {"type":"error","error":{"type":<allow-listed type>,"message":...,"code":...}}. */
const char *prov_gwerror_anthropic_event(const prov_gwerror_t *e, apr_pool_t *p);

#endif
