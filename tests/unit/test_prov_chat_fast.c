/* test_prov_chat_fast.c: unit tests of the Chat Completions request's fast
 * path (prov_chat_fast.c) against the json-c path (prov_chat_parse_json):
 * what the fast path takes, json-c takes too, with the same model, output
 * cap, prompt bytes and message count, and the gateway gets the same JSON
 * (the client's bytes, its model's value replaced); what the fast path
 * declines (legacy forms, duplicate or escaped keys anywhere, anything
 * json-c refuses) is json-c's to decide, with its error. */
#include <string.h>
#include "unit_tests.h"
#include "prov_chat.h"

#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

static const char *const taken[] = {
    "{\"model\":\"gpt-4o-mini\"," MSG ",\"max_tokens\":16}",
    " {\"model\" : \"m\", \"messages\" : [ {\"role\":\"system\",\"content\":\"be \\\"brief\\\"\\n\"},"
    " {\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"caf\\u00e9 \xe2\x82\xac\"},"
    "{\"type\":\"text\",\"text\":\"\"}]}, {\"role\":\"assistant\",\"content\":\"ok\"},"
    " {\"role\":\"developer\",\"content\":\"\\u20ac\"}] } \n",
    "{\"model\":\"m\"," MSG ",\"max_tokens\":8,\"max_completion_tokens\":99,\"temperature\":0}",
    "{\"model\":\"m\"," MSG ",\"stream\":false,\"tools\":null,\"temperature\":2.0,"
    "\"max_tokens\":null,\"n\":1,\"metadata\":{\"a\":[1,{\"b\":null}]}}",
    "{\"model\":\"m\"," MSG ",\"max_completion_tokens\":1000000,\"temperature\":1.5e0}",
    NULL
};

static const char *const declined[] = {
    "{\"model\":\"m\",\"message\":\"hi\"}",
    "{\"model\":\"m\"," MSG ",\"message\":\"x\"}",
    "{\"model\":\"m\"," MSG ",\"stream_options\":{}}",
    "{\"model\":\"m\"," MSG ",\"model\":\"n\"}",
    "{\"model\":\"m\"," MSG ",\"metadata\":{\"a\":1,\"a\":2}}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\",\"role\":\"tool\"}]}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"con\\u0074ent\":\"hi\"}]}",
    "{\"model\":\"m\\u0021\"," MSG "}",
    "{\"model\":\"\"," MSG "}",
    "{\"model\":1," MSG "}",
    "{\"model\":\"m\",\"messages\":[]}",
    "{\"model\":\"m\",\"messages\":{}}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":\"hi\"}]}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":null}]}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":null}]}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
    "{\"model\":\"m\",\"messages\":[\"hi\"]}",
    "{\"model\":\"m\"," MSG ",\"stream\":true}",
    "{\"model\":\"m\"," MSG ",\"tools\":[]}",
    "{\"model\":\"m\"," MSG ",\"max_tokens\":0}",
    "{\"model\":\"m\"," MSG ",\"max_tokens\":1000001}",
    "{\"model\":\"m\"," MSG ",\"max_tokens\":16.0}",
    "{\"model\":\"m\"," MSG ",\"max_tokens\":-1}",
    "{\"model\":\"m\"," MSG ",\"temperature\":2.5}",
    "{\"model\":\"m\"," MSG ",\"temperature\":-0.1}",
    "{\"model\":\"m\"," MSG ",\"temperature\":\"1\"}",
    "{\"model\":\"m\"," MSG ",}",
    "{'model':\"m\"," MSG "}",
    "[{\"model\":\"m\"," MSG "}]",
    "null",
    NULL
};

static void check_same_upstream(const prov_chat_req_t *a, const prov_chat_req_t *b,
                                apr_pool_t *p)
{
    const char *ua = prov_chat_upstream_body(a, "up-1", 0, p);
    const char *ub = prov_chat_upstream_body(b, "up-1", 0, p), *err = NULL;
    json_object *ja, *jb;
    CU_ASSERT_PTR_NOT_NULL_FATAL(ua);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ub);
    ja = prov_json_parse(ua, strlen(ua), &err, p);
    jb = prov_json_parse(ub, strlen(ub), &err, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ja);
    CU_ASSERT_PTR_NOT_NULL_FATAL(jb);
    CU_ASSERT_TRUE(json_object_equal(ja, jb));
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(ja, "model"), "up-1");
}

static void test_taken_as_json_c_takes(void)
{
    apr_pool_t *p;
    int i;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; taken[i]; i++) {
        prov_chat_req_t fast, *tree = NULL;
        prov_error_t *err = NULL;
        CU_ASSERT_TRUE_FATAL(prov_chat_parse_fast(&fast, taken[i], strlen(taken[i]), p));
        CU_ASSERT_PTR_NULL(fast.body);
        CU_ASSERT_EQUAL_FATAL(prov_chat_parse_json(&tree, &err, taken[i], strlen(taken[i]), p),
                              APR_SUCCESS);
        CU_ASSERT_STRING_EQUAL(fast.model, tree->model);
        CU_ASSERT_EQUAL(fast.max_tokens, tree->max_tokens);
        CU_ASSERT_EQUAL(fast.prompt_bytes, tree->prompt_bytes);
        CU_ASSERT_EQUAL(fast.n_messages, tree->n_messages);
        check_same_upstream(&fast, tree, p);
    }
    apr_pool_destroy(p);
}

static void test_declined_left_to_json_c(void)
{
    apr_pool_t *p;
    int i;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; declined[i]; i++) {
        prov_chat_req_t fast, *a = NULL, *b = NULL;
        prov_error_t *ea = NULL, *eb = NULL;
        apr_status_t ra, rb;
        CU_ASSERT_FALSE(prov_chat_parse_fast(&fast, declined[i], strlen(declined[i]), p));
        /* prov_chat_parse answers as the json-c path does */
        ra = prov_chat_parse(&a, &ea, declined[i], strlen(declined[i]), p);
        rb = prov_chat_parse_json(&b, &eb, declined[i], strlen(declined[i]), p);
        CU_ASSERT_EQUAL(ra, rb);
        if (ra != APR_SUCCESS && ea && eb)
            CU_ASSERT_STRING_EQUAL(ea->message, eb->message);
    }
    apr_pool_destroy(p);
}

/* The model's value is replaced in the client's bytes; an upstream id
 * that needs escaping goes through json-c. */
static void test_upstream_bytes(void)
{
    apr_pool_t *p;
    prov_chat_req_t fast;
    const char *up, *err = NULL;
    json_object *o;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_TRUE_FATAL(prov_chat_parse_fast(&fast, taken[0], strlen(taken[0]), p));
    CU_ASSERT_STRING_EQUAL(prov_chat_upstream_body(&fast, "up-1", 0, p),
                           "{\"model\":\"up-1\"," MSG ",\"max_tokens\":16}");
    up = prov_chat_upstream_body(&fast, "a\"b", 0, p);
    o = prov_json_parse(up, strlen(up), &err, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "model"), "a\"b");
    apr_pool_destroy(p);
}

void prov_test_suite_chat_fast(void)
{
    CU_pSuite s = CU_add_suite("chat_fast", NULL, NULL);
    CU_add_test(s, "what the fast path takes json-c takes alike", test_taken_as_json_c_takes);
    CU_add_test(s, "what it declines json-c decides", test_declined_left_to_json_c);
    CU_add_test(s, "the gateway gets the client's bytes", test_upstream_bytes);
}
