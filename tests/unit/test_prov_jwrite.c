/* test_prov_jwrite.c: unit tests of the JSON text writer
 * (core/base/prov_jwrite.c): strings escaped as json-c prints them, for
 * every byte value; integers as json-c prints them; string values the
 * scanner took decoded as json-c decodes them and printed again as json-c
 * would print them. */
#include <string.h>
#include "unit_tests.h"
#include "prov_json.h"
#include "prov_json_scan.h"
#include "prov_jwrite.h"

static const char *jsonc(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN
                                             | JSON_C_TO_STRING_NOSLASHESCAPE);
}

static void test_every_byte(void)
{
    prov_jwrite_t w;
    char all[256];
    int b;
    memset(&w, 0, sizeof(w));
    for (b = 0; b < 256; b++) {
        char c = (char)b;
        json_object *o = json_object_new_string_len(&c, 1);
        w.len = 0;
        prov_jwrite_str(&w, &c, 1);
        CU_ASSERT_STRING_EQUAL(w.p, jsonc(o));
        json_object_put(o);
        all[b] = (char)b;
    }
    {
        json_object *o = json_object_new_string_len(all, 256);
        w.len = 0;
        prov_jwrite_str(&w, all, 256);
        CU_ASSERT_EQUAL(w.len, strlen(jsonc(o)));
        CU_ASSERT_STRING_EQUAL(w.p, jsonc(o));
        json_object_put(o);
    }
    w.len = 0;
    prov_jwrite_cstr(&w, NULL);
    prov_jwrite_cstr(&w, "a/b");
    CU_ASSERT_STRING_EQUAL(w.p, "\"\"\"a/b\"");
    CU_ASSERT_FALSE(w.oom);
    prov_jwrite_free(&w);
    CU_ASSERT_PTR_NULL(w.p);
}

static void test_integers(void)
{
    static const apr_int64_t v[] = { 0, 1, -1, 9, 10, -10, 1234567890123LL,
                                     APR_INT64_MAX, APR_INT64_MIN };
    prov_jwrite_t w;
    apr_pool_t *p;
    size_t i;
    /* (the writer's buffer goes with the pool: a pool of this test's own) */
    apr_pool_create(&p, prov_test_pool());
    prov_jwrite_init(&w, p);
    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        json_object *o = json_object_new_int64(v[i]);
        w.len = 0;
        prov_jwrite_int(&w, v[i]);
        CU_ASSERT_STRING_EQUAL(w.p, jsonc(o));
        json_object_put(o);
    }
    apr_pool_destroy(p);
    CU_ASSERT_PTR_NULL(w.p);
}

/* The one member of {"s":VALUE}, scanned. */
static const prov_jmember_t *scanned(prov_jobject_t *o, const char *text)
{
    CU_ASSERT_EQUAL_FATAL(prov_json_scan_object(o, text, strlen(text)), APR_SUCCESS);
    return prov_json_scan_member(o, "s");
}

static void test_scanned_strings(void)
{
    static const char *const bodies[] = {
        "{\"s\":\"plain text / with slash\"}",
        "{\"s\":\"\"}",
        "{\"s\":\"\\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t\"}",
        "{\"s\":\"\\u0000nul \\u001f \\u007f \\u00e9 \\u20ac \\uffff\"}",
        "{\"s\":\"raw \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 and \\u00E9\"}",
        "{\"s\":\"\\u0041\\u00410\"}",
        NULL
    };
    apr_pool_t *p;
    prov_jwrite_t w, d;
    int i;
    apr_pool_create(&p, prov_test_pool());
    prov_jwrite_init(&w, p);
    prov_jwrite_init(&d, p);
    for (i = 0; bodies[i]; i++) {
        prov_jobject_t o;
        const prov_jmember_t *m = scanned(&o, bodies[i]);
        const char *err = NULL;
        json_object *tree = prov_json_parse(bodies[i], strlen(bodies[i]), &err, p);
        json_object *s = prov_json_get(tree, "s", json_type_string);
        apr_size_t n;
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        /* written after other text, as in an event */
        w.len = 0;
        prov_jwrite_lit(&w, "x");
        prov_jwrite_scanned(&w, m->val, m->vlen);
        CU_ASSERT_STRING_EQUAL(w.p + 1, jsonc(s));
        d.len = 0;
        prov_jwrite_lit(&d, "y");
        n = prov_jwrite_decode(&d, m->val, m->vlen);
        CU_ASSERT_EQUAL(n, (apr_size_t)json_object_get_string_len(s));
        CU_ASSERT_EQUAL(n, prov_json_scan_strlen(m->val, m->vlen));
        CU_ASSERT_EQUAL(d.len, n + 1);
        CU_ASSERT_TRUE(!memcmp(d.p + 1, json_object_get_string(s), n));
    }
    apr_pool_destroy(p);
}

/* A long string grows the buffer several times over; the text survives. */
static void test_growth(void)
{
    prov_jwrite_t w;
    apr_size_t i;
    apr_pool_t *p;
    char *big;
    apr_pool_create(&p, prov_test_pool());
    big = apr_palloc(p, 100000);
    for (i = 0; i < 100000; i++)
        big[i] = (char)(i % 32 == 31 ? '\n' : 'a' + i % 26);
    prov_jwrite_init(&w, p);
    prov_jwrite_lit(&w, "[");
    prov_jwrite_str(&w, big, 100000);
    prov_jwrite_lit(&w, "]");
    CU_ASSERT_FALSE(w.oom);
    CU_ASSERT_EQUAL(w.len, 100000 + 100000 / 32 + 4);
    CU_ASSERT_EQUAL(w.p[w.len], '\0');
    CU_ASSERT_TRUE(!memcmp(w.p, "[\"abc", 5) && !memcmp(w.p + w.len - 2, "\"]", 2));
    apr_pool_destroy(p);
}

void prov_test_suite_jwrite(void)
{
    PROV_SUITE("jwrite",
               PROV_TEST(test_every_byte),
               PROV_TEST(test_integers),
               PROV_TEST(test_scanned_strings),
               PROV_TEST(test_growth));
}
