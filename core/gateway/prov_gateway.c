/* prov_gateway.c: the front of the gateway client: what a gateway is (its
 * URL, token, timeouts), which backend carries its answers and which its
 * streams (chosen once, in prov_gateway_create, from a list in order of
 * preference), each call described whole (prov_gateway_req_t) and handed to the
 * chosen backend, and the one log line of a failed call. The service token
 * goes into an Authorization header and nowhere else; a failure is logged
 * by path and the backend's few words, never the gateway's URL. */
#include <string.h>
#include "prov_gateway_backend.h"
#include "prov_log.h"
#include "prov_metrics.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define DEFAULT_TIMEOUT_MS 300000

struct prov_gateway_t {
    const char *base_url;
    const char *auth_header;        /* "Authorization: Bearer ..." or NULL */
    long connect_timeout_ms;
    long timeout_ms;
    const prov_gateway_backend_t *answers;
    const void *answers_where;      /* answers' form of base_url */
    const prov_gateway_backend_t *streams;
    const void *streams_where;
};

/* In order of preference: the plain client first, for what it does (answers
 * from an http:// gateway) it costs less; libcurl for all the rest. */
static const prov_gateway_backend_t *const backends[] = {
    &prov_gateway_http_backend,
    &prov_gateway_curl_backend,
};

#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

apr_status_t prov_gateway_global_init(void)
{
    apr_size_t i;
    for (i = 0; i < NBACKENDS; i++) {
        if (backends[i]->init && backends[i]->init() != APR_SUCCESS)
            return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

/* The first backend that does streams (or answers) and takes the URL. */
static apr_status_t pick(const prov_gateway_backend_t **b, const void **where, const char *url,
                         int streams, apr_pool_t *p)
{
    apr_size_t i;
    for (i = 0; i < NBACKENDS; i++) {
        const prov_gateway_backend_t *c = backends[i];
        if ((streams ? c->stream != NULL : c->perform != NULL)
            && c->setup(where, url, p) == APR_SUCCESS) {
            *b = c;
            return APR_SUCCESS;
        }
    }
    return APR_ENOTIMPL;
}

apr_status_t prov_gateway_create(prov_gateway_t **pgw, const char *base_url, const char *token,
                                 long connect_timeout_ms, long timeout_ms, apr_pool_t *p)
{
    prov_gateway_t *gw;
    apr_size_t n;
    apr_status_t rv;
    if (!base_url || !*base_url)
        return APR_EINVAL;
    gw = apr_pcalloc(p, sizeof(*gw));
    n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    gw->base_url = apr_pstrndup(p, base_url, n);
    gw->auth_header = (token && *token) ? apr_pstrcat(p, "Authorization: Bearer ", token, NULL)
                                        : NULL;
    gw->connect_timeout_ms = connect_timeout_ms > 0 ? connect_timeout_ms
                                                    : DEFAULT_CONNECT_TIMEOUT_MS;
    gw->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
    if ((rv = pick(&gw->answers, &gw->answers_where, gw->base_url, 0, p)) != APR_SUCCESS
        || (rv = pick(&gw->streams, &gw->streams_where, gw->base_url, 1, p)) != APR_SUCCESS)
        return rv;
    *pgw = gw;
    return APR_SUCCESS;
}

/* A call to gw, described whole for the backend at where. */
static void describe(prov_gateway_req_t *req, const prov_gateway_t *gw, const void *where,
                     const char *path, const char *body, apr_size_t len,
                     const apr_table_t *headers)
{
    memset(req, 0, sizeof(*req));
    req->owner = gw;
    req->where = where;
    req->auth_header = gw->auth_header;
    req->connect_timeout_ms = gw->connect_timeout_ms;
    req->timeout_ms = gw->timeout_ms;
    req->path = path;
    req->body = body;
    req->len = len;
    req->headers = headers;
}

/* rv, logged when the gateway failed (not when the client went away). */
static apr_status_t logged(apr_status_t rv, const char *path, const char *why)
{
    if (rv != APR_SUCCESS && rv != APR_ECONNABORTED)
        prov_log(PROV_LOG_WARN, rv, "PROV00030: gateway call %s failed: %s", path,
                 why ? why : "unknown error");
    return rv;
}

apr_status_t prov_gateway_request(prov_gateway_response_t **resp, prov_gateway_t *gw,
                                  const char *path, const char *body, apr_size_t len,
                                  const apr_table_t *headers, apr_pool_t *p)
{
    prov_gateway_req_t req;
    const char *why = NULL;
    apr_time_t start = apr_time_now();
    apr_status_t rv;
    describe(&req, gw, gw->answers_where, path, body, len, headers);
    rv = gw->answers->perform(resp, &req, &why, p);
    prov_metrics_observe(prov_metrics_current(), PROV_MX_H_GATEWAY, apr_time_now() - start);
    return logged(rv, path, why);
}

apr_status_t prov_gateway_stream(int *status, prov_gateway_t *gw, const char *path,
                                 const char *body, apr_size_t len, const apr_table_t *headers,
                                 prov_gateway_data_cb *cb, void *baton, apr_pool_t *p)
{
    prov_gateway_stream_cb_t with = { cb, NULL, NULL, baton, NULL };
    return prov_gateway_stream_with(status, gw, path, body, len, headers, &with, p);
}

apr_status_t prov_gateway_stream_with(int *status, prov_gateway_t *gw, const char *path,
                                      const char *body, apr_size_t len, const apr_table_t *headers,
                                      const prov_gateway_stream_cb_t *cb, apr_pool_t *p)
{
    prov_gateway_req_t req;
    const char *why = NULL;
    apr_time_t start = apr_time_now();
    apr_status_t rv;
    describe(&req, gw, gw->streams_where, path, body, len, headers);
    req.cb = cb->data;
    req.tick = cb->tick;
    req.idle = cb->idle;
    req.baton = cb->baton;
    req.retry_after = cb->retry_after;
    rv = gw->streams->stream(status, &req, &why, p);
    prov_metrics_observe(prov_metrics_current(), PROV_MX_H_GATEWAY, apr_time_now() - start);
    return logged(rv, path, why);
}
