/* prov_responses_stream_int.h: the Responses stream translator's state and
 * what its files call of one another, each only down the list:
 *   prov_responses_stream.c  the stream (prov_responses.h): feeds the SSE
 *                            parser, picks a reader and an emitter per chunk,
 *                            ends the response;
 *   prov_responses_fast.c    reads a chunk with the scanner (prov_json_scan.h),
 *   prov_responses_jsonc.c   or, when the scanner does not plainly recognise
 *                            it, with json-c, and applies it through
 *   prov_responses_ops.c     the operations: items and parts opened, filled
 *                            and closed, each event written by s->em, one of
 *   prov_responses_events.c  the emitters (prov_resp_emitter_t): as text
 *                            (prov_jwrite.h), the fast path, or
 *   prov_responses_tree.c    as json-c trees, as the translator always did;
 *   prov_responses_state.c   the state both emitters call down into: kept
 *                            items, usage, the event handed on.
 * Both emitters write the same bytes (tests/fuzz/fuzz_responses_stream.c
 * compares them), so a stream may mix the two. scripts/calls.sh (run by
 * every `make`) checks that no file calls one that calls it back. Not for
 * callers outside core/transport/prov_responses*.c (and the tests). */
#ifndef PROV_RESPONSES_STREAM_INT_H
#define PROV_RESPONSES_STREAM_INT_H

#include "prov_responses_int.h"
#include "prov_jwrite.h"
#include "prov_sse.h"

typedef struct prov_resp_emitter_t prov_resp_emitter_t;

/* A tool call of the gateway's, by its index in the chunks. */
typedef struct prov_resp_call_t {
    int index;                /* output_index; -1 until opened */
    const char *id;           /* item id */
    const char *call_id, *flat;
    prov_jwrite_t args;       /* the arguments so far (freed by the stream's cleanup:
                               * calls move when the array grows) */
    int custom;
} prov_resp_call_t;

/* A finished output item's JSON (p NULL: none at that index). */
typedef struct prov_resp_span_t {
    const char *p;
    apr_size_t len;
} prov_resp_span_t;

/* How a response object ends: its event's type, the incomplete reason or
 * the error (code NULL when none), and the usage (shown when usage is
 * non-zero; credits when charge >= 0). */
typedef struct prov_resp_end_t {
    const char *type, *reason, *code, *message;
    int usage;
    prov_micro_t charge;
} prov_resp_end_t;

struct prov_resp_stream_t {
    const prov_resp_req_t *req;
    const char *resp_id, *public_id;
    apr_int64_t created_at;
    prov_resp_emit_fn *emit;
    void *baton;
    apr_pool_t *p, *scratch;
    prov_sse_parser_t *parser;
    apr_int64_t seq;
    int finished;
    const char *finish_reason;
    prov_resp_usage_t usage;    /* the last readable usage report */
    apr_int64_t usage_reports;  /* readable usage reports so far */
    int usage_bad;              /* usage reports that could not be read */
    apr_uint64_t usage_bytes;   /* out_bytes after the chunk of the last readable
                                 * report: output of later chunks (chunk_bytes
                                 * above it) makes the report partial */
    apr_uint64_t chunk_bytes;   /* out_bytes after the last chunk (a custom tool
                                 * call's input counts later, at its close) */
    int n_items;
    apr_array_header_t *items;  /* prov_resp_span_t by output_index */
    /* the open message item: msg_index < 0 when none */
    int msg_index, part_index, part_refusal, n_parts;
    const char *msg_id;
    prov_jwrite_t parts;        /* its finished parts' JSON, comma-separated */
    prov_jwrite_t text;         /* the open part's text */
    apr_array_header_t *calls;  /* prov_resp_call_t by the gateway's tool-call index */
    prov_gwerror_t gw_error;    /* an error chunk of the gateway's, when gw_failed */
    int gw_failed;
    apr_uint64_t out_bytes;     /* output text put into the events */
    apr_uint64_t sent_bytes;    /* of which written to the client (with an out
                                 * buffer: prov_resp_stream_written) */
    prov_jwrite_t ev;           /* the event being written as text */
    prov_sse_buf_t *out;        /* where events go instead of emit, or NULL */
    prov_jwrite_t ow;           /* the event being written at out's end */
    prov_jwrite_t dec;          /* a string decoded from a chunk */
    const prov_resp_emitter_t *em; /* how the events are written: as text, or as
                                 * json-c trees for a chunk json-c read */
    int tree_only;              /* every chunk read with json-c (the tests' reference) */
    apr_int64_t n_fast, n_tree; /* chunks read by each path */
};

/* ---- the emitters: one table per way of writing the events ------------------
 * The same events, the same bytes: prov_resp_text_emitter
 * (prov_responses_events.c) writes them as text, prov_resp_tree_emitter
 * (prov_responses_tree.c) builds them as json-c trees and prints them. The
 * operations (prov_responses_ops.c) call the one in s->em, which the stream
 * (prov_responses_stream.c) sets for each chunk by the reader that took it;
 * an emitter calls only down, into the state (prov_responses_state.c). */
struct prov_resp_emitter_t {
    const char *name;
    /* response.created and response.in_progress. */
    apr_status_t (*created)(prov_resp_stream_t *s);
    /* output_item.added for the open message. */
    apr_status_t (*msg_added)(prov_resp_stream_t *s);
    /* content_part.added for the open part. */
    apr_status_t (*part_added)(prov_resp_stream_t *s);
    /* output_text.delta or refusal.delta of n bytes. */
    apr_status_t (*delta)(prov_resp_stream_t *s, const char *t, apr_size_t n);
    /* The open part's JSON appended to s->parts, then output_text.done (or
     * refusal.done) and content_part.done. */
    apr_status_t (*part_done)(prov_resp_stream_t *s);
    /* The open message's item kept, then output_item.done. */
    apr_status_t (*msg_done)(prov_resp_stream_t *s);
    /* output_item.added for call c, just opened. */
    apr_status_t (*call_added)(prov_resp_stream_t *s, const prov_resp_call_t *c);
    /* function_call_arguments.delta of n bytes for call c. */
    apr_status_t (*args_delta)(prov_resp_stream_t *s, const prov_resp_call_t *c,
                               const char *a, apr_size_t n);
    /* The end of open call c: function_call_arguments.done (or, for a custom
     * tool call, custom_tool_call_input.delta and .done), its item kept,
     * c->index -1, output_item.done. The text emitter's: function calls only
     * (a custom call's input is read from its arguments with json-c). */
    apr_status_t (*close_call)(prov_resp_stream_t *s, prov_resp_call_t *c);
    /* The last event: response.completed, .incomplete or .failed. */
    apr_status_t (*end)(prov_resp_stream_t *s, const prov_resp_end_t *e);
};

extern const prov_resp_emitter_t prov_resp_text_emitter;
extern const prov_resp_emitter_t prov_resp_tree_emitter;

/* ---- prov_responses_state.c: the state both emitters call down into --------- */

/* An event (encoded) to the client: into out, or to emit. */
apr_status_t prov_resp_emit(prov_resp_stream_t *s, const char *event, apr_size_t len);
/* Keeps a finished item's JSON at output index i (copied). */
void prov_resp_item_keep(prov_resp_stream_t *s, int i, const char *json, apr_size_t len);
/* The finished items as a JSON array, appended to w. */
void prov_resp_output_write(const prov_resp_stream_t *s, prov_jwrite_t *w);
/* A chunk's usage report as prov_chat_usage (or _scan) read it (rv):
 * APR_SUCCESS takes it, another result counts an unreadable report. */
void prov_resp_usage_take(prov_resp_stream_t *s, const prov_chat_usage_t *c, apr_status_t rv);
/* The call of the gateway's index idx (0 to 1024), made (not opened) when new. */
prov_resp_call_t *prov_resp_call_at(prov_resp_stream_t *s, int idx);

/* ---- prov_responses_ops.c: items and parts opened, filled and closed -------- */

/* response.created and response.in_progress, once. */
apr_status_t prov_resp_op_start(prov_resp_stream_t *s);
/* n bytes of text (refusal text when refusal is non-zero): the message
 * item and part opened as needed, then the delta. */
apr_status_t prov_resp_op_text(prov_resp_stream_t *s, const char *t, apr_size_t n, int refusal);
/* Closes the open message item (its open part first). */
apr_status_t prov_resp_op_close_message(prov_resp_stream_t *s);
/* Opens call c (the message closes first): its item is added. id and name
 * (the gateway's call id and flat name, idn and namen bytes) may be NULL. */
apr_status_t prov_resp_op_open_call(prov_resp_stream_t *s, prov_resp_call_t *c, const char *id,
                                    apr_size_t idn, const char *name, apr_size_t namen);
/* Closes an open call: its last events and output_item.done (a custom
 * tool call's through json-c: its input is read from the arguments). */
apr_status_t prov_resp_op_close_call(prov_resp_stream_t *s, prov_resp_call_t *c);
/* n bytes of arguments for the open call c (a delta event unless custom). */
apr_status_t prov_resp_op_args(prov_resp_stream_t *s, prov_resp_call_t *c, const char *a,
                               apr_size_t n);

/* ---- the readers: a chunk read and applied through the operations ---------- */

/* prov_responses_fast.c: reads one chunk with the scanner and applies it:
 * non-zero with *rv when it did, zero (nothing done) when the chunk is for
 * json-c. */
int prov_resp_fast_chunk(prov_resp_stream_t *s, const char *data, apr_size_t len,
                         apr_status_t *rv);
/* prov_responses_jsonc.c: reads one chunk with json-c and applies it
 * (APR_EINVAL: not a chunk, or the gateway's error chunk, kept in
 * s->gw_error). */
apr_status_t prov_resp_jsonc_chunk(prov_resp_stream_t *s, const char *data, apr_size_t len);

/* ---- prov_responses_stream.c: the stream (prov_responses.h), and for the
 * tests ------------------------------------------------------------------------ */

/* For the tests that compare the two paths: every chunk of s read with
 * json-c and every event built as a tree (the reference). */
void prov_resp_stream_tree_only(prov_resp_stream_t *s);
/* How many chunks each path read so far. */
void prov_resp_stream_paths(const prov_resp_stream_t *s, apr_int64_t *fast, apr_int64_t *tree);

#endif
