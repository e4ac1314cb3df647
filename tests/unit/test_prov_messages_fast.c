/* test_prov_messages_fast.c: unit tests of the Messages request's fast path
 * (prov_messages_fast.c) against the json-c path (prov_messages_parse_json):
 * what the fast path takes, json-c takes too, with the same model, output
 * cap, stream flag, prompt bytes and message count, and the gateway gets
 * the same JSON (the client's bytes, its model's value replaced); what it
 * declines (anything json-c would strip, drop, fold, measure by its own
 * print or refuse, duplicate or escaped keys) is json-c's to decide, with
 * its error. */
#include <string.h>
#include "unit_tests.h"
#include "prov_messages.h"

#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
#define REQ(rest) "{\"model\":\"m\",\"max_tokens\":16," rest "}"

static const char *const taken[] = {
    "{\"model\":\"claude\"," MSG ",\"max_tokens\":16,\"stream\":true}",
    " {\"model\" : \"m\", \"max_tokens\" : 1000000, \"stream\": false, \"messages\" : ["
    " {\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"caf\\u00e9 \xe2\x82\xac\","
    "\"citations\":null},{\"type\":\"text\",\"text\":\"\"}]}, {\"role\":\"assistant\","
    "\"content\":\"ok\\n\"}, {\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
    "\"tool_use_id\":\"t1\",\"content\":\"42\",\"is_error\":false},{\"type\":\"tool_result\","
    "\"tool_use_id\":\"t2\",\"content\":[{\"type\":\"text\",\"text\":\"a\\\"b\"}]},"
    "{\"type\":\"tool_result\",\"tool_use_id\":\"t3\"}]}] } \n",
    REQ(MSG ",\"system\":\"be brief\\u0000\",\"stream\":null,\"tools\":null,"
        "\"metadata\":{\"user_id\":\"u\"},\"temperature\":0.5"),
    REQ(MSG ",\"system\":[{\"type\":\"text\",\"text\":\"one\"},{\"type\":\"text\","
        "\"text\":\"two \\\\u0000\"}]"),
    REQ(MSG ",\"system\":[]"),
    NULL
};

static const char *const declined[] = {
    REQ(MSG ",\"thinking\":{\"type\":\"adaptive\"}"),
    REQ(MSG ",\"thinking\":null"),
    REQ(MSG ",\"cache_control\":{\"type\":\"ephemeral\"}"),
    REQ(MSG ",\"context_management\":{\"edits\":[]}"),
    REQ(MSG ",\"tools\":[{\"name\":\"Bash\",\"input_schema\":{}}]"),
    REQ(MSG ",\"system\":[{\"type\":\"text\",\"text\":\"s\",\"cache_control\":{}}]"),
    REQ(MSG ",\"system\":[{\"type\":\"text\",\"text\":\"a\\u0000b\"}]"),
    REQ(MSG ",\"system\":[{\"text\":\"s\"}]"),
    REQ(MSG ",\"system\":7"),
    REQ("\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\","
        "\"cache_control\":{\"type\":\"ephemeral\"}}]}]"),
    REQ("\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\","
        "\"content\":\"hi\"}]"),
    REQ("\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\","
        "\"thinking\":\"t\",\"signature\":\"s\"},{\"type\":\"text\",\"text\":\"x\"}]}]"),
    REQ("\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\","
        "\"id\":\"t\",\"name\":\"Bash\",\"input\":{}}]}]"),
    REQ("\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
        "\"tool_use_id\":\"t\",\"content\":[{\"type\":\"image\",\"source\":{}}]}]}]"),
    REQ("\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
        "\"tool_use_id\":\"t\",\"content\":7}]}]"),
    REQ("\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
        "\"content\":\"x\"}]}]"),
    REQ("\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{}}]}]"),
    REQ("\"messages\":[{\"role\":\"user\",\"content\":[]}]"),
    REQ("\"messages\":[{\"role\":\"user\",\"content\":null}]"),
    REQ("\"messages\":[{\"role\":\"user\"}]"),
    REQ("\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]"),
    REQ("\"messages\":[]"),
    REQ("\"messages\":{}"),
    REQ("\"messages\":[\"hi\"]"),
    REQ(MSG ",\"metadata\":{\"a\":1,\"a\":2}"),
    REQ("\"messages\":[{\"role\":\"user\",\"con\\u0074ent\":\"hi\"}]"),
    "{\"model\":\"m\\u0021\",\"max_tokens\":16," MSG "}",
    "{\"model\":\"\",\"max_tokens\":16," MSG "}",
    "{\"model\":1,\"max_tokens\":16," MSG "}",
    "{\"model\":\"m\"," MSG "}",
    "{\"model\":\"m\",\"max_tokens\":0," MSG "}",
    "{\"model\":\"m\",\"max_tokens\":1000001," MSG "}",
    "{\"model\":\"m\",\"max_tokens\":16.0," MSG "}",
    "{\"model\":\"m\",\"max_tokens\":-1," MSG "}",
    "{\"model\":\"m\",\"max_tokens\":10000000000000000000," MSG "}",
    REQ(MSG ",\"stream\":\"yes\""),
    REQ(MSG ","),
    "[" REQ(MSG) "]",
    "null",
    NULL
};

static void same_json(const char *a, const char *b, apr_pool_t *p)
{
    const char *e1 = NULL, *e2 = NULL;
    json_object *ja = prov_json_parse(a, strlen(a), &e1, p);
    json_object *jb = prov_json_parse(b, strlen(b), &e2, p);
    CU_ASSERT_FATAL(ja && jb);
    CU_ASSERT(json_object_equal(ja, jb));
}

static void test_taken(void)
{
    apr_pool_t *p = prov_test_pool();
    int i;
    for (i = 0; taken[i]; i++) {
        prov_messages_req_t fast, *viajson = NULL, *req = NULL;
        prov_error_t *err = NULL;
        const char *up;
        CU_ASSERT_FATAL(prov_messages_parse_fast(&fast, taken[i], strlen(taken[i]), p));
        CU_ASSERT_PTR_NULL(fast.body);
        CU_ASSERT_EQUAL_FATAL(prov_messages_parse_json(&viajson, &err, taken[i], strlen(taken[i]),
                                                       0, p), APR_SUCCESS);
        CU_ASSERT_STRING_EQUAL(fast.model, viajson->model);
        CU_ASSERT_EQUAL(fast.max_tokens, viajson->max_tokens);
        CU_ASSERT_EQUAL(fast.stream, viajson->stream);
        CU_ASSERT_EQUAL(fast.prompt_bytes, viajson->prompt_bytes);
        CU_ASSERT_EQUAL(fast.n_messages, viajson->n_messages);
        CU_ASSERT_EQUAL(prov_messages_estimate_tokens(&fast),
                        prov_messages_estimate_tokens(viajson));
        /* the gateway's body: the client's bytes with the model replaced */
        up = prov_messages_upstream_body(&fast, "up/1", 0, p);
        CU_ASSERT_PTR_NOT_NULL(strstr(up, "\"up/1\""));
        same_json(up, prov_messages_upstream_body(viajson, "up/1", 0, p), p);
        /* an upstream id that needs escaping goes through json-c */
        same_json(prov_messages_upstream_body(&fast, "up\"2", 0, p),
                  prov_messages_upstream_body(viajson, "up\"2", 0, p), p);
        /* prov_messages_parse takes the fast path, count_tokens never */
        CU_ASSERT_EQUAL(prov_messages_parse(&req, &err, taken[i], strlen(taken[i]), 0, p),
                        APR_SUCCESS);
        CU_ASSERT_PTR_NULL(req->body);
        CU_ASSERT_EQUAL(prov_messages_parse(&req, &err, taken[i], strlen(taken[i]), 1, p),
                        APR_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL(req->body);
    }
}

static void test_declined(void)
{
    apr_pool_t *p = prov_test_pool();
    int i;
    for (i = 0; declined[i]; i++) {
        prov_messages_req_t fast, *a = NULL, *b = NULL;
        prov_error_t *ea = NULL, *eb = NULL;
        apr_status_t ra, rb;
        if (prov_messages_parse_fast(&fast, declined[i], strlen(declined[i]), p)) {
            CU_FAIL("taken by the fast path");
            fprintf(stderr, "taken: %s\n", declined[i]);
            continue;
        }
        ra = prov_messages_parse(&a, &ea, declined[i], strlen(declined[i]), 0, p);
        rb = prov_messages_parse_json(&b, &eb, declined[i], strlen(declined[i]), 0, p);
        CU_ASSERT_EQUAL(ra, rb);
        if (ra == APR_SUCCESS) {
            CU_ASSERT_PTR_NOT_NULL(a->body);
            CU_ASSERT_EQUAL(a->prompt_bytes, b->prompt_bytes);
        }
        else {
            CU_ASSERT_STRING_EQUAL(ea->message, eb->message);
        }
    }
}

void prov_test_suite_messages_fast(void)
{
    PROV_SUITE("messages_fast",
               PROV_TEST(test_taken),
               PROV_TEST(test_declined));
}
