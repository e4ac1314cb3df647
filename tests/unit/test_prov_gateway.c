/* test_prov_gateway.c: unit tests of the keep-alive HTTP/1.1 gateway client
 * (core/prov_gateway_http.c) against a scripted server on 127.0.0.1: the
 * gateway URL's parts, the request on the wire (method, path prefix, Host,
 * token, length), answers with Content-Length, chunked, or ending with the
 * connection, a 100 Continue before the answer, one connection kept for
 * several requests, a kept connection the gateway closed (sent again on a
 * new one), a cut or malformed answer, and the total timeout. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "unit_tests.h"
#include "prov_gateway_int.h"

#define MAX_STEPS 8

/* Each step answers one request: reply is written as is (NULL: read the
 * request and send nothing), then the connection is closed if close_after. */
typedef struct step_t {
    const char *reply;
    int close_after;
    int delay_ms;
} step_t;

typedef struct server_t {
    int lfd, port;
    step_t steps[MAX_STEPS];
    int nsteps;
    int accepted;                   /* connections taken */
    char last_request[4096];
    pthread_t th;
} server_t;

/* Reads one request (head and Content-Length body); 0 at EOF. */
static int read_request(int fd, char *buf, size_t cap)
{
    size_t got = 0;
    char *end;
    long clen = 0;
    for (;;) {
        ssize_t k = recv(fd, buf + got, cap - 1 - got, 0);
        if (k <= 0)
            return 0;
        got += (size_t)k;
        buf[got] = '\0';
        if ((end = strstr(buf, "\r\n\r\n")) != NULL) {
            char *cl = strcasestr(buf, "Content-Length:");
            if (cl)
                clen = atol(cl + 15);
            if (got >= (size_t)(end + 4 - buf) + (size_t)clen)
                return 1;
        }
    }
}

static void *serve(void *arg)
{
    server_t *s = arg;
    int i = 0;
    while (i < s->nsteps) {
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            break;
        s->accepted++;
        while (i < s->nsteps) {
            step_t *st = &s->steps[i];
            if (!read_request(fd, s->last_request, sizeof(s->last_request)))
                break;
            i++;
            if (st->delay_ms)
                usleep((useconds_t)st->delay_ms * 1000);
            if (st->reply && send(fd, st->reply, strlen(st->reply), MSG_NOSIGNAL) < 0)
                break;
            if (st->close_after)
                break;
        }
        close(fd);
    }
    return NULL;
}

static void start(server_t *s)
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    int one = 1;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CU_ASSERT_FATAL(s->lfd >= 0);
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CU_ASSERT_FATAL(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) == 0);
    CU_ASSERT_FATAL(listen(s->lfd, 8) == 0);
    CU_ASSERT_FATAL(getsockname(s->lfd, (struct sockaddr *)&a, &al) == 0);
    s->port = ntohs(a.sin_port);
    CU_ASSERT_FATAL(pthread_create(&s->th, NULL, serve, s) == 0);
}

static void finish(server_t *s)
{
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->th, NULL);
    close(s->lfd);
}

/* A server that answers with steps[0..n), and a pool for the test. */
static void begin(server_t *s, apr_pool_t **p, const step_t *steps, int n)
{
    apr_pool_create(p, prov_test_pool());
    memset(s, 0, sizeof(*s));
    memcpy(s->steps, steps, (size_t)n * sizeof(*steps));
    s->nsteps = n;
    start(s);
}

typedef struct call_t {
    prov_gw_response_t *resp;
    const char *why;
    apr_status_t rv;
} call_t;

/* One POST through the client; gw is the connection-cache identity. */
static call_t post(server_t *s, const void *gw, const char *prefix, long timeout_ms,
                   apr_pool_t *p)
{
    prov_gw_target_t t;
    call_t c;
    const char *url = apr_psprintf(p, "http://127.0.0.1:%d%s", s->port, prefix);
    memset(&c, 0, sizeof(c));
    CU_ASSERT_EQUAL_FATAL(prov_gw_target_parse(&t, url, p), APR_SUCCESS);
    c.rv = prov_gw_http_request(&c.resp, &t, gw, "Authorization: Bearer tok-123", 1000,
                                timeout_ms, "/v1/chat/completions", "{\"a\":1}", 7, NULL,
                                &c.why, p);
    return c;
}

static void test_target_parse(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_gw_target_t t;
    CU_ASSERT_EQUAL(prov_gw_target_parse(&t, "http://127.0.0.1:4000", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(t.host, "127.0.0.1");
    CU_ASSERT_STRING_EQUAL(t.port, "4000");
    CU_ASSERT_STRING_EQUAL(t.host_header, "127.0.0.1:4000");
    CU_ASSERT_STRING_EQUAL(t.prefix, "");
    CU_ASSERT_EQUAL(prov_gw_target_parse(&t, "http://gw.internal/base", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(t.host, "gw.internal");
    CU_ASSERT_STRING_EQUAL(t.port, "80");
    CU_ASSERT_STRING_EQUAL(t.prefix, "/base");
    CU_ASSERT_EQUAL(prov_gw_target_parse(&t, "http://[::1]:8080/x", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(t.host, "::1");
    CU_ASSERT_STRING_EQUAL(t.port, "8080");
    CU_ASSERT_STRING_EQUAL(t.host_header, "[::1]:8080");
    CU_ASSERT_EQUAL(prov_gw_target_parse(&t, "https://gw.internal", p), APR_ENOTIMPL);
    CU_ASSERT_EQUAL(prov_gw_target_parse(&t, "http://", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_gw_target_parse(&t, "http://h:", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_gw_target_parse(&t, "http://h:80x", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_gw_target_parse(&t, "http://user@h", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_gw_target_parse(&t, "http://h/x?q=1", p), APR_EINVAL);
}

static void test_keepalive_and_encodings(void)
{
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
          "Content-Length: 11\r\n\r\n{\"ok\":true}", 0, 0 },
        { "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\n"
          "Retry-After: 7\r\nTransfer-Encoding: chunked\r\n\r\n"
          "4\r\n{\"a\"\r\n5;x=y\r\n:\"b\"}\r\n0\r\nX-Trailer: 1\r\n\r\n", 0, 0 },
        { "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", 0, 0 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    call_t c;
    static int gw;
    begin(&s, &p, steps, 3);
    c = post(&s, &gw, "/pre", 2000, p);
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
    c = post(&s, &gw, "/pre", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(c.resp->status, 429);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "{\"a\":\"b\"}");
    CU_ASSERT_STRING_EQUAL(c.resp->retry_after, "7");
    c = post(&s, &gw, "/pre", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "until the end");
    /* three answers on one connection */
    CU_ASSERT_EQUAL(s.accepted, 1);
    finish(&s);
    apr_pool_destroy(p);
}

static void test_stale_connection_retried(void)
{
    /* the first answer keeps the connection alive, then the server drops it */
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain", 0, 0 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    call_t c;
    static int gw;
    begin(&s, &p, steps, 2);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    usleep(50 * 1000);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "again");
    CU_ASSERT_EQUAL(s.accepted, 2);
    finish(&s);
    apr_pool_destroy(p);
}

static void test_failures(void)
{
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\ncut short", 1, 0 },
        { "SMTP ready\r\n\r\n", 1, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1, 600 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    call_t c;
    static int gw;
    begin(&s, &p, steps, 3);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_EGENERAL);
    CU_ASSERT_PTR_NOT_NULL(c.why);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_EGENERAL);
    c = post(&s, &gw, "", 200, p);
    CU_ASSERT_EQUAL(c.rv, APR_TIMEUP);
    CU_ASSERT_STRING_EQUAL(c.why, "no answer in time");
    finish(&s);
    /* nobody listens any more */
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_ECONNREFUSED);
    apr_pool_destroy(p);
}

void prov_test_suite_gateway(void)
{
    PROV_SUITE("gateway", PROV_TEST(test_target_parse), PROV_TEST(test_keepalive_and_encodings),
               PROV_TEST(test_stale_connection_retried), PROV_TEST(test_failures));
}
