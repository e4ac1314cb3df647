/* prov_responses_stream_int.h: the Responses stream translator's state and
 * what its files call of one another. prov_responses_stream.c keeps the
 * state (items and parts opened and closed, sequence numbers, usage, the
 * output counted) and chooses, for each gateway chunk, how it is read and
 * how its events are written: prov_responses_fast.c reads a chunk with the
 * scanner (prov_json_scan.h) and prov_responses_events.c writes its events
 * as text (prov_jwrite.h); a chunk the scanner does not plainly recognise
 * goes to prov_responses_tree.c, which reads it with json-c and builds its
 * events as json-c trees, as the translator always did. Both write the same
 * bytes (tests/fuzz/fuzz_responses_stream.c compares them), so a stream
 * may mix the two. Not for callers outside core/transport/prov_responses*.c
 * (and the tests). */
#ifndef PROV_RESPONSES_STREAM_INT_H
#define PROV_RESPONSES_STREAM_INT_H

#include "prov_responses_int.h"
#include "prov_jwrite.h"
#include "prov_sse.h"

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
    int tree;                   /* events are built with json-c (a json-c chunk) */
    int tree_only;              /* every chunk read with json-c (the tests' reference) */
    apr_int64_t n_fast, n_tree; /* chunks read by each path */
};

/* ---- prov_responses_stream.c: the state's operations ------------------------ */

/* For the tests that compare the two paths: every chunk of s read with
 * json-c and every event built as a tree (the reference). */
void prov_resp_stream_tree_only(prov_resp_stream_t *s);
/* An event (encoded) to the client: into out, or to emit. */
apr_status_t prov_resp_emit(prov_resp_stream_t *s, const char *event, apr_size_t len);
/* How many chunks each path read so far. */
void prov_resp_stream_paths(const prov_resp_stream_t *s, apr_int64_t *fast, apr_int64_t *tree);

/* response.created and response.in_progress, once. */
apr_status_t prov_resp_op_start(prov_resp_stream_t *s);
/* n bytes of text (refusal text when refusal is non-zero): the message
 * item and part opened as needed, then the delta. */
apr_status_t prov_resp_op_text(prov_resp_stream_t *s, const char *t, apr_size_t n, int refusal);
/* Closes the open message item (its open part first). */
apr_status_t prov_resp_op_close_message(prov_resp_stream_t *s);
/* The call of the gateway's index idx (0 to 1024), made (not opened) when new. */
prov_resp_call_t *prov_resp_op_call(prov_resp_stream_t *s, int idx);
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
/* Keeps a finished item's JSON at output index i (copied). */
void prov_resp_item_keep(prov_resp_stream_t *s, int i, const char *json, apr_size_t len);
/* The finished items as a JSON array, appended to w. */
void prov_resp_output_write(const prov_resp_stream_t *s, prov_jwrite_t *w);

/* A chunk's usage report as prov_chat_usage (or _scan) read it (rv):
 * APR_SUCCESS takes it, another result counts an unreadable report. */
void prov_resp_usage_take(prov_resp_stream_t *s, const prov_chat_usage_t *c, apr_status_t rv);

/* ---- prov_responses_fast.c ------------------------------------------------- */

/* Reads one chunk with the scanner and applies it: non-zero with *rv when it
 * did, zero (nothing done) when the chunk is for json-c. */
int prov_resp_fast_chunk(prov_resp_stream_t *s, const char *data, apr_size_t len,
                         apr_status_t *rv);

/* ---- prov_responses_tree.c: the json-c path -------------------------------- */

/* Reads one chunk with json-c and applies it (APR_EINVAL: not a chunk, or
 * the gateway's error chunk, kept in s->gw_error). */
apr_status_t prov_resp_tree_chunk(prov_resp_stream_t *s, const char *data, apr_size_t len);

/* ---- the events, as json-c trees (prov_responses_tree.c) and as text
 * (prov_responses_events.c), the same bytes either way ----------------------- */

/* response.created and response.in_progress. */
apr_status_t prov_resp_tree_created(prov_resp_stream_t *s);
apr_status_t prov_resp_text_created(prov_resp_stream_t *s);
/* output_item.added for the open message. */
apr_status_t prov_resp_tree_msg_added(prov_resp_stream_t *s);
apr_status_t prov_resp_text_msg_added(prov_resp_stream_t *s);
/* content_part.added for the open part. */
apr_status_t prov_resp_tree_part_added(prov_resp_stream_t *s);
apr_status_t prov_resp_text_part_added(prov_resp_stream_t *s);
/* output_text.delta or refusal.delta of n bytes. */
apr_status_t prov_resp_tree_delta(prov_resp_stream_t *s, const char *t, apr_size_t n);
apr_status_t prov_resp_text_delta(prov_resp_stream_t *s, const char *t, apr_size_t n);
/* The open part's JSON appended to s->parts, then output_text.done (or
 * refusal.done) and content_part.done. */
apr_status_t prov_resp_tree_part_done(prov_resp_stream_t *s);
apr_status_t prov_resp_text_part_done(prov_resp_stream_t *s);
/* The open message's item kept, then output_item.done. */
apr_status_t prov_resp_tree_msg_done(prov_resp_stream_t *s);
apr_status_t prov_resp_text_msg_done(prov_resp_stream_t *s);
/* output_item.added for call c, just opened. */
apr_status_t prov_resp_tree_call_added(prov_resp_stream_t *s, const prov_resp_call_t *c);
apr_status_t prov_resp_text_call_added(prov_resp_stream_t *s, const prov_resp_call_t *c);
/* The end of open call c: function_call_arguments.done (or, for a custom
 * tool call, custom_tool_call_input.delta and .done), its item kept,
 * c->index -1, output_item.done. Text for function calls only. */
apr_status_t prov_resp_tree_close_call(prov_resp_stream_t *s, prov_resp_call_t *c);
apr_status_t prov_resp_text_close_call(prov_resp_stream_t *s, prov_resp_call_t *c);
/* function_call_arguments.delta of n bytes for call c. */
apr_status_t prov_resp_tree_args_delta(prov_resp_stream_t *s, const prov_resp_call_t *c,
                                       const char *a, apr_size_t n);
apr_status_t prov_resp_text_args_delta(prov_resp_stream_t *s, const prov_resp_call_t *c,
                                       const char *a, apr_size_t n);
/* The last event: response.completed, .incomplete or .failed. */
apr_status_t prov_resp_tree_end(prov_resp_stream_t *s, const prov_resp_end_t *e);
apr_status_t prov_resp_text_end(prov_resp_stream_t *s, const prov_resp_end_t *e);

#endif
