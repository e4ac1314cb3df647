/*
 * mockgw.h — shared declarations of the mock model gateway (tests/mockgw).
 *
 * mockgw is a deterministic stand-in for the internal, OpenAI-compatible model
 * gateway that mod_provider forwards inference to. This header declares what the
 * files share: the process-wide configuration, the growable byte buffer, the
 * connection and request types of the HTTP/1.1 server (mockgw_http.c), the SSE
 * event list, the fault and usage-override helpers (mockgw_util.c), the router
 * (mockgw_route.c) and the two protocol families' handlers (mockgw_openai.c,
 * mockgw_anthropic.c). It is a test tool: plain POSIX, pthreads and json-c.
 */
#ifndef MOCKGW_H
#define MOCKGW_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#define MGW_MAX_HEADERS     128
#define MGW_MAX_HEAD_BYTES  (64 * 1024)          /* request line + headers */
#define MGW_MAX_BODY_BYTES  (64 * 1024 * 1024)   /* 413 beyond this */
#define MGW_TRUNCATE_BYTES  64                   /* echoed text is cut to this */
#define MGW_PIECE_BYTES     8                    /* streamed text fragment size */

/* ---- process configuration (set once in main, read-only afterwards) ---- */

typedef struct {
    char *token;            /* the service token expected after "Bearer " */
    char *models_json;      /* the pre-rendered GET /v1/models answer */
    char *self_url;         /* "http://HOST:PORT" this gateway listens on */
    bool verbose;           /* log one line per request to stderr */
    FILE *times;            /* --times: timestamps of requests and events, or NULL */
} mgw_config_t;

extern mgw_config_t mgw_cfg;

/* Returns the next value of the process-wide id counter (1, 2, ...). */
unsigned long mgw_next_id(void);

/* ---- growable buffer; allocation failure aborts (this is a test tool) ---- */

typedef struct {
    char *p;        /* NUL terminated when non-NULL */
    size_t len;
    size_t cap;
} mgw_buf_t;

void mgw_buf_append(mgw_buf_t *b, const void *data, size_t n);
void mgw_buf_puts(mgw_buf_t *b, const char *s);
void mgw_buf_printf(mgw_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends the compact JSON serialization of o. */
void mgw_buf_json(mgw_buf_t *b, json_object *o);
void mgw_buf_free(mgw_buf_t *b);

/* Returns malloc'd memory or aborts. */
void *mgw_xmalloc(size_t n);
void *mgw_xrealloc(void *p, size_t n);
char *mgw_xstrdup(const char *s);

/* ---- HTTP/1.1 connection and request (mockgw_http.c) ---- */

typedef struct {
    int fd;
    char *buf;              /* unread input is buf[start, end) */
    size_t cap, start, end;
    bool keepalive;         /* of the request being answered */
    int minor_version;      /* HTTP/1.x of the request being answered */
    int last_status;        /* of the last answer, for --verbose */
} mgw_conn_t;

typedef struct {
    const char *name;       /* lower-cased */
    const char *value;      /* surrounding whitespace removed */
} mgw_header_t;

typedef struct {
    char *head;             /* owned copy of the request head, parsed in place */
    const char *method;
    const char *path;       /* target without the query */
    const char *query;      /* after '?', or NULL */
    mgw_header_t headers[MGW_MAX_HEADERS];
    size_t nheaders;
    char *body;             /* owned, NUL terminated, or NULL when empty */
    size_t body_len;
} mgw_request_t;

/* Reads one request. Returns 0 on success, -1 when the connection is to be
 * closed silently (EOF, I/O error), or an HTTP status (400, 413, 431, ...)
 * to answer before closing. r must be released with mgw_request_free in all
 * cases. */
int mgw_http_read_request(mgw_conn_t *c, mgw_request_t *r);
void mgw_request_free(mgw_request_t *r);
/* Returns the value of the header with the lower-case name, or NULL. */
const char *mgw_request_header(const mgw_request_t *r, const char *lname);

/* ---- faults ---- */

typedef enum {
    MGW_FAULT_NONE = 0,
    MGW_FAULT_500,
    MGW_FAULT_429,
    MGW_FAULT_RESET,
    MGW_FAULT_CUT,
    MGW_FAULT_MALFORMED,
    MGW_FAULT_OVERFLOW,
    MGW_FAULT_404,
    MGW_FAULT_LEAK,         /* a 400 whose message holds the URL and the token */
    MGW_FAULT_ERROR_EVENT,  /* stream: an error event (of event_error) in the stream */
    MGW_FAULT_OVERLOADED,   /* the family's overloaded answer: 529 / 503 */
    MGW_FAULT_529           /* 529 overloaded_error on any endpoint */
} mgw_fault_kind_t;

/* How the usage object is written (the usage-* faults). */
typedef enum {
    MGW_SHAPE_NORMAL = 0,
    MGW_SHAPE_STRINGS,      /* every count a JSON string: "12" */
    MGW_SHAPE_FLOAT,        /* every count a JSON number with a fraction: 12.0 */
    MGW_SHAPE_NULL,         /* "usage": null */
    MGW_SHAPE_EMPTY,        /* "usage": {} */
    MGW_SHAPE_RENAMED       /* the counts under the other family's names */
} mgw_usage_shape_t;

#define MGW_GREEDY_UNCAPPED 30000       /* "greedy": output of an uncapped request */
#define MGW_GREEDY_PIECE_BYTES 512      /* streamed text fragment size when greedy */
#define MGW_LATE_BYTES 1000             /* "after-delta": the late text */

typedef struct {
    mgw_fault_kind_t kind;
    long delay_ms;          /* -1: not given */
    long trickle_ms;        /* -1: not given */
    long stall_ms;          /* "stall-<ms>": pause after half the stream; -1: none */
    long cut_events;        /* "cut-<n>": events sent before the cut; -1: half */
    bool no_usage;          /* "nousage": answers without usage */
    bool lockstep;          /* "lockstep": each text piece waits for the client's ack */
    long pieces;            /* "pieces-<n>": the streamed text is n pieces; -1: as usual */
    long greedy;            /* "greedy[-N]": output of an uncapped request; -1: off */
    long reasoning;         /* "reasoning-R": reasoning tokens reported; -1: off */
    bool bytetok;           /* "bytetok": one input token per request body byte */
    bool early_usage;       /* "early-usage": chat stream's usage first, not last */
    bool zero_input;        /* "zero-input": input tokens reported as 0 */
    bool after_delta;       /* "after-delta": text after the final usage */
    mgw_usage_shape_t shape; /* "usage-*": a malformed usage object */
    long retry_after;       /* "429-<s>", "retry-after-<s>": Retry-After; -1: none given */
    long first;             /* "first-<k>": faults for the first k such requests; -1: all */
    mgw_fault_kind_t event_error; /* error-event[-<kind>]: LEAK, OVERFLOW, 429, OVERLOADED */
    bool event_first;       /* "error-first-<kind>": the error is the stream's first event */
} mgw_fault_t;

/* ---- faults (mockgw_fault.c) ---- */

void mgw_fault_init(mgw_fault_t *f);
/* Parses a comma-separated list such as "delay-200,cut" into f.
 * Returns 0, or -1 on an unknown fault name. */
int mgw_fault_parse(mgw_fault_t *f, const char *spec);
/* "first-<k>": true if the faults of this request are to apply, counting the
 * requests per distinct key (the fault string: model name and header). */
bool mgw_fault_first_applies(const mgw_fault_t *f, const char *key);
/* Parses the faults of a model name: each "fault-F" part (at the start or
 * after a non-alphanumeric character) up to the next such part, so
 * "m-fault-greedy-fault-reasoning-500" has two. Returns 0 (also when the
 * name has none), or -1 on an unknown fault. */
int mgw_fault_parse_model(mgw_fault_t *f, const char *model);
/* The output cap "greedy" writes to: the largest non-negative integer among
 * the body's max_tokens (and, for chat, max_completion_tokens), else
 * f->greedy. */
long mgw_greedy_cap(const mgw_fault_t *f, json_object *body, bool chat);
/* The size of a streamed text piece: MGW_PIECE_BYTES, or when greedy (the
 * cap written to, -1: not greedy) MGW_GREEDY_PIECE_BYTES, or the reply in
 * "pieces-<n>" pieces (pieces-1: one event of the whole reply). */
size_t mgw_piece_bytes(const mgw_fault_t *f, long greedy);
/* Returns u (consumed) written in the shape of f; NULL for usage-null. The
 * renamed shape swaps the family's names (chat: prompt_tokens/
 * completion_tokens -> input_tokens/output_tokens; messages the other way). */
json_object *mgw_usage_shaped(const mgw_fault_t *f, json_object *u, bool chat);

/* ---- answers (mockgw_http.c) ---- */

/* Sends a complete answer, applying the cut, stall and trickle faults of f
 * (may be NULL). extra_headers is NULL or CRLF-terminated header lines.
 * Returns 0 if the connection may serve another request, -1 if it must be
 * closed. */
int mgw_http_respond(mgw_conn_t *c, int status, const char *ctype,
                     const char *extra_headers, const char *body, size_t len,
                     const mgw_fault_t *f);
/* Answers an unreadable request with status and a JSON error; returns -1
 * (the connection is to be closed). */
int mgw_http_error_close(mgw_conn_t *c, int status);
/* Closes the connection with a TCP reset at the next close; returns -1. */
int mgw_http_reset(mgw_conn_t *c);

/* SSE events, concatenated in one buffer with each event's end offset. */
typedef struct {
    mgw_buf_t data;
    size_t *ends;
    size_t n, cap;
    size_t first_piece, npieces;    /* the text (or arguments) pieces among them */
} mgw_events_t;

/* Appends "event: NAME\n" (if name is not NULL) and "data: JSON\n\n".
 * Takes ownership of o. */
void mgw_events_add(mgw_events_t *e, const char *name, json_object *o);
/* Appends an event given as its complete text. */
void mgw_events_add_raw(mgw_events_t *e, const char *text);
void mgw_events_free(mgw_events_t *e);

/* Sends a text/event-stream answer with the events, applying the cut and
 * trickle faults of f. Returns like mgw_http_respond. */
int mgw_http_stream(mgw_conn_t *c, const mgw_events_t *e, const mgw_fault_t *f);

void mgw_sleep_ms(long ms);

/* ---- pace of streams (mockgw_pace.c) ---- */

/* With --times, writes "mgwtime FD WHAT I MICROSECONDS" (CLOCK_MONOTONIC). */
void mgw_time_mark(int fd, const char *what, long i);
/* A lockstep stream starts: no piece of it acknowledged yet. */
void mgw_lockstep_begin(void);
/* GET /v1/_ack?n=N: the client has received n pieces of the stream. */
void mgw_lockstep_ack(long n);
/* Waits (at most 10 s) until n pieces are acknowledged; counts the piece as
 * acknowledged or missed. */
void mgw_lockstep_wait(long n);
/* {"streams","acked","missed"} for GET /v1/_lockstep. */
json_object *mgw_lockstep_json(void);
/* Extends out with filler text to pieces * MGW_PIECE_BYTES bytes. */
void mgw_pad_pieces(mgw_buf_t *out, long pieces);
/* Makes out exactly bytes long: cut (not inside a UTF-8 sequence) and
 * extended with filler. */
void mgw_pad_to(mgw_buf_t *out, size_t bytes);

/* ---- usage override (mockgw_util.c) ---- */

#define MGW_USAGE_UNSET LONG_MIN
typedef struct {
    long prompt, completion, cached, reasoning, creation;   /* MGW_USAGE_UNSET: not given */
} mgw_usage_override_t;

void mgw_usage_init(mgw_usage_override_t *u);
/* Parses "prompt=P,completion=C,cached=K,reasoning=R,creation=W" (any subset).
 * Returns 0, or -1 if malformed. */
int mgw_usage_parse_header(mgw_usage_override_t *u, const char *s);
/* Reads the same keys from a JSON object. Returns 0, or -1 if malformed. */
int mgw_usage_parse_json(mgw_usage_override_t *u, json_object *o);
/* Fills the fields u does not have yet from a line "USAGE: prompt=P,..." of
 * text, whose values may be any 64-bit number, negative ones too (a broken
 * gateway's report). Returns 0 (also without such a line), -1 if malformed. */
int mgw_usage_from_text(mgw_usage_override_t *u, const char *text);
/* a + b, saturated to [LONG_MIN, LONG_MAX] (totals of absurd counts). */
long mgw_sum_sat(long a, long b);

/* ---- text and JSON helpers (mockgw_util.c) ---- */

/* Returns the length of the longest prefix of s[0, len) that is at most max
 * bytes and does not split a UTF-8 sequence. */
size_t mgw_utf8_prefix(const char *s, size_t len, size_t max);
/* Returns the length of the next streamed piece of s[0, len): want bytes,
 * extended to the end of a UTF-8 sequence; at least 1 if len > 0. */
size_t mgw_utf8_piece(const char *s, size_t len, size_t want);
/* Returns the bytes of text in a message content: a string, or an array of
 * parts/blocks with "text", including the content of tool_result blocks. */
size_t mgw_content_bytes(json_object *content);
/* Appends the text of a content (string, or the "text" of its text parts,
 * joined by "\n") to out. */
void mgw_content_text(json_object *content, mgw_buf_t *out);
/* Returns the JSON value of the first line of text that reads "ARGS: <json>",
 * or NULL. The caller owns the result. */
json_object *mgw_args_from_text(const char *text);
/* Appends prefix + text truncated to MGW_TRUNCATE_BYTES to out. */
void mgw_reply_text(mgw_buf_t *out, const char *prefix, const char *text, size_t len);

/* Parses s[0, len) as one strict JSON value followed only by whitespace.
 * Returns 0 with *out set (NULL for the literal null), or -1. */
int mgw_json_parse(const char *s, size_t len, json_object **out);
/* Returns the string member key of o, or NULL. */
const char *mgw_json_str(json_object *o, const char *key);
/* Returns the member key of o if it is of type t, or NULL. */
json_object *mgw_json_get(json_object *o, const char *key, json_type t);
/* Adds v under a constant (literal) key that is not yet in o. */
void mgw_jset(json_object *o, const char *key, json_object *v);

/* ---- routing and handlers ---- */

typedef enum { MGW_FAMILY_OPENAI, MGW_FAMILY_ANTHROPIC } mgw_family_t;

typedef struct {
    mgw_conn_t *conn;
    mgw_request_t *req;
    json_object *body;              /* the parsed body (an object), or NULL */
    mgw_fault_t fault;              /* cut / trickle still to apply */
    mgw_usage_override_t usage;
    size_t body_bytes;              /* of the request body as received */
} mgw_ctx_t;

/* Answers one request. Returns 0 to keep the connection, -1 to close it. */
int mgw_route(mgw_conn_t *c, mgw_request_t *r);

/* Sends o (consumed) as a JSON answer with the context's faults applied. */
int mgw_send_json(mgw_ctx_t *x, int status, json_object *o);
/* Sends {"error":{"message","type","param":null,"code"}}. */
int mgw_send_openai_error(mgw_ctx_t *x, int status, const char *type,
                          const char *code, const char *message,
                          const char *extra_headers);
/* The same with a param (NULL: null). */
int mgw_send_openai_error_p(mgw_ctx_t *x, int status, const char *type,
                            const char *code, const char *param,
                            const char *message, const char *extra_headers);
/* Sends {"type":"error","error":{"type","message"}}. */
int mgw_send_anthropic_error(mgw_ctx_t *x, int status, const char *type,
                             const char *message, const char *extra_headers);

/* The error message of the leak faults: this gateway's URL with path and an
 * "Authorization: Bearer <service token>" line, as a careless gateway writes
 * them. Appended to out. */
void mgw_leak_message(mgw_buf_t *out, const char *path);
/* With an error-event fault: keeps the first half of the events (at least
 * one; none for error-first-<kind>) and appends the family's error event of
 * the fault's kind (error-event: one carrying the leak message). */
void mgw_events_fail(mgw_ctx_t *x, mgw_events_t *e, mgw_family_t fam);

int mgw_openai_chat(mgw_ctx_t *x);
int mgw_anthropic_messages(mgw_ctx_t *x);
int mgw_anthropic_count_tokens(mgw_ctx_t *x);

#endif /* MOCKGW_H */
