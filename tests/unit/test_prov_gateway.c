/* test_prov_gateway.c: unit tests of the gateway clients' requests and
 * answers (core/gateway/prov_gateway_http.c) against the scripted server
 * on 127.0.0.1 (gw_test_server.h): the gateway URL's parts, the request on
 * the wire (method, path prefix, Host, token, length), answers with
 * Content-Length, chunked, or ending with the connection, a 100 Continue
 * before the answer, a cut or malformed answer, and the total timeout;
 * streams through the plain client (the body handed on as it is decoded,
 * the status first, a refusal's body, a cut stream, a caller that stops
 * it, the limit on the gateway's silence, the connection kept after a
 * clean end, the idle call while the gateway pauses) and through libcurl's
 * backend; then the public interface,
 * whose answers and streams take the plain client for http://
 * (core/gateway/prov_gateway.c). How connections are kept, shared, reused
 * and sent on again is test_prov_gateway_conn.c's. */
#include <string.h>
#include "unit_tests.h"
#include "gw_test_server.h"

static void test_target_parse(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_gateway_target_t t;
    CU_ASSERT_EQUAL(prov_gateway_target_parse(&t, "http://127.0.0.1:4000", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(t.host, "127.0.0.1");
    CU_ASSERT_STRING_EQUAL(t.port, "4000");
    CU_ASSERT_STRING_EQUAL(t.host_header, "127.0.0.1:4000");
    CU_ASSERT_STRING_EQUAL(t.prefix, "");
    CU_ASSERT_EQUAL(prov_gateway_target_parse(&t, "http://gw.internal/base", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(t.host, "gw.internal");
    CU_ASSERT_STRING_EQUAL(t.port, "80");
    CU_ASSERT_STRING_EQUAL(t.prefix, "/base");
    CU_ASSERT_EQUAL(prov_gateway_target_parse(&t, "http://[::1]:8080/x", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(t.host, "::1");
    CU_ASSERT_STRING_EQUAL(t.port, "8080");
    CU_ASSERT_STRING_EQUAL(t.host_header, "[::1]:8080");
    CU_ASSERT_EQUAL(prov_gateway_target_parse(&t, "https://gw.internal", p), APR_ENOTIMPL);
    CU_ASSERT_EQUAL(prov_gateway_target_parse(&t, "http://", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_gateway_target_parse(&t, "http://h:", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_gateway_target_parse(&t, "http://h:80x", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_gateway_target_parse(&t, "http://user@h", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_gateway_target_parse(&t, "http://h/x?q=1", p), APR_EINVAL);
}

static void test_keepalive_and_encodings(void)
{
    static const gw_ts_step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
          "Content-Length: 11\r\n\r\n{\"ok\":true}", 0, 0, 0 },
        { "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\n"
          "Retry-After: 7\r\nTransfer-Encoding: chunked\r\n\r\n"
          "4\r\n{\"a\"\r\n5;x=y\r\n:\"b\"}\r\n0\r\nX-Trailer: 1\r\n\r\n", 0, 0, 0 },
        { "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    gw_ts_call_t c;
    static int gw;
    gw_ts_begin(&s, &p, steps, 3);
    c = gw_ts_post(&s, &gw, "/pre", 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(c.resp->status, 200);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "{\"ok\":true}");
    CU_ASSERT_EQUAL(c.resp->len, 11);
    CU_ASSERT_STRING_EQUAL(c.resp->content_type, "application/json");
    CU_ASSERT_PTR_NOT_NULL(strstr(s.last_request, "POST /pre/v1/chat/completions HTTP/1.1\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.last_request, "\r\nAuthorization: Bearer tok-123\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.last_request, "\r\nContent-Length: 7\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.last_request, apr_psprintf(p, "\r\nHost: 127.0.0.1:%d\r\n",
                                                               s.port)));
    c = gw_ts_post(&s, &gw, "/pre", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(c.resp->status, 429);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "{\"a\":\"b\"}");
    CU_ASSERT_STRING_EQUAL(c.resp->retry_after, "7");
    c = gw_ts_post(&s, &gw, "/pre", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "until the end");
    /* three answers on one connection */
    CU_ASSERT_EQUAL(s.accepted, 1);
    gw_ts_finish(&s);
    apr_pool_destroy(p);
}

static void test_failures(void)
{
    static const gw_ts_step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\ncut short", 1, 0, 0 },
        { "SMTP ready\r\n\r\n", 1, 0, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1, 600, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    gw_ts_call_t c;
    static int gw;
    gw_ts_begin(&s, &p, steps, 3);
    c = gw_ts_post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_EGENERAL);
    CU_ASSERT_PTR_NOT_NULL(c.why);
    c = gw_ts_post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_EGENERAL);
    c = gw_ts_post(&s, &gw, "", 200, p);
    CU_ASSERT_EQUAL(c.rv, APR_TIMEUP);
    CU_ASSERT_STRING_EQUAL(c.why, "no answer in time");
    gw_ts_finish(&s);
    /* nobody listens any more */
    c = gw_ts_post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_ECONNREFUSED);
    apr_pool_destroy(p);
}

typedef struct sink_t {
    char buf[256];
    apr_size_t len;
} sink_t;

static apr_status_t collect(void *baton, const char *data, apr_size_t len)
{
    sink_t *k = baton;
    if (k->len + len >= sizeof(k->buf))
        return APR_ENOSPC;
    memcpy(k->buf + k->len, data, len);
    k->len += len;
    k->buf[k->len] = '\0';
    return APR_SUCCESS;
}

typedef struct stream_call_t {
    sink_t k;
    int status, ticks, stop_after;  /* stop_after: refuse the nth piece (0: never) */
    int pieces;
    int idles, idles_between;       /* idle calls; those after "data: a" alone */
    apr_status_t rv;
    const char *why;
    const char *retry_after;        /* a refusal's Retry-After */
} stream_call_t;

static apr_status_t stream_piece(void *baton, const char *data, apr_size_t len)
{
    stream_call_t *c = baton;
    if (++c->pieces == c->stop_after)
        return APR_ECONNABORTED;
    return collect(&c->k, data, len);
}

static apr_status_t stream_tick(void *baton)
{
    ((stream_call_t *)baton)->ticks++;
    return APR_SUCCESS;
}

static apr_status_t stream_idle(void *baton)
{
    stream_call_t *c = baton;
    c->idles++;
    if (!strcmp(c->k.buf, "data: a"))
        c->idles_between++;
    return APR_SUCCESS;
}

/* One stream through backend b; gw is the connection-cache identity. */
static void stream(stream_call_t *c, const prov_gateway_backend_t *b, gw_ts_t *s, const void *gw,
                   long timeout_ms, apr_pool_t *p)
{
    const void *where = NULL;
    prov_gateway_req_t req;
    CU_ASSERT_EQUAL_FATAL(b->setup(&where, apr_psprintf(p, "http://127.0.0.1:%d", s->port), p),
                          APR_SUCCESS);
    memset(&req, 0, sizeof(req));
    req.owner = gw;
    req.where = where;
    req.connect_timeout_ms = 1000;
    req.timeout_ms = timeout_ms;
    req.path = "/v1/chat/completions";
    req.body = "{}";
    req.len = 2;
    req.cb = stream_piece;
    req.tick = stream_tick;
    req.idle = stream_idle;
    req.baton = c;
    req.retry_after = &c->retry_after;
    c->rv = b->stream(&c->status, &req, &c->why, p);
}

#define SSE_HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" \
                 "Transfer-Encoding: chunked\r\n\r\n"

static void test_streams(const prov_gateway_backend_t *b, int kept)
{
    static const gw_ts_step_t steps[] = {
        { SSE_HEAD "7\r\ndata: a\r\n7\r\ndata: b\r\n0\r\n\r\n", 0, 0, 0 },
        { "HTTP/1.1 429 Too Many\r\nRetry-After: 7\r\nContent-Length: 6\r\n\r\nslow!!", 0, 0,
          0 },
        { SSE_HEAD "7\r\ndata: a\r\n", 1, 0, 0 },
        { SSE_HEAD "7\r\ndata: a\r\n7\r\ndata: b\r\n0\r\n\r\n", 0, 0, 0 },
        /* silent 2.6 s: libcurl checks the silence about once a second */
        { SSE_HEAD "7\r\ndata: a\r\n0\r\n\r\n", 0, 2600, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    stream_call_t c;
    int gw = 0;
    gw_ts_begin(&s, &p, steps, 5);
    memset(&c, 0, sizeof(c));
    stream(&c, b, &s, &gw, 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(c.status, 200);
    CU_ASSERT_STRING_EQUAL(c.k.buf, "data: adata: b");
    CU_ASSERT_PTR_NULL(c.retry_after);
    /* a refusal: its status first, then its body, and its Retry-After */
    memset(&c, 0, sizeof(c));
    stream(&c, b, &s, &gw, 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(c.status, 429);
    CU_ASSERT_STRING_EQUAL(c.k.buf, "slow!!");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c.retry_after);
    CU_ASSERT_STRING_EQUAL(c.retry_after, "7");
    /* both on the connection of the first stream (the plain client) */
    CU_ASSERT_EQUAL(s.accepted, kept ? 1 : s.accepted);
    /* cut: the gateway closed before the last chunk */
    memset(&c, 0, sizeof(c));
    stream(&c, b, &s, &gw, 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_EGENERAL);
    CU_ASSERT_STRING_EQUAL(c.k.buf, "data: a");
    CU_ASSERT_PTR_NOT_NULL(c.why);
    /* the caller stops it at its first piece */
    memset(&c, 0, sizeof(c));
    c.stop_after = 1;
    stream(&c, b, &s, &gw, 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_ECONNABORTED);
    CU_ASSERT_EQUAL(c.k.len, 0);
    /* silent longer than the limit: the tick ran meanwhile */
    memset(&c, 0, sizeof(c));
    stream(&c, b, &s, &gw, 1100, p);
    CU_ASSERT_EQUAL(c.rv, APR_TIMEUP);
    CU_ASSERT(c.ticks >= 1);
    CU_ASSERT_EQUAL(c.k.len, 0);
    gw_ts_finish(&s);
    apr_pool_destroy(p);
}

static void test_streams_plain(void)
{
    test_streams(&prov_gateway_http_backend, 1);
}

/* The idle callback: called while the gateway pauses inside its stream
 * (what came so far can go out, as nothing more is there to read), and,
 * from the plain client, not between events it wrote at once. */
static void test_stream_idle(const prov_gateway_backend_t *b, int plain)
{
    static const gw_ts_step_t steps[] = {
        { SSE_HEAD "7\r\ndata: a\r\n", 0, 0, 0, "7\r\ndata: b\r\n0\r\n\r\n", 300 },
        { SSE_HEAD "7\r\ndata: a\r\n7\r\ndata: b\r\n0\r\n\r\n", 0, 0, 0, NULL, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    stream_call_t c;
    int gw = 0;
    gw_ts_begin(&s, &p, steps, 2);
    memset(&c, 0, sizeof(c));
    stream(&c, b, &s, &gw, 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.k.buf, "data: adata: b");
    CU_ASSERT(c.idles_between >= 1);
    memset(&c, 0, sizeof(c));
    stream(&c, b, &s, &gw, 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.k.buf, "data: adata: b");
    if (plain)
        CU_ASSERT_EQUAL(c.idles_between, 0);
    gw_ts_finish(&s);
    apr_pool_destroy(p);
}

static void test_stream_idle_plain(void)
{
    test_stream_idle(&prov_gateway_http_backend, 1);
}

static void test_stream_idle_libcurl(void)
{
    CU_ASSERT_EQUAL_FATAL(prov_gateway_curl_backend.init(), APR_SUCCESS);
    test_stream_idle(&prov_gateway_curl_backend, 0);
}

/* The plain client's request head, whole: the caller's Accept instead of
 * the default one, the token, the length, the caller's headers but those that would
 * break a line or name a field with ':'. */
static void test_stream_head(void)
{
    static const gw_ts_step_t steps[] = {
        { SSE_HEAD "7\r\ndata: a\r\n0\r\n\r\n", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    stream_call_t c;
    const void *where = NULL;
    prov_gateway_req_t req;
    apr_table_t *h;
    char *end;
    int gw = 0;
    gw_ts_begin(&s, &p, steps, 1);
    h = apr_table_make(p, 4);
    apr_table_setn(h, "Accept", "text/event-stream");
    apr_table_setn(h, "anthropic-version", "2023-06-01");
    apr_table_setn(h, "X-Split", "a\r\nInjected: 1");
    apr_table_setn(h, "X-Odd:", "b");
    CU_ASSERT_EQUAL_FATAL(prov_gateway_http_backend.setup(&where, apr_psprintf(p,
                          "http://127.0.0.1:%d/pre", s.port), p), APR_SUCCESS);
    memset(&req, 0, sizeof(req));
    memset(&c, 0, sizeof(c));
    req.owner = &gw;
    req.where = where;
    req.auth_header = "Authorization: Bearer tok-9";
    req.connect_timeout_ms = 1000;
    req.timeout_ms = 2000;
    req.path = "/v1/messages";
    req.body = "{\"a\":12345}";
    req.len = 11;
    req.headers = h;
    req.cb = stream_piece;
    req.baton = &c;
    c.rv = prov_gateway_http_backend.stream(&c.status, &req, &c.why, p);
    CU_ASSERT_EQUAL(c.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(c.status, 200);
    end = strstr(s.last_request, "\r\n\r\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    end[4] = '\0';
    CU_ASSERT_STRING_EQUAL(s.last_request, apr_psprintf(p,
        "POST /pre/v1/messages HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
        "Authorization: Bearer tok-9\r\n"
        "Content-Type: application/json\r\nContent-Length: 11\r\n"
        "Accept: text/event-stream\r\nanthropic-version: 2023-06-01\r\n\r\n", s.port));
    gw_ts_finish(&s);
    apr_pool_destroy(p);
}

static void test_streams_libcurl(void)
{
    CU_ASSERT_EQUAL_FATAL(prov_gateway_curl_backend.init(), APR_SUCCESS);
    test_streams(&prov_gateway_curl_backend, 0);
}

static void test_front_answers_and_streams(void)
{
    /* through the public interface: an answer read whole and a stream (the
     * plain client for http://), both on the gateway's path */
    static const gw_ts_step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nwhole", 0, 0, 0 },
        { "HTTP/1.1 201 Created\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
          "3\r\nstr\r\n4\r\neam!\r\n0\r\n\r\n", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    prov_gateway_t *gw = NULL;
    prov_gateway_response_t *resp = NULL;
    sink_t k;
    apr_table_t *accept;
    int status = 0;
    gw_ts_begin(&s, &p, steps, 2);
    CU_ASSERT_EQUAL_FATAL(prov_gateway_create(&gw, apr_psprintf(p, "http://127.0.0.1:%d/gw/",
                                                                s.port), "tok-9", 1000, 2000, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_gateway_request(&resp, gw, "/v1/models", NULL, 0, NULL, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(resp->status, 200);
    CU_ASSERT_STRING_EQUAL(resp->body, "whole");
    CU_ASSERT_PTR_NOT_NULL(strstr(s.last_request, "GET /gw/v1/models HTTP/1.1\r\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.last_request, "\r\nAuthorization: Bearer tok-9\r\n"));
    memset(&k, 0, sizeof(k));
    accept = apr_table_make(p, 1);
    apr_table_setn(accept, "Accept", "text/event-stream");
    CU_ASSERT_EQUAL(prov_gateway_stream(&status, gw, "/v1/chat/completions", "{}", 2, accept,
                                        collect, &k, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(status, 201);
    CU_ASSERT_STRING_EQUAL(k.buf, "stream!");
    CU_ASSERT_PTR_NOT_NULL(strstr(s.last_request, "POST /gw/v1/chat/completions HTTP/1.1\r\n"));
    /* the caller's Accept, and no other */
    CU_ASSERT_PTR_NOT_NULL(strstr(s.last_request, "\r\nAccept: text/event-stream\r\n"));
    CU_ASSERT_PTR_NULL(strstr(s.last_request, "Accept: */*"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s.last_request, "\r\nAuthorization: Bearer tok-9\r\n"));
    gw_ts_finish(&s);
    CU_ASSERT_EQUAL(s.accepted, 2);
    /* nobody listens any more: both backends say so alike */
    CU_ASSERT_EQUAL(prov_gateway_request(&resp, gw, "/v1/models", NULL, 0, NULL, p),
                    APR_ECONNREFUSED);
    CU_ASSERT_EQUAL(prov_gateway_stream(&status, gw, "/v1/chat/completions", "{}", 2, NULL,
                                        collect, &k, p), APR_ECONNREFUSED);
    apr_pool_destroy(p);
}

void prov_test_suite_gateway(void)
{
    PROV_SUITE("gateway", PROV_TEST(test_target_parse), PROV_TEST(test_keepalive_and_encodings),
               PROV_TEST(test_failures),
               PROV_TEST(test_streams_plain), PROV_TEST(test_streams_libcurl),
               PROV_TEST(test_stream_head), PROV_TEST(test_stream_idle_plain),
               PROV_TEST(test_stream_idle_libcurl),
               PROV_TEST(test_front_answers_and_streams));
}
