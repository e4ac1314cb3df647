/* prov_gateway_curl.c: the libcurl backend of the gateway client, for
 * streams and for gateways the plain HTTP/1.1 client does not reach
 * (https://, and whatever else libcurl takes). Each thread keeps one easy
 * handle, and with it the open connections, for all its requests; the
 * handle is released when the thread ends. A stream has no total time
 * limit, only a limit on the gateway's silence, checked by the progress
 * function about once a second (which also runs the caller's tick).
 * libcurl's error codes are translated here, once; failures are described
 * by libcurl's error code only, because curl's own messages name the host. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "prov_gateway_backend.h"

#define FIRST_BUF 8192                  /* an answer's first buffer */
#define STREAM_BUF 16384L               /* libcurl's receive buffer for streams */

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

static apr_status_t curl_init(void)
{
    pthread_once(&curl_once, curl_key_init);
    return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? APR_SUCCESS : APR_EGENERAL;
}

/* libcurl takes the URL as it is: the base URL itself is its form. */
static apr_status_t curl_setup(const void **where, const char *base_url, apr_pool_t *p)
{
    (void)p;
    *where = base_url;
    return APR_SUCCESS;
}

typedef struct xfer_t {
    char *buf;
    apr_size_t len, cap;
    const prov_gateway_req_t *req;
    int aborted;
    apr_time_t last_data;           /* streams: when the gateway last sent bytes */
    apr_time_t idle_limit;          /* streams: the longest silence allowed */
    int idled;
    CURL *h;
    int *status;
    apr_pool_t *p;
    const char *content_type;
    const char *retry_after;
    apr_size_t sent;                /* bytes of the body handed to libcurl */
} xfer_t;

/* The request body, given to libcurl through a read function and no seek
 * function: libcurl sends a request again on a new connection when a reused
 * one dies before any byte of the answer, which needs the body rewound. It
 * cannot rewind this one, so it fails (CURLE_SEND_FAIL_REWIND) instead of
 * sending the gateway a request it may have read whole and be running (the
 * never-resend rule of the plain client; Debian 12's libcurl has no option
 * to forbid that retry). */
static size_t on_read(char *buf, size_t size, size_t nmemb, void *ud)
{
    xfer_t *x = ud;
    apr_size_t n = x->req->len - x->sent;
    if (n > size * nmemb)
        n = size * nmemb;
    memcpy(buf, x->req->body + x->sent, n);
    x->sent += n;
    return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
    xfer_t *x = ud;
    size_t n = size * nmemb;
    x->last_data = apr_time_now();
    if (x->req->cb) {
        if (x->status && *x->status == 0) {
            long code = 0;
            curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
            *x->status = (int)code;
        }
        /* (libcurl does not say whether more bytes are waiting: each piece
         * is followed by idle) */
        if (x->req->cb(x->req->baton, data, n) != APR_SUCCESS
            || (x->req->idle && x->req->idle(x->req->baton) != APR_SUCCESS)) {
            x->aborted = 1;
            return 0;
        }
        return n;
    }
    if (x->len + n + 1 > x->cap) {
        apr_size_t cap = x->cap ? x->cap * 2 : FIRST_BUF;
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
    if (x->req->tick && x->req->tick(x->req->baton) != APR_SUCCESS) {
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

/* The request's headers, for CURLOPT_HTTPHEADER (the caller frees them). */
static struct curl_slist *header_list(const prov_gateway_req_t *req, apr_pool_t *p)
{
    struct curl_slist *hl = NULL;
    if (req->auth_header)
        hl = curl_slist_append(hl, req->auth_header);
    hl = curl_slist_append(hl, "Expect:");
    if (req->body)
        hl = curl_slist_append(hl, "Content-Type: application/json");
    if (req->headers) {
        const apr_array_header_t *arr = apr_table_elts(req->headers);
        const apr_table_entry_t *e = (const apr_table_entry_t *)arr->elts;
        int i;
        for (i = 0; i < arr->nelts; i++)
            hl = curl_slist_append(hl, apr_pstrcat(p, e[i].key, ": ", e[i].val, NULL));
    }
    return hl;
}

/* Sets h up for req, with x as the callbacks' data. */
static void set_options(CURL *h, const prov_gateway_req_t *req, xfer_t *x, int streaming)
{
    curl_easy_setopt(h, CURLOPT_URL, apr_pstrcat(x->p, (const char *)req->where, req->path,
                                                 NULL));
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms);
    if (streaming) {
        /* A stream may rightly last longer than any total limit: what it
         * must not do is stall. The timeout bounds the silence instead,
         * checked by the progress function (about once a second). */
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 0L);
        x->idle_limit = apr_time_from_msec(req->timeout_ms);
        x->last_data = apr_time_now();
        curl_easy_setopt(h, CURLOPT_BUFFERSIZE, STREAM_BUF);
    }
    else {
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    }
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
    if (req->tick || x->idle_limit) {
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
    else {
        /* The handle is the thread's: undo what a stream before set. */
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 1L);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, NULL);
    }
    if (!req->body) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    else {
        x->sent = 0;
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, x);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
    }
}

/* libcurl's result as an APR status. */
static apr_status_t status_of(CURLcode cc, const xfer_t *x)
{
    switch (cc) {
    case CURLE_OK:
        return APR_SUCCESS;
    case CURLE_OPERATION_TIMEDOUT:
        return APR_TIMEUP;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
        return APR_ECONNREFUSED;
    case CURLE_WRITE_ERROR:
    case CURLE_ABORTED_BY_CALLBACK:
        return x->idled ? APR_TIMEUP : x->aborted ? APR_ECONNABORTED : APR_EGENERAL;
    default:
        return APR_EGENERAL;
    }
}

static apr_status_t perform(const prov_gateway_req_t *req, xfer_t *x, long *code, int streaming,
                            const char **why)
{
    CURL *h = thread_handle();
    struct curl_slist *hl;
    CURLcode cc;
    apr_status_t rv;

    if (!h) {
        *why = "no libcurl handle";
        return APR_ENOMEM;
    }
    x->h = h;
    x->req = req;
    set_options(h, req, x, streaming);
    hl = header_list(req, x->p);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);

    cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
    /* The handle outlives this call: drop pointers into this request. */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_READDATA, NULL);
    curl_slist_free_all(hl);

    rv = status_of(cc, x);
    if (rv != APR_SUCCESS)
        *why = apr_psprintf(x->p, "curl error %d (%s)", (int)cc, curl_easy_strerror(cc));
    return rv;
}

static apr_status_t curl_request(prov_gateway_response_t **resp, const prov_gateway_req_t *req,
                                 const char **why, apr_pool_t *p)
{
    xfer_t x;
    long code = 0;
    apr_status_t rv;
    prov_gateway_response_t *r;

    *why = NULL;
    memset(&x, 0, sizeof(x));
    x.p = p;
    rv = perform(req, &x, &code, 0, why);
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

static apr_status_t curl_stream(int *status, const prov_gateway_req_t *req, const char **why,
                                apr_pool_t *p)
{
    xfer_t x;
    long code = 0;
    apr_status_t rv;

    *why = NULL;
    memset(&x, 0, sizeof(x));
    x.p = p;
    *status = 0;
    x.status = status;
    rv = perform(req, &x, &code, 1, why);
    if (code)
        *status = (int)code;
    if (req->retry_after && x.retry_after)
        *req->retry_after = x.retry_after;
    return rv;
}

const prov_gateway_backend_t prov_gateway_curl_backend = {
    "libcurl", curl_init, curl_setup, curl_request, curl_stream
};
