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
    /* usage first, model last, spaces */
    " {\"usage\" : { \"completion_tokens\" : 0 , \"prompt_tokens\":-0 } ,\n \"choices\": [ ], "
    "\"model\" : null }\r\n",
    /* null details, other members of any kind */
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,"
    "\"prompt_tokens_details\":null,\"completion_tokens_details\":{\"reasoning_tokens\":null},"
    "\"x\":[1e10,-0.25E-3,true,false,{}]}}",
    NULL
};

/* Chat answers whose usage cannot be read: declined by the scan, no usage
 * for json-c's reading (PROV_USAGE_UNREADABLE). */
static const char *const chat_unreadable[] = {
    " {\"usage\" : { } ,\n \"choices\": [ ], \"model\" : null }\r\n",
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":-5,\"completion_tokens\":2}}",
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2.5}}",
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":\"5\",\"completion_tokens\":2}}",
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":null}}",
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1e2}}",
    CHAT_HEAD CHOICES "\"usage\":{\"input_tokens\":5,\"output_tokens\":2}}",
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,"
    "\"prompt_tokens_details\":{\"cached_tokens\":\"1\"}}}",
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,"
    "\"completion_tokens_details\":{\"reasoning_tokens\":-1}}}",
    CHAT_HEAD CHOICES "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,"
    "\"prompt_tokens_details\":7}}",
    CHAT_HEAD CHOICES "\"usage\":[5,2]}",
    CHAT_HEAD CHOICES "\"usage\":\"5,2\"}",
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

typedef apr_status_t relay_read_fn(prov_relay_t *rl, prov_tokens_t *t, const char *body,
                                   apr_size_t len);

/* body relayed (read by rd) for public and a charge: the same JSON as
 * json-c's render; when exact, the same bytes. */
static void check_same(relay_read_fn *rd, const char *body, const char *public, int exact,
                       apr_pool_t *p)
{
    const char *perr = NULL, *ours, *theirs;
    json_object *tree = prov_json_parse(body, strlen(body), &perr, p), *a, *b;
    prov_relay_t rl;
    prov_tokens_t t;
    CU_ASSERT_PTR_NOT_NULL_FATAL(tree);
    CU_ASSERT_EQUAL_FATAL(rd(&rl, &t, body, strlen(body)), APR_SUCCESS);
    ours = prov_relay_render(&rl, public, 123456, p);
    theirs = prov_relay_render_tree(tree, public, 123456, p);
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
        prov_relay_t rl;
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
        prov_relay_t rl;
        prov_tokens_t t;
        CU_ASSERT_EQUAL(prov_chat_relay_read(&rl, &t, chat_declined[i], strlen(chat_declined[i])),
                        APR_EGENERAL);
    }
    for (i = 0; chat_unreadable[i]; i++) {
        prov_relay_t rl;
        prov_tokens_t t;
        json_object *tree = NULL;
        const char *c = chat_unreadable[i];
        CU_ASSERT_EQUAL(prov_chat_relay_read(&rl, &t, c, strlen(c)), APR_EGENERAL);
        CU_ASSERT_EQUAL(prov_chat_read_answer(&tree, &t, c, strlen(c), p),
                        PROV_USAGE_UNREADABLE);
        CU_ASSERT_PTR_NOT_NULL(tree);
    }
    apr_pool_destroy(p);
}

static void test_render_declines(void)
{
    apr_pool_t *p;
    prov_relay_t rl;
    prov_tokens_t t;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_chat_relay_read(&rl, &t, chat_ok[0], strlen(chat_ok[0])),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_relay_render(&rl, "a\"b", 1, p));
    CU_ASSERT_PTR_NULL(prov_relay_render(&rl, "caf\xc3\xa9", 1, p));
    CU_ASSERT_PTR_NOT_NULL(prov_relay_render(&rl, "org/model:v1", 1, p));
    apr_pool_destroy(p);
}

static void test_messages_relay(void)
{
    static const char *const ok[] = {
        "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\","
        "\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"stop_reason\":\"end_turn\","
        "\"usage\":{\"input_tokens\":7,\"cache_creation_input_tokens\":2,"
        "\"cache_read_input_tokens\":3,\"output_tokens\":5}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[],\"usage\":{\"input_tokens\":0,"
        "\"output_tokens\":2,\"cache_read_input_tokens\":null}}",
        NULL
    };
    /* usage that cannot be read: declined, then no usage for json-c's reading */
    static const char *const unreadable[] = {
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[],\"usage\":{\"input_tokens\":-2,"
        "\"output_tokens\":2}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[],\"usage\":{\"output_tokens\":2}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[],\"usage\":{\"input_tokens\":\"3\","
        "\"output_tokens\":2}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[],\"usage\":{\"input_tokens\":3,"
        "\"output_tokens\":2.0}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[],\"usage\":{\"input_tokens\":3,"
        "\"output_tokens\":2,\"cache_creation_input_tokens\":true}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[],\"usage\":{}}",
        "{\"type\":\"message\",\"model\":\"up\",\"content\":[],\"usage\":{\"prompt_tokens\":3,"
        "\"completion_tokens\":2}}",
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
        prov_relay_t rl;
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
    for (i = 0; unreadable[i]; i++) {
        prov_relay_t rl;
        prov_tokens_t t;
        json_object *tree = NULL;
        CU_ASSERT_EQUAL(prov_messages_relay_read(&rl, &t, unreadable[i], strlen(unreadable[i])),
                        APR_EGENERAL);
        CU_ASSERT_EQUAL(prov_messages_read_answer(&tree, &t, unreadable[i],
                                                  strlen(unreadable[i]), p),
                        PROV_USAGE_UNREADABLE);
    }
    for (i = 0; declined[i]; i++) {
        prov_relay_t rl;
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

/* {"k":"<head><x><tail>"} with x placed at every offset from the text's
 * start and its end (the 8-byte steps of the string loop, and the byte
 * steps of its last few bytes): the scan's answer is want, and when it takes
 * the text the member's value spans the whole string. */
static void check_string_offsets(const char *x, apr_size_t xlen, apr_status_t want)
{
    char buf[80];
    int head, tail;
    for (head = 0; head <= 17; head++) {
        for (tail = 0; tail <= 17; tail++) {
            prov_jobject_t o;
            apr_size_t n = 0;
            memcpy(buf, "{\"k\":\"", 6);
            n = 6;
            memset(buf + n, 'a', (apr_size_t)head);
            n += (apr_size_t)head;
            memcpy(buf + n, x, xlen);
            n += xlen;
            memset(buf + n, '~', (apr_size_t)tail);
            n += (apr_size_t)tail;
            memcpy(buf + n, "\"}", 2);
            n += 2;
            CU_ASSERT_EQUAL(prov_json_scan_object(&o, buf, n), want);
            if (want == APR_SUCCESS && o.n == 1)
                CU_ASSERT_EQUAL(o.m[0].vlen, (apr_size_t)head + xlen + (apr_size_t)tail + 2);
            /* cut before its closing quote: never taken */
            CU_ASSERT_EQUAL(prov_json_scan_object(&o, buf, n - 2), APR_EGENERAL);
        }
    }
}

/* Strings with what the 8-byte loop stops at, at every offset. */
static void test_scan_string_words(void)
{
    static const struct { const char *x; apr_status_t want; } cases[] = {
        { "", APR_SUCCESS }, { "\\\"", APR_SUCCESS }, { "\\\\", APR_SUCCESS },
        { "\\u00e9", APR_SUCCESS }, { "\\/\\b\\f\\n\\r\\t", APR_SUCCESS }, { "\x7f", APR_SUCCESS },
        { "\xc3\xa9", APR_SUCCESS }, { "\xe2\x82\xac", APR_SUCCESS },
        { "\xf0\x9f\x98\x80", APR_SUCCESS }, { "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", APR_SUCCESS },
        { "\x01", APR_EGENERAL }, { "\x1f", APR_EGENERAL }, { "\t", APR_EGENERAL },
        { "\x80", APR_EGENERAL }, { "\xc3", APR_EGENERAL }, { "\xc0\xaf", APR_EGENERAL },
        { "\xed\xa0\x80", APR_EGENERAL }, { "\xf4\x90\x80\x80", APR_EGENERAL },
        { "\xff", APR_EGENERAL }, { "\\x", APR_EGENERAL }, { "\\ud800", APR_EGENERAL },
        { "\\u12", APR_EGENERAL }, { "a\"b", APR_EGENERAL }, { NULL, 0 }
    };
    int i;
    for (i = 0; cases[i].x; i++)
        check_string_offsets(cases[i].x, strlen(cases[i].x), cases[i].want);
    /* a NUL byte, at every offset */
    check_string_offsets("\0", 1, APR_EGENERAL);
}

/* prov_json_scan_sub of o's member key gives what a scan of that member's
 * text alone gives: the same answer, keys, spans and closing brace. */
static void check_sub_same(const prov_jobject_t *o, const char *key)
{
    const prov_jmember_t *m = prov_json_scan_member(o, key);
    prov_jobject_t a, b;
    apr_status_t ra = prov_json_scan_sub(&a, o, key), rb;
    int i;
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    rb = prov_json_scan_object(&b, m->val, m->vlen);
    CU_ASSERT_EQUAL(ra, rb);
    if (ra != APR_SUCCESS || rb != APR_SUCCESS)
        return;
    CU_ASSERT_EQUAL_FATAL(a.n, b.n);
    CU_ASSERT_PTR_EQUAL(a.close, b.close);
    for (i = 0; i < a.n; i++) {
        CU_ASSERT(a.m[i].key == b.m[i].key && a.m[i].klen == b.m[i].klen);
        CU_ASSERT(a.m[i].val == b.m[i].val && a.m[i].vlen == b.m[i].vlen);
    }
}

/* Sub-objects read from their checked text, with what they may hold. */
static void test_scan_sub(void)
{
    static const struct { const char *text; apr_status_t want; int n; } cases[] = {
        { "{\"s\":{}}", APR_SUCCESS, 0 },
        { "{\"s\": { \"a\" : 1 , \"b\":\"x\" } }", APR_SUCCESS, 2 },
        { "{\"s\":{\"a\":\"}]{[\\\"\",\"b\":[[\"]\"],{\"x\":\"}\"}],\"c\":{\"d\":[{}]},\"e\":-1.5e3}}",
          APR_SUCCESS, 4 },
        { "{\"s\":{\"a\":\"\\\\\",\"b\":\"\\\\\\\"\",\"c\":\"\\u0022\\\\\",\"d\":true,\"e\":null}}",
          APR_SUCCESS, 5 },
        { "{\"s\":{\"a\":{\"a\":1,\"a\":2},\"b\":[false]}}", APR_SUCCESS, 2 },
        { "{\"s\":{\"\xc3\xa9\":\"\xf0\x9f\x98\x80\",\"k\\u0065y\":1}}", APR_EGENERAL, 0 },
        { "{\"s\":{\"a\\\"b\":1}}", APR_EGENERAL, 0 },
        { "{\"s\":{\"a\":1,\"b\":2,\"a\":3}}", APR_EGENERAL, 0 },
        { "{\"s\":{\"a\":1,\"ab\":2,\"b\":3}}", APR_SUCCESS, 3 },
        { "{\"s\":[1]}", APR_NOTFOUND, 0 },
        { "{\"s\":\"{}\"}", APR_NOTFOUND, 0 },
        { "{\"t\":{}}", APR_NOTFOUND, 0 },
        { NULL, 0, 0 }
    };
    int i;
    for (i = 0; cases[i].text; i++) {
        prov_jobject_t o, sub;
        CU_ASSERT_EQUAL_FATAL(prov_json_scan_object(&o, cases[i].text, strlen(cases[i].text)),
                              APR_SUCCESS);
        CU_ASSERT_EQUAL(prov_json_scan_sub(&sub, &o, "s"), cases[i].want);
        if (cases[i].want == APR_SUCCESS)
            CU_ASSERT_EQUAL(sub.n, cases[i].n);
        if (cases[i].want != APR_NOTFOUND)
            check_sub_same(&o, "s");
    }
}

/* The first item of an array member, read as an object from its checked
 * text: what a scan of that item's text alone gives; not found for an
 * empty array, a first item that is not an object, or no array. */
static void test_scan_first(void)
{
    static const struct { const char *text; apr_status_t want; int n; } cases[] = {
        { "{\"c\":[{\"index\":0,\"delta\":{\"content\":\"]}\"}}]}", APR_SUCCESS, 2 },
        { "{\"c\":[ \n{}\t, {\"a\":1}]}", APR_SUCCESS, 0 },
        { "{\"c\":[{\"a\":[{\"b\":\"}\"}],\"z\":null},{\"x\":1}]}", APR_SUCCESS, 2 },
        { "{\"c\":[{\"a\":1,\"a\":2}]}", APR_EGENERAL, 0 },
        { "{\"c\":[]}", APR_NOTFOUND, 0 },
        { "{\"c\":[ ]}", APR_NOTFOUND, 0 },
        { "{\"c\":[1,{}]}", APR_NOTFOUND, 0 },
        { "{\"c\":{\"a\":1}}", APR_NOTFOUND, 0 },
        { "{\"d\":[{}]}", APR_NOTFOUND, 0 },
        { NULL, 0, 0 }
    };
    int i;
    for (i = 0; cases[i].text; i++) {
        prov_jobject_t o, a, b;
        const char *v = NULL, *at;
        apr_size_t vlen = 0;
        const prov_jmember_t *m;
        CU_ASSERT_EQUAL_FATAL(prov_json_scan_object(&o, cases[i].text, strlen(cases[i].text)),
                              APR_SUCCESS);
        CU_ASSERT_EQUAL(prov_json_scan_first(&a, &o, "c"), cases[i].want);
        if (cases[i].want == APR_NOTFOUND)
            continue;
        m = prov_json_scan_member(&o, "c");
        at = m->val;
        CU_ASSERT_EQUAL_FATAL(prov_json_scan_item(&at, m->val + m->vlen, &v, &vlen), APR_SUCCESS);
        CU_ASSERT_EQUAL(prov_json_scan_object(&b, v, vlen), cases[i].want);
        if (cases[i].want != APR_SUCCESS)
            continue;
        CU_ASSERT_EQUAL(a.n, cases[i].n);
        CU_ASSERT_EQUAL(a.n, b.n);
        CU_ASSERT_PTR_EQUAL(a.close, b.close);
        if (a.n)
            CU_ASSERT(a.m[a.n - 1].val == b.m[b.n - 1].val && a.m[a.n - 1].vlen == b.m[b.n - 1].vlen);
    }
}

/* A sub-object of as many members as a scan keeps, and one more; a sub of a
 * sub (a message_start's message, then its usage). */
static void test_scan_sub_members(void)
{
    char buf[512];
    apr_size_t n;
    prov_jobject_t o, sub, usage;
    int i, k;
    for (i = 0; i <= PROV_JSCAN_MEMBERS + 1; i++) {
        memcpy(buf, "{\"s\":{", 6);
        n = 6;
        for (k = 0; k < i; k++)
            n += (apr_size_t)sprintf(buf + n, "%s\"m%d\":[%d]", k ? "," : "", k, k);
        memcpy(buf + n, "}}", 3);
        n += 2;
        CU_ASSERT_EQUAL_FATAL(prov_json_scan_object(&o, buf, n), APR_SUCCESS);
        CU_ASSERT_EQUAL(prov_json_scan_sub(&sub, &o, "s"),
                        i <= PROV_JSCAN_MEMBERS ? APR_SUCCESS : APR_EGENERAL);
        check_sub_same(&o, "s");
    }
    {
        static const char start[] = "{\"type\":\"message_start\",\"message\":{\"id\":\"m\","
            "\"content\":[],\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}";
        apr_int64_t v;
        CU_ASSERT_EQUAL_FATAL(prov_json_scan_object(&o, start, sizeof(start) - 1), APR_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(prov_json_scan_sub(&sub, &o, "message"), APR_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(prov_json_scan_sub(&usage, &sub, "usage"), APR_SUCCESS);
        CU_ASSERT_EQUAL(prov_json_scan_int(&v, &usage, "input_tokens"), APR_SUCCESS);
        CU_ASSERT_EQUAL(v, 7);
        check_sub_same(&sub, "usage");
        CU_ASSERT_EQUAL(*usage.close, '}');
        CU_ASSERT_EQUAL(usage.close[1], '}');
    }
}

/* Keys told apart whatever they share (first and last byte, length), found
 * by their whole name only; the same in a sub-object. */
static void test_scan_keys(void)
{
    static const char ok[] = "{\"type\":1,\"tape\":2,\"te\":3,\"\":4,\"t\":5,\"tyype\":6,"
                             "\"s\":{\"type\":1,\"tape\":2,\"\":3}}";
    static const char *const dup[] = {
        "{\"type\":1,\"tape\":2,\"type\":3}", "{\"\":1,\"t\":2,\"\":3}",
        "{\"a\":{\"type\":1,\"tape\":2,\"type\":3}}", NULL
    };
    prov_jobject_t o, sub;
    apr_int64_t v;
    int i;
    CU_ASSERT_EQUAL_FATAL(prov_json_scan_object(&o, ok, sizeof(ok) - 1), APR_SUCCESS);
    CU_ASSERT_EQUAL(o.n, 7);
    CU_ASSERT_EQUAL(prov_json_scan_int(&v, &o, "tape"), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 2);
    CU_ASSERT_EQUAL(prov_json_scan_int(&v, &o, ""), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 4);
    CU_ASSERT_EQUAL(prov_json_scan_int(&v, &o, "t"), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 5);
    /* A member already found reads the same (the Messages relay's counts). */
    CU_ASSERT_EQUAL(prov_json_scan_member_int(&v, prov_json_scan_member(&o, "te")), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 3);
    v = 9;
    CU_ASSERT_EQUAL(prov_json_scan_member_int(&v, NULL), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 0);
    {
        static const char nums[] = "{\"n\":-12,\"f\":1.5,\"big\":123456789012345678901234}";
        prov_jobject_t no;
        CU_ASSERT_EQUAL_FATAL(prov_json_scan_object(&no, nums, sizeof(nums) - 1), APR_SUCCESS);
        CU_ASSERT_EQUAL(prov_json_scan_member_int(&v, prov_json_scan_member(&no, "n")), APR_SUCCESS);
        CU_ASSERT_EQUAL(v, -12);
        CU_ASSERT_EQUAL(prov_json_scan_member_int(&v, prov_json_scan_member(&no, "f")), APR_SUCCESS);
        CU_ASSERT_EQUAL(v, 0);
        CU_ASSERT_EQUAL(prov_json_scan_member_int(&v, prov_json_scan_member(&no, "big")),
                        APR_EGENERAL);
    }
    CU_ASSERT_PTR_NULL(prov_json_scan_member(&o, "typ"));
    CU_ASSERT_PTR_NULL(prov_json_scan_member(&o, "types"));
    CU_ASSERT_PTR_NULL(prov_json_scan_member(&o, "tap"));
    CU_ASSERT_EQUAL_FATAL(prov_json_scan_sub(&sub, &o, "s"), APR_SUCCESS);
    CU_ASSERT_EQUAL(sub.n, 3);
    CU_ASSERT_EQUAL(prov_json_scan_int(&v, &sub, ""), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 3);
    for (i = 0; dup[i]; i++) {
        apr_status_t want = i < 2 ? APR_EGENERAL : APR_SUCCESS;
        CU_ASSERT_EQUAL_FATAL(prov_json_scan_object(&o, dup[i], strlen(dup[i])), want);
        if (want == APR_SUCCESS)
            CU_ASSERT_EQUAL(prov_json_scan_sub(&sub, &o, "a"), APR_EGENERAL);
        CU_ASSERT_EQUAL(prov_json_scan_strict(&o, dup[i], strlen(dup[i])), APR_EGENERAL);
    }
}

void prov_test_suite_json_scan(void)
{
    CU_pSuite s = CU_add_suite("json_scan", NULL, NULL);
    CU_add_test(s, "chat answers relayed as json-c renders them", test_chat_relay);
    CU_add_test(s, "a public id that needs escaping declines", test_render_declines);
    CU_add_test(s, "messages answers relayed as json-c renders them", test_messages_relay);
    CU_add_test(s, "what the scanner takes json-c takes", test_scan_agrees);
    CU_add_test(s, "strings read 8 bytes a step, whatever they hold where",
                test_scan_string_words);
    CU_add_test(s, "a sub-object read from checked text as a scan reads it", test_scan_sub);
    CU_add_test(s, "a sub-object's members bounded; a sub of a sub", test_scan_sub_members);
    CU_add_test(s, "an array's first item read from checked text as a scan reads it",
                test_scan_first);
    CU_add_test(s, "keys told apart and found by their whole name", test_scan_keys);
}
