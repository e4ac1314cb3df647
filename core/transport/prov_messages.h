/* prov_messages.h: the Messages transport's rules, without httpd: the
 * anthropic-version header, validating and normalising a request so that the
 * gateway's native /v1/messages accepts what coding-agent clients send
 * (cache_control stripped, thinking dropped, blocks other than text, tool_use
 * and tool_result refused in a message and replaced by a note inside a
 * tool_result, search results there made text, mid-conversation system
 * messages folded into the system text), token kinds from Anthropic
 * usage, the non-streamed answer the client gets, and the relay of a streamed
 * answer event by event (usage read on the way, the public model id and the
 * credits written into it). */
#ifndef PROV_MESSAGES_H
#define PROV_MESSAGES_H

#include "prov_common.h"
#include "prov_error.h"
#include "prov_gwerror.h"
#include "prov_json.h"
#include "prov_json_scan.h"
#include "prov_relay.h"
#include "prov_money.h"
#include "prov_estimate.h"
#include "prov_sse.h"

/* The version the gateway is always called with: later date versions that
 * clients send are served with its semantics. */
#define PROV_MESSAGES_VERSION "2023-06-01"

/* What replaces a non-text block (image, document, ...) inside a tool_result. */
#define PROV_MESSAGES_NOTE_FMT \
    "[%s content is not supported by this service and was removed]"

typedef struct prov_messages_req_t {
    json_object *body;          /* the normalised request; owned by p; NULL when it
                                 * was read without a tree (raw, below) */
    const char *raw;            /* the client's body as it is, when body is NULL: its
                                 * object from raw to raw_end, its model's value at
                                 * model_val (model_len bytes, quotes included) */
    const char *raw_end, *model_val;
    apr_size_t model_len;
    const char *cap_val;        /* raw: max_tokens' value */
    apr_size_t cap_len;
    const char *model;          /* public model id */
    apr_int64_t max_tokens;     /* -1 when absent (count_tokens) */
    int stream;
    apr_size_t prompt_bytes;    /* text, tool inputs and tool definitions */
    int n_messages;             /* after folding and dropping */
    int n_dropped;              /* thinking blocks dropped from the history */
    int n_replaced;             /* image/document blocks replaced in tool results */
} prov_messages_req_t;

/* APR_SUCCESS when v is an anthropic-version this service serves: a date
 * YYYY-MM-DD not before 2023-06-01. APR_EINVAL when malformed, APR_ENOTIMPL
 * when it is an earlier date. */
apr_status_t prov_messages_version_check(const char *v);

/* Parses, validates and normalises a request body. count_tokens: the body of
 * /v1/messages/count_tokens (max_tokens not required; fields that endpoint
 * does not take are dropped). APR_SUCCESS with *req, or APR_EINVAL with *err
 * (400 INVALID_REQUEST naming the field). */
apr_status_t prov_messages_parse(prov_messages_req_t **req, prov_error_t **err,
                                 const char *body, apr_size_t len, int count_tokens,
                                 apr_pool_t *p);
/* The same through a json-c tree always (prov_messages_parse's path for
 * what the fast path below declines, and count_tokens'). */
apr_status_t prov_messages_parse_json(prov_messages_req_t **req, prov_error_t **err,
                                      const char *body, apr_size_t len, int count_tokens,
                                      apr_pool_t *p);
/* prov_messages_parse's fast path for /v1/messages (prov_messages_fast.c):
 * non-zero when body is plainly a request prov_messages_parse accepts with
 * nothing to normalise, *req then filled with body kept raw; zero to let the
 * json-c path decide. */
int prov_messages_parse_fast(prov_messages_req_t *req, const char *body, apr_size_t len,
                             apr_pool_t *p);
/* The client's raw body (a request the fast path took) with its model's
 * value replaced by upstream_id, which must need no escaping, and, when
 * cap > 0, max_tokens' by cap. */
const char *prov_messages_upstream_raw(const prov_messages_req_t *req,
                                       const char *upstream_id, apr_int64_t cap,
                                       apr_pool_t *p);
/* The JSON sent to the gateway: the normalised request with model =
 * upstream_id and, when cap > 0, max_tokens = cap. */
const char *prov_messages_upstream_body(const prov_messages_req_t *req,
                                        const char *upstream_id, apr_int64_t cap,
                                        apr_pool_t *p);
/* A local input-token estimate (for count_tokens when the gateway lacks it). */
apr_int64_t prov_messages_estimate_tokens(const prov_messages_req_t *req);

/* Token kinds from an Anthropic usage object (README "Pricing"): cache =
 * cache_read_input_tokens, input = input_tokens + cache_creation_input_tokens,
 * output = output_tokens, reasoning = 0. Read strictly
 * (docs/internals/billing.md, "How usage reports are read"): input_tokens and
 * output_tokens whole numbers >= 0, the two cache counts the same or absent
 * (or null: 0). APR_ENOENT when usage is NULL (absent or null), APR_EINVAL
 * when it cannot be read. */
apr_status_t prov_messages_tokens(prov_tokens_t *t, json_object *usage);
/* Reads a successful non-streamed gateway answer: APR_EINVAL when it is not a
 * message object, APR_ENOENT when it has no usage, PROV_USAGE_UNREADABLE
 * when its usage cannot be read (*answer is set in both cases). */
apr_status_t prov_messages_read_answer(json_object **answer, prov_tokens_t *t,
                                       const char *body, apr_size_t len, apr_pool_t *p);
/* The same without a tree, for relaying (prov_json_scan.h): APR_SUCCESS
 * with *t and *rl when the answer is plainly a message with readable usage;
 * APR_EGENERAL otherwise (prov_messages_read_answer then decides). */
apr_status_t prov_messages_relay_read(prov_relay_t *rl, prov_tokens_t *t,
                                      const char *body, apr_size_t len);
/* The client's answer: model = public_id, usage.credits = charge (decimal). */
const char *prov_messages_render(json_object *answer, const char *public_id,
                                 prov_micro_t charge, apr_pool_t *p);

/* ---- streaming relay ---- */

/* Receives one encoded SSE event for the client; a non-success return stops
 * the relay (the client went away) and is returned by the feed. The bytes are
 * valid only during the call. */
typedef apr_status_t prov_messages_emit_cb(void *baton, const char *event, apr_size_t len);

typedef struct prov_messages_stream_t prov_messages_stream_t;

/* A relay for one streamed answer: events are passed on in order, message_start
 * gets model = public_id; message_delta and a gateway error event get
 * usage.credits, the charge prov_messages_stream_bill gives at that point (for
 * a complete answer, or for one broken by the gateway), counting the output
 * of every event put before it. Nothing is relayed after message_stop or an
 * error, and after message_delta only message_stop, ping and error (content
 * after the told figure is dropped: prov_messages_stream_dropped). The
 * usage of message_start (input_tokens required) and of
 * message_delta (output_tokens required) is read as prov_messages_tokens
 * reads it; its counts are running totals (a count never goes down).
 * input_estimate, max_output and hold are the
 * request's (the estimate's input when the gateway reports none, the output
 * cap a report is judged by, and the charge's cap). */
prov_messages_stream_t *prov_messages_stream_create(const char *public_id,
                                                    const prov_rates_t *effective,
                                                    apr_int64_t input_estimate,
                                                    apr_int64_t max_output,
                                                    prov_micro_t hold,
                                                    prov_messages_emit_cb *emit, void *baton,
                                                    apr_pool_t *p);
/* Events are appended to out (encoded, for the caller to send) instead of
 * going through emit, which is then never called: events the relay passes
 * unchanged are copied there once, as the gateway's own bytes. */
void prov_messages_stream_set_out(prov_messages_stream_t *s, prov_sse_buf_t *out);
/* Feeds gateway bytes (pieces of any size). */
apr_status_t prov_messages_stream_feed(prov_messages_stream_t *s, const char *buf,
                                       apr_size_t len);
/* Whether events are read without json-c where prov_json_scan.h plainly
 * recognises them (on from creation); off, every event takes the json-c
 * path. For the tests that compare the two (tests/fuzz/fuzz_messages_relay.c,
 * tests/unit/test_prov_messages_relay.c). */
void prov_messages_stream_set_fast(prov_messages_stream_t *s, int on);
/* Number of events relayed so far. */
int prov_messages_stream_events(const prov_messages_stream_t *s);
/* Number of events dropped because they came after message_delta. */
int prov_messages_stream_dropped(const prov_messages_stream_t *s);
/* Non-zero once message_stop was relayed. */
int prov_messages_stream_complete(const prov_messages_stream_t *s);
/* Non-zero when the gateway sent an error event. The client got an error
 * event of ours instead (prov_gwerror_anthropic_event), never the gateway's,
 * unless it came first (prov_messages_stream_early_error). */
int prov_messages_stream_failed(const prov_messages_stream_t *s);
/* The gateway's error event, or NULL. Its text is for the log only, masked. */
const prov_gwerror_t *prov_messages_stream_error(const prov_messages_stream_t *s);
/* The gateway's error event when it came before any other event: then it
 * was not relayed (nothing was), and the client is to be answered with the
 * error's HTTP status instead; else NULL. */
const prov_gwerror_t *prov_messages_stream_early_error(const prov_messages_stream_t *s);
/* The usage reported so far into *t; returns 0 when none was reported. */
int prov_messages_stream_tokens(const prov_messages_stream_t *s, prov_tokens_t *t);
/* What the relay delivered: usage (final once message_delta carried a
 * readable one), the unreadable reports, output text written to the client
 * (with an out buffer, once prov_messages_stream_written said so) and
 * queued, started, complete. */
void prov_messages_stream_delivery(const prov_messages_stream_t *s, prov_delivery_t *d);
/* Everything put into the out buffer so far reached the client. */
void prov_messages_stream_written(prov_messages_stream_t *s);
/* The settlement of the stream by prov_estimate's rule, for an answer that is
 * complete or not and a client that left or not: *how, the tokens *t, and the
 * charge returned (the figure message_delta or an error event told). */
prov_micro_t prov_messages_stream_bill(const prov_messages_stream_t *s, int complete,
                                       int client_left, prov_bill_e *how, prov_tokens_t *t);

/* The ping event ("event: ping" with {"type":"ping"}). */
const char *prov_messages_ping_event(void);
/* An error event in the stream (for a stream that cannot be completed), with
 * usage.credits = charge, what the request is charged. */
const char *prov_messages_error_event(const prov_error_t *e, prov_micro_t charge,
                                      apr_pool_t *p);

#endif
