/* prov_money.c: exact credit arithmetic: decimal text <-> micro-credits, the
 * effective rate card (NULL cache -> input rate, NULL reasoning -> output
 * rate) and the charge of a request, each kind rounded up to a micro-credit. */
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
    int n = apr_snprintf(buf, PROV_MONEY_BUFSIZE, "%s%" APR_UINT64_T_FMT,
                         v < 0 ? "-" : "", whole);
    if (frac) {
        char fb[8];
        int k = 6;
        apr_snprintf(fb, sizeof(fb), "%06" APR_UINT64_T_FMT, frac);
        while (k > 0 && fb[k - 1] == '0')
            fb[--k] = '\0';
        apr_snprintf(buf + n, PROV_MONEY_BUFSIZE - n, ".%s", fb);
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

/* ceil(tokens * rate / 1M) without overflow for rates up to PROV_RATE_MAX. */
static prov_micro_t kind_charge(apr_int64_t tokens, prov_micro_t rate)
{
    apr_uint64_t t, r, q, rem;
    if (tokens <= 0 || rate <= 0)
        return 0;
    t = (apr_uint64_t)tokens;
    r = (apr_uint64_t)rate;
    q = (t / 1000000u) * r;
    rem = (t % 1000000u) * r;          /* < 1e6 * 1e12 = 1e18: fits */
    q += rem / 1000000u;
    if (rem % 1000000u)
        q++;
    return (prov_micro_t)q;
}

prov_micro_t prov_money_charge(const prov_rates_t *eff, const prov_tokens_t *t)
{
    return kind_charge(t->input, eff->input) + kind_charge(t->output, eff->output)
         + kind_charge(t->cache, eff->cache) + kind_charge(t->reasoning, eff->reasoning);
}
