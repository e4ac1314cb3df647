/* prov_gateway_http.h: the pieces of the plain HTTP/1.1 gateway client
 * shared by its three files: where a plain http:// gateway is (parsed once
 * from ProviderGatewayURL) and the request with its never-resend rule
 * (prov_gateway_http.c), this thread's kept connections and their sockets
 * (prov_gateway_conn.c, which knows nothing of HTTP), and the answer reader
 * (prov_gateway_answer.c, which knows nothing of sockets: it reads through a
 * function, from a socket or, for the tests and the fuzzer, from memory).
 * Inside core/gateway/ only (and the tests). */
#ifndef PROV_GATEWAY_HTTP_H
#define PROV_GATEWAY_HTTP_H

#include <sys/uio.h>
#include <apr_time.h>
#include "prov_gateway_backend.h"

/* ---- where (prov_gateway_http.c) ------------------------------------------ */

typedef struct prov_gateway_target_t {
    const char *host;               /* name or address, without brackets */
    const char *port;               /* "80" when the URL names none */
    const char *host_header;        /* the Host header: host[:port] as in the URL */
    const char *prefix;             /* the URL's path, "" or "/base" */
} prov_gateway_target_t;

/* Parses "http://host[:port][/prefix]"; APR_ENOTIMPL for other schemes
 * (https:// and the rest go through libcurl), APR_EINVAL when malformed. */
apr_status_t prov_gateway_target_parse(prov_gateway_target_t *t, const char *url, apr_pool_t *p);

/* The backend's perform: one request on this thread's kept connection to
 * req->owner, made when there is none; req->where is a prov_gateway_target_t.
 * Results as prov_gateway_perform_fn's. */
apr_status_t prov_gateway_http_request(prov_gateway_response_t **resp,
                                       const prov_gateway_req_t *req,
                                       const char **why, apr_pool_t *p);

/* ---- kept connections (prov_gateway_conn.c) --------------------------------- */

/* A thread's connection to one gateway, with the answer buffers it keeps
 * between calls. fd is -1 when there is none. */
typedef struct prov_gateway_slot_t {
    const void *owner;
    int fd;
    char *in, *body;
    apr_size_t incap, bodycap;
} prov_gateway_slot_t;

/* This thread's slot for owner (a free one, or the oldest one emptied when
 * the thread has none for owner); APR_ENOMEM. */
apr_status_t prov_gateway_conn_slot(prov_gateway_slot_t **slot, const void *owner);

/* Gives the slot's kept connection (if any) to the process's idle ones,
 * unless they are full. */
void prov_gateway_conn_park(prov_gateway_slot_t *s);

/* For a slot without a connection: the process's idle connection to the
 * slot's owner last given back (a dead one closed, the next tried), or
 * none (fd stays -1). */
void prov_gateway_conn_take(prov_gateway_slot_t *s);

/* Closes the slot's connection, if any (its buffers stay). */
void prov_gateway_conn_drop(prov_gateway_slot_t *s);

/* Non-zero when a kept, idle connection can carry a request. */
int prov_gateway_conn_usable(int fd);

/* A new connection (non-blocking, TCP_NODELAY); APR_ECONNREFUSED, or
 * APR_TIMEUP when deadline passed first. */
apr_status_t prov_gateway_conn_open(int *fd, const prov_gateway_target_t *t, apr_time_t deadline);

/* Hands all of iov[0..n) to the kernel (iov is consumed); APR_TIMEUP, or
 * the system's error. */
apr_status_t prov_gateway_conn_send(int fd, struct iovec *iov, int n, apr_time_t deadline);

/* A socket to read an answer from, until deadline. */
typedef struct prov_gateway_sock_t {
    int fd;
    apr_time_t deadline;
} prov_gateway_sock_t;

/* A prov_gateway_read_fn over a prov_gateway_sock_t. */
apr_status_t prov_gateway_conn_recv(void *sock, char *buf, apr_size_t cap, apr_size_t *got);

/* A socket a stream is read from: no deadline, a limit on the gateway's
 * silence instead, and the caller's tick about once a second. */
typedef struct prov_gateway_ssock_t {
    int fd;
    apr_time_t last_data;           /* when the gateway last sent bytes */
    apr_time_t last_tick;
    apr_interval_time_t idle_limit; /* the longest silence allowed */
    prov_gateway_tick_cb *tick;          /* about once a second of silence, or NULL */
    prov_gateway_tick_cb *idle;          /* before each wait for bytes, or NULL */
    void *baton;
} prov_gateway_ssock_t;

/* A prov_gateway_read_fn over a prov_gateway_ssock_t: APR_TIMEUP after idle_limit of
 * silence, APR_ECONNABORTED when the tick stopped it. */
apr_status_t prov_gateway_conn_recv_stream(void *ssock, char *buf, apr_size_t cap,
                                           apr_size_t *got);

/* ---- the answer (prov_gateway_answer.c) ------------------------------------- */

/* Reads up to cap bytes into buf: APR_SUCCESS with *got > 0, APR_EOF when
 * the bytes ended (the gateway closed the connection), or why not. */
typedef apr_status_t prov_gateway_read_fn(void *src, char *buf, apr_size_t cap, apr_size_t *got);

typedef struct prov_gateway_answer_t {
    char *in;                       /* bytes read (malloc), not yet consumed */
    apr_size_t len, cap, pos;
    char *body;                     /* the decoded body (malloc) */
    apr_size_t blen, bcap;
    int status;
    int minor;
    int keep;                       /* the connection may serve another request */
    apr_int64_t clen;               /* Content-Length, or -1 */
    int chunked;
    const char *content_type;
    const char *retry_after;
    prov_gateway_read_fn *read;          /* where the bytes come from */
    void *src;
    prov_gateway_data_cb *sink;          /* streams: the body goes here as it is
                                     * decoded, not into body; NULL: kept */
    void *baton;                    /* for sink */
    int *status_out;                /* streams: the status, set before the
                                     * body's first byte reaches sink */
} prov_gateway_answer_t;

/* Reads one answer (1xx answers skipped) through a->read into a's buffers,
 * which may hold buffers kept from an earlier call; with a->sink, the body
 * goes to the sink as it is decoded (all that one read completed, in one
 * call) and the bytes read are not kept beyond what is still to decode. APR_SUCCESS, APR_EOF
 * when the bytes end before an answer's head, APR_EGENERAL when they are
 * not a well-formed HTTP/1.x answer, APR_ENOSPC when it is too large,
 * APR_ECONNABORTED when the sink refused bytes, or a->read's failure. The
 * caller frees a->in and a->body. */
apr_status_t prov_gateway_answer_read(prov_gateway_answer_t *a, apr_pool_t *p);

/* The answer read, copied into p. */
prov_gateway_response_t *prov_gateway_answer_response(const prov_gateway_answer_t *a,
                                                      apr_pool_t *p);

/* The answer reader run over bytes in memory, as if the gateway had sent
 * buf, step bytes per read (0: as many as fit), and then closed the
 * connection. APR_SUCCESS with *resp and *keep (whether the connection
 * could carry another request), else as prov_gateway_answer_read. For the unit
 * tests and tests/fuzz/fuzz_gateway_http.c. */
apr_status_t prov_gateway_http_parse(prov_gateway_response_t **resp, int *keep, const char *buf,
                                     apr_size_t len, apr_size_t step, apr_pool_t *p);

#endif
