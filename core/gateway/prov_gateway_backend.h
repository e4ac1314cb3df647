/* prov_gateway_backend.h: the interface between the gateway client's front
 * (prov_gateway.c) and its backends, the libcurl one (prov_gateway_curl.c)
 * and the plain HTTP/1.1 one (prov_gateway_http.c). A call to the gateway is
 * described whole in a prov_gateway_req_t; a backend is a table of functions;
 * prov_gateway_create picks, for answers and for streams, the first backend
 * of its list that can do it and accepts the gateway's URL. Inside
 * core/gateway/ only (and the tests): callers include prov_gateway.h. */
#ifndef PROV_GATEWAY_BACKEND_H
#define PROV_GATEWAY_BACKEND_H

#include "prov_gateway.h"

/* One call to the gateway: where, how long, what, and for streams where the
 * answer goes. */
typedef struct prov_gateway_req_t {
    const void *owner;              /* the gateway object: a thread keeps its
                                     * connections per owner */
    const void *where;              /* the backend's own form of the gateway's
                                     * URL, made by its setup */
    const char *auth_header;        /* "Authorization: Bearer ..." or NULL */
    long connect_timeout_ms;
    long timeout_ms;                /* the whole answer; a stream's longest
                                     * silence */
    const char *path;               /* "/v1/models", after the URL's own path */
    const char *body;               /* POST body (JSON); NULL: a GET */
    apr_size_t len;
    const apr_table_t *headers;     /* extra request headers, or NULL */
    prov_gateway_data_cb *cb;            /* streams: the body as it arrives */
    prov_gateway_tick_cb *tick;          /* streams: about once a second, or NULL */
    prov_gateway_tick_cb *idle;          /* streams: nothing more to read for now
                                     * (prov_gateway_stream_cb_t), or NULL */
    void *baton;                    /* for cb, tick and idle */
    const char **retry_after;       /* streams: a refusal's Retry-After, or NULL */
} prov_gateway_req_t;

/* Process-wide setup, before threads start. */
typedef apr_status_t prov_gateway_init_fn(void);

/* Makes *where, the backend's form of base_url (no trailing slash), once
 * per gateway, in p; APR_ENOTIMPL (or APR_EINVAL) when the backend cannot
 * reach such a URL. */
typedef apr_status_t prov_gateway_setup_fn(const void **where, const char *base_url,
                                           apr_pool_t *p);

/* An answer read whole: APR_SUCCESS with *resp whatever the status,
 * APR_TIMEUP, APR_ECONNREFUSED, APR_ENOMEM or APR_EGENERAL; on failure *why
 * says in a few words what went wrong, for the log (it never names the host
 * or carries the token). */
typedef apr_status_t prov_gateway_perform_fn(prov_gateway_response_t **resp,
                                             const prov_gateway_req_t *req,
                                             const char **why, apr_pool_t *p);

/* A streamed answer, given to req->cb: *status as prov_gateway_stream's;
 * results as above plus APR_ECONNABORTED when cb or tick stopped it. */
typedef apr_status_t prov_gateway_stream_fn(int *status, const prov_gateway_req_t *req,
                                            const char **why,
                                            apr_pool_t *p);

typedef struct prov_gateway_backend_t {
    const char *name;
    prov_gateway_init_fn *init;          /* may be NULL */
    prov_gateway_setup_fn *setup;
    prov_gateway_perform_fn *perform;
    prov_gateway_stream_fn *stream;      /* NULL: this backend does not stream */
} prov_gateway_backend_t;

/* libcurl's easy interface: any URL libcurl takes, answers and streams. */
extern const prov_gateway_backend_t prov_gateway_curl_backend;

/* The plain HTTP/1.1 client: http:// only, answers and streams. */
extern const prov_gateway_backend_t prov_gateway_http_backend;

#endif
