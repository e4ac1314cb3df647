/* prov_gateway.c: the internal gateway's HTTP client. Answers that are not
 * streamed from a plain http:// gateway go through the lean keep-alive
 * client of prov_gateway_http.c; streams and https:// go through libcurl,
 * where each thread keeps one easy handle (and with it the open connections)
 * for all its requests; the handle is released when the thread ends. The service token
 * goes into an Authorization header and nowhere else; failures are logged by
 * libcurl's error code only, because curl's own messages name the host. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>
#include <apr_time.h>
#include "prov_gateway_int.h"
#include "prov_log.h"

struct prov_gateway_t {
    const char *base_url;
    const char *auth_header;     /* "Authorization: Bearer ..." or NULL */
    int plain;                   /* http://: target is set */
    prov_gw_target_t target;
    long connect_timeout_ms;
    long timeout_ms;
};

static pthread_key_t curl_key;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_thread_cleanup(void *h)
{
    curl_easy_cleanup((CURL *)h);
}

static void curl_key_init(void)
{
    pthread_key_create(&curl_key, curl_thread_cleanup);
}

static CURL *thread_handle(void)
{
    CURL *h;
    pthread_once(&curl_once, curl_key_init);
    h = pthread_getspecific(curl_key);
    if (!h) {
        h = curl_easy_init();
        if (h)
            pthread_setspecific(curl_key, h);
    }
    else {
        curl_easy_reset(h);
    }
    return h;
}

apr_status_t prov_gateway_global_init(void)
{
    pthread_once(&curl_once, curl_key_init);
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? APR_SUCCESS : APR_EGENERAL;
}

apr_status_t prov_gateway_create(prov_gateway_t **pgw, const char *base_url, const char *token,
                                 long connect_timeout_ms, long timeout_ms, apr_pool_t *p)
{
    prov_gateway_t *gw;
    apr_size_t n;
    if (!base_url || !*base_url)
        return APR_EINVAL;
    gw = apr_pcalloc(p, sizeof(*gw));
    n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    gw->base_url = apr_pstrndup(p, base_url, n);
    gw->auth_header = (token && *token) ? apr_pstrcat(p, "Authorization: Bearer ", token, NULL)
                                        : NULL;
    gw->connect_timeout_ms = connect_timeout_ms > 0 ? connect_timeout_ms : 5000;
    gw->timeout_ms = timeout_ms > 0 ? timeout_ms : 300000;
    gw->plain = prov_gw_target_parse(&gw->target, gw->base_url, p) == APR_SUCCESS;
    *pgw = gw;
    return APR_SUCCESS;
}

typedef struct xfer_t {
    char *buf;
    apr_size_t len, cap;
    prov_gw_data_cb *cb;
    prov_gw_tick_cb *tick;
    void *baton;
    int aborted;
    apr_time_t last_data;           /* streams: when the gateway last sent bytes */
    apr_time_t idle_limit;          /* streams: the longest silence allowed */
    int idled;
    CURL *h;
    int *status;
    apr_pool_t *p;
    const char *content_type;
    const char *retry_after;
} xfer_t;

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
    xfer_t *x = ud;
    size_t n = size * nmemb;
    x->last_data = apr_time_now();
    if (x->cb) {
        if (x->status && *x->status == 0) {
            long code = 0;
            curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
            *x->status = (int)code;
        }
        if (x->cb(x->baton, data, n) != APR_SUCCESS) {
            x->aborted = 1;
            return 0;
        }
        return n;
    }
    if (x->len + n + 1 > x->cap) {
        apr_size_t cap = x->cap ? x->cap * 2 : 8192;
        char *nb;
        while (cap < x->len + n + 1)
            cap *= 2;
        nb = realloc(x->buf, cap);
        if (!nb)
            return 0;
        x->buf = nb;
        x->cap = cap;
    }
    memcpy(x->buf + x->len, data, n);
    x->len += n;
    return n;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    xfer_t *x = ud;
    (void)dltotal; (void)dlnow; (void)ultotal; (void)ulnow;
    if (x->idle_limit && apr_time_now() - x->last_data > x->idle_limit) {
        x->idled = 1;
        return 1;
    }
    if (x->tick && x->tick(x->baton) != APR_SUCCESS) {
        x->aborted = 1;
        return 1;
    }
    return 0;
}

static const char *header_value(const char *line, size_t n, const char *name, apr_pool_t *p)
{
    size_t k = strlen(name);
    if (n <= k + 1 || strncasecmp(line, name, k) || line[k] != ':')
        return NULL;
    line += k + 1;
    n -= k + 1;
    while (n && (*line == ' ' || *line == '\t')) {
        line++;
        n--;
    }
    while (n && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
        n--;
    return apr_pstrndup(p, line, n);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
    xfer_t *x = ud;
    size_t n = size * nmemb;
    const char *v;
    if ((v = header_value(data, n, "Content-Type", x->p)) != NULL)
        x->content_type = v;
    else if ((v = header_value(data, n, "Retry-After", x->p)) != NULL)
        x->retry_after = v;
    return n;
}

static apr_status_t perform(prov_gateway_t *gw, const char *path, const char *body,
                            apr_size_t len, const apr_table_t *headers, xfer_t *x,
                            long *code, int streaming)
{
    CURL *h = thread_handle();
    struct curl_slist *hl = NULL;
    CURLcode cc;
    apr_status_t rv = APR_SUCCESS;

    if (!h)
        return APR_ENOMEM;
    x->h = h;
    curl_easy_setopt(h, CURLOPT_URL, apr_pstrcat(x->p, gw->base_url, path, NULL));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, gw->connect_timeout_ms);
    if (streaming) {
        /* A stream may rightly last longer than any total limit: what it
         * must not do is stall. The timeout bounds the silence instead,
         * checked by the progress function (about once a second). */
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 0L);
        x->idle_limit = apr_time_from_msec(gw->timeout_ms);
        x->last_data = apr_time_now();
    }
    else {
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, gw->timeout_ms);
    }
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    if (streaming)
        curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 16384L);
    if (x->tick || x->idle_limit) {
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
    if (gw->auth_header)
        hl = curl_slist_append(hl, gw->auth_header);
    hl = curl_slist_append(hl, "Expect:");
    if (body) {
        hl = curl_slist_append(hl, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    if (headers) {
        const apr_array_header_t *arr = apr_table_elts(headers);
        const apr_table_entry_t *e = (const apr_table_entry_t *)arr->elts;
        int i;
        for (i = 0; i < arr->nelts; i++)
            hl = curl_slist_append(hl, apr_pstrcat(x->p, e[i].key, ": ", e[i].val, NULL));
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);

    cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
    /* The handle outlives this call: drop pointers into this request. */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    curl_slist_free_all(hl);

    switch (cc) {
    case CURLE_OK:
        break;
    case CURLE_OPERATION_TIMEDOUT:
        rv = APR_TIMEUP;
        break;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        rv = APR_ECONNREFUSED;
        break;
    case CURLE_WRITE_ERROR:
    case CURLE_ABORTED_BY_CALLBACK:
        rv = x->idled ? APR_TIMEUP : x->aborted ? APR_ECONNABORTED : APR_EGENERAL;
        break;
    default:
        rv = APR_EGENERAL;
        break;
    }
    if (rv != APR_SUCCESS && rv != APR_ECONNABORTED) {
        prov_log(PROV_LOG_WARN, rv, "PROV00030: gateway call %s failed: curl error %d (%s)",
                 path, (int)cc, curl_easy_strerror(cc));
    }
    return rv;
}

apr_status_t prov_gateway_request(prov_gw_response_t **resp, prov_gateway_t *gw,
                                  const char *path, const char *body, apr_size_t len,
                                  const apr_table_t *headers, apr_pool_t *p)
{
    xfer_t x;
    long code = 0;
    apr_status_t rv;
    prov_gw_response_t *r;

    if (gw->plain) {
        const char *why = NULL;
        rv = prov_gw_http_request(resp, &gw->target, gw, gw->auth_header, gw->connect_timeout_ms,
                                  gw->timeout_ms, path, body, len, headers, &why, p);
        if (rv != APR_SUCCESS)
            prov_log(PROV_LOG_WARN, rv, "PROV00030: gateway call %s failed: %s", path,
                     why ? why : "unknown error");
        return rv;
    }
    memset(&x, 0, sizeof(x));
    x.p = p;
    rv = perform(gw, path, body, len, headers, &x, &code, 0);
    if (rv == APR_SUCCESS) {
        r = apr_pcalloc(p, sizeof(*r));
        r->status = (int)code;
        r->body = x.buf ? apr_pstrmemdup(p, x.buf, x.len) : apr_pstrdup(p, "");
        r->len = x.len;
        r->content_type = x.content_type;
        r->retry_after = x.retry_after;
        *resp = r;
    }
    free(x.buf);
    return rv;
}

apr_status_t prov_gateway_stream(int *status, prov_gateway_t *gw, const char *path,
                                 const char *body, apr_size_t len, const apr_table_t *headers,
                                 prov_gw_data_cb *cb, void *baton, apr_pool_t *p)
{
    return prov_gateway_stream_tick(status, gw, path, body, len, headers, cb, NULL, baton, p);
}

apr_status_t prov_gateway_stream_tick(int *status, prov_gateway_t *gw, const char *path,
                                      const char *body, apr_size_t len,
                                      const apr_table_t *headers, prov_gw_data_cb *cb,
                                      prov_gw_tick_cb *tick, void *baton, apr_pool_t *p)
{
    xfer_t x;
    long code = 0;
    apr_status_t rv;

    memset(&x, 0, sizeof(x));
    x.p = p;
    x.cb = cb;
    x.tick = tick;
    x.baton = baton;
    *status = 0;
    x.status = status;
    rv = perform(gw, path, body, len, headers, &x, &code, 1);
    if (code)
        *status = (int)code;
    return rv;
}

/* ---- plain http:// targets -------------------------------------------------- */

apr_status_t prov_gw_target_parse(prov_gw_target_t *t, const char *url, apr_pool_t *p)
{
    const char *hp, *slash, *host_end, *port = NULL;
    const char *host;
    if (strncasecmp(url, "http://", 7))
        return APR_ENOTIMPL;
    hp = url + 7;
    slash = strchr(hp, '/');
    if (!slash)
        slash = hp + strlen(hp);
    if (slash == hp || memchr(hp, '@', (apr_size_t)(slash - hp))
        || memchr(hp, '?', (apr_size_t)(slash - hp)) || strpbrk(slash, "?#"))
        return APR_EINVAL;
    if (*hp == '[') {
        host_end = memchr(hp, ']', (apr_size_t)(slash - hp));
        if (!host_end)
            return APR_EINVAL;
        host = apr_pstrndup(p, hp + 1, (apr_size_t)(host_end - hp - 1));
        host_end++;
    }
    else {
        host_end = memchr(hp, ':', (apr_size_t)(slash - hp));
        if (!host_end)
            host_end = slash;
        host = apr_pstrndup(p, hp, (apr_size_t)(host_end - hp));
    }
    if (host_end < slash) {
        const char *c;
        if (*host_end != ':' || host_end + 1 == slash || slash - host_end > 6)
            return APR_EINVAL;
        for (c = host_end + 1; c < slash; c++) {
            if (*c < '0' || *c > '9')
                return APR_EINVAL;
        }
        port = apr_pstrndup(p, host_end + 1, (apr_size_t)(slash - host_end - 1));
    }
    if (!*host)
        return APR_EINVAL;
    t->host = host;
    t->port = port ? port : "80";
    t->host_header = apr_pstrndup(p, hp, (apr_size_t)(slash - hp));
    t->prefix = apr_pstrdup(p, slash);
    return APR_SUCCESS;
}
