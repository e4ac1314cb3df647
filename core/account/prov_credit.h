/* prov_credit.h: what a credit is worth and where a user gets more, as the
 * operator states it (ProviderCreditValue, ProviderTopUpURL): checked at
 * start-up, shown in GET /v1/account, the documentation and the remedy of
 * a refusal for want of credits. */
#ifndef PROV_CREDIT_H
#define PROV_CREDIT_H

#include "prov_common.h"
#include "prov_json.h"

typedef struct prov_credit_offer_t {
    const char *value;        /* the amount one credit is worth ("0.01"), or NULL */
    const char *currency;     /* its currency code ("USD"), with value */
    const char *top_up_url;   /* https:// or mailto: where to get more, or NULL */
} prov_credit_offer_t;

/* NULL when amount (a positive decimal, at most 12 digits before and 6 after
 * the point) and currency (3 capital letters, ISO 4217) are usable, else what
 * is wrong. */
const char *prov_credit_value_check(const char *amount, const char *currency, apr_pool_t *p);
/* NULL when url is an https:// URL (or http:// on a loopback host) or a
 * mailto: address of printable characters without spaces, else what is wrong. */
const char *prov_credit_url_check(const char *url, apr_pool_t *p);
/* {"value","currency"} or null, for GET /v1/account's "credit". */
json_object *prov_credit_json(const prov_credit_offer_t *o);
/* What a user refused for want of credits can do, as a sentence with a
 * leading space: the top-up URL, else the administrator. */
const char *prov_credit_remedy(const prov_credit_offer_t *o, apr_pool_t *p);
/* "One credit is worth 0.01 USD." or a sentence saying the operator has not
 * stated it (HTML-safe: the checks above allow no markup characters). */
const char *prov_credit_value_words(const prov_credit_offer_t *o, apr_pool_t *p);

#endif
