/* test_prov_worst.c: unit tests of a request's worst case (prov_worst.c,
 * issue 29): the input bound (a token a byte of the body, plus the slack),
 * the worst rates (output at the higher of output and reasoning, input at the
 * higher of input and cache), n choices each to the cap, the client's cap
 * kept or lowered to the model's maximum, the floor of a request without a
 * cap, the rounding micro-credits, and the cap a smaller hold pays for, which
 * a settlement at that cap can never exceed, whatever the split of kinds. */
#include "unit_tests.h"
#include "prov_worst.h"

/* micro-credits per 1M tokens */
static const prov_rates_t plain = { 1000000, 4000000, PROV_RATE_UNSET, PROV_RATE_UNSET };

static void effective(prov_rates_t *eff, const prov_rates_t *card)
{
    CU_ASSERT_EQUAL_FATAL(prov_rates_effective(eff, card), APR_SUCCESS);
}

static void test_bound_and_rates(void)
{
    prov_rates_t eff, card = { 1000000, 4000000, 2000000, 40000000 };
    prov_worst_t w;

    effective(&eff, &plain);
    prov_worst_plan(&w, &eff, 3000, 1, 100, 32768);
    CU_ASSERT_EQUAL(w.input, 3000 + PROV_HOLD_INPUT_SLACK);
    CU_ASSERT_EQUAL(w.cap, 100);
    CU_ASSERT_EQUAL(w.floor, 100);
    CU_ASSERT_EQUAL(w.rounding, 0);
    /* a micro-credit a token in, four out */
    CU_ASSERT_EQUAL(w.hold, (3000 + PROV_HOLD_INPUT_SLACK) * 1 + 100 * 4);
    CU_ASSERT_EQUAL(w.hold_min, w.hold);

    /* cache above input, reasoning 10x output: the higher rates */
    effective(&eff, &card);
    prov_worst_plan(&w, &eff, 3000, 1, 100, 32768);
    CU_ASSERT_EQUAL(w.hold, (3000 + PROV_HOLD_INPUT_SLACK) * 2 + 100 * 40);

    /* a null reasoning rate charges the output rate: so does the hold */
    card.reasoning = PROV_RATE_UNSET;
    effective(&eff, &card);
    prov_worst_plan(&w, &eff, 0, 1, 10, 32768);
    CU_ASSERT_EQUAL(w.hold, PROV_HOLD_INPUT_SLACK * 2 + 10 * 4);
}

static void test_caps_and_choices(void)
{
    prov_rates_t eff;
    prov_worst_t w;

    effective(&eff, &plain);
    /* n choices: each to the cap */
    prov_worst_plan(&w, &eff, 0, 4, 1000, 32768);
    CU_ASSERT_EQUAL(w.choices, 4);
    CU_ASSERT_EQUAL(w.hold, PROV_HOLD_INPUT_SLACK + 4 * 1000 * 4);
    /* a cap above the model's maximum is lowered to it, and held at it */
    prov_worst_plan(&w, &eff, 0, 0, 64000, 32000);
    CU_ASSERT_EQUAL(w.choices, 1);
    CU_ASSERT_EQUAL(w.cap, 32000);
    CU_ASSERT_EQUAL(w.floor, 32000);
    /* no cap: the model's maximum, down to the floor */
    prov_worst_plan(&w, &eff, 0, 1, -1, 32000);
    CU_ASSERT_EQUAL(w.cap, 32000);
    CU_ASSERT_EQUAL(w.floor, PROV_OUTPUT_FLOOR);
    CU_ASSERT_EQUAL(w.hold, PROV_HOLD_INPUT_SLACK + 32000 * 4);
    CU_ASSERT_EQUAL(w.hold_min, PROV_HOLD_INPUT_SLACK + PROV_OUTPUT_FLOOR * 4);
    /* a model whose maximum is below the floor: no lower */
    prov_worst_plan(&w, &eff, 0, 1, -1, 500);
    CU_ASSERT_EQUAL(w.floor, 500);
    CU_ASSERT_EQUAL(w.hold_min, w.hold);
    /* no maximum at all: the largest cap there is */
    prov_worst_plan(&w, &eff, 0, 1, -1, 0);
    CU_ASSERT_EQUAL(w.cap, PROV_OUTPUT_TOKENS_MAX);
}

static void test_cap_for_hold(void)
{
    prov_rates_t eff;
    prov_worst_t w;

    effective(&eff, &plain);
    prov_worst_plan(&w, &eff, 976, 1, -1, 32000);      /* input 2000 tokens */
    CU_ASSERT_EQUAL(prov_worst_cap(&w, w.hold), 32000);
    CU_ASSERT_EQUAL(prov_worst_cap(&w, w.hold + 5), 32000);
    CU_ASSERT_EQUAL(prov_worst_cap(&w, w.hold_min), PROV_OUTPUT_FLOOR);
    CU_ASSERT_EQUAL(prov_worst_cap(&w, 2000 + 4 * 5000), 5000);
    CU_ASSERT_EQUAL(prov_worst_cap(&w, 2000 + 4 * 5000 + 3), 5000);
    /* two choices share what is left */
    prov_worst_plan(&w, &eff, 976, 2, -1, 32000);
    CU_ASSERT_EQUAL(prov_worst_cap(&w, 2000 + 2 * 4 * 5000 + 7), 5000);
}

/* Whatever the gateway bills within the cap and the bound, split in any way
 * among the kinds, costs no more than the hold that cap came from. */
static void test_cap_never_overspends(void)
{
    const prov_rates_t cards[] = {
        { 3, 7, 1, 11 }, { 1000001, 999999, 2500000, PROV_RATE_UNSET },
        { 1500000, 15000000, PROV_RATE_UNSET, 60000001 }, { 0, 5, 0, 5 },
    };
    const prov_micro_t helds[] = { 1, 1000, 123457, 9999999, 3000000001LL };
    apr_size_t c, h;
    for (c = 0; c < sizeof(cards) / sizeof(cards[0]); c++) {
        prov_rates_t eff;
        prov_worst_t w;
        effective(&eff, &cards[c]);
        prov_worst_plan(&w, &eff, 5000, 3, -1, 200000);
        for (h = 0; h < sizeof(helds) / sizeof(helds[0]); h++) {
            prov_micro_t held = w.hold_min + helds[h];
            apr_int64_t cap = prov_worst_cap(&w, held), out = 3 * cap, k;
            CU_ASSERT_TRUE(cap >= w.floor && cap <= w.cap);
            for (k = 0; k <= 4; k++) {
                prov_tokens_t t = { w.input - k * 1000, out - k * out / 4, k * 1000,
                                    k * out / 4 };
                CU_ASSERT_TRUE(prov_money_charge(&eff, &t) <= held);
            }
            /* and one token more of output could not be paid for */
            if (cap < w.cap && eff.output > 0) {
                prov_tokens_t t = { w.input, out + 3, 0, 0 };
                prov_rates_t top = w.rates;
                CU_ASSERT_TRUE(prov_money_charge(&top, &t) + w.rounding > held);
            }
        }
    }
}

void prov_test_suite_worst(void)
{
    PROV_SUITE("worst",
               PROV_TEST(test_bound_and_rates),
               PROV_TEST(test_caps_and_choices),
               PROV_TEST(test_cap_for_hold),
               PROV_TEST(test_cap_never_overspends));
}
