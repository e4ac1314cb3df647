/* fuzz_money.c: libFuzzer harness of the money and usage arithmetic
 * (core/base/prov_money.c) and the integer text of core/base/prov_common.c.
 * The input gives four token counts and a rate card (any 64-bit values), an
 * amount, and text. Checked: a charge is never negative and is 0 for no tokens;
 * with rates up to PROV_RATE_MAX it equals the exact sum of
 * ceil(tokens x rate / 1M) over the kinds (computed here in 128 bits)
 * whenever that fits in 64 bits, is positive whenever that sum is, and more
 * tokens never cost less; the effective rate card applies its
 * fallbacks; an amount formats to text that parses back to it (within the
 * range prov_money_parse takes) and text that parses formats to text that
 * parses to the same amount; prov_parse_i64 and prov_i64 agree. */
#include "fuzz_common.h"
#include "prov_money.h"

typedef __int128 i128;

static i128 exact_kind(apr_int64_t tokens, prov_micro_t rate)
{
    if (tokens <= 0 || rate <= 0)
        return 0;
    return ((i128)tokens * rate + 999999) / 1000000;
}

static i128 exact(const prov_rates_t *r, const prov_tokens_t *t)
{
    return exact_kind(t->input, r->input) + exact_kind(t->output, r->output)
         + exact_kind(t->cache, r->cache) + exact_kind(t->reasoning, r->reasoning);
}

/* Rates the service takes (the CLI refuses others): exact charges are owed
 * only for these; any rate must still give a charge that is not negative. */
static int in_domain(const prov_rates_t *r)
{
    return r->input <= PROV_RATE_MAX && r->output <= PROV_RATE_MAX
        && r->cache <= PROV_RATE_MAX && r->reasoning <= PROV_RATE_MAX;
}

static void check_charge(const prov_rates_t *eff, const prov_tokens_t *t)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    prov_micro_t c = prov_money_charge(eff, t);
    i128 x = exact(eff, t);
    FUZZ_CHECK(c >= 0);
    FUZZ_CHECK(prov_money_charge(eff, &none) == 0);
    if (!in_domain(eff))
        return;
    if (x <= APR_INT64_MAX)
        FUZZ_CHECK((i128)c == x);
    else
        FUZZ_CHECK(c > 0);
}

static void check_monotone(const prov_rates_t *eff, const prov_tokens_t *t)
{
    prov_tokens_t more = *t;
    if (!in_domain(eff))
        return;
    if (more.output >= 0 && more.output < APR_INT64_MAX)
        more.output++;
    if (more.input >= 0 && more.input <= APR_INT64_MAX - 1000000)
        more.input += 1000000;
    FUZZ_CHECK(prov_money_charge(eff, &more) >= prov_money_charge(eff, t));
}

static void check_rates(const prov_rates_t *card)
{
    prov_rates_t eff;
    if (prov_rates_effective(&eff, card) != APR_SUCCESS) {
        FUZZ_CHECK(card->input < 0 || card->output < 0);
        return;
    }
    FUZZ_CHECK(eff.input == card->input && eff.output == card->output);
    FUZZ_CHECK(eff.cache == (card->cache >= 0 ? card->cache : card->input));
    FUZZ_CHECK(eff.reasoning == (card->reasoning >= 0 ? card->reasoning : card->output));
}

static void check_format(prov_micro_t v, apr_pool_t *p)
{
    const char *s = prov_money_format(v, p);
    prov_micro_t back = 0;
    apr_status_t rv = prov_money_parse(&back, s, 1);
    FUZZ_CHECK(strlen(s) < PROV_MONEY_BUFSIZE);
    if (v >= -PROV_AMOUNT_MAX && v <= PROV_AMOUNT_MAX) {
        FUZZ_CHECK(rv == APR_SUCCESS && back == v);
    }
    else
        FUZZ_CHECK(rv == APR_ERANGE || (rv == APR_SUCCESS && back == v));
}

static void check_text(const char *s, apr_pool_t *p)
{
    prov_micro_t v = 0, again = 0;
    apr_int64_t i = 0;
    apr_status_t rv = prov_money_parse(&v, s, 1);
    FUZZ_CHECK(rv == APR_SUCCESS || rv == APR_EINVAL || rv == APR_ERANGE);
    if (rv == APR_SUCCESS) {
        FUZZ_CHECK(v >= -PROV_AMOUNT_MAX - PROV_MICRO_PER_CREDIT
                   && v <= PROV_AMOUNT_MAX + PROV_MICRO_PER_CREDIT);
        FUZZ_CHECK(prov_money_parse(&again, prov_money_format(v, p), 1) == APR_SUCCESS);
        FUZZ_CHECK(again == v);
        if (prov_money_parse(&again, s, 0) == APR_SUCCESS)
            FUZZ_CHECK(again == v && v >= 0);
    }
    if (prov_parse_i64(&i, s) == APR_SUCCESS) {
        apr_int64_t j = 0;
        const char *digits = s[0] == '-' ? s + 1 : s;
        FUZZ_CHECK(prov_parse_i64(&j, prov_i64(i, p)) == APR_SUCCESS && j == i);
        /* the same number unless written with leading zeros */
        FUZZ_CHECK(!strcmp(prov_i64(i, p), s) || digits[0] == '0');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    prov_tokens_t t;
    prov_rates_t card, eff;
    prov_micro_t amount;

    t.input = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    t.output = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    t.cache = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    t.reasoning = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    card.input = (prov_micro_t)fuzz_take_u64(&data, &size, 8);
    card.output = (prov_micro_t)fuzz_take_u64(&data, &size, 8);
    card.cache = (prov_micro_t)fuzz_take_u64(&data, &size, 8);
    card.reasoning = (prov_micro_t)fuzz_take_u64(&data, &size, 8);
    amount = (prov_micro_t)fuzz_take_u64(&data, &size, 8);

    check_rates(&card);
    if (prov_rates_effective(&eff, &card) == APR_SUCCESS) {
        check_charge(&eff, &t);
        check_monotone(&eff, &t);
    }
    check_charge(&card, &t);
    check_format(amount, p);
    check_text(fuzz_str(data, size, p), p);
    apr_pool_destroy(p);
    return 0;
}
