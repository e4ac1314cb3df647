/* prov_worst.h: the worst case of an inference request, which its hold
 * covers (docs/internals/billing.md, "What is held"): every input token at
 * the higher of the input and cache rates, for at most one token a byte of
 * the request as the client sent it plus PROV_HOLD_INPUT_SLACK; every output
 * token of every choice at the higher of the output and reasoning rates, up
 * to the output cap the gateway is sent. The cap is the client's own, lowered
 * to the model's maximum; a request without one gets the model's maximum,
 * which the reservation may lower to what the limits can pay for, down to
 * PROV_OUTPUT_FLOOR (prov_worst_cap). */
#ifndef PROV_WORST_H
#define PROV_WORST_H

#include "prov_common.h"
#include "prov_money.h"

/* Tokens a provider may add to any prompt beyond the bytes it was sent:
 * the hidden system prompt of tool use (a few hundred tokens at the
 * vendors that document it) and the framing of the messages. */
#define PROV_HOLD_INPUT_SLACK APR_INT64_C(1024)
/* The smallest output cap the service lowers a request without a cap of its
 * own to; below it the request is refused with the limit's error. */
#define PROV_OUTPUT_FLOOR APR_INT64_C(1024)
typedef struct prov_worst_t {
    prov_rates_t rates;         /* input = max(input, cache), output = max(output,
                                 * reasoning); cache and reasoning unused */
    apr_int64_t input;          /* the input bound, tokens */
    apr_int64_t choices;        /* answers asked for (chat's n), >= 1 */
    apr_int64_t cap;            /* the output cap of each choice, at most */
    apr_int64_t floor;          /* the least cap it may be lowered to; cap when the
                                 * client chose it */
    int rounding;               /* micro-credits for the kinds a settlement rounds up
                                 * on their own (cache beside input, reasoning beside
                                 * output), 0 to 2 */
    prov_micro_t hold;          /* the worst case at cap */
    prov_micro_t hold_min;      /* the worst case at floor */
} prov_worst_t;

/* Fills w for a request of body_bytes bytes asking for choices answers with
 * the client's output cap client_cap (<= 0: none) of a model whose maximum
 * output is model_max, at the effective rates eff. */
void prov_worst_plan(prov_worst_t *w, const prov_rates_t *eff, apr_size_t body_bytes,
                     apr_int64_t choices, apr_int64_t client_cap, apr_int64_t model_max);
/* The largest cap in [w->floor, w->cap] whose worst case held covers (w->cap
 * when held >= w->hold; w->floor when held is below w->hold_min). */
apr_int64_t prov_worst_cap(const prov_worst_t *w, prov_micro_t held);

#endif
