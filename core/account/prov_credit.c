/* prov_credit.c: what a credit is worth and where to get more (the
 * operator's ProviderCreditValue and ProviderTopUpURL): their checks, the
 * JSON GET /v1/account shows, and the words a refusal and the documentation
 * use. Nothing here converts money: the value is shown as the operator
 * wrote it. */
#include <string.h>
#include "prov_credit.h"

static int digits(const char *s, apr_size_t n)
{
    return n > 0 && strspn(s, "0123456789") >= n;
}

const char *prov_credit_value_check(const char *amount, const char *currency, apr_pool_t *p)
{
    const char *dot = strchr(amount, '.');
    apr_size_t whole = dot ? (apr_size_t)(dot - amount) : strlen(amount);
    apr_size_t frac = dot ? strlen(dot + 1) : 0;
    if (!digits(amount, whole) || whole > 12 || (dot && (!digits(dot + 1, frac) || frac > 6))
        || strspn(amount, "0.") == strlen(amount))
        return apr_psprintf(p, "'%s' is not a positive amount (digits, at most 6 after the "
                            "point, e.g. 0.01)", amount);
    if (strlen(currency) != 3 || strspn(currency, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 3)
        return apr_psprintf(p, "'%s' is not a currency code (three capital letters, e.g. USD)",
                            currency);
    return NULL;
}

static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 127 || strchr("<>\"'`\\", *s))
            return 0;
    return 1;
}

const char *prov_credit_url_check(const char *url, apr_pool_t *p)
{
    int ok = printable(url) && strlen(url) <= 512
             && ((!strncmp(url, "https://", 8) && url[8])
                 || !strncmp(url, "http://127.0.0.1", 16) || !strncmp(url, "http://localhost", 16)
                 || (!strncmp(url, "mailto:", 7) && strchr(url + 7, '@')));
    return ok ? NULL : apr_psprintf(p, "'%s' is not an https:// URL or a mailto: address "
                                    "(no spaces, quotes or angle brackets)", url);
}

json_object *prov_credit_json(const prov_credit_offer_t *o)
{
    json_object *v;
    if (!o || !o->value)
        return NULL;
    v = json_object_new_object();
    json_object_object_add(v, "value", json_object_new_string(o->value));
    json_object_object_add(v, "currency", json_object_new_string(o->currency));
    return v;
}

const char *prov_credit_remedy(const prov_credit_offer_t *o, apr_pool_t *p)
{
    if (o && o->top_up_url)
        return apr_pstrcat(p, " Get more credits at ", o->top_up_url, NULL);
    return " Ask the service's administrator for more credits.";
}

const char *prov_credit_value_words(const prov_credit_offer_t *o, apr_pool_t *p)
{
    if (o && o->value)
        return apr_pstrcat(p, "One credit is worth ", o->value, " ", o->currency, ".", NULL);
    return "This service has not stated what a credit is worth in money; ask its "
           "administrator.";
}
