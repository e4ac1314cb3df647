/* test_prov_gateway_conn.c: unit tests of the plain gateway client's
 * kept connections (core/gateway/prov_gateway_http.c) against the
 * scripted server on 127.0.0.1 (gw_test_server.h): a kept connection the
 * gateway closed while idle (seen before reuse: the request goes once, on
 * a new connection), an idle connection taken by another thread, one not
 * used by a process forked after it was made (an httpd child) while its
 * parent still uses it, and a connection reset after the gateway read the
 * whole request (a failure, never sent again) or before it could (sent
 * again once, on a new connection). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "unit_tests.h"
#include "gw_test_server.h"

static void test_idle_close_seen_before_reuse(void)
{
    /* the first answer keeps the connection alive, then the server closes
     * its side while idle (it would still read a request sent there) */
    static const gw_ts_step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1, 0, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    gw_ts_call_t c;
    static int gw;
    gw_ts_begin(&s, &p, steps, 2);
    c = gw_ts_post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    gw_ts_wait_closes(&s, 1);
    usleep(20 * 1000);          /* margin for the FIN to cross loopback */
    c = gw_ts_post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "again");
    gw_ts_finish(&s);
    /* the second request went once, on a new connection */
    CU_ASSERT_EQUAL(s.accepted, 2);
    CU_ASSERT_EQUAL(s.seen, 2);
    apr_pool_destroy(p);
}

/* A call made from a thread of its own (the test's thread waits for it). */
typedef struct other_call_t {
    gw_ts_t *s;
    const void *gw;
    apr_pool_t *p;
    gw_ts_call_t c;
} other_call_t;

static void *post_elsewhere(void *v)
{
    other_call_t *o = v;
    o->c = gw_ts_post(o->s, o->gw, "", 2000, o->p);
    return NULL;
}

static void test_idle_connection_shared_by_threads(void)
{
    /* one thread's call leaves its connection idle; another thread, which
     * never called, takes it (the server answers one connection at a time:
     * a second one would wait unanswered) */
    static const gw_ts_step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 0, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    gw_ts_call_t c;
    other_call_t o;
    prov_gateway_slot_t *slot;
    pthread_t th;
    static int gw;
    gw_ts_begin(&s, &p, steps, 2);
    c = gw_ts_post(&s, &gw, "", 2000, p);
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
    CU_ASSERT_EQUAL_FATAL(prov_gateway_conn_slot(&slot, &gw), APR_SUCCESS);
    if (slot->fd < 0)
        prov_gateway_conn_take(slot);
    prov_gateway_conn_drop(slot);
    gw_ts_finish(&s);
    CU_ASSERT_EQUAL(s.accepted, 1);
    CU_ASSERT_EQUAL(s.seen, 2);
    apr_pool_destroy(p);
}

/* A process forked after calls (an httpd child) does not use the idle
 * connections it inherited; its parent still does. */
static void test_idle_connection_not_inherited(void)
{
    static const gw_ts_step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 0, 0 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nagain", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    gw_ts_call_t c;
    prov_gateway_slot_t *slot;
    int status = -1;
    pid_t pid;
    static int gw;
    gw_ts_begin(&s, &p, steps, 2);
    c = gw_ts_post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        if (prov_gateway_conn_slot(&slot, &gw) != APR_SUCCESS)
            _exit(2);
        if (slot->fd < 0)
            prov_gateway_conn_take(slot);
        _exit(slot->fd < 0 ? 0 : 1);
    }
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL_FATAL(prov_gateway_conn_slot(&slot, &gw), APR_SUCCESS);
    if (slot->fd < 0)
        prov_gateway_conn_take(slot);
    CU_ASSERT_TRUE(slot->fd >= 0);
    prov_gateway_conn_drop(slot);
    gw_ts_finish(&s);
    CU_ASSERT_EQUAL(s.accepted, 1);
    apr_pool_destroy(p);
}

static void test_read_request_never_resent(void)
{
    /* a kept connection; the gateway reads the second request whole, then
     * resets the connection without answering: it may have run it */
    static const gw_ts_step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 0, 0 },
        { NULL, 0, 0, 1 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\ntwice", 0, 0, 0 },
    };
    apr_pool_t *p = NULL;
    gw_ts_t s;
    gw_ts_call_t c;
    static int gw;
    gw_ts_begin(&s, &p, steps, 3);
    c = gw_ts_post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    c = gw_ts_post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL(c.rv, APR_EGENERAL);
    CU_ASSERT_PTR_NOT_NULL(c.why);
    gw_ts_finish(&s);
    CU_ASSERT_EQUAL(s.seen, 2);
    CU_ASSERT_EQUAL(s.accepted, 1);
    apr_pool_destroy(p);
}

static void test_unsent_request_sent_again(void)
{
    /* a kept connection; the gateway reads the head of a request too large
     * for the socket buffers and resets: the client still held part of it,
     * so it is sent again on a new connection, and read whole once */
    static const gw_ts_step_t steps[] = {
        { "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 0, 0, 0 },
        { NULL, 0, 0, 2 },
        { "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nonce", 0, 0, 0 },
    };
    apr_size_t big = 8 * 1024 * 1024;
    apr_pool_t *p = NULL;
    gw_ts_t s;
    gw_ts_call_t c;
    char *body;
    static int gw;
    gw_ts_begin(&s, &p, steps, 3);
    body = apr_palloc(p, big);
    memset(body, ' ', big);
    c = gw_ts_post(&s, &gw, "", 2000, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    c = gw_ts_post_body(&s, &gw, "", 10000, body, big, p);
    CU_ASSERT_EQUAL_FATAL(c.rv, APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c.resp->body, "once");
    gw_ts_finish(&s);
    CU_ASSERT_EQUAL(s.accepted, 2);
    CU_ASSERT_EQUAL(s.seen, 2);
    apr_pool_destroy(p);
}

void prov_test_suite_gateway_conn(void)
{
    PROV_SUITE("gateway_conn", PROV_TEST(test_idle_close_seen_before_reuse),
               PROV_TEST(test_idle_connection_shared_by_threads),
               PROV_TEST(test_idle_connection_not_inherited),
               PROV_TEST(test_read_request_never_resent),
               PROV_TEST(test_unsent_request_sent_again));
}
