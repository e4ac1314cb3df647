/* prov_idp_http.c: the libcurl calls of core/identity (see prov_idp_http.h).
 * Kept apart from core/gateway's client on purpose: the gateway keeps
 * connections per thread and streams; a sign-in makes a handful of short
 * calls to other hosts, where a fresh handle per call is simplest and
 * carries nothing from one provider to another. libcurl's codes are
 * translated here, once. Here too: which URLs identity may call or send a
 * browser to (prov_idp_url_ok), checked by the configuration and by the
 * discovery document's reader alike. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <apr_lib.h>
#include <curl/curl.h>
#include "prov_curl.h"
#include "prov_idp_http.h"

static long connect_timeout_ms = 5000;
static long total_timeout_ms = 10000;

void prov_idp_http_timeouts(long connect_ms, long total_ms)
{
    connect_timeout_ms = connect_ms;
    total_timeout_ms = total_ms;
}

typedef struct sink_t {
    char *buf;
    apr_size_t len, cap;
    int too_big;
} sink_t;

static size_t on_data(char *data, size_t size, size_t nmemb, void *ud)
{
    sink_t *s = ud;
    size_t n = size * nmemb;
    if (s->len + n > PROV_IDP_HTTP_MAX) {
        s->too_big = 1;
        return 0;
    }
    if (s->len + n + 1 > s->cap) {
        apr_size_t cap = s->cap ? s->cap : 4096;
        char *nb;
        while (cap < s->len + n + 1)
            cap *= 2;
        if (!(nb = realloc(s->buf, cap)))
            return 0;
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    return n;
}

/* libcurl's outcome as an APR status: time, no connection, too large, other. */
static apr_status_t status_of(CURLcode cc, const sink_t *s)
{
    if (cc == CURLE_OK)
        return APR_SUCCESS;
    if (cc == CURLE_OPERATION_TIMEDOUT)
        return APR_TIMEUP;
    if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)
        return APR_ECONNREFUSED;
    return cc == CURLE_WRITE_ERROR && s->too_big ? APR_ENOSPC : APR_EGENERAL;
}

/* The call's connect and total timeouts in ms: the process-wide ones, cut
 * to what is left before deadline (0: none); 0 when nothing is left. */
static long call_timeout(long *connect_ms, apr_time_t deadline)
{
    long total = total_timeout_ms;
    *connect_ms = connect_timeout_ms;
    if (deadline) {
        apr_time_t left = deadline - apr_time_now();
        if (left < apr_time_from_msec(100))
            return 0;
        if (apr_time_as_msec(left) < total)
            total = (long)apr_time_as_msec(left);
    }
    if (*connect_ms > total)
        *connect_ms = total;
    return total;
}

static void set_options(CURL *h, const char *url, const char *form, struct curl_slist *hl,
                        long connect_ms, long total_ms, sink_t *sink)
{
    prov_curl_restrict(h, url);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total_ms);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "mod_provider");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
    if (form) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, form);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(form));
    }
}

apr_status_t prov_idp_http(prov_idp_http_answer_t **answer, const char **why, const char *url,
                           const char *form, const char *authorization, apr_time_t deadline,
                           apr_pool_t *p)
{
    CURL *h;
    struct curl_slist *hl = NULL;
    sink_t sink;
    CURLcode cc;
    long code = 0, connect_ms, total_ms = call_timeout(&connect_ms, deadline);
    apr_status_t rv;

    *why = NULL;
    if (total_ms == 0) {
        *why = "the sign-in's time (timeout=) was up before this call";
        return APR_TIMEUP;
    }
    if (!(h = curl_easy_init())) {
        *why = "no libcurl handle";
        return APR_ENOMEM;
    }
    memset(&sink, 0, sizeof(sink));
    hl = curl_slist_append(hl, "Accept: application/json");
    hl = curl_slist_append(hl, "Expect:");
    if (form)
        hl = curl_slist_append(hl, "Content-Type: application/x-www-form-urlencoded");
    if (authorization)
        hl = curl_slist_append(hl, apr_pstrcat(p, "Authorization: ", authorization, NULL));
    set_options(h, url, form, hl, connect_ms, total_ms, &sink);
    cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(h);
    curl_slist_free_all(hl);

    rv = status_of(cc, &sink);
    if (rv == APR_SUCCESS) {
        prov_idp_http_answer_t *r = apr_pcalloc(p, sizeof(*r));
        r->status = (int)code;
        r->body = sink.buf ? apr_pstrmemdup(p, sink.buf, sink.len) : "";
        r->len = sink.len;
        *answer = r;
    }
    else {
        *why = rv == APR_ENOSPC ? apr_psprintf(p, "the answer is larger than %d bytes",
                                              PROV_IDP_HTTP_MAX)
               : apr_psprintf(p, "curl error %d (%s)%s", (int)cc, curl_easy_strerror(cc),
                              rv == APR_TIMEUP && total_ms < total_timeout_ms
                              ? " at the end of the sign-in's time (timeout=)" : "");
    }
    free(sink.buf);
    return rv;
}

/* Printable ASCII or UTF-8 bytes; no control character. */
int prov_idp_text_ok(const char *v, apr_size_t max)
{
    const unsigned char *c;
    if (strlen(v) > max)
        return 0;
    for (c = (const unsigned char *)v; *c; c++) {
        if (*c < 0x20 || *c == 0x7f)
            return 0;
    }
    return 1;
}

static int loopback_host(const char *h, apr_size_t n)
{
    if ((n == 9 && !strncasecmp(h, "localhost", 9)) || (n == 5 && !strncmp(h, "[::1]", 5)))
        return 1;
    if (n >= 9 && !strncmp(h, "127.", 4)) {
        apr_size_t i;
        for (i = 4; i < n; i++) {
            if (!apr_isdigit(h[i]) && h[i] != '.')
                return 0;
        }
        return 1;
    }
    return 0;
}

const char *prov_idp_origin(const char *url, apr_pool_t *p)
{
    const char *host, *end, *hend;
    char *h, *c;
    int tls;
    if (!prov_idp_url_ok(url))
        return NULL;
    tls = !strncasecmp(url, "https://", 8);
    host = url + (tls ? 8 : 7);
    end = host + strcspn(host, "/?");
    /* prov_idp_url_ok saw the ']' of a [v6] host */
    if (*host == '[')
        hend = (const char *)memchr(host, ']', (apr_size_t)(end - host)) + 1;
    else if (!(hend = memchr(host, ':', (apr_size_t)(end - host))))
        hend = end;
    h = apr_pstrndup(p, host, (apr_size_t)(hend - host));
    for (c = h; *c; c++)
        *c = (char)apr_tolower(*c);
    return apr_pstrcat(p, tls ? "https://" : "http://", h, ":",
                       hend + 1 < end ? apr_pstrndup(p, hend + 1, (apr_size_t)(end - hend - 1))
                                      : tls ? "443" : "80", NULL);
}

int prov_idp_url_ok(const char *url)
{
    const char *host, *end;
    apr_size_t hlen;
    int tls;

    if (!url || !prov_idp_text_ok(url, PROV_IDP_VALUE_MAX) || strchr(url, ' ') || strchr(url, '#'))
        return 0;
    if (!strncasecmp(url, "https://", 8))
        tls = 1;
    else if (!strncasecmp(url, "http://", 7))
        tls = 0;
    else
        return 0;
    host = url + (tls ? 8 : 7);
    end = host + strcspn(host, "/?");
    if (memchr(host, '@', (apr_size_t)(end - host)))
        return 0;
    /* the host without its port: [v6]:port or name:port */
    if (*host == '[') {
        const char *rb = memchr(host, ']', (apr_size_t)(end - host));
        if (!rb)
            return 0;
        hlen = (apr_size_t)(rb + 1 - host);
    }
    else {
        const char *colon = memchr(host, ':', (apr_size_t)(end - host));
        hlen = (apr_size_t)((colon ? colon : end) - host);
    }
    if (hlen == 0)
        return 0;
    return tls || loopback_host(host, hlen);
}
