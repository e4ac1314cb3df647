/* prov_responses.h: the Responses transport's rules, without httpd (docs/internals/transports.md):
 * a /v1/responses request validated and translated into the gateway's Chat
 * Completions body (input items, instructions, function, custom and
 * namespace tools; hosted tools dropped and named), the gateway's answer
 * translated back into a response object, the streamed answer translated
 * chunk by chunk into the `response.*` event family, and the rate-limit
 * headers that Codex reads for a plan's 5-hour and 7-day windows. */
#ifndef PROV_RESPONSES_H
#define PROV_RESPONSES_H

#include "prov_common.h"
#include "prov_error.h"
#include "prov_gwerror.h"
#include "prov_json.h"
#include "prov_billing.h"
#include "prov_estimate.h"
#include "prov_sse.h"

/* The longest x-provider-dropped-tools value: a longer list ends with "...". */
#define PROV_RESP_DROPPED_MAX 512

/* A tool as the gateway sees it (always a function) and as the client knows it. */
typedef struct prov_resp_tool_t {
    const char *flat;       /* the function name sent to the gateway */
    const char *name;       /* the name the client declared */
    const char *ns;         /* its namespace group, or NULL */
    int custom;             /* a custom (freeform) tool: one string argument "input" */
} prov_resp_tool_t;

typedef struct prov_resp_req_t {
    json_object *upstream;        /* the Chat Completions body (model not yet set); owned by p;
                                   * NULL when the fast path took the request */
    const char *fast_body;        /* the fast path's: that body's text up to its model */
    const char *model;            /* public model id */
    apr_int64_t max_output_tokens;/* -1 when absent */
    int stream;
    apr_size_t prompt_bytes;      /* text and tool-definition bytes, for the input estimate */
    int n_messages;
    const char *dropped_tools;    /* "web_search,tool_search" (tokens only, at most
                                   * PROV_RESP_DROPPED_MAX bytes), or NULL when none */
    apr_array_header_t *tools;    /* prov_resp_tool_t, in the order sent upstream */
    const char *instructions;     /* echoed in the response object, or NULL */
    int parallel_tool_calls;
} prov_resp_req_t;

/* Parses, validates and translates a request body. APR_SUCCESS with *req, or
 * APR_EINVAL with *err (400 INVALID_REQUEST naming the field). The fast path
 * first (prov_responses_request.c), then the json-c path. */
apr_status_t prov_resp_parse(prov_resp_req_t **req, prov_error_t **err, const char *body,
                             apr_size_t len, apr_pool_t *p);
/* The fast path: non-zero with *req filled when it took the body (plainly a
 * conversation of text), which the json-c path takes alike; zero (*req
 * cleared) when it leaves the body to that path. */
int prov_resp_parse_fast(prov_resp_req_t *req, const char *body, apr_size_t len,
                         apr_pool_t *p);
/* The json-c path: the judge of every body. */
apr_status_t prov_resp_parse_json(prov_resp_req_t **req, prov_error_t **err, const char *body,
                                  apr_size_t len, apr_pool_t *p);
/* The JSON sent to the gateway: model = upstream_id, max_tokens = cap (when
 * cap <= 0: the client's max_output_tokens, if any); with req->stream also
 * stream:true and stream_options.include_usage. */
const char *prov_resp_upstream_body(const prov_resp_req_t *req, const char *upstream_id,
                                    apr_int64_t cap, apr_pool_t *p);
/* The tool the gateway called by its flat name, or NULL when unknown. */
const prov_resp_tool_t *prov_resp_tool_by_flat(const prov_resp_req_t *req, const char *flat);

/* The response object for a (non-streamed) chat completion answer: id,
 * object, created_at, status, model = public_id, output items, usage with
 * credits = charge. Returns its JSON text. */
const char *prov_resp_render(const prov_resp_req_t *req, json_object *answer,
                             const char *resp_id, const char *public_id,
                             apr_int64_t created_at, prov_micro_t charge, apr_pool_t *p);

/* The streamed answer. emit receives one encoded SSE event at a time; a
 * non-success return (the client went away) stops the stream and is
 * returned by the call that emitted. */
typedef apr_status_t prov_resp_emit_fn(void *baton, const char *event, apr_size_t len);
typedef struct prov_resp_stream_t prov_resp_stream_t;

prov_resp_stream_t *prov_resp_stream_create(const prov_resp_req_t *req, const char *resp_id,
                                            const char *public_id, apr_int64_t created_at,
                                            prov_resp_emit_fn *emit, void *baton,
                                            apr_pool_t *p);
/* Events encoded straight into out, after what it holds, instead of handed
 * to emit one at a time: the caller sends out's bytes (and empties it) when
 * it chooses. */
void prov_resp_stream_set_out(prov_resp_stream_t *s, prov_sse_buf_t *out);
/* Feeds bytes of the gateway's chat.completion.chunk stream; emits
 * response.created and response.in_progress first, then the item events.
 * APR_EINVAL when the gateway sent something that is not a chunk. */
apr_status_t prov_resp_stream_feed(prov_resp_stream_t *s, const char *buf, apr_size_t len);
/* Non-zero once the gateway finished the answer (a finish_reason or [DONE]). */
int prov_resp_stream_finished(const prov_resp_stream_t *s);
/* Non-zero once any event was emitted. */
int prov_resp_stream_started(const prov_resp_stream_t *s);
/* The token kinds of the usage the gateway reported: APR_ENOENT when none. */
apr_status_t prov_resp_stream_tokens(const prov_resp_stream_t *s, prov_tokens_t *t);
/* What the stream delivered: the usage (the last readable report: final,
 * or partial when output came after it), the unreadable reports, the output
 * text (text, refusal, tool names, arguments and custom tool input) written
 * to the client and the rest queued (with an out buffer, written once
 * prov_resp_stream_written said so), and whether anything was sent.
 * complete and client_left are the caller's to set. */
void prov_resp_stream_delivery(const prov_resp_stream_t *s, prov_delivery_t *d);
/* Everything put into the out buffer so far reached the client (the caller
 * wrote it): its output text counts as delivered. */
void prov_resp_stream_written(prov_resp_stream_t *s);
/* Closes the open items and emits response.completed (or .incomplete when the
 * model hit its output limit) with output and usage; credits = charge. */
apr_status_t prov_resp_stream_complete(prov_resp_stream_t *s, prov_micro_t charge);
/* Emits response.failed with error {code, message}; charge >= 0 is reported
 * as usage.credits. */
apr_status_t prov_resp_stream_fail(prov_resp_stream_t *s, const char *code, const char *message,
                                   prov_micro_t charge);
/* The number of events emitted so far (the next sequence_number). */
apr_int64_t prov_resp_stream_events(const prov_resp_stream_t *s);
/* The error chunk the gateway sent (which ended the stream), or NULL. Its
 * text is the gateway's: for the log only, masked. */
const prov_gwerror_t *prov_resp_stream_error(const prov_resp_stream_t *s);

/* Codex's rate-limit headers for the plan's windows (primary = 5 hours,
 * secondary = 7 days): x-codex-{primary,secondary}-{used-percent,
 * window-minutes,reset-at}. Nothing when w has no plan. */
void prov_resp_quota_headers(apr_table_t *headers, const prov_plan_windows_t *w,
                             apr_int64_t now, apr_pool_t *p);

#endif
