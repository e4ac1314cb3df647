/* prov_money.h: credits as exact integers. Parsing and printing the decimal
 * credit figures of the CLI and the API, the rate card of a model, the
 * charge for a request's tokens (README "Pricing": integer micro-credits, each kind
 * rounded up to a whole micro-credit, no floating point anywhere), what a
 * settlement believes of a gateway's usage report, and the checked and
 * saturating int64 arithmetic that every sum or product of money or tokens
 * goes through (an overflow never wraps: it saturates or is refused). */
#ifndef PROV_MONEY_H
#define PROV_MONEY_H

#include "prov_common.h"

/* A rate that is not configured (SQL NULL; the catalog shows null). */
#define PROV_RATE_UNSET APR_INT64_C(-1)
/* Upper bound for one rate: a million credits per 1M tokens. */
#define PROV_RATE_MAX (APR_INT64_C(1000000) * PROV_MICRO_PER_CREDIT)
/* Upper bound for any amount typed by an administrator: 10^12 credits. */
#define PROV_AMOUNT_MAX (APR_INT64_C(1000000000000) * PROV_MICRO_PER_CREDIT)

/* The largest output cap a request may ask for (max_tokens,
 * max_completion_tokens, max_output_tokens) and ProviderDefaultMaxTokens may
 * be: 1,000,000 tokens. Real clients ask for 32k-128k and today's models
 * stop at about 128k, so this leaves room for years of growth, while the hold
 * it implies stays small beside int64: 10^6 tokens at PROV_RATE_MAX is
 * 10^12 micro-credits. */
#define PROV_OUTPUT_TOKENS_MAX APR_INT64_C(1000000)
/* The largest count of one kind of token a usage report is believed for:
 * 10^9, a hundred times the largest context windows offered. It keeps every
 * charge far from int64 and the ledger's token sums (SQL SUM) in range. */
#define PROV_REPORT_TOKENS_MAX APR_INT64_C(1000000000)

/* ---- int64 arithmetic that never wraps ------------------------------------
 * The _sat forms clamp to [APR_INT64_MIN, APR_INT64_MAX]; the checked forms
 * return APR_ERANGE (leaving *out alone) when the exact result does not fit. */
static inline apr_int64_t prov_i64_add_sat(apr_int64_t a, apr_int64_t b)
{
    apr_int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? APR_INT64_MAX : APR_INT64_MIN;
    return r;
}

static inline apr_int64_t prov_i64_sub_sat(apr_int64_t a, apr_int64_t b)
{
    apr_int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? APR_INT64_MAX : APR_INT64_MIN;
    return r;
}

static inline apr_int64_t prov_i64_mul_sat(apr_int64_t a, apr_int64_t b)
{
    apr_int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? APR_INT64_MIN : APR_INT64_MAX;
    return r;
}

static inline apr_status_t prov_i64_add(apr_int64_t *out, apr_int64_t a, apr_int64_t b)
{
    apr_int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return APR_ERANGE;
    *out = r;
    return APR_SUCCESS;
}

static inline apr_status_t prov_i64_mul(apr_int64_t *out, apr_int64_t a, apr_int64_t b)
{
    apr_int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return APR_ERANGE;
    *out = r;
    return APR_SUCCESS;
}

/* Micro-credits per 1M tokens of each kind, or PROV_RATE_UNSET. */
typedef struct prov_rates_t {
    prov_micro_t input;
    prov_micro_t output;
    prov_micro_t cache;
    prov_micro_t reasoning;
} prov_rates_t;

/* Parses a decimal credit amount ("12", "12.5", "0.000001") into micro-credits.
 * At most 6 decimals, no exponent, no spaces; a leading '-' only when
 * allow_negative. Returns APR_EINVAL when malformed, APR_ERANGE when too big. */
apr_status_t prov_money_parse(prov_micro_t *out, const char *s, int allow_negative);
/* Formats micro-credits as the shortest exact decimal ("12.5", "-0.000125", "0"). */
const char *prov_money_format(prov_micro_t v, apr_pool_t *p);
/* The same into buf, which holds PROV_MONEY_BUFSIZE bytes; returns buf. */
#define PROV_MONEY_BUFSIZE 32
char *prov_money_format_buf(char *buf, prov_micro_t v);

/* The rate actually applied to each kind: cache falls back to input and
 * reasoning to output when unset. Returns APR_EINVAL when input or output is
 * unset (the model cannot be priced, so it cannot be served). */
apr_status_t prov_rates_effective(prov_rates_t *out, const prov_rates_t *card);
/* The charge for t at the effective rates: the sum over the kinds of
 * ceil(tokens * rate / 1M). Negative counts are treated as 0; a charge
 * beyond int64 is APR_INT64_MAX (never a wrapped, negative figure). */
prov_micro_t prov_money_charge(const prov_rates_t *effective, const prov_tokens_t *t);

/* The four kinds from OpenAI-style counts (cached tokens inside prompt,
 * reasoning inside completion; README "Pricing"). A negative reported count makes
 * the kinds it feeds negative, for prov_money_settle to see. */
void prov_tokens_split(prov_tokens_t *t, apr_int64_t prompt, apr_int64_t completion,
                       apr_int64_t cached, apr_int64_t reasoning);

/* What a settlement charges for the usage a gateway reported. A report no
 * request could produce is absurd: a negative count, a count above
 * PROV_REPORT_TOKENS_MAX, more output (output + reasoning) than the request's
 * output cap max_output, or a charge beyond int64. An absurd report is
 * charged at most the hold: the lesser of its charge and the hold, and the
 * hold itself when a count is negative (the report cannot be read at all).
 * *absurd says which it was; *recorded gets the counts for the ledger, each
 * clamped to [0, PROV_REPORT_TOKENS_MAX]. Returns the charge. */
prov_micro_t prov_money_settle(int *absurd, prov_tokens_t *recorded,
                               const prov_rates_t *effective, const prov_tokens_t *reported,
                               apr_int64_t max_output, prov_micro_t hold);

#endif
