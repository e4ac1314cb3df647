/* test_prov_fuzz_findings.c: one regression test per defect the libFuzzer
 * harnesses of tests/fuzz found in the parsers (their crashing inputs are
 * kept in tests/fuzz/corpus as seeds; tests/fuzz/README.md lists them): a
 * stream chunk without choices, input token counts that overflow when
 * added, relayed SSE events holding NUL bytes or a JSON value that is not an
 * object, more than four tool calls in one stream, the gateway answer
 * parser and the SSE parser deciding differently depending on how the bytes
 * arrived or letting an event pass its bound, a json-c tokener reused
 * with state left over from a failed parse, a tab copied into a log
 * line by the secret masking, and a JWKS key whose base64 cjose's
 * decoder would abort on. */
#include <string.h>
#include "unit_tests.h"
#include "prov_gateway_http.h"
#include "prov_json.h"
#include "prov_redact.h"
#include "prov_messages.h"
#include "prov_responses.h"
#include "prov_sse.h"
#include "prov_jwt.h"

typedef struct out_t {
    char buf[16384];
    apr_size_t len;
    int n;
} out_t;

static apr_status_t keep(void *baton, const char *event, apr_size_t len)
{
    out_t *o = baton;
    if (o->len + len < sizeof(o->buf)) {
        memcpy(o->buf + o->len, event, len);
        o->len += len;
    }
    o->n++;
    return APR_SUCCESS;
}

static apr_status_t count_event(void *baton, const char *name, const char *data, apr_size_t len)
{
    (void)name;
    (void)data;
    (void)len;
    (*(int *)baton)++;
    return APR_SUCCESS;
}

static prov_resp_stream_t *resp_stream(out_t *o, apr_pool_t *p)
{
    static const char body[] = "{\"model\":\"m\",\"input\":\"x\",\"stream\":true,\"tools\":["
                               "{\"type\":\"function\",\"name\":\"f\"}]}";
    prov_resp_req_t *req = NULL;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_resp_parse(&req, &err, body, sizeof(body) - 1, p), APR_SUCCESS);
    memset(o, 0, sizeof(*o));
    return prov_resp_stream_create(req, "resp_f", "pub", 5, keep, o, p);
}

/* A chunk without "choices" (usage alone) made json-c abort the process. */
static void test_chunk_without_choices(void)
{
    static const char chunk[] =
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"usage\":"
        "{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n";
    apr_pool_t *p;
    out_t o;
    prov_resp_stream_t *s;
    prov_tokens_t t;
    apr_pool_create(&p, prov_test_pool());
    s = resp_stream(&o, p);
    CU_ASSERT_EQUAL(prov_resp_stream_feed(s, chunk, sizeof(chunk) - 1), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_resp_stream_tokens(s, &t), APR_SUCCESS);
    CU_ASSERT_EQUAL(t.input, 7);
    CU_ASSERT_EQUAL(t.output, 3);
    CU_ASSERT_EQUAL(prov_resp_stream_complete(s, 0), APR_SUCCESS);
    apr_pool_destroy(p);
}

/* Calls are kept in an array that moves when it grows: each call's
 * argument buffer had a cleanup at its first address, so buffers grown
 * after the move leaked or were freed twice (ASan and valgrind see it). */
static void test_many_tool_calls(void)
{
    apr_pool_t *p;
    out_t o;
    prov_resp_stream_t *s;
    char chunk[1024], big[600];
    int i;
    apr_pool_create(&p, prov_test_pool());
    s = resp_stream(&o, p);
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    for (i = 0; i < 7; i++) {
        apr_snprintf(chunk, sizeof(chunk), "data: {\"choices\":[{\"index\":0,\"delta\":"
                     "{\"tool_calls\":[{\"index\":%d,\"id\":\"call_%d\",\"function\":{\"name\":"
                     "\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n", i, i);
        CU_ASSERT_EQUAL(prov_resp_stream_feed(s, chunk, strlen(chunk)), APR_SUCCESS);
    }
    /* more arguments for the first call, after the array moved */
    apr_snprintf(chunk, sizeof(chunk), "data: {\"choices\":[{\"index\":0,\"delta\":"
                 "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"%s\\\"}\"}}]},"
                 "\"finish_reason\":\"tool_calls\"}]}\n\n", big);
    CU_ASSERT_EQUAL(prov_resp_stream_feed(s, chunk, strlen(chunk)), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_resp_stream_complete(s, 0), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.buf, "\"call_id\":\"call_6\""));
    apr_pool_destroy(p);
}

/* input_tokens + cache_creation_input_tokens overflowed int64. */
static void test_input_tokens_saturate(void)
{
    static const char answer[] =
        "{\"type\":\"message\",\"content\":[],\"usage\":{\"input_tokens\":14,"
        "\"cache_creation_input_tokens\":9223372036854775807,\"output_tokens\":1}}";
    static const char stream[] =
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
        "{\"input_tokens\":9223372036854775807,\"cache_creation_input_tokens\":5}}}\n\n";
    static const prov_rates_t rates = { 1, 1, 1, 1 };
    apr_pool_t *p;
    json_object *a = NULL;
    prov_tokens_t t;
    prov_messages_stream_t *s;
    out_t o;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(prov_messages_read_answer(&a, &t, answer, sizeof(answer) - 1, p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(t.input, APR_INT64_MAX);
    memset(&o, 0, sizeof(o));
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000000,
                                    keep, &o, p);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, stream, sizeof(stream) - 1), APR_SUCCESS);
    CU_ASSERT_TRUE(prov_messages_stream_tokens(s, &t));
    CU_ASSERT_EQUAL(t.input, APR_INT64_MAX);
    apr_pool_destroy(p);
}

/* An event relayed as it came lost everything after a NUL byte; a
 * message_delta (or message_start) that was JSON but not an object made
 * json-c abort the process. */
static void test_relay_passes_events_as_they_are(void)
{
    static const char nul[] = "event: content_block_delta\ndata: {\"a\":\"x\0y\"}\n\n";
    static const char arr[] = "event: message_delta\ndata: [1,2]\n\n"
                              "event: message_start\ndata: \"text\"\n\n";
    static const prov_rates_t rates = { 1, 1, 1, 1 };
    apr_pool_t *p;
    prov_messages_stream_t *s;
    out_t o;
    apr_pool_create(&p, prov_test_pool());
    memset(&o, 0, sizeof(o));
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000000,
                                    keep, &o, p);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, nul, sizeof(nul) - 1), APR_SUCCESS);
    CU_ASSERT_EQUAL(o.len, sizeof(nul) - 1);
    CU_ASSERT_EQUAL(memcmp(o.buf, nul, sizeof(nul) - 1), 0);
    memset(&o, 0, sizeof(o));
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, arr, sizeof(arr) - 1), APR_SUCCESS);
    CU_ASSERT_EQUAL(o.n, 2);
    CU_ASSERT_EQUAL(o.len, sizeof(arr) - 1);
    CU_ASSERT_EQUAL(memcmp(o.buf, arr, sizeof(arr) - 1), 0);
    apr_pool_destroy(p);
}

/* The same answer bytes gave a different result when read in pieces: a
 * chunk size line over 1,024 bytes (and a head over 64 KiB) was refused
 * only when it came in several reads; a size was read by strtoull, which
 * takes "0x", signs and spaces. */
static void test_http_answer_whatever_the_reads(void)
{
    const char *ext = apr_psprintf(prov_test_pool(), "%01100d", 0);
    const char *head = apr_psprintf(prov_test_pool(), "X-Pad: %070000d\r\n", 0);
    const char *bad[] = {
        apr_pstrcat(prov_test_pool(), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "0;x=", ext, "\r\n\r\n", NULL),
        apr_pstrcat(prov_test_pool(), "HTTP/1.1 200 OK\r\n", head,
                    "Content-Length: 0\r\n\r\n", NULL),
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nab\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 2\r\nab\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-0\r\n\r\n",
    };
    static const char good[] =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA;ext=1\r\n0123456789\r\n0\r\n\r\n";
    prov_gateway_response_t *r = NULL;
    apr_size_t steps[] = { 0, 1, 7, 1000 };
    int keep_alive = 0;
    size_t i, j;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        for (j = 0; j < sizeof(steps) / sizeof(steps[0]); j++)
            CU_ASSERT_EQUAL(prov_gateway_http_parse(&r, &keep_alive, bad[i], strlen(bad[i]),
                                                    steps[j], prov_test_pool()), APR_EGENERAL);
    for (j = 0; j < sizeof(steps) / sizeof(steps[0]); j++) {
        CU_ASSERT_EQUAL_FATAL(prov_gateway_http_parse(&r, &keep_alive, good, sizeof(good) - 1,
                                                      steps[j], prov_test_pool()), APR_SUCCESS);
        CU_ASSERT_STRING_EQUAL(r->body, "0123456789");
        CU_ASSERT_TRUE(keep_alive);
    }
}

/* The SSE parser bounds events at max_event bytes, but a line longer than
 * the bound passed when it came whole (a comment, an unknown field), and
 * data could grow to the buffer's capacity beyond the bound. */
static void test_sse_bound(void)
{
    static const char comment[] = ": 0123456789abcdefghij\n";
    static const char two_lines[] = "data: 0123456789\ndata: 0123456789\n\n";
    int n = 0;
    prov_sse_parser_t *ps = prov_sse_parser_create(count_event, &n, 16, prov_test_pool());
    CU_ASSERT_EQUAL(prov_sse_feed(ps, comment, sizeof(comment) - 1), APR_ENOSPC);
    ps = prov_sse_parser_create(count_event, &n, 16, prov_test_pool());
    CU_ASSERT_EQUAL(prov_sse_feed(ps, two_lines, sizeof(two_lines) - 1), APR_ENOSPC);
    CU_ASSERT_EQUAL(n, 0);
}

/* json_tokener_reset leaves a pending high surrogate: a reused tokener made
 * a text cut after "\ud800" change the next, unrelated parse. */
static void test_tokener_state_not_shared(void)
{
    static const char cut[] = "\"\\ud800";
    static const char low[] = "\"\\udc00x\"";
    const char *err = NULL, *fresh;
    json_object *o;
    o = prov_json_parse(low, sizeof(low) - 1, &err, prov_test_pool());
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    fresh = json_object_get_string(o);
    CU_ASSERT_PTR_NULL(prov_json_parse(cut, sizeof(cut) - 1, &err, prov_test_pool()));
    o = prov_json_parse(low, sizeof(low) - 1, &err, prov_test_pool());
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(json_object_get_string(o), fresh);
}

/* prov_redact promises control characters as spaces, but copied the
 * whitespace after a credential's name or an auth scheme as it was. */
static void test_redact_no_control_characters(void)
{
    static const char name[] = "api-key\t\t:\tabc123";
    static const char scheme[] = "Bearer\tabc123def";
    CU_ASSERT_STRING_EQUAL(prov_redact(NULL, name, sizeof(name) - 1, 200, prov_test_pool()),
                           "api-key  : [redacted]");
    CU_ASSERT_STRING_EQUAL(prov_redact(NULL, scheme, sizeof(scheme) - 1, 200, prov_test_pool()),
                           "Bearer [redacted]");
}

/* fuzz_id_token, finding-jwks_padding: a '=' in base64 that leaves one
 * character over ("A=") makes cjose's decoder fail an assertion and abort
 * the process; a JWKS key's n held one. Token segments never reach cjose
 * with a '=' or a length of 4k+1, and no key with such a member is used. */
static void test_id_token_base64_padding(void)
{
    apr_pool_t *p = prov_test_pool();
    static const char head[] = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ";   /* RS256, kid "k" */
    const char *why = NULL, *body = "eyJzdWIiOiJ4In0", *tok;
    json_object *claims = NULL;
    const char *jwks = "{\"keys\":[]}";
    int i;
    for (i = 0; i < 3; i++) {
        const char *seg[3] = { head, body, "c2lnbmF0dXJl" };
        seg[i] = apr_pstrcat(p, "A=", seg[i], NULL);
        tok = apr_pstrcat(p, seg[0], ".", seg[1], ".", seg[2], NULL);
        CU_ASSERT_EQUAL(prov_jwt_verify(&claims, &why, tok, jwks, p), APR_EINVAL);
        seg[i] = apr_pstrcat(p, seg[i] + 2, "A", NULL);
        while (strlen(seg[i]) % 4 != 1)
            seg[i] = apr_pstrcat(p, seg[i], "A", NULL);
        tok = apr_pstrcat(p, seg[0], ".", seg[1], ".", seg[2], NULL);
        CU_ASSERT_EQUAL(prov_jwt_verify(&claims, &why, tok, jwks, p), APR_EINVAL);
    }
    /* the key the token names, its n padded in the middle */
    tok = apr_pstrcat(p, head, ".", body, ".c2lnbmF0dXJl", NULL);
    jwks = "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"k\",\"e\":\"AQAB\",\"n\":\"AAAAA=AA\"}]}";
    CU_ASSERT_EQUAL(prov_jwt_verify(&claims, &why, tok, jwks, p), APR_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "does not fit"));
}

void prov_test_suite_fuzz_findings(void)
{
    PROV_SUITE("fuzz_findings",
               PROV_TEST(test_chunk_without_choices),
               PROV_TEST(test_many_tool_calls),
               PROV_TEST(test_input_tokens_saturate),
               PROV_TEST(test_relay_passes_events_as_they_are),
               PROV_TEST(test_http_answer_whatever_the_reads),
               PROV_TEST(test_sse_bound),
               PROV_TEST(test_tokener_state_not_shared),
               PROV_TEST(test_redact_no_control_characters),
               PROV_TEST(test_id_token_base64_padding));
}
