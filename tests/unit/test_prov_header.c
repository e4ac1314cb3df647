/* test_prov_header.c: unit tests of the header character rules: tokens and
 * field values as RFC 7230 defines them (CR, LF and every other control
 * character refused), a client's text reduced to a token, and a bounded
 * token list such as x-provider-dropped-tools. */
#include <string.h>
#include "unit_tests.h"
#include "prov_header.h"

static void test_token_ok(void)
{
    CU_ASSERT_TRUE(prov_header_token_ok("web_search"));
    CU_ASSERT_TRUE(prov_header_token_ok("ns.web_search_preview"));
    CU_ASSERT_TRUE(prov_header_token_ok("x-provider-credits"));
    CU_ASSERT_TRUE(prov_header_token_ok("!#$%&'*+-.^_`|~09azAZ"));
    CU_ASSERT_FALSE(prov_header_token_ok(""));
    CU_ASSERT_FALSE(prov_header_token_ok(NULL));
    CU_ASSERT_FALSE(prov_header_token_ok("web search"));
    CU_ASSERT_FALSE(prov_header_token_ok("web\r\nsearch"));
    CU_ASSERT_FALSE(prov_header_token_ok("a,b"));
    CU_ASSERT_FALSE(prov_header_token_ok("a:b"));
    CU_ASSERT_FALSE(prov_header_token_ok("\"quoted\""));
    CU_ASSERT_FALSE(prov_header_token_ok("caf\xc3\xa9"));
    CU_ASSERT_FALSE(prov_header_token_ok("del\x7f"));
}

static void test_value_ok(void)
{
    CU_ASSERT_TRUE(prov_header_value_ok(""));
    CU_ASSERT_TRUE(prov_header_value_ok("a b\tc, \"d\"; e=f"));
    CU_ASSERT_TRUE(prov_header_value_ok("obs-text \xc3\xa9"));
    CU_ASSERT_FALSE(prov_header_value_ok(NULL));
    CU_ASSERT_FALSE(prov_header_value_ok("a\r\nX-Injected: 1"));
    CU_ASSERT_FALSE(prov_header_value_ok("a\nb"));
    CU_ASSERT_FALSE(prov_header_value_ok("a\rb"));
    CU_ASSERT_FALSE(prov_header_value_ok("bell\a"));
    CU_ASSERT_FALSE(prov_header_value_ok("del\x7f"));
}

static void test_token_filter(void)
{
    apr_pool_t *p;
    int c;
    char all[256];
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_STRING_EQUAL(prov_header_token("web_search", p), "web_search");
    CU_ASSERT_STRING_EQUAL(prov_header_token("web_search\r\nX-Injected: 1", p),
                           "web_searchX-Injected1");
    CU_ASSERT_STRING_EQUAL(prov_header_token(" \t\r\n\"(),/:;<=>?@[\\]{}", p), "");
    CU_ASSERT_STRING_EQUAL(prov_header_token("caf\xc3\xa9", p), "caf");
    CU_ASSERT_STRING_EQUAL(prov_header_token(NULL, p), "");
    /* Whatever goes in, what comes out is a token or empty. */
    for (c = 1; c < 256; c++)
        all[c - 1] = (char)c;
    all[255] = '\0';
    CU_ASSERT_TRUE(prov_header_token_ok(prov_header_token(all, p)));
    CU_ASSERT_EQUAL(strlen(prov_header_token(all, p)), 77);
    apr_pool_destroy(p);
}

static apr_array_header_t *items(apr_pool_t *p, const char *const *v)
{
    apr_array_header_t *a = apr_array_make(p, 4, sizeof(const char *));
    for (; *v; v++)
        APR_ARRAY_PUSH(a, const char *) = *v;
    return a;
}

static void test_token_list(void)
{
    apr_pool_t *p;
    const char *none[] = { NULL };
    const char *two[] = { "web_search", "ns.file_search", NULL };
    const char *bad[] = { "\r\n", "web\r\nsearch", " ", "x y", NULL };
    const char *many[] = { "aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc", "dddddddddd", NULL };
    const char *l;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_PTR_NULL(prov_header_token_list(items(p, none), 512, p));
    CU_ASSERT_STRING_EQUAL(prov_header_token_list(items(p, two), 512, p),
                           "web_search,ns.file_search");
    CU_ASSERT_STRING_EQUAL(prov_header_token_list(items(p, bad), 512, p), "websearch,xy");
    /* Bounded: the items that fit, then "..." */
    l = prov_header_token_list(items(p, many), 30, p);
    CU_ASSERT_STRING_EQUAL(l, "aaaaaaaaaa,bbbbbbbbbb,...");
    CU_ASSERT_TRUE(strlen(l) <= 30);
    CU_ASSERT_STRING_EQUAL(prov_header_token_list(items(p, many), 43, p),
                           "aaaaaaaaaa,bbbbbbbbbb,cccccccccc,dddddddddd");
    CU_ASSERT_STRING_EQUAL(prov_header_token_list(items(p, many), 5, p), "...");
    CU_ASSERT_PTR_NULL(prov_header_token_list(items(p, many), 2, p));
    apr_pool_destroy(p);
}

void prov_test_suite_header(void)
{
    PROV_SUITE("header",
               PROV_TEST(test_token_ok),
               PROV_TEST(test_value_ok),
               PROV_TEST(test_token_filter),
               PROV_TEST(test_token_list));
}
