/* test_prov_sse.c: unit tests of the SSE parser (events split over feeds at
 * every byte, CRLF and CR line ends, comments, multi-line data, the size
 * bound, a cut stream) and of the encoder. */
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

void prov_test_suite_sse(void)
{
    PROV_SUITE("sse", PROV_TEST(test_whole), PROV_TEST(test_bytewise),
               PROV_TEST(test_cut_and_bound), PROV_TEST(test_encode));
}
