/* prov_money.c: exact credit arithmetic: decimal text <-> micro-credits, the
 * effective rate card (NULL cache -> input rate, NULL reasoning -> output
 * rate), the charge of a request, each kind rounded up to a micro-credit and
 * saturating rather than wrapping, and the settlement's judgement of a
 * gateway's usage report (an absurd one is charged at most the hold). */
#include <string.h>
#include "prov_money.h"

apr_status_t prov_money_parse(prov_micro_t *out, const char *s, int allow_negative)
{
    int neg = 0, digits = 0, decimals = 0;
    apr_uint64_t whole = 0, frac = 0;
    const char *c = s;

    if (!s || !*s)
        return APR_EINVAL;
    if (*c == '-' || *c == '+') {
        neg = (*c == '-');
        c++;
    }
    for (; *c >= '0' && *c <= '9'; c++, digits++) {
        whole = whole * 10 + (apr_uint64_t)(*c - '0');
        if (whole > (apr_uint64_t)(PROV_AMOUNT_MAX / PROV_MICRO_PER_CREDIT))
            return APR_ERANGE;
    }
    if (*c == '.') {
        c++;
        for (; *c >= '0' && *c <= '9'; c++, decimals++) {
            if (decimals >= 6)
                return APR_EINVAL;
            frac = frac * 10 + (apr_uint64_t)(*c - '0');
        }
        if (!decimals)
            return APR_EINVAL;
    }
    if (*c || (!digits && !decimals))
        return APR_EINVAL;
    if (neg && !allow_negative)
        return APR_EINVAL;
    while (decimals++ < 6)
        frac *= 10;
    *out = (prov_micro_t)(whole * (apr_uint64_t)PROV_MICRO_PER_CREDIT + frac);
    if (neg)
        *out = -*out;
    return APR_SUCCESS;
}

char *prov_money_format_buf(char *buf, prov_micro_t v)
{
    apr_uint64_t a = v < 0 ? (apr_uint64_t)(-(v + 1)) + 1 : (apr_uint64_t)v;
    apr_uint64_t whole = a / (apr_uint64_t)PROV_MICRO_PER_CREDIT;
    apr_uint64_t frac = a % (apr_uint64_t)PROV_MICRO_PER_CREDIT;
    char *w = buf;
    int k;
    if (v < 0)
        *w++ = '-';
    w = prov_u64_format_buf(w, whole);
    if (frac) {
        /* six decimals, the trailing zeros dropped (no printf: it is on
         * every answer's path) */
        *w++ = '.';
        for (k = 5; k >= 0; k--, frac /= 10)
            w[k] = (char)('0' + frac % 10);
        k = 6;
        while (w[k - 1] == '0')
            k--;
        w[k] = '\0';
    }
    return buf;
}

const char *prov_money_format(prov_micro_t v, apr_pool_t *p)
{
    char buf[PROV_MONEY_BUFSIZE];
    return apr_pstrdup(p, prov_money_format_buf(buf, v));
}

apr_status_t prov_rates_effective(prov_rates_t *out, const prov_rates_t *card)
{
    if (card->input < 0 || card->output < 0)
        return APR_EINVAL;
    out->input = card->input;
    out->output = card->output;
    out->cache = card->cache >= 0 ? card->cache : card->input;
    out->reasoning = card->reasoning >= 0 ? card->reasoning : card->output;
    return APR_SUCCESS;
}

/* ceil(tokens * rate / 1M), or APR_INT64_MAX when that does not fit. */
static prov_micro_t kind_charge(apr_int64_t tokens, prov_micro_t rate)
{
    apr_uint64_t t, r, q, rem;
    if (tokens <= 0 || rate <= 0)
        return 0;
    t = (apr_uint64_t)tokens;
    r = (apr_uint64_t)rate;
    if (__builtin_mul_overflow(t / 1000000u, r, &q)
        || __builtin_mul_overflow(t % 1000000u, r, &rem))
        return APR_INT64_MAX;
    if (__builtin_add_overflow(q, rem / 1000000u + (rem % 1000000u ? 1 : 0), &q)
        || q > (apr_uint64_t)APR_INT64_MAX)
        return APR_INT64_MAX;
    return (prov_micro_t)q;
}

prov_micro_t prov_money_charge(const prov_rates_t *eff, const prov_tokens_t *t)
{
    prov_micro_t c = kind_charge(t->input, eff->input);
    c = prov_i64_add_sat(c, kind_charge(t->output, eff->output));
    c = prov_i64_add_sat(c, kind_charge(t->cache, eff->cache));
    return prov_i64_add_sat(c, kind_charge(t->reasoning, eff->reasoning));
}

/* The part of total that is not part: negative when total is (a negative
 * part is flagged on its own kind and leaves total whole). */
static apr_int64_t rest_of(apr_int64_t total, apr_int64_t part)
{
    if (total < 0)
        return total;
    if (part <= 0)
        return total;
    return total > part ? total - part : 0;
}

void prov_tokens_split(prov_tokens_t *t, apr_int64_t prompt, apr_int64_t completion,
                       apr_int64_t cached, apr_int64_t reasoning)
{
    t->cache = cached;
    t->input = rest_of(prompt, cached);
    t->reasoning = reasoning;
    t->output = rest_of(completion, reasoning);
}

static apr_int64_t clamp_count(apr_int64_t n)
{
    return n < 0 ? 0 : n > PROV_REPORT_TOKENS_MAX ? PROV_REPORT_TOKENS_MAX : n;
}

prov_micro_t prov_money_settle(int *absurd, prov_tokens_t *recorded,
                               const prov_rates_t *eff, const prov_tokens_t *t,
                               apr_int64_t max_output, prov_micro_t hold)
{
    const apr_int64_t n[4] = { t->input, t->output, t->cache, t->reasoning };
    prov_micro_t charge = prov_money_charge(eff, t);
    int negative = 0, odd = 0, i;

    for (i = 0; i < 4; i++) {
        negative |= n[i] < 0;
        odd |= n[i] > PROV_REPORT_TOKENS_MAX;
    }
    if (max_output > 0 && prov_i64_add_sat(t->output > 0 ? t->output : 0,
                                           t->reasoning > 0 ? t->reasoning : 0) > max_output)
        odd = 1;
    if (charge == APR_INT64_MAX)
        odd = 1;
    recorded->input = clamp_count(t->input);
    recorded->output = clamp_count(t->output);
    recorded->cache = clamp_count(t->cache);
    recorded->reasoning = clamp_count(t->reasoning);
    *absurd = negative || odd;
    if (negative)
        return hold;
    if (odd && charge > hold)
        return hold;
    return charge;
}
