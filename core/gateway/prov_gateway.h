/* prov_gateway.h: core/gateway/, the client of the internal model gateway,
 * and the only header its callers include. One interface, two backends
 * behind a table of functions (prov_gateway_backend.h), chosen once per
 * gateway when it is created: answers and streams from a plain http://
 * gateway go through a lean keep-alive HTTP/1.1 client (prov_gateway_http.c
 * with prov_gateway_conn.c and prov_gateway_answer.c); every other URL
 * through libcurl (prov_gateway_curl.c). Connect
 * and total timeouts; the service token is sent as a Bearer header and never
 * logged; the gateway's URL never leaves this folder in an error meant for a
 * client. Why two clients, and what the plain one does not do:
 * docs/internals/gateway.md. */
#ifndef PROV_GATEWAY_H
#define PROV_GATEWAY_H

#include "prov_common.h"

typedef struct prov_gateway_t prov_gateway_t;

typedef struct prov_gateway_response_t {
    int status;                 /* HTTP status from the gateway */
    const char *body;           /* NUL-terminated copy in p */
    apr_size_t len;
    const char *content_type;   /* may be NULL */
    const char *retry_after;    /* may be NULL */
} prov_gateway_response_t;

/* Receives body bytes of a streamed answer; a non-APR_SUCCESS return stops the
 * transfer (the client went away). */
typedef apr_status_t prov_gateway_data_cb(void *baton, const char *data, apr_size_t len);

/* Called about once a second while a streamed transfer runs, also while the
 * gateway is silent (for keep-alive events and noticing a client that went
 * away); a non-APR_SUCCESS return stops the transfer as cb's does. */
typedef apr_status_t prov_gateway_tick_cb(void *baton);

/* Process-wide setup of the backends (libcurl's); call once before threads
 * start. */
apr_status_t prov_gateway_global_init(void);

/* base_url without a trailing slash ("http://127.0.0.1:4000"); token may be
 * NULL (no Authorization header). Timeouts in milliseconds. Lives in p. */
apr_status_t prov_gateway_create(prov_gateway_t **gw, const char *base_url, const char *token,
                                 long connect_timeout_ms, long timeout_ms, apr_pool_t *p);

/* GET or POST (body != NULL) path ("/v1/models"). Returns APR_SUCCESS with
 * whatever status the gateway answered, APR_TIMEUP when it did not answer in
 * time, APR_ECONNREFUSED when it could not be reached, APR_EGENERAL for other
 * transport failures. headers: extra request headers ("name" -> "value"), may
 * be NULL. */
apr_status_t prov_gateway_request(prov_gateway_response_t **resp, prov_gateway_t *gw,
                                  const char *path, const char *body, apr_size_t len,
                                  const apr_table_t *headers, apr_pool_t *p);

/* POST with the answer delivered to cb as it arrives. *status is the HTTP
 * status (set once headers arrived). Same return values as above, plus
 * APR_ECONNABORTED when cb stopped the transfer. */
apr_status_t prov_gateway_stream(int *status, prov_gateway_t *gw, const char *path,
                                 const char *body, apr_size_t len, const apr_table_t *headers,
                                 prov_gateway_data_cb *cb, void *baton, apr_pool_t *p);

/* What a stream's reader is told, all with baton: the body as it arrives
 * (data), about once a second (tick, or NULL), and when the gateway has
 * sent nothing more for now, just before the reader waits for it (idle, or
 * NULL): what the body made so far can go out together then, as mod_proxy
 * flushes when its backend has nothing more to read. A backend that cannot
 * tell calls idle after each piece of the body. */
typedef struct prov_gateway_stream_cb_t {
    prov_gateway_data_cb *data;
    prov_gateway_tick_cb *tick;
    prov_gateway_tick_cb *idle;
    void *baton;
    const char **retry_after;   /* set to a refusal's Retry-After header when it
                                 * has one (else left as it is); may be NULL */
} prov_gateway_stream_cb_t;

/* prov_gateway_stream with the callbacks of cb. */
apr_status_t prov_gateway_stream_with(int *status, prov_gateway_t *gw, const char *path,
                                      const char *body, apr_size_t len, const apr_table_t *headers,
                                      const prov_gateway_stream_cb_t *cb, apr_pool_t *p);

#endif
