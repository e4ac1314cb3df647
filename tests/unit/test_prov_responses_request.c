/* test_prov_responses_request.c: unit tests of the Responses request's fast
 * path (prov_responses_request.c) against the json-c path
 * (prov_resp_parse_json): what the fast path takes, json-c takes too, with
 * the same model, cap, stream flag, prompt bytes, message count and
 * instructions, the gateway gets the same bytes (streamed or not, for an
 * upstream id that needs escaping too), and the client the same stream
 * events; what it declines (tools, reasoning, text formats, stored state,
 * parts other than text, a NUL the json-c path would cut, numbers json-c
 * prints otherwise, escaped or duplicate keys, anything invalid) is
 * json-c's to decide, with its error. */
#include <string.h>
#include "unit_tests.h"
#include "prov_responses.h"

#define REQ(rest) "{\"model\":\"gpt-4o-mini\"," rest "}"
#define USER(content) "{\"role\":\"user\",\"content\":" content "}"

static const char *const taken[] = {
    /* bench/chat.lua's BENCH_KIND=responses-stream */
    REQ("\"input\":\"Say hello in five words.\",\"max_output_tokens\":16,\"stream\":true"),
    REQ("\"input\":\"hi\""),
    " { \"model\" : \"m\" , \"input\" : [ " USER("\"caf\\u00e9 \\/ \xe2\x82\xac\\n\\u0000x\"")
    " ] , \"stream\" : false } \n",
    REQ("\"instructions\":\"Be \\\"brief\\\".\\t\\u00e9\",\"input\":["
        USER("[{\"type\":\"input_text\",\"text\":\"one\"},{\"type\":\"input_text\","
             "\"text\":\"two\\u0001\"}]")
        ",{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_1\",\"status\":"
        "\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":\"ok\","
        "\"annotations\":[],\"logprobs\":[]}]},"
        "{\"type\":null,\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"d\"}]},"
        "{\"role\":\"system\",\"content\":[]}],\"temperature\":0.70,\"top_p\":1,"
        "\"store\":false,\"metadata\":{\"a\":\"b\"},\"user\":\"u\","
        "\"parallel_tool_calls\":false,\"tools\":null,\"tool_choice\":null"),
    REQ("\"instructions\":\"\",\"input\":[]"),
    REQ("\"input\":\"x\",\"temperature\":-1E2,\"top_p\":0.5e-1,\"max_output_tokens\":1000000,"
        "\"instructions\":null,\"stream\":null,\"store\":null"),
    NULL
};

static const char *const declined[] = {
    REQ("\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"}]"),
    REQ("\"input\":\"x\",\"tools\":[]"),
    REQ("\"input\":\"x\",\"tool_choice\":\"auto\""),
    REQ("\"input\":\"x\",\"reasoning\":{\"effort\":\"low\"}"),
    REQ("\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_object\"}}"),
    REQ("\"input\":\"x\",\"previous_response_id\":\"resp_1\""),
    REQ("\"input\":\"x\",\"background\":false"),
    REQ("\"input\":\"x\",\"temperature\":-0"),
    REQ("\"input\":\"x\",\"temperature\":12345678901234567890"),
    REQ("\"input\":\"x\",\"temperature\":\"0.5\""),
    REQ("\"input\":\"x\",\"max_output_tokens\":0"),
    REQ("\"input\":\"x\",\"max_output_tokens\":1000001"),
    REQ("\"input\":\"x\",\"max_output_tokens\":16.0"),
    REQ("\"input\":\"x\",\"stream\":1"),
    REQ("\"input\":\"x\",\"instructions\":\"a\\u0000b\""),
    REQ("\"input\":\"x\",\"instructions\":7"),
    REQ("\"input\":[" USER("[{\"type\":\"input_text\",\"text\":\"a\\u0000b\"}]") "]"),
    REQ("\"input\":[" USER("[{\"type\":\"input_image\",\"image_url\":\"x\"}]") "]"),
    REQ("\"input\":[" USER("[{\"type\":\"refusal\",\"refusal\":\"no\"}]") "]"),
    REQ("\"input\":[" USER("[{\"type\":\"input_text\",\"text\":\"a\",\"x\":1}]") "]"),
    REQ("\"input\":[" USER("null") "]"),
    REQ("\"input\":[" USER("7") "]"),
    REQ("\"input\":[{\"role\":\"tool\",\"content\":\"x\"}]"),
    REQ("\"input\":[{\"role\":\"user\"}]"),
    REQ("\"input\":[{\"role\":\"us\\u0065r\",\"content\":\"x\"}]"),
    REQ("\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"x\"}]"),
    REQ("\"input\":[{\"type\":\"reasoning\",\"summary\":[]}," USER("\"x\"") "]"),
    REQ("\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":\"x\",\"call_id\":1}]"),
    REQ("\"input\":[\"x\"]"),
    REQ("\"input\":[]"),
    REQ("\"input\":null"),
    REQ("\"input\":{}"),
    REQ("\"instructions\":\"i\""),
    REQ("\"input\":\"x\",\"metadata\":{\"a\":1,\"a\":2}"),
    REQ("\"inp\\u0075t\":\"x\""),
    "{\"model\":\"m\\u0021\",\"input\":\"x\"}",
    "{\"model\":\"\",\"input\":\"x\"}",
    "{\"model\":1,\"input\":\"x\"}",
    "{\"input\":\"x\"}",
    REQ("\"input\":\"x\","),
    "[" REQ("\"input\":\"x\"") "]",
    "null",
    NULL
};

typedef struct events_t {
    char buf[8192];
    apr_size_t len;
} events_t;

static apr_status_t collect(void *baton, const char *event, apr_size_t len)
{
    events_t *e = baton;
    CU_ASSERT_FATAL(e->len + len < sizeof(e->buf));
    memcpy(e->buf + e->len, event, len);
    e->len += len;
    return APR_SUCCESS;
}

/* The events a client gets for a short answer, by request. */
static void stream_of(events_t *e, const prov_resp_req_t *req, apr_pool_t *p)
{
    static const char chunks[] =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\n"
        "data: [DONE]\n\n";
    prov_resp_stream_t *s;
    memset(e, 0, sizeof(*e));
    s = prov_resp_stream_create(req, "resp_1", "gpt-4o-mini", 1700000000, collect, e, p);
    CU_ASSERT_EQUAL(prov_resp_stream_feed(s, chunks, sizeof(chunks) - 1), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_resp_stream_complete(s, 1234), APR_SUCCESS);
}

static void same_request(const prov_resp_req_t *fast, prov_resp_req_t *viajson, apr_pool_t *p)
{
    static const char *const ids[] = { "upstream/model-1", "up\"2\\\x01\xc3\xa9", NULL };
    events_t a, b;
    int i;
    CU_ASSERT_STRING_EQUAL(fast->model, viajson->model);
    CU_ASSERT_EQUAL(fast->max_output_tokens, viajson->max_output_tokens);
    CU_ASSERT_EQUAL(fast->stream, viajson->stream);
    CU_ASSERT_EQUAL(fast->prompt_bytes, viajson->prompt_bytes);
    CU_ASSERT_EQUAL(fast->n_messages, viajson->n_messages);
    CU_ASSERT_EQUAL(fast->parallel_tool_calls, viajson->parallel_tool_calls);
    CU_ASSERT_EQUAL(fast->tools->nelts, viajson->tools->nelts);
    CU_ASSERT_PTR_NULL(fast->dropped_tools);
    CU_ASSERT_PTR_NULL(viajson->dropped_tools);
    CU_ASSERT((!fast->instructions && !viajson->instructions)
              || (fast->instructions && viajson->instructions
                  && !strcmp(fast->instructions, viajson->instructions)));
    for (i = 0; ids[i]; i++) {
        const char *x = prov_resp_upstream_body(fast, ids[i], 0, p);
        const char *y = prov_resp_upstream_body(viajson, ids[i], 0, p);
        CU_ASSERT_STRING_EQUAL(x, y);
    }
    stream_of(&a, fast, p);
    stream_of(&b, viajson, p);
    CU_ASSERT_EQUAL(a.len, b.len);
    CU_ASSERT(a.len == b.len && !memcmp(a.buf, b.buf, a.len));
}

static void test_taken(void)
{
    apr_pool_t *p = prov_test_pool();
    int i;
    for (i = 0; taken[i]; i++) {
        prov_resp_req_t fast, *viajson = NULL, *req = NULL;
        prov_error_t *err = NULL;
        apr_size_t len = strlen(taken[i]);
        if (!prov_resp_parse_fast(&fast, taken[i], len, p)) {
            CU_FAIL("declined by the fast path");
            fprintf(stderr, "declined: %s\n", taken[i]);
            continue;
        }
        CU_ASSERT_PTR_NULL(fast.upstream);
        CU_ASSERT_EQUAL_FATAL(prov_resp_parse_json(&viajson, &err, taken[i], len, p),
                              APR_SUCCESS);
        same_request(&fast, viajson, p);
        /* prov_resp_parse takes the fast path */
        CU_ASSERT_EQUAL(prov_resp_parse(&req, &err, taken[i], len, p), APR_SUCCESS);
        CU_ASSERT_PTR_NULL(req->upstream);
    }
}

static void test_bench_body(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t fast;
    CU_ASSERT_FATAL(prov_resp_parse_fast(&fast, taken[0], strlen(taken[0]), p));
    CU_ASSERT_STRING_EQUAL(prov_resp_upstream_body(&fast, "gw-mini", 0, p),
                           "{\"messages\":[{\"role\":\"user\",\"content\":\"Say hello in five "
                           "words.\"}],\"max_tokens\":16,\"model\":\"gw-mini\",\"stream\":true,"
                           "\"stream_options\":{\"include_usage\":true}}");
    CU_ASSERT_EQUAL(fast.prompt_bytes, 24);
    CU_ASSERT_EQUAL(fast.n_messages, 1);
}

static void test_declined(void)
{
    apr_pool_t *p = prov_test_pool();
    int i;
    for (i = 0; declined[i]; i++) {
        prov_resp_req_t fast, *a = NULL, *b = NULL;
        prov_error_t *ea = NULL, *eb = NULL;
        apr_size_t len = strlen(declined[i]);
        apr_status_t ra, rb;
        if (prov_resp_parse_fast(&fast, declined[i], len, p)) {
            CU_FAIL("taken by the fast path");
            fprintf(stderr, "taken: %s\n", declined[i]);
            continue;
        }
        ra = prov_resp_parse(&a, &ea, declined[i], len, p);
        rb = prov_resp_parse_json(&b, &eb, declined[i], len, p);
        CU_ASSERT_EQUAL(ra, rb);
        if (ra == APR_SUCCESS) {
            CU_ASSERT_STRING_EQUAL(prov_resp_upstream_body(a, "u", 0, p),
                                   prov_resp_upstream_body(b, "u", 0, p));
        }
        else {
            CU_ASSERT_STRING_EQUAL(ea->message, eb->message);
        }
    }
}

void prov_test_suite_responses_request(void)
{
    PROV_SUITE("responses_request",
               PROV_TEST(test_taken),
               PROV_TEST(test_bench_body),
               PROV_TEST(test_declined));
}
