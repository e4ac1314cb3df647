/* prov_models.h: the model catalog and its rate card: public ids, display
 * names, the gateway's upstream ids, the family (which decides the messages
 * transport), the enabled flags and the four nullable rates; and each
 * user's favorites among the catalog's models. */
#ifndef PROV_MODELS_H
#define PROV_MODELS_H

#include "prov_common.h"
#include "prov_money.h"
#include "prov_store.h"

typedef struct prov_model_t {
    apr_int64_t id;
    const char *public_id;
    const char *display_name;
    const char *upstream_id;
    const char *family;          /* "" when none */
    int enabled;
    int messages_enabled;
    prov_rates_t rates;          /* PROV_RATE_UNSET where not configured */
    apr_int64_t max_output;      /* the most output tokens a request is forwarded
                                  * with; 0: the server's default
                                  * (ProviderDefaultMaxTokens) */
    apr_int64_t created_at;      /* epoch seconds, when it was added */
} prov_model_t;

/* Fields to change with prov_model_set; NULL / -1 = leave as is. */
typedef struct prov_model_change_t {
    const char *display_name;
    const char *upstream_id;
    const char *family;
    int enabled;                 /* -1, 0, 1 */
    int messages_enabled;        /* -1, 0, 1 */
    apr_int64_t max_output;      /* 0: leave; PROV_MAX_OUTPUT_DEFAULT: back to the
                                  * default; else 1..PROV_OUTPUT_TOKENS_MAX */
} prov_model_change_t;

/* prov_model_change_t.max_output: the model goes back to the server's default. */
#define PROV_MAX_OUTPUT_DEFAULT APR_INT64_C(-1)

/* Rate changes for prov_model_price: set_x says whether x is touched; a
 * touched rate of PROV_RATE_UNSET clears it. */
typedef struct prov_rate_change_t {
    int set_input, set_output, set_cache, set_reasoning;
    prov_rates_t rates;
} prov_rate_change_t;

/* The most output tokens a request of m is forwarded with: its own maximum,
 * else default_max_output (the server's ProviderDefaultMaxTokens). */
apr_int64_t prov_model_max_output(const prov_model_t *m, apr_int64_t default_max_output);
/* Non-zero when s is a valid public id: 1-128 of [A-Za-z0-9._:/-], not
 * starting with a punctuation character. */
int prov_model_id_valid(const char *s);
/* Adds a model (enabled, no rates). display_name NULL = public_id; family NULL = "".
 * APR_EEXIST on a duplicate public id, APR_EINVAL on a malformed one. */
apr_status_t prov_model_add(prov_model_t **m, prov_store_t *s, const char *public_id,
                            const char *upstream_id, const char *display_name,
                            const char *family, apr_pool_t *p);
/* By public id; APR_NOTFOUND. */
apr_status_t prov_model_find(prov_model_t **m, prov_store_t *s, const char *public_id,
                             apr_pool_t *p);
/* All models (prov_model_t*) by public id; only enabled ones when enabled_only. */
apr_status_t prov_model_list(apr_array_header_t **models, prov_store_t *s, int enabled_only,
                             apr_pool_t *p);
/* A user's favorites: adding one that is already there, or removing one
 * that is not, changes nothing and succeeds. APR_NOTFOUND for a model that
 * is not in the catalog (for an addition: not enabled either). */
apr_status_t prov_favorite_add(prov_store_t *s, apr_int64_t user_id, const char *public_id,
                               apr_pool_t *p);
apr_status_t prov_favorite_remove(prov_store_t *s, apr_int64_t user_id, const char *public_id,
                                  apr_pool_t *p);
/* The user's favorite models (prov_model_t*) by public id; only enabled
 * ones when enabled_only. */
apr_status_t prov_favorite_list(apr_array_header_t **models, prov_store_t *s,
                                apr_int64_t user_id, int enabled_only, apr_pool_t *p);
apr_status_t prov_model_set(prov_store_t *s, const char *public_id,
                            const prov_model_change_t *c, apr_pool_t *p);
apr_status_t prov_model_price(prov_store_t *s, const char *public_id,
                              const prov_rate_change_t *c, apr_pool_t *p);

#endif
