/* test_prov_cache.c: unit tests of the hot-path lookup caches: a put entry is
 * found until its time to live runs out, one lookup in its last second is
 * told to read it again while the others find it, copies are independent
 * of the cache, a TTL of 0 caches nothing, and a full cache starts over. */
#include <string.h>
#include "unit_tests.h"
#include "prov_cache.h"

static prov_auth_t auth_of(const char *hash, apr_int64_t key_id)
{
    prov_auth_t a;
    memset(&a, 0, sizeof(a));
    a.key_hash = hash;
    a.key_id = key_id;
    a.user_id = 7;
    a.key_display = "sk-prov-abcd";
    a.has_budget = 1;
    a.weekly_budget = 42;
    return a;
}

/* A catalog row with public id pub and empty texts. */
static prov_model_t model_of(const char *pub, apr_int64_t id)
{
    prov_model_t m;
    memset(&m, 0, sizeof(m));
    m.public_id = pub;
    m.display_name = m.upstream_id = m.family = "";
    m.id = id;
    return m;
}

/* Looks key up (a model's public id when model) at now once per letter of
 * want, asserting each: '+' found, '-' not. */
static void lookups(prov_cache_t *c, const char *key, int model, apr_int64_t now,
                    const char *want, apr_pool_t *p)
{
    for (; *want; want++) {
        int found = model ? prov_cache_get_model(c, key, now, p) != NULL
                          : prov_cache_get_auth(c, key, now, p) != NULL;
        CU_ASSERT_EQUAL(found, *want == '+');
    }
}

/* An entry that expires at t + 2: found at t; at t + 1, its last second,
 * one lookup reads it again and the others find it; gone at t + 2. */
static void ahead_cycle(prov_cache_t *c, const char *key, int model, apr_int64_t t, apr_pool_t *p)
{
    lookups(c, key, model, t, "+", p);
    lookups(c, key, model, t + 1, "-++", p);
    lookups(c, key, model, t + 2, "-", p);
}

static void test_auth(void)
{
    apr_pool_t *p = NULL;
    prov_cache_t *c = NULL;
    prov_auth_t a = auth_of("h1", 3), *got;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_cache_create(&c, 2, 16, p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_cache_get_auth(c, "h1", 100, p));
    prov_cache_put_auth(c, &a, 100);
    lookups(c, "h1", 0, 100, "++", p);
    /* its last second: the first lookup reads it again, the others find it */
    lookups(c, "h1", 0, 101, "-", p);
    got = prov_cache_get_auth(c, "h1", 101, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_PTR_NOT_NULL(prov_cache_get_auth(c, "h1", 101, p));
    CU_ASSERT_EQUAL(got->key_id, 3);
    CU_ASSERT_EQUAL(got->weekly_budget, 42);
    CU_ASSERT_STRING_EQUAL(got->key_hash, "h1");
    CU_ASSERT_STRING_EQUAL(got->key_display, "sk-prov-abcd");
    CU_ASSERT_PTR_NULL(prov_cache_get_auth(c, "h1", 102, p));   /* expired */
    CU_ASSERT_PTR_NULL(prov_cache_get_auth(c, "h2", 101, p));
    /* put again by the lookup that read it: two more seconds, the same way */
    prov_cache_put_auth(c, &a, 101);
    ahead_cycle(c, "h1", 0, 101, p);
    apr_pool_destroy(p);
}

/* A TTL of one second: never read ahead (its last second is the one it
 * was put in); a model the same way as a key. */
static void test_ahead_short_and_model(void)
{
    apr_pool_t *p = NULL;
    prov_cache_t *c = NULL;
    prov_auth_t a = auth_of("h1", 3);
    prov_model_t m = model_of("pub", 9);
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_cache_create(&c, 1, 16, p), APR_SUCCESS);
    prov_cache_put_auth(c, &a, 100);
    lookups(c, "h1", 0, 100, "+++", p);
    lookups(c, "h1", 0, 101, "-", p);
    CU_ASSERT_EQUAL_FATAL(prov_cache_create(&c, 3, 16, p), APR_SUCCESS);
    prov_cache_put_model(c, &m, 100);
    ahead_cycle(c, "pub", 1, 101, p);
    apr_pool_destroy(p);
}

/* A key's entries go, under any secret; other keys' and the models stay. */
static void test_forget_key(void)
{
    apr_pool_t *p = NULL;
    prov_cache_t *c = NULL;
    prov_auth_t a = auth_of("old", 3), b = auth_of("new", 3), other = auth_of("h9", 9);
    prov_model_t m = model_of("m", 3);
    int i;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_cache_create(&c, 60, 64, p), APR_SUCCESS);
    prov_cache_put_auth(c, &a, 100);
    prov_cache_put_auth(c, &b, 100);
    prov_cache_put_auth(c, &other, 100);
    prov_cache_put_model(c, &m, 100);
    for (i = 0; i < 20; i++) {
        prov_auth_t x = auth_of(apr_psprintf(p, "k%d", i), 100 + i);
        prov_cache_put_auth(c, &x, 100);
    }
    prov_cache_forget_key(c, 3);
    CU_ASSERT_PTR_NULL(prov_cache_get_auth(c, "old", 101, p));
    CU_ASSERT_PTR_NULL(prov_cache_get_auth(c, "new", 101, p));
    CU_ASSERT_PTR_NOT_NULL(prov_cache_get_auth(c, "h9", 101, p));
    CU_ASSERT_PTR_NOT_NULL(prov_cache_get_model(c, "m", 101, p));
    for (i = 0; i < 20; i++)
        CU_ASSERT_PTR_NOT_NULL(prov_cache_get_auth(c, apr_psprintf(p, "k%d", i), 101, p));
    prov_cache_forget_key(c, 3);
    prov_cache_put_auth(c, &a, 102);
    CU_ASSERT_PTR_NOT_NULL(prov_cache_get_auth(c, "old", 103, p));
    apr_pool_destroy(p);
}

static void test_model_and_off(void)
{
    apr_pool_t *p = NULL;
    prov_cache_t *c = NULL, *off = NULL;
    prov_model_t m, *got;
    apr_pool_create(&p, prov_test_pool());
    memset(&m, 0, sizeof(m));
    m.id = 9;
    m.public_id = "pub";
    m.display_name = "Pub";
    m.upstream_id = "up";
    m.family = NULL;
    m.enabled = 1;
    m.rates.input = 5;
    CU_ASSERT_EQUAL_FATAL(prov_cache_create(&c, 5, 16, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_cache_create(&off, 0, 16, p), APR_SUCCESS);
    prov_cache_put_model(c, &m, 10);
    prov_cache_put_model(off, &m, 10);
    got = prov_cache_get_model(c, "pub", 11, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_EQUAL(got->id, 9);
    CU_ASSERT_STRING_EQUAL(got->upstream_id, "up");
    CU_ASSERT_STRING_EQUAL(got->family, "");
    CU_ASSERT_EQUAL(got->rates.input, 5);
    /* An auth lookup of the same text is not a model. */
    CU_ASSERT_PTR_NULL(prov_cache_get_auth(c, "m:pub", 11, p));
    CU_ASSERT_PTR_NULL(prov_cache_get_model(off, "pub", 11, p));
    apr_pool_destroy(p);
}

static void test_full(void)
{
    apr_pool_t *p = NULL;
    prov_cache_t *c = NULL;
    int i;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_cache_create(&c, 60, 4, p), APR_SUCCESS);
    for (i = 0; i < 6; i++) {
        prov_auth_t a = auth_of(apr_psprintf(p, "k%d", i), i);
        prov_cache_put_auth(c, &a, 100);
    }
    /* The fifth put emptied the cache: the last two are there, the first not. */
    CU_ASSERT_PTR_NULL(prov_cache_get_auth(c, "k0", 101, p));
    CU_ASSERT_PTR_NOT_NULL(prov_cache_get_auth(c, "k5", 101, p));
    /* Replacing an entry keeps one. */
    {
        prov_auth_t a = auth_of("k5", 55);
        prov_cache_put_auth(c, &a, 100);
        CU_ASSERT_EQUAL(prov_cache_get_auth(c, "k5", 101, p)->key_id, 55);
    }
    apr_pool_destroy(p);
}

void prov_test_suite_cache(void)
{
    PROV_SUITE("cache", PROV_TEST(test_auth), PROV_TEST(test_model_and_off), PROV_TEST(test_full),
               PROV_TEST(test_forget_key), PROV_TEST(test_ahead_short_and_model));
}
