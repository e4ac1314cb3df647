/* prov_worst.c: the worst case of an inference request and the output cap a
 * hold pays for (prov_worst.h). The input bound is one token a byte: a
 * byte-level tokenizer (every BPE of today's vendors, and SentencePiece with
 * byte fallback) makes at most one token of each byte of text, and every
 * string the gateway is sent comes from the client's body, where it takes at
 * least as many bytes as its text (JSON escapes only lengthen it); the
 * service's own additions (model, cap, stream options) are parameters, not
 * prompt. Integers only: no rate or count goes through floating point. */
#include "prov_worst.h"

static prov_micro_t higher(prov_micro_t a, prov_micro_t b)
{
    return a > b ? a : b;
}

/* The worst case of w's input and cap output tokens of each choice. */
static prov_micro_t worst_at(const prov_worst_t *w, apr_int64_t cap)
{
    prov_tokens_t t = { w->input, prov_i64_mul_sat(w->choices, cap), 0, 0 };
    return prov_i64_add_sat(prov_money_charge(&w->rates, &t), w->rounding);
}

/* Whether a settlement may round one kind up beside another: only when
 * either rate has a fraction of a micro-credit a token. */
static int rounds(prov_micro_t a, prov_micro_t b)
{
    return a % 1000000 != 0 || b % 1000000 != 0;
}

void prov_worst_plan(prov_worst_t *w, const prov_rates_t *eff, apr_size_t body_bytes,
                     apr_int64_t choices, apr_int64_t client_cap, apr_int64_t model_max)
{
    apr_int64_t bytes = body_bytes > (apr_size_t)APR_INT64_MAX ? APR_INT64_MAX
                                                               : (apr_int64_t)body_bytes;
    w->rates.input = higher(eff->input, eff->cache);
    w->rates.output = higher(eff->output, eff->reasoning);
    w->rates.cache = w->rates.reasoning = 0;
    w->rounding = rounds(eff->input, eff->cache) + rounds(eff->output, eff->reasoning);
    w->input = prov_i64_add_sat(bytes, PROV_HOLD_INPUT_SLACK);
    w->choices = choices > 0 ? choices : 1;
    if (model_max <= 0 || model_max > PROV_OUTPUT_TOKENS_MAX)
        model_max = PROV_OUTPUT_TOKENS_MAX;
    if (client_cap > 0) {
        w->cap = client_cap > model_max ? model_max : client_cap;
        w->floor = w->cap;
    }
    else {
        w->cap = model_max;
        w->floor = model_max < PROV_OUTPUT_FLOOR ? model_max : PROV_OUTPUT_FLOOR;
    }
    w->hold = worst_at(w, w->cap);
    w->hold_min = w->floor < w->cap ? worst_at(w, w->floor) : w->hold;
}

apr_int64_t prov_worst_cap(const prov_worst_t *w, prov_micro_t held)
{
    prov_tokens_t in = { w->input, 0, 0, 0 };
    prov_micro_t room;
    apr_int64_t per, cap;
    unsigned __int128 wide;

    if (held >= w->hold)
        return w->cap;
    if (held <= w->hold_min)
        return w->floor;
    /* choices * cap * rate / 1M, rounded up, must fit in what the input
     * leaves: cap = floor(room * 1M / (choices * rate)), in 128 bits
     * (room * 1M passes int64 from 9.2 million credits on). */
    room = held - prov_money_charge(&w->rates, &in) - w->rounding;
    per = prov_i64_mul_sat(w->choices, w->rates.output);
    if (room <= 0 || per <= 0)
        return per <= 0 ? w->cap : w->floor;
    wide = (unsigned __int128)room * 1000000u / (unsigned __int128)per;
    cap = wide > (unsigned __int128)w->cap ? w->cap : (apr_int64_t)wide;
    return cap < w->floor ? w->floor : cap > w->cap ? w->cap : cap;
}
