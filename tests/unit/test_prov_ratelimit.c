/* test_prov_ratelimit.c: unit tests of the anonymous endpoints' token
 * buckets: a burst then refusals with a Retry-After that is the real wait,
 * the refill at the rate, classes and addresses counted apart, a limit of
 * 0 that lets everything through, a full set that gives up its least
 * recently used slot (and says so only when that one was still filling),
 * the bounded size, and IPv6 addresses counted by their /64. */
#include <stdlib.h>
#include <string.h>
#include "unit_tests.h"
#include "prov_ratelimit.h"

#define SEC APR_USEC_PER_SEC

static prov_ratelimit_t *table(unsigned slots, apr_pool_t *p)
{
    prov_ratelimit_t *t = NULL;
    void *mem = apr_palloc(p, prov_ratelimit_size(slots));
    CU_ASSERT_EQUAL_FATAL(prov_ratelimit_init(&t, mem, slots), APR_SUCCESS);
    return t;
}

/* n takes of key at now; the number allowed. */
static int takes(prov_ratelimit_t *t, prov_rl_class_e c, const prov_rl_limit_t *l,
                 const char *key, apr_time_t now, int n, prov_rl_verdict_t *last)
{
    int i, ok = 0;
    for (i = 0; i < n; i++) {
        prov_ratelimit_take(last, t, c, l, key, now);
        ok += last->allowed;
    }
    return ok;
}

static void test_burst_and_refill(void)
{
    apr_pool_t *p = NULL;
    prov_rl_limit_t l = { 10, 20 };          /* one token every 6 s */
    prov_rl_verdict_t v;
    prov_ratelimit_t *t;
    apr_time_t t0 = 1000 * SEC;
    apr_pool_create(&p, prov_test_pool());
    t = table(1024, p);
    CU_ASSERT_EQUAL(takes(t, PROV_RL_REGISTER, &l, "192.0.2.1", t0, 300, &v), 20);
    CU_ASSERT_FALSE(v.allowed);
    CU_ASSERT_EQUAL(v.retry_after, 6);
    CU_ASSERT_FALSE(v.first);                /* only the 21st was the first refusal */
    /* 5.9 s later still none; at 6 s one, then none again for 6 s */
    CU_ASSERT_EQUAL(takes(t, PROV_RL_REGISTER, &l, "192.0.2.1", t0 + 5900000, 1, &v), 0);
    CU_ASSERT_EQUAL(v.retry_after, 1);
    CU_ASSERT_EQUAL(takes(t, PROV_RL_REGISTER, &l, "192.0.2.1", t0 + 6 * SEC, 1, &v), 1);
    CU_ASSERT_EQUAL(takes(t, PROV_RL_REGISTER, &l, "192.0.2.1", t0 + 6 * SEC, 1, &v), 0);
    CU_ASSERT_TRUE(v.first);                 /* allowed, then refused again */
    CU_ASSERT_EQUAL(v.retry_after, 6);
    /* two minutes idle: the whole burst again, not more */
    CU_ASSERT_EQUAL(takes(t, PROV_RL_REGISTER, &l, "192.0.2.1", t0 + 126 * SEC, 50, &v), 20);
    apr_pool_destroy(p);
}

static void test_apart_and_off(void)
{
    apr_pool_t *p = NULL;
    prov_rl_limit_t l = { 60, 3 }, off = { 0, 0 };
    prov_rl_verdict_t v;
    prov_ratelimit_t *t;
    apr_pool_create(&p, prov_test_pool());
    t = table(1024, p);
    CU_ASSERT_EQUAL(takes(t, PROV_RL_TOKEN, &l, "192.0.2.1", SEC, 10, &v), 3);
    CU_ASSERT_EQUAL(v.retry_after, 1);
    CU_ASSERT_EQUAL(takes(t, PROV_RL_TOKEN, &l, "192.0.2.2", SEC, 10, &v), 3);
    CU_ASSERT_EQUAL(takes(t, PROV_RL_SIGNIN, &l, "192.0.2.1", SEC, 10, &v), 3);
    CU_ASSERT_EQUAL(takes(t, PROV_RL_MCP, &off, "192.0.2.1", SEC, 1000, &v), 1000);
    CU_ASSERT_TRUE(v.allowed);
    /* no table (the module without shared memory): everything goes */
    CU_ASSERT_EQUAL(takes(NULL, PROV_RL_TOKEN, &l, "192.0.2.1", SEC, 10, &v), 10);
    apr_pool_destroy(p);
}

/* A table of one set of 8 ways (the minimum is 64 slots: 8 sets; keys are
 * spread, so 200 addresses fill every set many times over). */
static void test_eviction_bounded(void)
{
    apr_pool_t *p = NULL;
    prov_rl_limit_t l = { 1, 2 };
    prov_rl_verdict_t v;
    prov_ratelimit_t *t;
    int i, evicted = 0;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(prov_ratelimit_size(64), prov_ratelimit_size(1));
    CU_ASSERT_TRUE(prov_ratelimit_size(16384) <= 520 * 1024);
    t = table(64, p);
    CU_ASSERT_EQUAL(takes(t, PROV_RL_REGISTER, &l, "198.51.100.7", SEC, 5, &v), 2);
    for (i = 0; i < 200; i++) {
        takes(t, PROV_RL_REGISTER, &l, apr_psprintf(p, "203.0.113.%d", i), 2 * SEC + i, 1, &v);
        evicted += v.evicted;
    }
    /* 200 new addresses in 64 slots: the older ones made room, and said so */
    CU_ASSERT_TRUE(evicted >= 200 - 64);
    /* the first address, evicted, starts over with a full bucket */
    CU_ASSERT_EQUAL(takes(t, PROV_RL_REGISTER, &l, "198.51.100.7", 3 * SEC, 5, &v), 2);
    /* a bucket full by now gives its slot up without a word */
    for (i = 0; i < 200; i++) {
        takes(t, PROV_RL_REGISTER, &l, apr_psprintf(p, "192.0.2.%d", i),
              7200 * SEC + i, 1, &v);
        if (i < 8)
            CU_ASSERT_FALSE(v.evicted);
    }
    apr_pool_destroy(p);
}

static void test_keys_and_names(void)
{
    apr_pool_t *p = NULL;
    prov_rl_class_e c = PROV_RL_REGISTER;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_STRING_EQUAL(prov_ratelimit_key("192.0.2.1", p), "192.0.2.1");
    CU_ASSERT_STRING_EQUAL(prov_ratelimit_key("::ffff:192.0.2.1", p), "192.0.2.1");
    CU_ASSERT_STRING_EQUAL(prov_ratelimit_key("2001:db8:1:2:3:4:5:6", p), "2001:db8:1:2::/64");
    CU_ASSERT_STRING_EQUAL(prov_ratelimit_key("2001:db8:1:2::9", p),
                           prov_ratelimit_key("2001:db8:1:2:ffff::1", p));
    CU_ASSERT_STRING_EQUAL(prov_ratelimit_key("not:an address", p), "not:an address");
    CU_ASSERT_STRING_EQUAL(prov_ratelimit_key(NULL, p), "");
    CU_ASSERT_EQUAL(prov_rl_class_parse(&c, "SignIn"), APR_SUCCESS);
    CU_ASSERT_EQUAL(c, PROV_RL_SIGNIN);
    CU_ASSERT_EQUAL(prov_rl_class_parse(&c, "login"), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(prov_rl_class_name(PROV_RL_MCP), "mcp");
    CU_ASSERT_PTR_NULL(prov_rl_class_name(PROV_RL_CLASSES));
    CU_ASSERT_EQUAL(prov_rl_default(PROV_RL_REGISTER).per_minute, 10);
    apr_pool_destroy(p);
}

void prov_test_suite_ratelimit(void)
{
    PROV_SUITE("ratelimit", PROV_TEST(test_burst_and_refill), PROV_TEST(test_apart_and_off),
               PROV_TEST(test_eviction_bounded), PROV_TEST(test_keys_and_names));
}
