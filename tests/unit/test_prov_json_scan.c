/* test_prov_json_scan.c: unit tests of the tree-less JSON reader
 * (prov_json_scan.c) and of the answers relayed through it: whatever it
 * takes, json-c takes too, with the same usage; what it renders is what
 * json-c's render gives (byte for byte when the gateway writes as json-c
 * does, the same JSON otherwise); what it declines (not JSON, escaped or
 * duplicate keys, odd Unicode, numbers out of range, deep nesting) goes to
 * json-c's path. */
#include <string.h>
#include "unit_tests.h"
#include "prov_json.h"
#include "prov_json_scan.h"
#include "prov_chat.h"
#include "prov_messages.h"

#define CHAT_HEAD "{\"id\":\"c1\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"up\","
#define CHOICES "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":" \
                "\"h\\u00e9 \xc3\xa9 / \\\"q\\\"\"},\"finish_reason\":\"stop\"}],"

/* Chat answers the relay takes. */
static const char *const chat_ok[] = {
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":16,"
    "\"total_tokens\":26,\"prompt_tokens_details\":{\"cached_tokens\":4},"
    "\"completion_tokens_details\":{\"reasoning_tokens\":3}}}",
    /* usage first, model last, spaces and an empty usage */
    " {\"usage\" : { } ,\n \"choices\": [ ], \"model\" : null }\r\n",
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":2.5,"
    "\"prompt_tokens_details\":null,\"x\":[1e10,-0.25E-3,true,false,{}]}}",
    NULL
};

/* Chat answers it declines (json-c's path decides). */
static const char *const chat_declined[] = {
    "{\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,}}",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":1}} x",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":01}}",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":1.}}",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":NaN}}",
    "{'model':\"up\",\"choices\":[],\"usage\":{}}",
    "{\"model\":\"up\",\"choices\":[\"\x01\"],\"usage\":{}}",
    "{\"model\":\"up\",\"choices\":[\"\xff\"],\"usage\":{}}",
    "{\"model\":\"up\",\"choices\":[\"\xc0\xaf\"],\"usage\":{}}",
    "{\"model\":\"up\",\"choices\":[\"\xed\xa0\x80\"],\"usage\":{}}",
    "{\"model\":\"up\",\"choices\":[\"\\ud800\"],\"usage\":{}}",
    "{\"model\":\"up\",\"choices\":[\"\\x\"],\"usage\":{}}",
    "{\"mod\\u0065l\":\"up\",\"choices\":[],\"usage\":{}}",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{},\"usage\":{\"prompt_tokens\":9}}",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{\"credits\":1}}",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":1234567890123456789}}",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens\":1e999}}",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{\"prompt_tokens_details\":{\"c\":1,\"c\":2}}}",
    "{\"model\":\"up\",\"choices\":[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]],\"usage\":{}}",
    "{\"model\":\"up\",\"choices\":{},\"usage\":{}}",
    "{\"model\":\"up\",\"choices\":[],\"usage\":[]}",
    "{\"choices\":[],\"usage\":{}}",
    "[{\"model\":\"up\",\"choices\":[],\"usage\":{}}]",
    "{\"model\":\"up\",\"choices\":[],\"usage\":{}",
    "",
    NULL
};

typedef apr_status_t relay_read_fn(prov_json_relay_t *rl, prov_tokens_t *t, const char *body,
                                   apr_size_t len);

/* body relayed (read by rd) for public and a charge: the same JSON as
 * json-c's render; when exact, the same bytes. */
static void check_same(relay_read_fn *rd, const char *body, const char *public, int exact,
                       apr_pool_t *p)
{
    const char *perr = NULL, *ours, *theirs;
    json_object *tree = prov_json_parse(body, strlen(body), &perr, p), *a, *b;
    prov_json_relay_t rl;
    prov_tokens_t t;
    CU_ASSERT_PTR_NOT_NULL_FATAL(tree);
    CU_ASSERT_EQUAL_FATAL(rd(&rl, &t, body, strlen(body)), APR_SUCCESS);
    ours = prov_json_scan_render(&rl, public, 123456, p);
    theirs = prov_json_answer_render(tree, public, 123456, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ours);
    if (exact)
        CU_ASSERT_STRING_EQUAL(ours, theirs);
    a = prov_json_parse(ours, strlen(ours), &perr, p);
    b = prov_json_parse(theirs, strlen(theirs), &perr, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_TRUE(json_object_equal(a, b));
    CU_ASSERT_PTR_NOT_NULL(strstr(ours, "\"credits\":0.123456"));
}

static void test_chat_relay(void)
{
    apr_pool_t *p;
    int i;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; chat_ok[i]; i++) {
        prov_json_relay_t rl;
        prov_tokens_t a, b;
        json_object *tree = NULL;
        CU_ASSERT_EQUAL_FATAL(prov_chat_relay_read(&rl, &a, chat_ok[i], strlen(chat_ok[i])),
                              APR_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(prov_chat_read_answer(&tree, &b, chat_ok[i], strlen(chat_ok[i]),
                                                    p), APR_SUCCESS);
        CU_ASSERT(a.input == b.input && a.output == b.output && a.cache == b.cache
                  && a.reasoning == b.reasoning);
        check_same(prov_chat_relay_read, chat_ok[i], "gpt-4o-mini", 0, p);
        /* written as json-c writes (as the mock gateway does): the same bytes */
        check_same(prov_chat_relay_read, prov_json_dump(tree, p), "gpt-4o-mini", 1, p);
    }
    for (i = 0; chat_declined[i]; i++) {
        prov_json_relay_t rl;
        prov_tokens_t t;
        CU_ASSERT_EQUAL(prov_chat_relay_read(&rl, &t, chat_declined[i], strlen(chat_declined[i])),
                        APR_EGENERAL);
    }
    apr_pool_destroy(p);
}

static void test_render_declines(void)
{
    apr_pool_t *p;
    prov_json_relay_t rl;
    prov_tokens_t t;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_chat_relay_read(&rl, &t, chat_ok[0], strlen(chat_ok[0])),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_json_scan_render(&rl, "a\"b", 1, p));
    CU_ASSERT_PTR_NULL(prov_json_scan_render(&rl, "caf\xc3\xa9", 1, p));
    CU_ASSERT_PTR_NOT_NULL(prov_json_scan_render(&rl, "org/model:v1", 1, p));
    apr_pool_destroy(p);
}

static void test_messages_relay(void)
{
    static const char *const ok[] = {
        "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\","
        "\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"stop_reason\":\"end_turn\","
        "\"usage\":{\"input_tokens\":7,\"cache_creation_input_tokens\":2,"
        "\"cache_read_input_tokens\":3,\"output_tokens\":5}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[],\"usage\":{\"input_tokens\":-2}}",
        NULL
    };
    static const char *const declined[] = {
        "{\"type\":\"error\",\"model\":\"up\",\"content\":[],\"usage\":{}}",
        "{\"type\":\"mess\\u0061ge\",\"model\":\"up\",\"content\":[],\"usage\":{}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":\"x\",\"usage\":{}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[]}",
        NULL
    };
    apr_pool_t *p;
    int i;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; ok[i]; i++) {
        prov_json_relay_t rl;
        prov_tokens_t a, b;
        json_object *tree = NULL;
        CU_ASSERT_EQUAL_FATAL(prov_messages_relay_read(&rl, &a, ok[i], strlen(ok[i])),
                              APR_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(prov_messages_read_answer(&tree, &b, ok[i], strlen(ok[i]), p),
                              APR_SUCCESS);
        CU_ASSERT(a.input == b.input && a.output == b.output && a.cache == b.cache
                  && a.reasoning == b.reasoning);
        check_same(prov_messages_relay_read, ok[i], "claude-x", 1, p);
    }
    for (i = 0; declined[i]; i++) {
        prov_json_relay_t rl;
        prov_tokens_t t;
        CU_ASSERT_EQUAL(prov_messages_relay_read(&rl, &t, declined[i], strlen(declined[i])),
                        APR_EGENERAL);
    }
    apr_pool_destroy(p);
}

/* Every text the scanner takes, json-c's strict parse takes too. */
static void test_scan_agrees(void)
{
    static const char *const texts[] = {
        "{}", " {\"a\":1} ", "{\"a\":\"\\u0000\\/\\b\\f\\n\\r\\t\"}",
        "{\"a\":[0,-0,1.5,2e5,3E-2,4e+1]}", "{\"\xf0\x9f\x98\x80\":\"\xe2\x82\xac\"}",
        "{\"a\":{\"b\":{\"c\":[null]}}}", NULL
    };
    apr_pool_t *p;
    int i;
    apr_pool_create(&p, prov_test_pool());
    for (i = 0; texts[i]; i++) {
        prov_jobject_t o;
        const char *err = NULL;
        CU_ASSERT_EQUAL(prov_json_scan_object(&o, texts[i], strlen(texts[i])), APR_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL(prov_json_parse(texts[i], strlen(texts[i]), &err, p));
    }
    apr_pool_destroy(p);
}

void prov_test_suite_json_scan(void)
{
    CU_pSuite s = CU_add_suite("json_scan", NULL, NULL);
    CU_add_test(s, "chat answers relayed as json-c renders them", test_chat_relay);
    CU_add_test(s, "a public id that needs escaping declines", test_render_declines);
    CU_add_test(s, "messages answers relayed as json-c renders them", test_messages_relay);
    CU_add_test(s, "what the scanner takes json-c takes", test_scan_agrees);
}
