/* test_prov_fields.c: unit tests of the top-level request members each
 * transport accepts (prov_fields.c): every captured client request of
 * tests/fuzz/corpus/<transport>_request still parses (or is refused as before, for
 * what a capture shows refused); a member outside the table is refused with
 * its name, in the transport's own words, by the json-c path, and the fast
 * path leaves it to that path; chat's n (1 to PROV_CHOICES_MAX) and one
 * output cap, not two; Messages' thinking budget below max_tokens. */
#include <string.h>
#include <dirent.h>
#include <apr_file_io.h>
#include "unit_tests.h"
#include "prov_chat.h"
#include "prov_messages.h"
#include "prov_responses.h"
#include "prov_fields.h"

#ifndef PROV_TEST_SRCDIR
#define PROV_TEST_SRCDIR "."
#endif

#define MSG "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

/* The transports under one signature: json = the json-c path alone;
 * count = count_tokens (messages). */
typedef enum { T_CHAT, T_MESSAGES, T_COUNT, T_RESP } transport_e;

static apr_status_t parse(transport_e t, int json, const char *body, prov_error_t **err,
                          apr_pool_t *p)
{
    apr_size_t n = strlen(body);
    *err = NULL;
    switch (t) {
    case T_CHAT: {
        prov_chat_req_t *r = NULL;
        return json ? prov_chat_parse_json(&r, err, body, n, p)
                    : prov_chat_parse(&r, err, body, n, p);
    }
    case T_MESSAGES:
    case T_COUNT: {
        prov_messages_req_t *r = NULL;
        return json ? prov_messages_parse_json(&r, err, body, n, t == T_COUNT, p)
                    : prov_messages_parse(&r, err, body, n, t == T_COUNT, p);
    }
    default: {
        prov_resp_req_t *r = NULL;
        return json ? prov_resp_parse_json(&r, err, body, n, p)
                    : prov_resp_parse(&r, err, body, n, p);
    }
    }
}

/* Non-zero when the fast path of t takes body. */
static int fast(transport_e t, const char *body, apr_pool_t *p)
{
    prov_chat_req_t c;
    prov_messages_req_t m;
    prov_resp_req_t r;
    apr_size_t n = strlen(body);
    return t == T_CHAT ? prov_chat_parse_fast(&c, body, n, p)
         : t == T_MESSAGES ? prov_messages_parse_fast(&m, body, n, p)
         : t == T_RESP ? prov_resp_parse_fast(&r, body, n, p) : 0;
}

static int unknown_refusal(const prov_error_t *e)
{
    return e && (strstr(e->message, "Unrecognized request argument")
                 || strstr(e->message, "Extra inputs are not permitted"));
}

static const char *read_file(const char *path, apr_pool_t *p)
{
    apr_file_t *f;
    apr_finfo_t fi;
    char *buf;
    apr_size_t n;
    if (apr_file_open(&f, path, APR_READ | APR_BINARY, 0, p) != APR_SUCCESS)
        return NULL;
    apr_file_info_get(&fi, APR_FINFO_SIZE, f);
    n = (apr_size_t)fi.size;
    buf = apr_palloc(p, n + 1);
    if (apr_file_read_full(f, buf, n, &n) != APR_SUCCESS)
        n = 0;
    buf[n] = '\0';
    apr_file_close(f);
    return buf;
}

/* Every .json file of the corpus directory dir parses through both paths
 * alike; one named refused_* is refused, but never as an unknown member.
 * Returns how many files were read. */
static int walk(const char *dir, transport_e t, apr_pool_t *p)
{
    const char *src = getenv("PROV_SRCDIR") ? getenv("PROV_SRCDIR") : PROV_TEST_SRCDIR;
    const char *path = apr_pstrcat(p, src, "/tests/fuzz/corpus/", dir, NULL);
    DIR *d = opendir(path);
    struct dirent *e;
    int count = 0;
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    while ((e = readdir(d))) {
        apr_size_t n = strlen(e->d_name);
        const char *body;
        transport_e tt = strstr(e->d_name, "count_tokens") ? T_COUNT : t;
        prov_error_t *ea, *eb;
        apr_status_t ra, rb;
        if (n < 6 || strcmp(e->d_name + n - 5, ".json"))
            continue;
        body = read_file(apr_pstrcat(p, path, "/", e->d_name, NULL), p);
        CU_ASSERT_PTR_NOT_NULL_FATAL(body);
        ra = parse(tt, 0, body, &ea, p);
        rb = parse(tt, 1, body, &eb, p);
        CU_ASSERT_EQUAL(ra, rb);
        CU_ASSERT_FALSE(unknown_refusal(ea));
        CU_ASSERT_EQUAL(ra, strncmp(e->d_name, "refused_", 8) ? APR_SUCCESS : APR_EINVAL);
        if (ra == APR_SUCCESS && tt != T_COUNT && getenv("PROV_TEST_VERBOSE"))
            fprintf(stderr, "corpus %s/%s: fast path %s\n", dir, e->d_name,
                    fast(tt, body, p) ? "took it" : "declined");
        count++;
    }
    closedir(d);
    return count;
}

static void test_corpus(void)
{
    apr_pool_t *p;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT(walk("chat_request", T_CHAT, p) >= 4);
    CU_ASSERT(walk("messages_request", T_MESSAGES, p) >= 5);
    CU_ASSERT(walk("responses_request", T_RESP, p) >= 4);
    apr_pool_destroy(p);
}

/* body, which the fast path of t takes, with "name":1 added: the fast path
 * declines it and both paths refuse it naming name, in the family's words. */
static void refused_unknown(transport_e t, const char *body, const char *name, apr_pool_t *p)
{
    const char *with = apr_psprintf(p, "{\"%s\":1,%s", name, body + 1);
    int i;
    if (t != T_COUNT) {
        CU_ASSERT_TRUE(fast(t, body, p));
        CU_ASSERT_FALSE(fast(t, with, p));
    }
    for (i = 0; i < 2; i++) {
        prov_error_t *e = NULL;
        CU_ASSERT_EQUAL_FATAL(parse(t, i, with, &e, p), APR_EINVAL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_EQUAL(e->code, PROV_E_INVALID_REQUEST);
        CU_ASSERT_STRING_EQUAL(e->param, name);
        CU_ASSERT_STRING_EQUAL(e->message, t == T_MESSAGES || t == T_COUNT
            ? apr_pstrcat(p, name, ": Extra inputs are not permitted", NULL)
            : apr_pstrcat(p, "Unrecognized request argument supplied: ", name, NULL));
    }
}

static void test_unknown_refused(void)
{
    static const char *const chat = "{\"model\":\"m\"," MSG ",\"max_tokens\":5}";
    static const char *const msgs = "{\"model\":\"m\",\"max_tokens\":5," MSG "}";
    static const char *const resp = "{\"model\":\"m\",\"input\":\"hi\"}";
    static const char *const names[] = { "best_of", "audio", "prediction",
                                         "web_search_options", "modalities", NULL };
    apr_pool_t *p;
    const char *const *n;
    prov_error_t *e = NULL;
    char longkey[300];
    apr_pool_create(&p, prov_test_pool());
    for (n = names; *n; n++)
        refused_unknown(T_CHAT, chat, *n, p);
    refused_unknown(T_MESSAGES, msgs, "speed", p);
    refused_unknown(T_MESSAGES, msgs, "inference_geo", p);
    refused_unknown(T_MESSAGES, msgs, "mcp_servers", p);
    refused_unknown(T_COUNT, "{\"model\":\"m\"," MSG "}", "container", p);
    refused_unknown(T_RESP, resp, "max_tool_calls", p);
    refused_unknown(T_RESP, resp, "n", p);
    /* a body the fast path would not take anyway: json-c refuses it alike */
    CU_ASSERT_EQUAL(parse(T_CHAT, 0, "{\"model\":\"m\",\"message\":\"hi\",\"x\":null}", &e, p),
                    APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "x");
    /* the first unknown member is named, before anything else is checked */
    CU_ASSERT_EQUAL(parse(T_RESP, 0, "{\"a\":1,\"b\":2}", &e, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "a");
    /* a long name is cut in the answer */
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    CU_ASSERT_EQUAL(parse(T_CHAT, 0, apr_psprintf(p, "{\"%s\":1}", longkey), &e, p),
                    APR_EINVAL);
    CU_ASSERT_EQUAL(strlen(e->param), PROV_FIELD_NAME_MAX + 3);
    apr_pool_destroy(p);
}

/* What the real clients send besides the essentials is accepted; what is
 * consumed does not reach the gateway. */
static void test_known_fields(void)
{
    apr_pool_t *p;
    prov_chat_req_t *c = NULL;
    prov_resp_req_t *r = NULL;
    prov_error_t *e = NULL;
    const char *body, *up;
    apr_pool_create(&p, prov_test_pool());
    body = "{\"model\":\"m\"," MSG ",\"max_completion_tokens\":9,\"temperature\":1,"
           "\"top_p\":1,\"n\":2,\"stop\":null,\"presence_penalty\":0,\"frequency_penalty\":0,"
           "\"seed\":1,\"user\":\"u\",\"stream\":false,\"stream_options\":null,"
           "\"response_format\":{\"type\":\"json_object\"},\"logit_bias\":{},"
           "\"logprobs\":true,\"top_logprobs\":2,\"metadata\":{},\"store\":false,"
           "\"reasoning_effort\":\"low\",\"service_tier\":\"priority\","
           "\"safety_identifier\":\"s\",\"prompt_cache_key\":\"k\",\"verbosity\":\"low\"}";
    CU_ASSERT_EQUAL_FATAL(prov_chat_parse(&c, &e, body, strlen(body), p), APR_SUCCESS);
    up = prov_chat_upstream_body(c, "up", 0, p);
    CU_ASSERT_PTR_NULL(strstr(up, "service_tier"));
    CU_ASSERT_PTR_NULL(strstr(up, "stream_options"));
    CU_ASSERT_PTR_NOT_NULL(strstr(up, "\"logit_bias\""));
    body = "{\"model\":\"m\",\"input\":\"hi\",\"store\":false,\"reasoning\":{\"effort\":\"low\"},"
           "\"include\":[\"reasoning.encrypted_content\"],\"prompt_cache_key\":\"k\","
           "\"client_metadata\":{\"a\":\"b\"},\"service_tier\":\"auto\",\"truncation\":\"auto\","
           "\"safety_identifier\":\"s\",\"text\":{\"verbosity\":\"low\"},\"background\":false,"
           "\"stream_options\":{\"include_obfuscation\":false},\"metadata\":{},\"user\":\"u\"}";
    CU_ASSERT_EQUAL_FATAL(prov_resp_parse(&r, &e, body, strlen(body), p), APR_SUCCESS);
    up = prov_resp_upstream_body(r, "up", 0, p);
    CU_ASSERT_STRING_EQUAL(up, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                               "\"model\":\"up\"}");
    apr_pool_destroy(p);
}

/* The specific refusals keep their words. */
static void test_specific_refusals(void)
{
    apr_pool_t *p;
    prov_error_t *e = NULL;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(parse(T_CHAT, 0, "{\"model\":\"m\"," MSG ",\"tools\":[]}", &e, p),
                    APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "tools");
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "tools are not supported"));
    CU_ASSERT_EQUAL(parse(T_CHAT, 0, "{\"model\":\"m\"," MSG ",\"parallel_tool_calls\":false}",
                          &e, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "parallel_tool_calls");
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "tools are not supported"));
    CU_ASSERT_EQUAL(parse(T_RESP, 0, "{\"model\":\"m\",\"input\":\"hi\","
                          "\"previous_response_id\":\"r\"}", &e, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "previous_response_id");
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "stateless"));
    CU_ASSERT_EQUAL(parse(T_RESP, 0, "{\"model\":\"m\",\"input\":\"hi\",\"background\":true}",
                          &e, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "background");
    apr_pool_destroy(p);
}

static void test_chat_n(void)
{
    static const char *const bad[] = { "0", "-1", "9", "2.0", "2.5", "\"2\"", "true", "[2]",
                                       "99999999999999999999", NULL };
    apr_pool_t *p;
    prov_chat_req_t *c = NULL, f;
    prov_error_t *e = NULL;
    const char *body;
    int i;
    apr_pool_create(&p, prov_test_pool());
    body = "{\"model\":\"m\"," MSG "}";
    CU_ASSERT_EQUAL_FATAL(prov_chat_parse_json(&c, &e, body, strlen(body), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(c->n, 1);
    CU_ASSERT_TRUE(prov_chat_parse_fast(&f, body, strlen(body), p));
    CU_ASSERT_EQUAL(f.n, 1);
    body = "{\"model\":\"m\"," MSG ",\"n\":null}";
    CU_ASSERT_EQUAL_FATAL(prov_chat_parse_json(&c, &e, body, strlen(body), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(c->n, 1);
    for (i = 1; i <= PROV_CHOICES_MAX; i++) {
        body = apr_psprintf(p, "{\"model\":\"m\"," MSG ",\"n\":%d}", i);
        CU_ASSERT_EQUAL_FATAL(prov_chat_parse_json(&c, &e, body, strlen(body), p),
                              APR_SUCCESS);
        CU_ASSERT_EQUAL(c->n, i);
        CU_ASSERT_TRUE_FATAL(prov_chat_parse_fast(&f, body, strlen(body), p));
        CU_ASSERT_EQUAL(f.n, i);
    }
    for (i = 0; bad[i]; i++) {
        body = apr_psprintf(p, "{\"model\":\"m\"," MSG ",\"n\":%s}", bad[i]);
        CU_ASSERT_FALSE(prov_chat_parse_fast(&f, body, strlen(body), p));
        CU_ASSERT_EQUAL(prov_chat_parse(&c, &e, body, strlen(body), p), APR_EINVAL);
        CU_ASSERT_STRING_EQUAL(e->param, "n");
    }
    apr_pool_destroy(p);
}

static void test_chat_caps(void)
{
    apr_pool_t *p;
    prov_chat_req_t *c = NULL, f;
    prov_error_t *e = NULL;
    const char *body;
    apr_pool_create(&p, prov_test_pool());
    body = "{\"model\":\"m\"," MSG ",\"max_completion_tokens\":1,\"max_tokens\":1000}";
    CU_ASSERT_FALSE(prov_chat_parse_fast(&f, body, strlen(body), p));
    CU_ASSERT_EQUAL(prov_chat_parse(&c, &e, body, strlen(body), p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "max_tokens,max_completion_tokens");
    CU_ASSERT_STRING_EQUAL(e->message,
                           "send one of max_tokens and max_completion_tokens, not both");
    /* the legacy form goes through json-c only, with the same rule */
    body = "{\"model\":\"m\",\"message\":\"hi\",\"max_tokens\":1,\"max_completion_tokens\":2}";
    CU_ASSERT_EQUAL(prov_chat_parse(&c, &e, body, strlen(body), p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "max_tokens,max_completion_tokens");
    /* one of them, the other null: which one is said */
    body = "{\"model\":\"m\"," MSG ",\"max_completion_tokens\":7,\"max_tokens\":null}";
    CU_ASSERT_TRUE_FATAL(prov_chat_parse_fast(&f, body, strlen(body), p));
    CU_ASSERT_STRING_EQUAL(f.cap_field, "max_completion_tokens");
    CU_ASSERT_EQUAL(f.max_tokens, 7);
    CU_ASSERT_EQUAL_FATAL(prov_chat_parse_json(&c, &e, body, strlen(body), p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c->cap_field, "max_completion_tokens");
    CU_ASSERT_EQUAL(c->max_tokens, 7);
    body = "{\"model\":\"m\",\"message\":\"hi\",\"max_tokens\":3}";
    CU_ASSERT_EQUAL_FATAL(prov_chat_parse(&c, &e, body, strlen(body), p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(c->cap_field, "max_tokens");
    body = "{\"model\":\"m\"," MSG "}";
    CU_ASSERT_TRUE_FATAL(prov_chat_parse_fast(&f, body, strlen(body), p));
    CU_ASSERT_PTR_NULL(f.cap_field);
    CU_ASSERT_EQUAL(f.max_tokens, -1);
    CU_ASSERT_EQUAL_FATAL(prov_chat_parse_json(&c, &e, body, strlen(body), p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(c->cap_field);
    apr_pool_destroy(p);
}

static void test_thinking_budget(void)
{
    static const char *const head = "{\"model\":\"m\"," MSG ",\"max_tokens\":";
    apr_pool_t *p;
    prov_error_t *e = NULL;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(parse(T_MESSAGES, 0, apr_pstrcat(p, head, "2048,\"thinking\":{\"type\":"
                          "\"enabled\",\"budget_tokens\":2047}}", NULL), &e, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(parse(T_MESSAGES, 0, apr_pstrcat(p, head, "2048,\"thinking\":{\"type\":"
                          "\"enabled\",\"budget_tokens\":2048}}", NULL), &e, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "thinking.budget_tokens");
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "less than max_tokens (2048)"));
    CU_ASSERT_EQUAL(parse(T_MESSAGES, 0, apr_pstrcat(p, head, "100,\"thinking\":{\"type\":"
                          "\"enabled\",\"budget_tokens\":\"50\"}}", NULL), &e, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(e->param, "thinking.budget_tokens");
    /* adaptive or disabled thinking has no budget to check */
    CU_ASSERT_EQUAL(parse(T_MESSAGES, 0, apr_pstrcat(p, head, "10,\"thinking\":{\"type\":"
                          "\"adaptive\"}}", NULL), &e, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(parse(T_MESSAGES, 0, apr_pstrcat(p, head, "10,\"thinking\":{\"type\":"
                          "\"disabled\",\"budget_tokens\":99}}", NULL), &e, p), APR_SUCCESS);
    /* count_tokens has no max_tokens: nothing to compare */
    CU_ASSERT_EQUAL(parse(T_COUNT, 0, "{\"model\":\"m\"," MSG ",\"thinking\":{\"type\":"
                          "\"enabled\",\"budget_tokens\":4096}}", &e, p), APR_SUCCESS);
    apr_pool_destroy(p);
}

/* prov_fields_output_cap: 1 to PROV_OUTPUT_TOKENS_MAX, else a 400 naming the field. */
static void test_output_cap(void)
{
    apr_pool_t *p;
    prov_error_t *e = NULL;
    apr_int64_t n = 7;
    const char *err = NULL;
    json_object *o;
    apr_pool_create(&p, prov_test_pool());
    {
        const char *j = "{\"a\":1000000,\"b\":1000001,\"c\":99999999999999999999999,"
                        "\"d\":0,\"e\":-5,\"f\":8.0,\"g\":\"8\",\"h\":1}";
        o = prov_json_parse(j, strlen(j), &err, p);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_EQUAL(prov_fields_output_cap(&n, &e, prov_json_get(o, "a", json_type_int), "a", p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(n, PROV_OUTPUT_TOKENS_MAX);
    CU_ASSERT_EQUAL(prov_fields_output_cap(&n, &e, prov_json_get(o, "h", json_type_int), "h", p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 1);
    n = 7;
    {
        const char *bad[] = { "b", "c", "d", "e", "f", "g", NULL };
        int i;
        for (i = 0; bad[i]; i++) {
            json_object *v = NULL;
            e = NULL;
            json_object_object_get_ex(o, bad[i], &v);
            CU_ASSERT_EQUAL(prov_fields_output_cap(&n, &e, v, bad[i], p), APR_EINVAL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(e);
            CU_ASSERT_EQUAL(e->code, PROV_E_INVALID_REQUEST);
            CU_ASSERT_STRING_EQUAL(e->param, bad[i]);
            CU_ASSERT_EQUAL(n, 7);
        }
    }
    apr_pool_destroy(p);
}

void prov_test_suite_fields(void)
{
    PROV_SUITE("fields", PROV_TEST(test_corpus), PROV_TEST(test_unknown_refused),
               PROV_TEST(test_known_fields), PROV_TEST(test_specific_refusals),
               PROV_TEST(test_chat_n), PROV_TEST(test_chat_caps),
               PROV_TEST(test_thinking_budget), PROV_TEST(test_output_cap));
}
