/* gw_test_server.c: the gateway suites' scripted server and their POST
 * through the plain client (gw_test_server.h). */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "unit_tests.h"
#include "gw_test_server.h"

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

static void count(gw_ts_t *s, int *field)
{
    pthread_mutex_lock(&s->mu);
    (*field)++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void gw_ts_wait_closes(gw_ts_t *s, int n)
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
    gw_ts_t *s = arg;
    int i = 0;
    while (i < s->nsteps) {
        int fd = accept(s->lfd, NULL, NULL), half_closed = 0;
        if (fd < 0)
            break;
        count(s, &s->accepted);
        while (i < s->nsteps || half_closed) {
            gw_ts_step_t *st = &s->steps[i < s->nsteps ? i : 0];
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
            if (st->then) {
                usleep((useconds_t)st->then_ms * 1000);
                if (send(fd, st->then, strlen(st->then), MSG_NOSIGNAL) < 0)
                    break;
            }
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

static void start(gw_ts_t *s)
{
    /* a small receive buffer (inherited by accepted sockets): a large
     * request cannot be handed to the kernel whole before the server reads */
    s->lfd = prov_test_listen(8, 16384, &s->port);
    CU_ASSERT_FATAL(pthread_create(&s->th, NULL, serve, s) == 0);
}

void gw_ts_finish(gw_ts_t *s)
{
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->th, NULL);
    close(s->lfd);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
}

void gw_ts_begin(gw_ts_t *s, apr_pool_t **p, const gw_ts_step_t *steps, int n)
{
    apr_pool_create(p, prov_test_pool());
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    memcpy(s->steps, steps, (size_t)n * sizeof(*steps));
    s->nsteps = n;
    start(s);
}

gw_ts_call_t gw_ts_post_body(gw_ts_t *s, const void *gw, const char *prefix,
                             long timeout_ms, const char *body, apr_size_t len, apr_pool_t *p)
{
    prov_gateway_target_t t;
    prov_gateway_req_t req;
    gw_ts_call_t c;
    const char *url = apr_psprintf(p, "http://127.0.0.1:%d%s", s->port, prefix);
    memset(&c, 0, sizeof(c));
    memset(&req, 0, sizeof(req));
    CU_ASSERT_EQUAL_FATAL(prov_gateway_target_parse(&t, url, p), APR_SUCCESS);
    req.owner = gw;
    req.where = &t;
    req.auth_header = "Authorization: Bearer tok-123";
    req.connect_timeout_ms = 1000;
    req.timeout_ms = timeout_ms;
    req.path = "/v1/chat/completions";
    req.body = body;
    req.len = len;
    c.rv = prov_gateway_http_request(&c.resp, &req, &c.why, p);
    return c;
}

gw_ts_call_t gw_ts_post(gw_ts_t *s, const void *gw, const char *prefix, long timeout_ms,
                        apr_pool_t *p)
{
    return gw_ts_post_body(s, gw, prefix, timeout_ms, "{\"a\":1}", 7, p);
}
