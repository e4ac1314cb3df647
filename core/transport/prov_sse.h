/* prov_sse.h: Server-Sent Events, both ways. An incremental parser that is
 * fed the bytes of a stream as they arrive (in pieces of any size) and calls
 * back once per complete event, and the encoder of one event. Used by the
 * streaming transports to read the gateway and to write to the client. */
#ifndef PROV_SSE_H
#define PROV_SSE_H

#include "prov_common.h"

/* One complete event: name is "message" when the stream gave none; data is
 * the data lines joined with '\n' (NUL-terminated). Returning non-success
 * stops the parser and is returned by prov_sse_feed. */
typedef apr_status_t prov_sse_event_cb(void *baton, const char *name, const char *data,
                                       apr_size_t len);

typedef struct prov_sse_parser_t prov_sse_parser_t;

/* A parser in p; max_event bounds one event's size (APR_ENOSPC beyond it). */
prov_sse_parser_t *prov_sse_parser_create(prov_sse_event_cb *cb, void *baton,
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

#endif
