/* test_prov_chat.c: unit tests of the Chat Completions rules: validation with
 * the offending field named, the legacy `message` normalised, streaming and
 * tools refused, the upstream body, token kinds from usage, the answer. */
#include <string.h>
#include "unit_tests.h"
#include "prov_chat.h"

static prov_chat_req_t *parse_ok(const char *body, apr_pool_t *p)
{
    prov_chat_req_t *req = NULL;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL(prov_chat_parse(&req, &err, body, strlen(body), p), APR_SUCCESS);
    if (err)
        fprintf(stderr, "unexpected: %s\n", err->message);
    return req;
}

static prov_error_t *parse_bad(const char *body, apr_pool_t *p)
{
    prov_chat_req_t *req = NULL;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL(prov_chat_parse(&req, &err, body, strlen(body), p), APR_EINVAL);
    CU_ASSERT_PTR_NULL(req);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INVALID_REQUEST);
    return err;
}

static void test_valid(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_chat_req_t *req = parse_ok("{\"model\":\"m\",\"messages\":[{\"role\":\"system\","
        "\"content\":\"be brief\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
        "\"text\":\"hello\"}]}],\"max_tokens\":50,\"temperature\":0.5,\"stream\":false}", p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_STRING_EQUAL(req->model, "m");
    CU_ASSERT_EQUAL(req->max_tokens, 50);
    CU_ASSERT_EQUAL(req->n_messages, 2);
    CU_ASSERT_EQUAL(req->prompt_bytes, 8 + 5);
}

static void test_legacy_message(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_chat_req_t *req = parse_ok("{\"model\":\"m\",\"message\":\"hi there\"}", p);
    const char *up;
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_EQUAL(req->n_messages, 1);
    up = prov_chat_upstream_body(req, "up-1", 0, p);
    CU_ASSERT_PTR_NOT_NULL(strstr(up, "\"messages\":[{\"role\":\"user\",\"content\":\"hi there\"}]"));
    CU_ASSERT_PTR_NULL(strstr(up, "\"message\":"));
    CU_ASSERT_PTR_NOT_NULL(strstr(up, "\"model\":\"up-1\""));
    req = parse_ok("{\"model\":\"m\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}", p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_EQUAL(req->n_messages, 1);
}

static void test_refusals(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_error_t *e;
    e = parse_bad("{not json", p);
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "not valid JSON"));
    e = parse_bad("[1,2]", p);
    e = parse_bad("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "model");
    e = parse_bad("{\"model\":\"m\"}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages");
    e = parse_bad("{\"model\":\"m\",\"messages\":[]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"stream\":true}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "stream");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"tools\":[]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "tools");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"functions\":[{}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "functions");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"tool_choice\":\"auto\"}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "tool_choice");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[0].content");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[0].role");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                  "\"image_url\",\"image_url\":{}}]}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[0].content");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"max_tokens\":0}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "max_tokens");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"max_tokens\":\"5\"}", p);
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"temperature\":3}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "temperature");
    e = parse_bad("{\"model\":\"m\",\"message\":42}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "message");
    e = parse_bad("{\"model\":\"m\",\"messages\":[]} trailing", p);
}

static void test_tokens_and_answer(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *gw = "{\"id\":\"c1\",\"object\":\"chat.completion\",\"model\":\"up-1\","
        "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"ok\"}}],"
        "\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":40,\"total_tokens\":140,"
        "\"prompt_tokens_details\":{\"cached_tokens\":30},"
        "\"completion_tokens_details\":{\"reasoning_tokens\":15}}}";
    json_object *answer = NULL;
    prov_tokens_t t;
    const char *out;
    CU_ASSERT_EQUAL(prov_chat_read_answer(&answer, &t, gw, strlen(gw), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(t.input, 70);
    CU_ASSERT_EQUAL(t.cache, 30);
    CU_ASSERT_EQUAL(t.output, 25);
    CU_ASSERT_EQUAL(t.reasoning, 15);
    out = prov_chat_render(answer, "public-1", 1500, p);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"model\":\"public-1\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"credits\":0.0015"));
    CU_ASSERT_EQUAL(prov_chat_read_answer(&answer, &t, "{\"id\":", 6, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_chat_read_answer(&answer, &t, "{\"choices\":[]}", 14, p), APR_ENOENT);
}

void prov_test_suite_chat(void)
{
    PROV_SUITE("chat", PROV_TEST(test_valid), PROV_TEST(test_legacy_message),
               PROV_TEST(test_refusals), PROV_TEST(test_tokens_and_answer));
}
