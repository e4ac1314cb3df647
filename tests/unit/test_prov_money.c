/* test_prov_money.c: unit tests of exact credit arithmetic: parsing and
 * printing decimal credits, the effective rate card, and charges rounded up
 * per token kind without overflow. */
#include <stdlib.h>
#include "unit_tests.h"
#include "prov_money.h"

static void test_parse_ok(void)
{
    prov_micro_t v = 0;
    CU_ASSERT_EQUAL(prov_money_parse(&v, "12.5", 0), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 12500000);
    CU_ASSERT_EQUAL(prov_money_parse(&v, "0.000001", 0), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 1);
    CU_ASSERT_EQUAL(prov_money_parse(&v, "7", 0), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 7000000);
    CU_ASSERT_EQUAL(prov_money_parse(&v, ".5", 0), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 500000);
    CU_ASSERT_EQUAL(prov_money_parse(&v, "-3.25", 1), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, -3250000);
}

static void test_parse_bad(void)
{
    prov_micro_t v = 42;
    const char *bad[] = { "", "abc", "1.", "1.2.3", "1e5", " 1", "1 ", "0.0000001", "12.x",
                          "-", "+", "--1", NULL };
    int i;
    for (i = 0; bad[i]; i++)
        CU_ASSERT_EQUAL(prov_money_parse(&v, bad[i], 1), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_money_parse(&v, "-1", 0), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_money_parse(&v, "99999999999999999999", 0), APR_ERANGE);
    CU_ASSERT_EQUAL(v, 42);
}

static void test_format(void)
{
    apr_pool_t *p = prov_test_pool();
    CU_ASSERT_STRING_EQUAL(prov_money_format(0, p), "0");
    CU_ASSERT_STRING_EQUAL(prov_money_format(12500000, p), "12.5");
    CU_ASSERT_STRING_EQUAL(prov_money_format(1, p), "0.000001");
    CU_ASSERT_STRING_EQUAL(prov_money_format(-125, p), "-0.000125");
    CU_ASSERT_STRING_EQUAL(prov_money_format(3000000, p), "3");
    CU_ASSERT_STRING_EQUAL(prov_money_format(APR_INT64_MIN, p), "-9223372036854.775808");
}

static void test_effective_rates(void)
{
    prov_rates_t card = { 2000000, 8000000, PROV_RATE_UNSET, PROV_RATE_UNSET }, eff;
    CU_ASSERT_EQUAL(prov_rates_effective(&eff, &card), APR_SUCCESS);
    CU_ASSERT_EQUAL(eff.cache, 2000000);
    CU_ASSERT_EQUAL(eff.reasoning, 8000000);
    card.cache = 500000;
    card.reasoning = 0;
    CU_ASSERT_EQUAL(prov_rates_effective(&eff, &card), APR_SUCCESS);
    CU_ASSERT_EQUAL(eff.cache, 500000);
    CU_ASSERT_EQUAL(eff.reasoning, 0);
    card.output = PROV_RATE_UNSET;
    CU_ASSERT_EQUAL(prov_rates_effective(&eff, &card), APR_EINVAL);
}

static void test_charge(void)
{
    /* 2.5 credits / 1M input, 10 / 1M output, 1.25 / 1M cache, 20 / 1M reasoning */
    prov_rates_t eff = { 2500000, 10000000, 1250000, 20000000 };
    prov_tokens_t t = { 1000, 500, 200, 100 };
    /* 1000*2.5 + 500*10 + 200*1.25 + 100*20 = 2500 + 5000 + 250 + 2000 micro */
    CU_ASSERT_EQUAL(prov_money_charge(&eff, &t), 9750);
    /* One token at 0.3 credits / 1M is 0.3 micro: rounded up to 1. */
    {
        prov_rates_t r = { 300000, 300000, 300000, 300000 };
        prov_tokens_t one = { 1, 0, 0, 0 };
        CU_ASSERT_EQUAL(prov_money_charge(&r, &one), 1);
        one.input = 0;
        CU_ASSERT_EQUAL(prov_money_charge(&r, &one), 0);
    }
    /* Large numbers do not overflow: 1e9 tokens at the maximum rate. */
    {
        prov_rates_t r = { PROV_RATE_MAX, 0, 0, 0 };
        prov_tokens_t big = { 1000000000, 0, 0, 0 };
        CU_ASSERT_EQUAL(prov_money_charge(&r, &big), PROV_RATE_MAX * 1000);
    }
    /* Negative counts count as zero. */
    {
        prov_tokens_t neg = { -5, 10, 0, 0 };
        CU_ASSERT_EQUAL(prov_money_charge(&eff, &neg), 100);
    }
}

void prov_test_suite_money(void)
{
    PROV_SUITE("money", PROV_TEST(test_parse_ok), PROV_TEST(test_parse_bad),
               PROV_TEST(test_format), PROV_TEST(test_effective_rates), PROV_TEST(test_charge));
}
