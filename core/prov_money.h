/* prov_money.h: credits as exact integers. Parsing and printing the decimal
 * credit figures of the CLI and the API, the rate card of a model, and the
 * charge for a request's tokens (DESIGN §3: integer micro-credits, each kind
 * rounded up to a whole micro-credit, no floating point anywhere). */
#ifndef PROV_MONEY_H
#define PROV_MONEY_H

#include "prov_common.h"

/* A rate that is not configured (SQL NULL; the catalog shows null). */
#define PROV_RATE_UNSET APR_INT64_C(-1)
/* Upper bound for one rate: a million credits per 1M tokens. */
#define PROV_RATE_MAX (APR_INT64_C(1000000) * PROV_MICRO_PER_CREDIT)
/* Upper bound for any amount typed by an administrator: 10^12 credits. */
#define PROV_AMOUNT_MAX (APR_INT64_C(1000000000000) * PROV_MICRO_PER_CREDIT)

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
 * ceil(tokens * rate / 1M). Negative counts are treated as 0. */
prov_micro_t prov_money_charge(const prov_rates_t *effective, const prov_tokens_t *t);

#endif
