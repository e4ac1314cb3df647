/* test_prov_gateway.c: unit tests of the keep-alive HTTP/1.1 gateway client
 * (core/gateway/prov_gateway_http.c) against a scripted server on 127.0.0.1: the
 * gateway URL's parts, the request on the wire (method, path prefix, Host,
 * token, length), answers with Content-Length, chunked, or ending with the
 * connection, a 100 Continue before the answer, one connection kept for
 * several requests, a kept connection the gateway closed while idle (seen
 * before reuse: the request goes once, on a new connection), a connection
 * reset after the gateway read the whole request (a failure, never sent
 * again) or before it could (sent again once), a cut or malformed answer,
 * and the total timeout; streams through the plain client (the body handed
 * on as it is decoded, the status first, a refusal's body, a cut stream, a
 * caller that stops it, the limit on the gateway's silence, the connection
 * kept after a clean end) and through libcurl's backend; then the public
 * interface, whose answers and streams take the plain client for http://
 * (core/gateway/prov_gateway.c). */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include "unit_tests.h"
#include "prov_gateway_http.h"

#define MAX_STEPS 8

/* Each step answers one request: reply is written as is (NULL: read the
 * request and send nothing), then, if close_after, the server stops writing
 * (a FIN) but still reads and counts what arrives on that connection until
 * the client closes it; if reset, the connection is closed with a TCP reset
 * right after the request was read (and reply is not sent); reset 2 does so
 * after reading only the request's head. */
typedef struct step_t {
    const char *reply;
    int close_after;
    int delay_ms;
    int reset;
} step_t;

typedef struct server_t {
    int lfd, port;
    step_t steps[MAX_STEPS];
    int nsteps;
    int accepted;                   /* connections taken */
    int seen;                       /* whole requests read, answered or not */
    int closes;                     /* connections the server stopped writing on */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char last_request[4096];
    pthread_t th;
} server_t;

/* Reads one request's head into buf and, unless head_only, its
 * Content-Length body (kept in buf as far as it fits); 0 at EOF. */
static int read_request(int fd, char *buf, size_t cap, int head_only)
{
    size_t got = 0, want;
    char *end = NULL, scratch[16384];
    long clen = 0;
    while (!end) {
        ssize_t k = recv(fd, buf + got, cap - 1 - got, 0);
        if (k <= 0)
            return 0;
        got += (size_t)k;
        buf[got] = '\0';
        if ((end = strstr(buf, "\r\n\r\n")) != NULL) {
            char *cl = strcasestr(buf, "Content-Length:");
            if (cl)
                clen = atol(cl + 15);
        }
    }
    if (head_only)
        return 1;
    want = (size_t)(end + 4 - buf) + (size_t)clen;
    while (got < want) {
        ssize_t k = recv(fd, scratch, sizeof(scratch), 0);
        if (k <= 0)
            return 0;
        got += (size_t)k;
    }
    return 1;
}

static void count(server_t *s, int *field)
{
    pthread_mutex_lock(&s->mu);
    (*field)++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Waits until the server stopped writing on n connections. */
static void wait_closes(server_t *s, int n)
{
    pthread_mutex_lock(&s->mu);
    while (s->closes < n)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static void reset_conn(int fd)
{
    struct linger l = { 1, 0 };
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

static void *serve(void *arg)
{
    server_t *s = arg;
    int i = 0;
    while (i < s->nsteps) {
        int fd = accept(s->lfd, NULL, NULL), half_closed = 0;
        if (fd < 0)
            break;
        count(s, &s->accepted);
        while (i < s->nsteps || half_closed) {
            step_t *st = &s->steps[i < s->nsteps ? i : 0];
            int head_only = !half_closed && st->reset == 2;
            if (!read_request(fd, s->last_request, sizeof(s->last_request), head_only))
                break;
            if (!head_only)
                count(s, &s->seen);
            if (half_closed)
                break;
            i++;
            if (st->reset) {
                reset_conn(fd);
                break;
            }
            if (st->delay_ms)
                usleep((useconds_t)st->delay_ms * 1000);
            if (st->reply && send(fd, st->reply, strlen(st->reply), MSG_NOSIGNAL) < 0)
                break;
            if (st->close_after) {
                shutdown(fd, SHUT_WR);
                half_closed = 1;
                count(s, &s->closes);
            }
        }
        close(fd);
    }
    return NULL;
}

static void start(server_t *s)
{
    struct sockaddr_in a;
    socklen_t al = sizeof(a);
    int one = 1, rcvbuf = 16384;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CU_ASSERT_FATAL(s->lfd >= 0);
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* a small receive buffer (inherited by accepted sockets): a large
     * request cannot be handed to the kernel whole before the server reads */
    setsockopt(s->lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
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
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
}

/* A server that answers with steps[0..n), and a pool for the test. */
static void begin(server_t *s, apr_pool_t **p, const step_t *steps, int n)
{
    apr_pool_create(p, prov_test_pool());
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    memcpy(s->steps, steps, (size_t)n * sizeof(*steps));
    s->nsteps = n;
    start(s);
}

typedef struct call_t {
    prov_gw_response_t *resp;
    const char *why;
    apr_status_t rv;
} call_t;

/* One POST of body through the client; gw is the connection-cache identity. */
static call_t post_body(server_t *s, const void *gw, const char *prefix, long timeout_ms,
                        const char *body, apr_size_t len, apr_pool_t *p)
{
    prov_gw_target_t t;
    prov_gw_req_t req;
    call_t c;
    const char *url = apr_psprintf(p, "http://127.0.0.1:%d%s", s->port, prefix);
    memset(&c, 0, sizeof(c));
    memset(&req, 0, sizeof(req));
    CU_ASSERT_EQUAL_FATAL(prov_gw_target_parse(&t, url, p), APR_SUCCESS);
    req.owner = gw;
    req.where = &t;
    req.auth_header = "Authorization: Bearer tok-123";
    req.connect_timeout_ms = 1000;
    req.timeout_ms = timeout_ms;
    req.path = "/v1/chat/completions";
    req.body = body;
    req.len = len;
    c.rv = prov_gw_http_request(&c.resp, &req, &c.why, p);
    return c;
}

static call_t post(server_t *s, const void *gw, const char *prefix, long timeout_ms,
                   apr_pool_t *p)
{
    return post_body(s, gw, prefix, timeout_ms, "{\"a\":1}", 7, p);
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
          "Content-Length: 11\r\n\r\n{\"ok\":true}", 0, 0, 0 },
        { "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many Requests\r\n"
          "Retry-After: 7\r\nTransfer-Encoding: chunked\r\n\r\n"
          "4\r\n{\"a\"\r\n5;x=y\r\n:\"b\"}\r\n0\r\nX-Trailer: 1\r\n\r\n", 0, 0, 0 },
        { "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", 0, 0, 0 },
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

static void test_idle_close_seen_before_reuse(void)
{
    /* the first answer keeps the connection alive, then the server closes
     * its side while idle (it would still read a request sent there) */
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1, 0, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    call_t c;
    static int gw;
    begin(&s, &p, steps, 2);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    wait_closes(&s, 1);
    usleep(20 * 1000);          /* margin for the FIN to cross loopback */
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "again");
    finish(&s);
    /* the second request went once, on a new connection */
    CU_ASSERT_EQUAL(s.accepted, 2);
    CU_ASSERT_EQUAL(s.seen, 2);
    apr_pool_destroy(p);
}

/* A call made from a thread of its own (the test's thread waits for it). */
typedef struct other_call_t {
    server_t *s;
    const void *gw;
    apr_pool_t *p;
    call_t c;
} other_call_t;

static void *post_elsewhere(void *v)
{
    other_call_t *o = v;
    o->c = post(o->s, o->gw, "", 2000, o->p);
    return NULL;
}

static void test_idle_connection_shared_by_threads(void)
{
    /* one thread's call leaves its connection idle; another thread, which
     * never called, takes it (the server answers one connection at a time:
     * a second one would wait unanswered) */
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 0, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    call_t c;
    other_call_t o;
    prov_gw_slot_t *slot;
    pthread_t th;
    static int gw;
    begin(&s, &p, steps, 2);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    memset(&o, 0, sizeof(o));
    o.s = &s;
    o.gw = &gw;
    o.p = p;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, post_elsewhere, &o) == 0);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(o.c.rv, APR_SUCCESS);
    if (o.c.rv == APR_SUCCESS)
        CU_ASSERT_STRING_EQUAL(o.c.resp->body, "again");
    /* the connection left idle closed (else the server would wait on it) */
    CU_ASSERT_EQUAL_FATAL(prov_gw_conn_slot(&slot, &gw), APR_SUCCESS);
    if (slot->fd < 0)
        prov_gw_conn_take(slot);
    prov_gw_conn_drop(slot);
    finish(&s);
    CU_ASSERT_EQUAL(s.accepted, 1);
    CU_ASSERT_EQUAL(s.seen, 2);
    apr_pool_destroy(p);
}

/* A process forked after calls (an httpd child) does not use the idle
 * connections it inherited; its parent still does. */
static void test_idle_connection_not_inherited(void)
{
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 0, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    call_t c;
    prov_gw_slot_t *slot;
    int status = -1;
    pid_t pid;
    static int gw;
    begin(&s, &p, steps, 2);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        if (prov_gw_conn_slot(&slot, &gw) != APR_SUCCESS)
            _exit(2);
        if (slot->fd < 0)
            prov_gw_conn_take(slot);
        _exit(slot->fd < 0 ? 0 : 1);
    }
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL_FATAL(prov_gw_conn_slot(&slot, &gw), APR_SUCCESS);
    if (slot->fd < 0)
        prov_gw_conn_take(slot);
    CU_ASSERT_TRUE(slot->fd >= 0);
    prov_gw_conn_drop(slot);
    finish(&s);
    CU_ASSERT_EQUAL(s.accepted, 1);
    apr_pool_destroy(p);
}

static void test_read_request_never_resent(void)
{
    /* a kept connection; the gateway reads the second request whole, then
     * resets the connection without answering: it may have run it */
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 0, 0 },
        { NULL, 0, 0, 1 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\ntwice", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    call_t c;
    static int gw;
    begin(&s, &p, steps, 3);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_EGENERAL);
    CU_ASSERT_PTR_NOT_NULL(c.why);
    finish(&s);
    CU_ASSERT_EQUAL(s.seen, 2);
    CU_ASSERT_EQUAL(s.accepted, 1);
    apr_pool_destroy(p);
}

static void test_unsent_request_sent_again(void)
{
    /* a kept connection; the gateway reads the head of a request too large
     * for the socket buffers and resets: the client still held part of it,
     * so it is sent again on a new connection, and read whole once */
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 0, 0 },
        { NULL, 0, 0, 2 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nonce", 0, 0, 0 },
    };
    apr_size_t big = 8 * 1024 * 1024;
    apr_pool_t *p = NULL;
    server_t s;
    call_t c;
    char *body;
    static int gw;
    begin(&s, &p, steps, 3);
    body = apr_palloc(p, big);
    memset(body, ' ', big);
    c = post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    c = post_body(&s, &gw, "", 10000, body, big, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "once");
    finish(&s);
    CU_ASSERT_EQUAL(s.accepted, 2);
    CU_ASSERT_EQUAL(s.seen, 2);
    apr_pool_destroy(p);
}

static void test_failures(void)
{
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\ncut short", 1, 0, 0 },
        { "SMTP ready\r\n\r\n", 1, 0, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1, 600, 0 },
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
    apr_status_t rv;
    const char *why;
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

/* One stream through backend b; gw is the connection-cache identity. */
static void stream(stream_call_t *c, const prov_gw_backend_t *b, server_t *s, const void *gw,
                   long timeout_ms, apr_pool_t *p)
{
    const void *where = NULL;
    prov_gw_req_t req;
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
    req.baton = c;
    c->rv = b->stream(&c->status, &req, &c->why, p);
}

#define SSE_HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" \
                 "Transfer-Encoding: chunked\r\n\r\n"

static void test_streams(const prov_gw_backend_t *b, int kept)
{
    static const step_t steps[] = {
        { SSE_HEAD "7\r\ndata: a\r\n7\r\ndata: b\r\n0\r\n\r\n", 0, 0, 0 },
        { "HTTP/1.1 429 Too Many\r\nContent-Length: 6\r\n\r\nslow!!", 0, 0, 0 },
        { SSE_HEAD "7\r\ndata: a\r\n", 1, 0, 0 },
        { SSE_HEAD "7\r\ndata: a\r\n7\r\ndata: b\r\n0\r\n\r\n", 0, 0, 0 },
        /* silent 2.6 s: libcurl checks the silence about once a second */
        { SSE_HEAD "7\r\ndata: a\r\n0\r\n\r\n", 0, 2600, 0 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    stream_call_t c;
    int gw = 0;
    begin(&s, &p, steps, 5);
    memset(&c, 0, sizeof(c));
    stream(&c, b, &s, &gw, 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(c.status, 200);
    CU_ASSERT_STRING_EQUAL(c.k.buf, "data: adata: b");
    /* a refusal: its status first, then its body */
    memset(&c, 0, sizeof(c));
    stream(&c, b, &s, &gw, 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(c.status, 429);
    CU_ASSERT_STRING_EQUAL(c.k.buf, "slow!!");
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
    finish(&s);
    apr_pool_destroy(p);
}

static void test_streams_plain(void)
{
    test_streams(&prov_gw_http_backend, 1);
}

/* The plain client's request head, whole: the caller's Accept instead of
 * the default one, the token, the length, the caller's headers but those that would
 * break a line or name a field with ':'. */
static void test_stream_head(void)
{
    static const step_t steps[] = {
        { SSE_HEAD "7\r\ndata: a\r\n0\r\n\r\n", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    stream_call_t c;
    const void *where = NULL;
    prov_gw_req_t req;
    apr_table_t *h;
    char *end;
    int gw = 0;
    begin(&s, &p, steps, 1);
    h = apr_table_make(p, 4);
    apr_table_setn(h, "Accept", "text/event-stream");
    apr_table_setn(h, "anthropic-version", "2023-06-01");
    apr_table_setn(h, "X-Split", "a\r\nInjected: 1");
    apr_table_setn(h, "X-Odd:", "b");
    CU_ASSERT_EQUAL_FATAL(prov_gw_http_backend.setup(&where, apr_psprintf(p,
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
    c.rv = prov_gw_http_backend.stream(&c.status, &req, &c.why, p);
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
    finish(&s);
    apr_pool_destroy(p);
}

static void test_streams_libcurl(void)
{
    CU_ASSERT_EQUAL_FATAL(prov_gw_curl_backend.init(), APR_SUCCESS);
    test_streams(&prov_gw_curl_backend, 0);
}

static void test_front_answers_and_streams(void)
{
    /* through the public interface: an answer read whole and a stream (the
     * plain client for http://), both on the gateway's path */
    static const step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nwhole", 0, 0, 0 },
        { "HTTP/1.1 201 Created\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
          "3\r\nstr\r\n4\r\neam!\r\n0\r\n\r\n", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    server_t s;
    prov_gateway_t *gw = NULL;
    prov_gw_response_t *resp = NULL;
    sink_t k;
    apr_table_t *accept;
    int status = 0;
    begin(&s, &p, steps, 2);
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
    finish(&s);
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
               PROV_TEST(test_idle_close_seen_before_reuse),
               PROV_TEST(test_idle_connection_shared_by_threads),
               PROV_TEST(test_idle_connection_not_inherited),
               PROV_TEST(test_read_request_never_resent),
               PROV_TEST(test_unsent_request_sent_again), PROV_TEST(test_failures),
               PROV_TEST(test_streams_plain), PROV_TEST(test_streams_libcurl),
               PROV_TEST(test_stream_head),
               PROV_TEST(test_front_answers_and_streams));
}
