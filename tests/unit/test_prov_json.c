/* test_prov_json.c: unit tests of strict JSON parsing (RFC 8259: no single
 * quotes, comments, trailing commas, NaN or raw control characters; a body
 * that is valid JSON but not an object is refused as such) and of the
 * output caps a request may ask for, through each transport's parser. */
#include <string.h>
#include "unit_tests.h"
#include "prov_json.h"
#include "prov_money.h"
#include "prov_chat.h"
#include "prov_messages.h"
#include "prov_responses.h"

/* Bodies json-c accepts unless it parses strictly, and some that it
 * accepts even then. */
static const char *const lenient[] = {
    "{'model':'m','messages':[{'role':'user','content':'hi'}],'max_tokens':8}",
    "{'model':\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":'hi'}],\"max_tokens\":8}",
    "/* c */{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
    "\"max_tokens\":8}",
    "{\"model\":\"m\",// c\n\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
    "\"max_tokens\":8}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},],\"max_tokens\":8}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8,}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8,"
    "\"temperature\":NaN}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8,"
    "\"temperature\":1.}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\tb\"}],\"max_tokens\":8}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":8,"
    "\"stop\":TRUE}",
    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}],\"max_tokens\":8}",
    NULL
};

static const char *const not_objects[] = { "null", "123", "\"x\"", "[]", "true", " null ",
                                           "-1.5", NULL };

static void test_parse_strict(void)
{
    apr_pool_t *p;
    const char *err = NULL;
    int i;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; lenient[i]; i++) {
        err = NULL;
        CU_ASSERT_PTR_NULL(prov_json_parse(lenient[i], strlen(lenient[i]), &err, p));
        CU_ASSERT_PTR_NOT_NULL(err);
        err = NULL;
        CU_ASSERT_PTR_NULL(prov_json_parse_raw(lenient[i], strlen(lenient[i]), &err));
        CU_ASSERT_PTR_NOT_NULL(err);
        err = NULL;
        CU_ASSERT_PTR_NULL(prov_json_parse_body(lenient[i], strlen(lenient[i]), &err, p));
        CU_ASSERT_PTR_NOT_NULL_FATAL(err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "not valid JSON"));
    }
    /* What JSON allows still passes: escapes, UTF-8, numbers, spaces. */
    {
        const char *ok = " {\"a\" : \"it's \\\"q\\\" \\u00e9 \xc3\xa9 \\t\\n\\\\\", \"b\":[1.5e3,-0,"
                         "0.25,true,false,null], \"c\":{}} \r\n";
        json_object *o = prov_json_parse(ok, strlen(ok), &err, p);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "a"), "it's \"q\" \xc3\xa9 \xc3\xa9 \t\n\\");
        CU_ASSERT_PTR_NOT_NULL(prov_json_parse_body(ok, strlen(ok), &err, p));
        o = prov_json_parse_raw(ok, strlen(ok), &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(o);
        CU_ASSERT_EQUAL(json_object_put(o), 1);
    }
    /* Truncated or trailing data. */
    CU_ASSERT_PTR_NULL(prov_json_parse("{\"a\":1", 6, &err, p));
    CU_ASSERT_STRING_EQUAL(err, "unexpected end of JSON");
    CU_ASSERT_PTR_NULL(prov_json_parse("", 0, &err, p));
    CU_ASSERT_PTR_NULL(prov_json_parse("{\"a\":1} x", 9, &err, p));
    CU_ASSERT_PTR_NULL(prov_json_parse("{\"a\":1}\0x", 9, &err, p));
    apr_pool_destroy(p);
}

static void test_parse_not_object(void)
{
    apr_pool_t *p;
    const char *err = NULL;
    json_object *o;
    int i;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; not_objects[i]; i++) {
        err = NULL;
        CU_ASSERT_PTR_NULL(prov_json_parse_body(not_objects[i], strlen(not_objects[i]), &err,
                                                p));
        CU_ASSERT_PTR_NOT_NULL_FATAL(err);
        CU_ASSERT_STRING_EQUAL(err, "The request body must be a JSON object");
    }
    /* A scalar at the top level is JSON (the tokener needs its end). */
    o = prov_json_parse("123", 3, &err, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_EQUAL(json_object_get_int64(o), 123);
    CU_ASSERT_PTR_NULL(prov_json_parse("nul", 3, &err, p));
    CU_ASSERT_PTR_NULL(prov_json_parse("null", 4, &err, p));
    apr_pool_destroy(p);
}

/* ---- through the transports' parsers ---------------------------------- */

typedef enum { T_CHAT, T_MESSAGES, T_COUNT, T_RESPONSES } transport_e;

static apr_status_t parse(transport_e t, prov_error_t **e, const char *body, apr_pool_t *p)
{
    prov_chat_req_t *c = NULL;
    prov_messages_req_t *m = NULL;
    prov_resp_req_t *r = NULL;
    *e = NULL;
    switch (t) {
    case T_CHAT:
        return prov_chat_parse(&c, e, body, strlen(body), p);
    case T_MESSAGES:
        return prov_messages_parse(&m, e, body, strlen(body), 0, p);
    case T_COUNT:
        return prov_messages_parse(&m, e, body, strlen(body), 1, p);
    default:
        return prov_resp_parse(&r, e, body, strlen(body), p);
    }
}

static const char *cap_body(transport_e t, const char *value, apr_pool_t *p)
{
    if (t == T_RESPONSES)
        return apr_psprintf(p, "{\"model\":\"m\",\"input\":\"hi\",\"max_output_tokens\":%s}",
                            value);
    return apr_psprintf(p, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
                        "\"hi\"}],\"max_tokens\":%s}", value);
}

static void test_transport_caps(void)
{
    static const char *const too_big[] = { "922337203686000000", "1000001",
                                           "99999999999999999999999",
                                           "18446744073709551615", "9223372036854775807",
                                           NULL };
    static const char *const not_positive[] = { "0", "-1", "-99999999999999999999", "1.5",
                                                "1e6", "\"64\"", "true", "null", NULL };
    transport_e ts[] = { T_CHAT, T_MESSAGES, T_RESPONSES };
    apr_pool_t *p;
    prov_error_t *e;
    size_t i, j;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
        const char *field = ts[i] == T_RESPONSES ? "max_output_tokens" : "max_tokens";
        for (j = 0; too_big[j]; j++) {
            CU_ASSERT_EQUAL(parse(ts[i], &e, cap_body(ts[i], too_big[j], p), p), APR_EINVAL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(e);
            CU_ASSERT_EQUAL(e->code, PROV_E_INVALID_REQUEST);
            CU_ASSERT_STRING_EQUAL(e->param, field);
            CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "at most 1000000"));
        }
        for (j = 0; not_positive[j]; j++) {
            apr_status_t rv = parse(ts[i], &e, cap_body(ts[i], not_positive[j], p), p);
            /* null is "absent" on chat and responses (an optional field). */
            if (ts[i] != T_MESSAGES && !strcmp(not_positive[j], "null")) {
                CU_ASSERT_EQUAL(rv, APR_SUCCESS);
                continue;
            }
            CU_ASSERT_EQUAL(rv, APR_EINVAL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(e);
            CU_ASSERT_STRING_EQUAL(e->param, field);
        }
        CU_ASSERT_EQUAL(parse(ts[i], &e, cap_body(ts[i], "1000000", p), p), APR_SUCCESS);
        CU_ASSERT_EQUAL(parse(ts[i], &e, cap_body(ts[i], "128000", p), p), APR_SUCCESS);
    }
    /* Chat's other name for it. */
    CU_ASSERT_EQUAL(parse(T_CHAT, &e, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                          "\"content\":\"hi\"}],\"max_completion_tokens\":1000001}", p),
                    APR_EINVAL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_STRING_EQUAL(e->param, "max_completion_tokens");
    apr_pool_destroy(p);
}

static void test_transport_strict(void)
{
    transport_e ts[] = { T_CHAT, T_MESSAGES, T_COUNT, T_RESPONSES };
    apr_pool_t *p;
    prov_error_t *e;
    size_t i, j;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
        for (j = 0; lenient[j]; j++) {
            const char *body = lenient[j];
            if (ts[i] == T_RESPONSES) {
                /* The same leniencies in a Responses body. */
                static const char *const resp[] = {
                    "{'model':'m','input':'hi'}",
                    "{\"model\":\"m\",\"input\":\"hi\",}",
                    "{\"model\":\"m\",/**/\"input\":\"hi\"}",
                    "{\"model\":\"m\",\"input\":[{\"type\":\"message\",\"role\":\"user\","
                    "\"content\":\"hi\"},]}",
                    "{\"model\":\"m\",\"input\":\"hi\",\"temperature\":NaN}",
                    NULL
                };
                if (!resp[j])
                    break;
                body = resp[j];
            }
            CU_ASSERT_EQUAL(parse(ts[i], &e, body, p), APR_EINVAL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(e);
            CU_ASSERT_EQUAL(e->code, PROV_E_INVALID_REQUEST);
            CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "not valid JSON"));
        }
        for (j = 0; not_objects[j]; j++) {
            CU_ASSERT_EQUAL(parse(ts[i], &e, not_objects[j], p), APR_EINVAL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(e);
            CU_ASSERT_STRING_EQUAL(e->message, "The request body must be a JSON object");
        }
    }
    apr_pool_destroy(p);
}

void prov_test_suite_json(void)
{
    PROV_SUITE("json", PROV_TEST(test_parse_strict), PROV_TEST(test_parse_not_object),
               PROV_TEST(test_transport_caps),
               PROV_TEST(test_transport_strict));
}
