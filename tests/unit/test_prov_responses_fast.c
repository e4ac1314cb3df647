/* test_prov_responses_fast.c: unit tests of the Responses stream's fast
 * path (prov_responses_fast.c reading chunks with the scanner,
 * prov_responses_events.c writing events as text): what it takes, and what
 * it hands to the json-c path (prov_responses_tree.c). Every stream here is
 * also translated with json-c alone (prov_resp_stream_tree_only), and
 * encoded straight into an output buffer fed in two pieces, as the module
 * runs it (prov_resp_stream_set_out), and the client must get the same
 * bytes and the settlement the same figures. */
#include <string.h>
#include "unit_tests.h"
#include "prov_responses_stream_int.h"

typedef struct out_t {
    char *buf;
    apr_size_t len;
    apr_pool_t *p;
} out_t;

static apr_status_t gather(void *baton, const char *ev, apr_size_t len)
{
    out_t *o = baton;
    char *nb = apr_palloc(o->p, o->len + len + 1);
    memcpy(nb, o->buf, o->len);
    memcpy(nb + o->len, ev, len);
    o->len += len;
    nb[o->len] = '\0';
    o->buf = nb;
    return APR_SUCCESS;
}

typedef struct run_t {
    out_t out;
    apr_status_t rv;
    apr_int64_t fast, tree;
    prov_delivery_t d;
} run_t;

/* A request with a function tool and a custom one (apply_patch). */
static prov_resp_req_t *request(apr_pool_t *p)
{
    static const char body[] = "{\"model\":\"m\",\"input\":\"x\",\"stream\":true,"
        "\"instructions\":\"Be \\\"brief\\\"\\n\",\"max_output_tokens\":99,\"tools\":["
        "{\"type\":\"function\",\"name\":\"shell\"},{\"type\":\"custom\",\"name\":\"apply_patch\"},"
        "{\"type\":\"namespace\",\"name\":\"crm\",\"tools\":[{\"type\":\"function\",\"name\":\"lookup\"}]}]}";
    prov_resp_req_t *req = NULL;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_resp_parse(&req, &err, body, sizeof(body) - 1, p), APR_SUCCESS);
    return req;
}

static apr_status_t not_called(void *baton, const char *ev, apr_size_t len)
{
    CU_FAIL("an event handed to emit though the stream has an output");
    return gather(baton, ev, len);
}

/* The events waiting in the output, sent (gathered) as the module does. */
static void send_out(run_t *r, prov_sse_buf_t *b)
{
    if (b && b->len)
        gather(&r->out, b->data, b->len);
    if (b)
        prov_sse_buf_reset(b);
}

/* mode 0: the events to emit; 1: json-c alone; 2: into an output, the
 * stream fed in two pieces. */
static void translate(run_t *r, const char *sse, int mode, apr_pool_t *p)
{
    prov_resp_stream_t *s;
    prov_sse_buf_t *b = mode == 2 ? prov_sse_buf_create(p) : NULL;
    apr_size_t half = strlen(sse) / 2;
    memset(r, 0, sizeof(*r));
    r->out.p = p;
    r->out.buf = "";
    s = prov_resp_stream_create(request(p), "resp_f1", "pub", 7, b ? not_called : gather,
                                &r->out, p);
    if (mode == 1)
        prov_resp_stream_tree_only(s);
    if (b)
        prov_resp_stream_set_out(s, b);
    r->rv = prov_resp_stream_feed(s, sse, half);
    send_out(r, b);
    prov_resp_stream_written(s);
    if (r->rv == APR_SUCCESS)
        r->rv = prov_resp_stream_feed(s, sse + half, strlen(sse + half));
    send_out(r, b);
    prov_resp_stream_written(s);
    if (r->rv == APR_SUCCESS) {
        CU_ASSERT_EQUAL(prov_resp_stream_complete(s, 1500000), APR_SUCCESS);
    }
    else {
        CU_ASSERT_EQUAL(prov_resp_stream_fail(s, "GATEWAY_ERROR", "cut \"short\"", -1),
                        APR_SUCCESS);
    }
    send_out(r, b);
    prov_resp_stream_written(s);
    prov_resp_stream_paths(s, &r->fast, &r->tree);
    prov_resp_stream_delivery(s, &r->d);
}

/* Translates sse both ways: the same bytes and figures; the fast run read
 * fast chunks by the scanner and tree by json-c. Returns the bytes. */
static const char *same(const char *sse, apr_int64_t fast, apr_int64_t tree)
{
    apr_pool_t *p = prov_test_pool();
    run_t a, b, c;
    translate(&a, sse, 0, p);
    translate(&b, sse, 1, p);
    translate(&c, sse, 2, p);
    CU_ASSERT_EQUAL(c.rv, a.rv);
    CU_ASSERT_EQUAL(c.d.output_bytes, a.d.output_bytes);
    CU_ASSERT_STRING_EQUAL(c.out.buf, a.out.buf);
    CU_ASSERT_EQUAL(a.fast, fast);
    CU_ASSERT_EQUAL(a.tree, tree);
    CU_ASSERT_EQUAL(b.fast, 0);
    CU_ASSERT_EQUAL(b.tree, fast + tree);
    CU_ASSERT_EQUAL(a.rv, b.rv);
    CU_ASSERT_EQUAL(a.d.output_bytes, b.d.output_bytes);
    CU_ASSERT_EQUAL(a.d.usage, b.d.usage);
    CU_ASSERT_EQUAL(c.d.usage, a.d.usage);
    CU_ASSERT_EQUAL(a.d.unreadable, b.d.unreadable);
    CU_ASSERT_EQUAL(c.d.queued_bytes, 0);
    CU_ASSERT_TRUE(!memcmp(&a.d.reported, &b.d.reported, sizeof(a.d.reported)));
    CU_ASSERT_EQUAL(a.out.len, b.out.len);
    CU_ASSERT_STRING_EQUAL(a.out.buf, b.out.buf);
    return a.out.buf;
}

#define D(json) "data: " json "\n\n"
#define CH(delta, finish) D("{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":" \
    "[{\"index\":0,\"delta\":" delta ",\"logprobs\":null,\"finish_reason\":" finish "}]}")
#define USAGE D("{\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":5," \
    "\"total_tokens\":25,\"prompt_tokens_details\":{\"cached_tokens\":4}," \
    "\"completion_tokens_details\":{\"reasoning_tokens\":1}}}") "data: [DONE]\n\n"

/* A gateway's text stream is read by the scanner from end to end. */
static void test_text_stream(void)
{
    const char *out = same(CH("{\"role\":\"assistant\",\"content\":\"\"}", "null")
                           CH("{\"content\":\"Hel\"}", "null")
                           CH("{\"content\":\"lo \\\"w\\u00f6rld\\\"\\n/\"}", "null")
                           CH("{\"refusal\":\"no\"}", "null")
                           CH("{\"content\":\"!\",\"refusal\":null}", "null")
                           CH("{}", "\"stop\"") USAGE, 7, 0);
    /* the text as the client reads it, decoded and escaped again as json-c does */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"text\":\"Hello \\\"w\xc3\xb6rld\\\"\\n/\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "event: response.refusal.done\ndata: "
        "{\"type\":\"response.refusal.done\",\"sequence_number\":10,\"item_id\":\"msg_f1_0\","
        "\"output_index\":0,\"content_index\":1,\"refusal\":\"no\"}\n\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"instructions\":\"Be \\\"brief\\\"\\n\","
                                       "\"max_output_tokens\":99,\"model\":\"pub\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"usage\":{\"input_tokens\":20,\"input_tokens_details\":"
        "{\"cached_tokens\":4},\"output_tokens\":5,\"output_tokens_details\":"
        "{\"reasoning_tokens\":1},\"total_tokens\":25,\"credits\":1.5}}}\n\n"));
}

/* Usage alone, no choice, a choice or delta that is not an object, members
 * of other types: read as json-c reads them (absent), still by the scanner. */
static void test_odd_but_plain(void)
{
    same(D("{\"choices\":[]}") D("{\"choices\":null,\"usage\":null}")
         D("{\"choices\":[7]}") D("{\"choices\":[{\"delta\":[1]}]}")
         D("{\"choices\":[{\"delta\":{\"content\":5,\"refusal\":[\"x\"],\"tool_calls\":{}},"
           "\"finish_reason\":7}]}")
         D("{\"choices\":[null,{\"delta\":{\"content\":\"second choice\"}}]}")
         D("{\"usage\":{\"prompt_tokens\":\"9\",\"completion_tokens\":2.5,"
           "\"prompt_tokens_details\":[]}}"), 7, 0);
    same(D("{\"usage\":{\"prompt_tokens\":-3,\"completion_tokens\":123456789012345678}}")
         "data: [DONE]\n\n", 1, 0);
    same(CH("{\"content\":\"a\"}", "\"length\"") "data: [DONE]\n\n", 1, 0);
}

/* Tool calls, opened and filled, through the scanner; a custom tool
 * call's end is json-c's (its input is read from the arguments). */
static void test_tool_calls(void)
{
    const char *out = same(
        CH("{\"content\":\"Let me look.\"}", "null")
        CH("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":"
           "{\"name\":\"shell\",\"arguments\":\"\"}}]}", "null")
        CH("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"cmd\\\":\"}}]}", "null")
        CH("{\"tool_calls\":[{\"index\":0,\"type\":\"function\",\"function\":"
           "{\"arguments\":\"\\\"ls\\\"}\"}}]}", "null")
        CH("{\"tool_calls\":[{\"index\":1,\"id\":\"call_2\",\"function\":{\"name\":\"apply_patch\","
           "\"arguments\":\"{\\\"input\\\":\"}}]}", "null")
        CH("{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"*** P\\\\n\\\"}\"}},"
           "{\"index\":0,\"function\":{}}]}", "null")
        CH("{\"tool_calls\":[{\"index\":2,\"id\":\"call_3\",\"function\":{\"name\":\"crm__lookup\","
           "\"arguments\":\"{\\\"q\\\":\\\"\\u00e9\\\"}\"}}]}", "null")
        CH("{}", "\"tool_calls\"") USAGE, 9, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"type\":\"response.function_call_arguments.delta\","
        "\"sequence_number\":9,\"item_id\":\"fc_f1_1\",\"output_index\":1,"
        "\"delta\":\"{\\\"cmd\\\":\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"input\":\"*** P\\n\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "{\"id\":\"fc_f1_3\",\"type\":\"function_call\",\"status\":"
        "\"completed\",\"call_id\":\"call_3\",\"name\":\"lookup\",\"namespace\":\"crm\","
        "\"arguments\":\"{\\\"q\\\":\\\"\xc3\xa9\\\"}\"}"));
}

/* Chunks the scanner does not plainly recognise go to json-c, one by one,
 * in the middle of a stream that the scanner reads otherwise. */
static void test_handed_to_json_c(void)
{
    static const char *const odd[] = {
        /* an escape in finish_reason */
        CH("{\"content\":\"x\"}", "\"st\\u006fp\""),
        /* a duplicate key, at the top or in the delta */
        D("{\"choices\":[],\"choices\":[{\"delta\":{\"content\":\"dup\"}}]}"),
        CH("{\"content\":\"a\",\"content\":\"b\"}", "null"),
        /* a surrogate pair, a number too long to read, deep nesting */
        CH("{\"content\":\"\\ud83d\\ude00\"}", "null"),
        D("{\"choices\":[],\"usage\":{\"prompt_tokens\":1234567890123456789}}"),
        D("{\"choices\":[],\"x\":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]}"),
        /* an escaped key, lenient JSON json-c refuses too */
        CH("{\"cont\\u0065nt\":\"esc\"}", "null"),
        /* a call's id or name with an escape; a call that is not an object */
        CH("{\"tool_calls\":[{\"index\":0,\"id\":\"c\\u0039\",\"function\":{\"name\":\"shell\"}}]}",
           "null"),
        CH("{\"tool_calls\":[{\"index\":3,\"function\":{\"name\":\"sh\\u0065ll\"}}]}", "null"),
        CH("{\"tool_calls\":[{\"function\":{\"arguments\":\"{}\"}},7]}", "null"),
        /* more call deltas in one chunk than the scanner reads */
        CH("{\"tool_calls\":[{},{},{},{},{},{},{},{},{\"index\":1}]}", "null"),
        NULL
    };
    int i;
    for (i = 0; odd[i]; i++) {
        const char *sse = apr_pstrcat(prov_test_pool(), CH("{\"content\":\"before \"}", "null"),
                                      odd[i], CH("{\"content\":\" after\"}", "null"), USAGE, NULL);
        same(sse, 3, 1);
    }
}

/* What ends a stream goes to json-c: the gateway's error chunk, not JSON,
 * not an object. */
static void test_errors(void)
{
    const char *out = same(CH("{\"content\":\"part\"}", "null")
                           D("{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}"), 1, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"error\":{\"code\":\"GATEWAY_ERROR\",\"message\":"
                                       "\"cut \\\"short\\\"\"}"));
    same(CH("{\"content\":\"part\"}", "null") D("not json"), 1, 1);
    same(D("[1,2]"), 0, 1);
    /* a call index json-c refuses */
    same(CH("{\"tool_calls\":[{\"index\":1025,\"function\":{\"name\":\"shell\"}}]}", "null"),
         0, 1);
    same(D("{\"choices\":[{\"delta\":{\"content\":\"x\"}}]} trailing"), 0, 1);
}

/* Events longer than the output's first 4 KiB (from the pool), the buffer
 * moving to the heap in the middle of one, and growing again. */
static void test_long_events(void)
{
    apr_pool_t *p = prov_test_pool();
    char *text = apr_palloc(p, 20001);
    const char *out;
    int i;
    for (i = 0; i < 20000; i++)
        text[i] = i % 100 == 98 ? '\\' : i % 100 == 99 ? 'n' : (char)('a' + i % 26);
    text[20000] = '\0';
    out = same(apr_pstrcat(p, CH("{\"content\":\"start \"}", "null"),
                           "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
                           apr_pstrndup(p, text, 3000), "\"}}]}\n\n",
                           "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
                           text, "\"}}]}\n\n", CH("{}", "\"stop\"") USAGE, NULL), 5, 0);
    CU_ASSERT(strlen(out) > 3 * 20000);
}

void prov_test_suite_responses_fast(void)
{
    PROV_SUITE("responses_fast",
               PROV_TEST(test_text_stream),
               PROV_TEST(test_odd_but_plain),
               PROV_TEST(test_tool_calls),
               PROV_TEST(test_handed_to_json_c),
               PROV_TEST(test_errors),
               PROV_TEST(test_long_events));
}
