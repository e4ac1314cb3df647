/* test_prov_sse.c: unit tests of the SSE parser (events split over feeds at
 * every byte, CRLF and CR line ends, comments, multi-line data, the size
 * bound, a cut stream), of its prov_sse_ev_t form (the same events, data
 * handed out in place, the raw bytes only when they are the encoder's) and
 * of the encoders (to a pool string, into a prov_sse_buf_t). */
#include <string.h>
#include "unit_tests.h"
#include "prov_sse.h"

typedef struct seen_t {
    int n;
    char names[8][32];
    char data[8][128];
} seen_t;

static apr_status_t collect(void *baton, const char *name, const char *data, apr_size_t len)
{
    seen_t *s = baton;
    if (s->n < 8) {
        apr_cpystrn(s->names[s->n], name, sizeof(s->names[0]));
        apr_cpystrn(s->data[s->n], data, sizeof(s->data[0]));
        CU_ASSERT_EQUAL(strlen(data), len);
    }
    s->n++;
    return APR_SUCCESS;
}

static const char stream[] =
    ": a comment\r\n"
    "event: message_start\r\n"
    "data: {\"a\":1}\r\n"
    "\r\n"
    "data: line one\n"
    "data: line two\n"
    "id: 7\n"
    "\n"
    "event: ping\rdata: {}\r\r"
    "data: [DONE]\n\n";

static void check(seen_t *s)
{
    CU_ASSERT_EQUAL_FATAL(s->n, 4);
    CU_ASSERT_STRING_EQUAL(s->names[0], "message_start");
    CU_ASSERT_STRING_EQUAL(s->data[0], "{\"a\":1}");
    CU_ASSERT_STRING_EQUAL(s->names[1], "message");
    CU_ASSERT_STRING_EQUAL(s->data[1], "line one\nline two");
    CU_ASSERT_STRING_EQUAL(s->names[2], "ping");
    CU_ASSERT_STRING_EQUAL(s->data[2], "{}");
    CU_ASSERT_STRING_EQUAL(s->data[3], "[DONE]");
}

static void test_whole(void)
{
    seen_t s;
    prov_sse_parser_t *ps;
    memset(&s, 0, sizeof(s));
    ps = prov_sse_parser_create(collect, &s, 0, prov_test_pool());
    CU_ASSERT_EQUAL(prov_sse_feed(ps, stream, strlen(stream)), APR_SUCCESS);
    check(&s);
    CU_ASSERT_FALSE(prov_sse_pending(ps));
}

static void test_bytewise(void)
{
    seen_t s;
    prov_sse_parser_t *ps;
    apr_size_t i;
    memset(&s, 0, sizeof(s));
    ps = prov_sse_parser_create(collect, &s, 0, prov_test_pool());
    for (i = 0; i < strlen(stream); i++)
        CU_ASSERT_EQUAL(prov_sse_feed(ps, stream + i, 1), APR_SUCCESS);
    check(&s);
}

static void test_cut_and_bound(void)
{
    seen_t s;
    prov_sse_parser_t *ps;
    memset(&s, 0, sizeof(s));
    ps = prov_sse_parser_create(collect, &s, 16, prov_test_pool());
    CU_ASSERT_EQUAL(prov_sse_feed(ps, "data: {\"x\"", 10), APR_SUCCESS);
    CU_ASSERT_TRUE(prov_sse_pending(ps));
    CU_ASSERT_EQUAL(s.n, 0);
    CU_ASSERT_EQUAL(prov_sse_feed(ps, ":\"0123456789abcdef\"}\n\n", 22), APR_ENOSPC);
}

static void test_encode(void)
{
    apr_pool_t *p = prov_test_pool();
    CU_ASSERT_STRING_EQUAL(prov_sse_encode("ping", "{}", p), "event: ping\ndata: {}\n\n");
    CU_ASSERT_STRING_EQUAL(prov_sse_encode(NULL, "a\nb", p), "data: a\ndata: b\n\n");
}

/* ---- the prov_sse_ev_t parser ------------------------------------------------ */

typedef struct seen_ev_t {
    seen_t s;
    const char *fed, *fed_end;      /* the bytes of the current feed */
    int in_place[8];                /* the data lay in those bytes */
    char raw[8][160];               /* the raw bytes, "" when none */
} seen_ev_t;

static apr_status_t collect_ev(void *baton, const prov_sse_ev_t *ev)
{
    seen_ev_t *e = baton;
    int i = e->s.n;
    if (i < 8) {
        apr_size_t k = ev->len < sizeof(e->s.data[0]) - 1 ? ev->len : sizeof(e->s.data[0]) - 1;
        apr_cpystrn(e->s.names[i], ev->name, sizeof(e->s.names[0]));
        memcpy(e->s.data[i], ev->data, k);
        e->s.data[i][k] = '\0';
        e->in_place[i] = ev->data >= e->fed && ev->data + ev->len <= e->fed_end;
        e->raw[i][0] = '\0';
        if (ev->raw) {
            CU_ASSERT_TRUE(ev->raw >= e->fed && ev->raw + ev->raw_len <= e->fed_end);
            CU_ASSERT_TRUE(ev->raw_len < sizeof(e->raw[0]));
            apr_cpystrn(e->raw[i], ev->raw, ev->raw_len + 1);
        }
    }
    e->s.n++;
    return APR_SUCCESS;
}

static apr_status_t feed_ev(prov_sse_parser_t *ps, seen_ev_t *e, const char *b, apr_size_t n)
{
    e->fed = b;
    e->fed_end = b + n;
    return prov_sse_feed(ps, b, n);
}

static void test_ev_same_events(void)
{
    seen_ev_t e;
    prov_sse_parser_t *ps;
    apr_size_t i;
    memset(&e, 0, sizeof(e));
    ps = prov_sse_parser_create_ev(collect_ev, &e, 0, prov_test_pool());
    CU_ASSERT_EQUAL(feed_ev(ps, &e, stream, strlen(stream)), APR_SUCCESS);
    check(&e.s);
    /* one data line in the bytes fed: in place; two: joined by the parser */
    CU_ASSERT_TRUE(e.in_place[0]);
    CU_ASSERT_FALSE(e.in_place[1]);
    CU_ASSERT_TRUE(e.in_place[3]);
    /* CRLF, CR, no event line: not the encoder's bytes */
    for (i = 0; i < 4; i++)
        CU_ASSERT_STRING_EQUAL(e.raw[i], "");
    memset(&e, 0, sizeof(e));
    ps = prov_sse_parser_create_ev(collect_ev, &e, 0, prov_test_pool());
    for (i = 0; i < strlen(stream); i++)
        CU_ASSERT_EQUAL(feed_ev(ps, &e, stream + i, 1), APR_SUCCESS);
    check(&e.s);
    CU_ASSERT_FALSE(prov_sse_pending(ps));
}

static const char relayed[] =
    ": keep-alive\n"
    "event: content_block_delta\n"
    "data: {\"delta\":{\"text\":\"Hi\"}}\n"
    "\n"
    "event: ping\n"
    "data: {}\n"
    "id: 3\n"
    "\n"
    "event: a\n"
    "data: one\n"
    "data: two\n"
    "\n"
    "event:b\n"
    "data: x\n"
    "\n"
    "event: message_stop\n"
    "data:  {} \n"
    "\n";

static void test_ev_raw(void)
{
    apr_pool_t *p = prov_test_pool();
    seen_ev_t e;
    prov_sse_parser_t *ps;
    apr_size_t len, cut, first;
    memset(&e, 0, sizeof(e));
    ps = prov_sse_parser_create_ev(collect_ev, &e, 0, p);
    CU_ASSERT_EQUAL(feed_ev(ps, &e, relayed, strlen(relayed)), APR_SUCCESS);
    first = strlen(e.raw[0]);
    CU_ASSERT_EQUAL_FATAL(e.s.n, 5);
    CU_ASSERT_STRING_EQUAL(e.raw[0], "event: content_block_delta\n"
                                     "data: {\"delta\":{\"text\":\"Hi\"}}\n\n");
    CU_ASSERT_STRING_EQUAL(e.raw[0], prov_sse_encode(e.s.names[0], e.s.data[0], p));
    CU_ASSERT_STRING_EQUAL(e.raw[1], "");            /* an id line */
    CU_ASSERT_STRING_EQUAL(e.s.data[2], "one\ntwo");
    CU_ASSERT_STRING_EQUAL(e.raw[2], "");            /* two data lines */
    CU_ASSERT_STRING_EQUAL(e.s.names[3], "b");
    CU_ASSERT_STRING_EQUAL(e.raw[3], "");            /* "event:b" */
    CU_ASSERT_STRING_EQUAL(e.s.data[4], " {} ");
    CU_ASSERT_STRING_EQUAL(e.raw[4], "event: message_stop\ndata:  {} \n\n");
    CU_ASSERT_STRING_EQUAL(e.raw[4], prov_sse_encode(e.s.names[4], e.s.data[4], p));
    /* cut anywhere: the events are the same; an event cut is never raw */
    for (cut = 1; cut < strlen(relayed); cut++) {
        memset(&e, 0, sizeof(e));
        ps = prov_sse_parser_create_ev(collect_ev, &e, 0, p);
        len = strlen(relayed);
        CU_ASSERT_EQUAL(feed_ev(ps, &e, relayed, cut), APR_SUCCESS);
        CU_ASSERT_EQUAL(feed_ev(ps, &e, relayed + cut, len - cut), APR_SUCCESS);
        CU_ASSERT_EQUAL(e.s.n, 5);
        CU_ASSERT_STRING_EQUAL(e.s.data[0], "{\"delta\":{\"text\":\"Hi\"}}");
        CU_ASSERT_STRING_EQUAL(e.s.data[4], " {} ");
        if (cut > 13 && cut < 13 + first)
            CU_ASSERT_STRING_EQUAL(e.raw[0], "");
        if (cut <= 13 || cut >= 13 + first)
            CU_ASSERT_STRING_NOT_EQUAL(e.raw[0], "");
    }
}

/* A stopped callback stops the feed; a data line pending in place is kept. */
static apr_status_t stop_ev(void *baton, const prov_sse_ev_t *ev)
{
    (void)ev;
    ++*(int *)baton;
    return APR_EGENERAL;
}

static void test_ev_stop_and_bound(void)
{
    static const char two[] = "data: a\n\ndata: b\n\n";
    char piece[32];
    seen_ev_t e;
    prov_sse_parser_t *ps;
    int n = 0;
    ps = prov_sse_parser_create_ev(stop_ev, &n, 0, prov_test_pool());
    CU_ASSERT_EQUAL(prov_sse_feed(ps, two, strlen(two)), APR_EGENERAL);
    CU_ASSERT_EQUAL(n, 1);
    memset(&e, 0, sizeof(e));
    ps = prov_sse_parser_create_ev(collect_ev, &e, 16, prov_test_pool());
    /* the feed's bytes go away (a buffer reused) once the feed returns */
    strcpy(piece, "data: abc\n");
    CU_ASSERT_EQUAL(feed_ev(ps, &e, piece, strlen(piece)), APR_SUCCESS);
    memset(piece, 'z', sizeof(piece));
    CU_ASSERT_TRUE(prov_sse_pending(ps));
    CU_ASSERT_EQUAL(feed_ev(ps, &e, "\n", 1), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(e.s.n, 1);
    CU_ASSERT_STRING_EQUAL(e.s.data[0], "abc");
    CU_ASSERT_EQUAL(feed_ev(ps, &e, "data: 0123456789abcdef\n", 23), APR_ENOSPC);
}

static void test_buf(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_sse_buf_t *b = prov_sse_buf_create(p);
    char *big = apr_palloc(p, 10001);
    apr_size_t i, n;
    const char *enc;
    CU_ASSERT_EQUAL(prov_sse_put_event(b, "ping", "{}", 2), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_sse_put_event(b, NULL, "a\nb", 3), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_sse_put_bytes(b, ": x\n\n", 5), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(b->len, strlen("event: ping\ndata: {}\n\ndata: a\ndata: b\n\n: x\n\n"));
    CU_ASSERT_EQUAL(memcmp(b->data, "event: ping\ndata: {}\n\ndata: a\ndata: b\n\n: x\n\n", b->len), 0);
    prov_sse_buf_reset(b);
    CU_ASSERT_EQUAL(b->len, 0);
    /* more than the first allocation, with NUL bytes and newlines */
    for (i = 0; i < 10000; i++)
        big[i] = i % 97 == 0 ? '\n' : i % 89 == 0 ? '\0' : 'a' + i % 26;
    CU_ASSERT_EQUAL(prov_sse_put_event(b, "big", big, 10000), APR_SUCCESS);
    enc = prov_sse_encode_len("big", big, 10000, &n, p);
    CU_ASSERT_EQUAL_FATAL(b->len, n);
    CU_ASSERT_EQUAL(memcmp(b->data, enc, n), 0);
    CU_ASSERT_EQUAL(prov_sse_put_event(b, "e", "", 0), APR_SUCCESS);
    CU_ASSERT_EQUAL(memcmp(b->data + n, "event: e\ndata: \n\n", b->len - n), 0);
    /* what a buffer holds is kept as it outgrows its first memory, and
     * again as it grows further */
    b = prov_sse_buf_create(p);
    CU_ASSERT_EQUAL(prov_sse_put_bytes(b, "head", 4), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_sse_put_bytes(b, big, 5000), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_sse_put_bytes(b, big, 10000), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(b->len, 15004);
    CU_ASSERT_EQUAL(memcmp(b->data, "head", 4), 0);
    CU_ASSERT_EQUAL(memcmp(b->data + 4, big, 5000), 0);
    CU_ASSERT_EQUAL(memcmp(b->data + 5004, big, 10000), 0);
}

void prov_test_suite_sse(void)
{
    PROV_SUITE("sse", PROV_TEST(test_whole), PROV_TEST(test_bytewise),
               PROV_TEST(test_cut_and_bound), PROV_TEST(test_encode),
               PROV_TEST(test_ev_same_events), PROV_TEST(test_ev_raw),
               PROV_TEST(test_ev_stop_and_bound), PROV_TEST(test_buf));
}
