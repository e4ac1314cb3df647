/* prov_sse.h: Server-Sent Events, both ways. An incremental parser that is
 * fed the bytes of a stream as they arrive (in pieces of any size) and calls
 * back once per complete event, and the encoder of one event. Used by the
 * streaming transports to read the gateway and to write to the client.
 *
 * Two ways to receive events: prov_sse_parser_create's callback gets each
 * event's data copied and NUL-terminated; prov_sse_parser_create_ev's gets a
 * prov_sse_ev_t whose data is, whenever it can be, a slice of the bytes being
 * fed (not copied, not NUL-terminated), with the event's own bytes (raw) when
 * they are exactly what prov_sse_put_event would write for it, so that a
 * relay can pass them on as they are. Both see the same events and the same
 * errors (tests/fuzz/fuzz_sse.c compares them). Two ways to encode: into a
 * string of a pool (prov_sse_encode*), or appended to a prov_sse_buf_t that
 * the caller sends as a whole (prov_sse_put_*). */
#ifndef PROV_SSE_H
#define PROV_SSE_H

#include "prov_common.h"

/* One complete event: name is "message" when the stream gave none; data is
 * the data lines joined with '\n' (NUL-terminated). Returning non-success
 * stops the parser and is returned by prov_sse_feed. */
typedef apr_status_t prov_sse_event_cb(void *baton, const char *name, const char *data,
                                       apr_size_t len);

/* One complete event as prov_sse_parser_create_ev hands it out, valid during
 * the callback only. */
typedef struct prov_sse_ev_t {
    const char *name;       /* NUL-terminated; "message" when the stream gave none */
    const char *data;       /* len bytes, NOT NUL-terminated: the data lines joined by '\n' */
    apr_size_t len;
    const char *raw;        /* when not NULL: raw_len bytes of the stream that are exactly
                             * "event: NAME\ndata: DATA\n\n" (prov_sse_put_event's form) */
    apr_size_t raw_len;
} prov_sse_ev_t;

/* Returning non-success stops the parser and is returned by prov_sse_feed. */
typedef apr_status_t prov_sse_ev_cb(void *baton, const prov_sse_ev_t *ev);

typedef struct prov_sse_parser_t prov_sse_parser_t;

/* A parser in p; max_event bounds one event's size (APR_ENOSPC beyond it). */
prov_sse_parser_t *prov_sse_parser_create(prov_sse_event_cb *cb, void *baton,
                                          apr_size_t max_event, apr_pool_t *p);
/* The same parser handing events out as prov_sse_ev_t (slices where it can). */
prov_sse_parser_t *prov_sse_parser_create_ev(prov_sse_ev_cb *cb, void *baton,
                                             apr_size_t max_event, apr_pool_t *p);
/* Feeds bytes; calls cb for each event completed by them. */
apr_status_t prov_sse_feed(prov_sse_parser_t *ps, const char *buf, apr_size_t len);
/* Non-zero when bytes of an unfinished event are pending (a cut stream). */
int prov_sse_pending(const prov_sse_parser_t *ps);

/* "event: NAME\ndata: DATA\n\n" (no event line when name is NULL); data
 * containing newlines is split over several data lines. */
const char *prov_sse_encode(const char *name, const char *data, apr_pool_t *p);
/* The same for dlen bytes of data, which may hold NUL bytes (an event relayed
 * as the gateway sent it); *out_len (when not NULL) gets the event's length. */
const char *prov_sse_encode_len(const char *name, const char *data, apr_size_t dlen,
                                apr_size_t *out_len, apr_pool_t *p);

/* A stream's output waiting to be sent: events are encoded straight into it
 * (one copy of their data), and the caller sends data[0..len) at once. Its
 * first 4 KiB come from the pool it was made in; past that it is malloc'ed,
 * grows as needed and is freed with that pool; prov_sse_buf_reset empties
 * it for reuse. */
typedef struct prov_sse_buf_t {
    char *data;
    apr_size_t len, cap;
    apr_pool_t *p;
    int heap;                   /* data is malloc'ed */
} prov_sse_buf_t;

/* An empty buffer, freed with p. */
prov_sse_buf_t *prov_sse_buf_create(apr_pool_t *p);
void prov_sse_buf_reset(prov_sse_buf_t *b);
/* Appends prov_sse_encode_len's bytes for the event; APR_ENOMEM (b unchanged)
 * when memory runs out. */
apr_status_t prov_sse_put_event(prov_sse_buf_t *b, const char *name, const char *data,
                                apr_size_t dlen);
/* Appends n bytes as they are (an event already encoded, e.g. a prov_sse_ev_t's raw). */
apr_status_t prov_sse_put_bytes(prov_sse_buf_t *b, const char *bytes, apr_size_t n);
/* Room for n more bytes after data[len) (data may move), for a writer that
 * writes there itself and then advances len: APR_ENOMEM when there is none. */
apr_status_t prov_sse_buf_reserve(prov_sse_buf_t *b, apr_size_t n);

#endif
