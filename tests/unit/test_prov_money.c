/* test_prov_money.c: unit tests of exact credit arithmetic: parsing and
 * printing decimal credits, the effective rate card, charges rounded up
 * per token kind without overflow, the int64 helpers at their limits, and
 * what a settlement believes of a gateway's usage report. */
#include <stdlib.h>
#include <string.h>
#include "unit_tests.h"
#include "prov_money.h"
#include "prov_billing.h"
#include "prov_worst.h"
#include "prov_chat.h"
#include "prov_messages.h"

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
    CU_ASSERT_STRING_EQUAL(prov_money_format(APR_INT64_MAX, p), "9223372036854.775807");
    CU_ASSERT_STRING_EQUAL(prov_money_format(-1000000, p), "-1");
    CU_ASSERT_STRING_EQUAL(prov_money_format(10100, p), "0.0101");
    CU_ASSERT_STRING_EQUAL(prov_i64(0, p), "0");
    CU_ASSERT_STRING_EQUAL(prov_i64(-7, p), "-7");
    CU_ASSERT_STRING_EQUAL(prov_i64(1234567890, p), "1234567890");
    CU_ASSERT_STRING_EQUAL(prov_i64(APR_INT64_MAX, p), "9223372036854775807");
    CU_ASSERT_STRING_EQUAL(prov_i64(APR_INT64_MIN, p), "-9223372036854775808");
    {
        /* every length, both ends of each, and the digits two at a time */
        static const char *const want[] = { "9", "10", "99", "100", "999", "1000", "10203",
                                            "987654", "18446744073709551615" };
        static const apr_uint64_t v[] = { 9, 10, 99, 100, 999, 1000, 10203, 987654,
                                          APR_UINT64_MAX };
        char buf[24];
        apr_uint64_t k;
        int i;
        for (i = 0; i < (int)(sizeof(v) / sizeof(v[0])); i++) {
            CU_ASSERT_PTR_EQUAL(prov_u64_format_buf(buf, v[i]), buf + strlen(want[i]));
            CU_ASSERT_STRING_EQUAL(buf, want[i]);
        }
        for (k = 0; k < 1000; k++)
            CU_ASSERT_EQUAL(strtoull(prov_i64((apr_int64_t)k * 7919, p), NULL, 10), k * 7919);
    }
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

#define MAX APR_INT64_MAX
#define MIN APR_INT64_MIN

static void test_i64_saturating(void)
{
    CU_ASSERT_EQUAL(prov_i64_add_sat(MAX, 1), MAX);
    CU_ASSERT_EQUAL(prov_i64_add_sat(MAX - 1, 1), MAX);
    CU_ASSERT_EQUAL(prov_i64_add_sat(MAX - 1, 2), MAX);
    CU_ASSERT_EQUAL(prov_i64_add_sat(MAX, MAX), MAX);
    CU_ASSERT_EQUAL(prov_i64_add_sat(MAX, MIN), -1);
    CU_ASSERT_EQUAL(prov_i64_add_sat(MIN, -1), MIN);
    CU_ASSERT_EQUAL(prov_i64_add_sat(0, 0), 0);
    CU_ASSERT_EQUAL(prov_i64_add_sat(-5, 3), -2);

    CU_ASSERT_EQUAL(prov_i64_sub_sat(MIN, 1), MIN);
    CU_ASSERT_EQUAL(prov_i64_sub_sat(0, MIN), MAX);
    CU_ASSERT_EQUAL(prov_i64_sub_sat(MAX, -1), MAX);
    CU_ASSERT_EQUAL(prov_i64_sub_sat(MAX, MAX), 0);
    CU_ASSERT_EQUAL(prov_i64_sub_sat(0, MAX), -MAX);
    CU_ASSERT_EQUAL(prov_i64_sub_sat(-1, MAX), MIN);

    CU_ASSERT_EQUAL(prov_i64_mul_sat(MAX, 2), MAX);
    CU_ASSERT_EQUAL(prov_i64_mul_sat(MAX - 1, 1), MAX - 1);
    CU_ASSERT_EQUAL(prov_i64_mul_sat(MAX, 0), 0);
    CU_ASSERT_EQUAL(prov_i64_mul_sat(0, MIN), 0);
    CU_ASSERT_EQUAL(prov_i64_mul_sat(MAX, -2), MIN);
    CU_ASSERT_EQUAL(prov_i64_mul_sat(MIN, -1), MAX);
    CU_ASSERT_EQUAL(prov_i64_mul_sat(-3, -4), 12);
    /* The lease sizes: a hold of a quarter of the range times 256. */
    CU_ASSERT_EQUAL(prov_i64_mul_sat(MAX / 4, 256), MAX);
    CU_ASSERT_EQUAL(prov_i64_mul_sat(APR_INT64_C(36028797018963967), 256),
                    APR_INT64_C(9223372036854775552));
}

static void test_i64_checked(void)
{
    apr_int64_t v = 42;
    CU_ASSERT_EQUAL(prov_i64_add(&v, MAX, 1), APR_ERANGE);
    CU_ASSERT_EQUAL(v, 42);
    CU_ASSERT_EQUAL(prov_i64_add(&v, MIN, -1), APR_ERANGE);
    CU_ASSERT_EQUAL(v, 42);
    CU_ASSERT_EQUAL(prov_i64_add(&v, MAX - 1, 1), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, MAX);
    CU_ASSERT_EQUAL(prov_i64_add(&v, 0, 0), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT_EQUAL(prov_i64_add(&v, MIN, MAX), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, -1);
    v = 42;
    CU_ASSERT_EQUAL(prov_i64_mul(&v, MAX, 2), APR_ERANGE);
    CU_ASSERT_EQUAL(prov_i64_mul(&v, MIN, -1), APR_ERANGE);
    CU_ASSERT_EQUAL(prov_i64_mul(&v, APR_INT64_C(4294967296), APR_INT64_C(4294967296)),
                    APR_ERANGE);
    CU_ASSERT_EQUAL(v, 42);
    CU_ASSERT_EQUAL(prov_i64_mul(&v, MAX, 1), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, MAX);
    CU_ASSERT_EQUAL(prov_i64_mul(&v, MAX, -1), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, -MAX);
    CU_ASSERT_EQUAL(prov_i64_mul(&v, 0, MAX), APR_SUCCESS);
    CU_ASSERT_EQUAL(v, 0);
}

/* Token counts no request has: the charge saturates, never wraps. */
static void test_charge_absurd(void)
{
    prov_rates_t eff = { 2500000, 10000000, 1250000, 20000000 };
    prov_rates_t top = { PROV_RATE_MAX, PROV_RATE_MAX, PROV_RATE_MAX, PROV_RATE_MAX };
    prov_rates_t tiny = { 1, 1, 1, 1 };
    prov_tokens_t t = { 0, MAX, 0, 0 };
    CU_ASSERT_EQUAL(prov_money_charge(&eff, &t), MAX);
    t.output = MAX - 1;
    CU_ASSERT_EQUAL(prov_money_charge(&eff, &t), MAX);
    /* The figure: 922337203686000000 tokens at 10 credits / 1M are
     * 9.22337203686e18 micro-credits, just past int64. */
    t.output = APR_INT64_C(922337203686000000);
    CU_ASSERT_EQUAL(prov_money_charge(&eff, &t), MAX);
    {
        /* the worst case of the largest body there is saturates, never wraps */
        prov_worst_t w;
        prov_worst_plan(&w, &top, (apr_size_t)-1, 1, PROV_OUTPUT_TOKENS_MAX, 0);
        CU_ASSERT_EQUAL(w.hold, MAX);
        CU_ASSERT_EQUAL(prov_worst_cap(&w, MAX - 1), PROV_OUTPUT_TOKENS_MAX);
    }
    /* Every kind at its limit, and a sum past int64 from parts that fit. */
    {
        prov_tokens_t all = { MAX, MAX, MAX, MAX };
        CU_ASSERT_EQUAL(prov_money_charge(&top, &all), MAX);
        CU_ASSERT_EQUAL(prov_money_charge(&tiny, &all), 4 * (MAX / 1000000 + 1));
    }
    {
        /* Each kind 3.1e18 micro-credits at 1 micro-credit per token:
         * three of them pass int64. */
        prov_rates_t one = { 1000000, 1000000, 1000000, 1000000 };
        prov_tokens_t three = { APR_INT64_C(3100000000000000000),
                                APR_INT64_C(3100000000000000000),
                                APR_INT64_C(3100000000000000000), 0 };
        CU_ASSERT_EQUAL(prov_money_charge(&one, &three), MAX);
        three.cache = 0;
        CU_ASSERT_EQUAL(prov_money_charge(&one, &three), APR_INT64_C(6200000000000000000));
    }
    /* At a tiny rate the largest count still has an exact charge. */
    t.output = MAX;
    CU_ASSERT_EQUAL(prov_money_charge(&tiny, &t), MAX / 1000000 + 1);
    t.output = 0;
    CU_ASSERT_EQUAL(prov_money_charge(&eff, &t), 0);
    /* The largest output cap at the largest rate is far from the limit. */
    {
        prov_worst_t w;
        prov_worst_plan(&w, &top, 0, 1, PROV_OUTPUT_TOKENS_MAX, PROV_OUTPUT_TOKENS_MAX);
        CU_ASSERT_EQUAL(w.hold, (PROV_OUTPUT_TOKENS_MAX + PROV_HOLD_INPUT_SLACK)
                                * (PROV_RATE_MAX / 1000000));
    }
    /* The input estimate of the largest body is exact, never wrapped. */
    CU_ASSERT_EQUAL(prov_billing_input_estimate((apr_size_t)-1, 0x7fffffff),
                    APR_INT64_C(6148914691236517205) + 8 * APR_INT64_C(0x7fffffff) + 16);
    CU_ASSERT_EQUAL(prov_billing_input_estimate(300, -5), 100 + 16);
}

static void test_settle_believable(void)
{
    prov_rates_t eff = { 2500000, 10000000, 1250000, 20000000 };
    prov_tokens_t t = { 1000, 500, 200, 100 }, rec;
    int absurd = 1;
    /* An ordinary report, its output (500 + 100 reasoning) exactly at the
     * cap: its charge, above the hold too (input may exceed the estimate),
     * counts as reported. */
    CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, 600, 100000), 9750);
    CU_ASSERT_FALSE(absurd);
    CU_ASSERT_EQUAL(rec.input, 1000);
    CU_ASSERT_EQUAL(rec.output, 500);
    CU_ASSERT_EQUAL(rec.cache, 200);
    CU_ASSERT_EQUAL(rec.reasoning, 100);
    CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, 600, 5000), 9750);
    CU_ASSERT_FALSE(absurd);
    /* No cap known (0): output is not judged against one. */
    CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, 0, 5000), 9750);
    CU_ASSERT_FALSE(absurd);
    /* The largest believable counts. */
    {
        prov_tokens_t big = { PROV_REPORT_TOKENS_MAX, 0, PROV_REPORT_TOKENS_MAX, 0 };
        prov_money_settle(&absurd, &rec, &eff, &big, 100, 1);
        CU_ASSERT_FALSE(absurd);
        CU_ASSERT_EQUAL(rec.input, PROV_REPORT_TOKENS_MAX);
    }
}

static void test_settle_absurd(void)
{
    prov_rates_t eff = { 2500000, 10000000, 1250000, 20000000 };
    prov_tokens_t rec;
    int absurd = 0;
    /* Output above the request's cap: at most the hold. */
    {
        prov_tokens_t t = { 1000, 501, 200, 100 };
        CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, 600, 5000), 5000);
        CU_ASSERT_TRUE(absurd);
        absurd = 0;
        /* ... and its own charge when that is less. */
        CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, 600, 100000), 9760);
        CU_ASSERT_TRUE(absurd);
        CU_ASSERT_EQUAL(rec.output, 501);
    }
    /* Counts at the int64 limit: the hold, never a wrapped charge; the
     * ledger gets counts its sums can hold. */
    {
        prov_tokens_t t = { MAX, MAX, MAX, MAX };
        absurd = 0;
        CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, 1000, 4242), 4242);
        CU_ASSERT_TRUE(absurd);
        CU_ASSERT_EQUAL(rec.input, PROV_REPORT_TOKENS_MAX);
        CU_ASSERT_EQUAL(rec.output, PROV_REPORT_TOKENS_MAX);
        CU_ASSERT_EQUAL(rec.cache, PROV_REPORT_TOKENS_MAX);
        CU_ASSERT_EQUAL(rec.reasoning, PROV_REPORT_TOKENS_MAX);
    }
    {
        /* Input past belief with no cap to compare output against. */
        prov_tokens_t t = { PROV_REPORT_TOKENS_MAX + 1, 10, 0, 0 };
        absurd = 0;
        CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, 0, 777), 777);
        CU_ASSERT_TRUE(absurd);
    }
    {
        /* Output and reasoning together pass the cap (and the sum would
         * pass int64). */
        prov_tokens_t t = { 0, MAX, 0, MAX };
        absurd = 0;
        CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, PROV_OUTPUT_TOKENS_MAX, 9),
                        9);
        CU_ASSERT_TRUE(absurd);
        t.output = 300;
        t.reasoning = 301;
        absurd = 0;
        prov_money_settle(&absurd, &rec, &eff, &t, 600, 1000000);
        CU_ASSERT_TRUE(absurd);
    }
    /* A negative count: the report cannot be read, the hold is charged,
     * and the ledger gets 0 for it. */
    {
        prov_tokens_t t = { -5, 10, 0, 0 };
        absurd = 0;
        CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, 600, 31337), 31337);
        CU_ASSERT_TRUE(absurd);
        CU_ASSERT_EQUAL(rec.input, 0);
        CU_ASSERT_EQUAL(rec.output, 10);
        t.input = MIN;
        absurd = 0;
        CU_ASSERT_EQUAL(prov_money_settle(&absurd, &rec, &eff, &t, 600, 31337), 31337);
        CU_ASSERT_TRUE(absurd);
    }
}

/* The gateway answer readers read usage strictly: a negative count makes
 * the report unreadable (no usage: the estimate), and sums saturate. */
static void test_usage_readers(void)
{
    apr_pool_t *p;
    prov_tokens_t t;
    json_object *u;
    const char *perr = NULL;
    apr_pool_create(&p, prov_test_pool());

    {
        const char *j = "{\"prompt_tokens\":100,\"completion_tokens\":-3,"
                        "\"prompt_tokens_details\":{\"cached_tokens\":40}}";
        u = prov_json_parse(j, strlen(j), &perr, p);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_EQUAL(prov_chat_tokens(&t, u), APR_EINVAL);

    {
        const char *j = "{\"prompt_tokens\":5,\"completion_tokens\":1,"
                        "\"prompt_tokens_details\":{\"cached_tokens\":-1}}";
        u = prov_json_parse(j, strlen(j), &perr, p);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_EQUAL(prov_chat_tokens(&t, u), APR_EINVAL);

    {
        const char *j = "{\"input_tokens\":9223372036854775807,"
                        "\"cache_creation_input_tokens\":9223372036854775807,"
                        "\"output_tokens\":1}";
        u = prov_json_parse(j, strlen(j), &perr, p);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        CU_ASSERT_EQUAL(prov_messages_tokens(&t, u), APR_SUCCESS);
        CU_ASSERT_EQUAL(t.input, MAX);
        CU_ASSERT_EQUAL(t.output, 1);
    }
    {
        const char *j = "{\"input_tokens\":7,\"output_tokens\":-9}";
        u = prov_json_parse(j, strlen(j), &perr, p);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        CU_ASSERT_EQUAL(prov_messages_tokens(&t, u), APR_EINVAL);
    }
    apr_pool_destroy(p);
}

void prov_test_suite_money(void)
{
    PROV_SUITE("money", PROV_TEST(test_parse_ok), PROV_TEST(test_parse_bad),
               PROV_TEST(test_format), PROV_TEST(test_effective_rates), PROV_TEST(test_charge),
               PROV_TEST(test_i64_saturating), PROV_TEST(test_i64_checked),
               PROV_TEST(test_charge_absurd), PROV_TEST(test_settle_believable),
               PROV_TEST(test_settle_absurd), PROV_TEST(test_usage_readers));
}
