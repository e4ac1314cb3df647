/* test_prov_keys.c: unit tests of secrets: key shape, uniqueness, hashing
 * and the display prefix that is all that is shown after creation. */
#include <string.h>
#include "unit_tests.h"
#include "prov_keys.h"

static void test_generate(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *s1, *h1, *d1, *s2, *h2, *d2;
    CU_ASSERT_EQUAL(prov_key_generate(&s1, &h1, &d1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_key_generate(&s2, &h2, &d2, p), APR_SUCCESS);
    CU_ASSERT_STRING_NOT_EQUAL(s1, s2);
    CU_ASSERT_EQUAL(strncmp(s1, PROV_KEY_PREFIX, strlen(PROV_KEY_PREFIX)), 0);
    CU_ASSERT_EQUAL(strlen(s1), strlen(PROV_KEY_PREFIX) + PROV_KEY_RANDOM_LEN);
    CU_ASSERT_TRUE(prov_key_wellformed(s1));
    CU_ASSERT_EQUAL(strlen(h1), 64);
    CU_ASSERT_STRING_EQUAL(h1, prov_key_hash(s1, p));
    CU_ASSERT_EQUAL(strlen(d1), PROV_KEY_DISPLAY_LEN);
    CU_ASSERT_EQUAL(strncmp(d1, s1, PROV_KEY_DISPLAY_LEN), 0);
    CU_ASSERT_PTR_NULL(strstr(h1, s1 + strlen(PROV_KEY_PREFIX)));
}

static void test_wellformed(void)
{
    CU_ASSERT_FALSE(prov_key_wellformed(NULL));
    CU_ASSERT_FALSE(prov_key_wellformed(""));
    CU_ASSERT_FALSE(prov_key_wellformed("sk-prov-short"));
    CU_ASSERT_FALSE(prov_key_wellformed("sk-other-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    CU_ASSERT_FALSE(prov_key_wellformed("sk-prov-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA!"));
    CU_ASSERT_TRUE(prov_key_wellformed("sk-prov-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA-_a"));
}

static void test_hash_known(void)
{
    /* SHA-256("abc") */
    CU_ASSERT_STRING_EQUAL(prov_key_hash("abc", prov_test_pool()),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

void prov_test_suite_keys(void)
{
    PROV_SUITE("keys", PROV_TEST(test_generate), PROV_TEST(test_wellformed),
               PROV_TEST(test_hash_known));
}
