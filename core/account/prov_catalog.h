/* prov_catalog.h: the public model catalog (GET /v1/models): which enabled
 * catalog models the gateway offers right now (its model list, cached for a
 * short time, the last known list when the gateway is down) and the catalog's
 * JSON shape, usable by OpenAI-style clients as well. */
#ifndef PROV_CATALOG_H
#define PROV_CATALOG_H

#include "prov_common.h"
#include "prov_error.h"
#include "prov_gateway.h"
#include "prov_json.h"
#include "prov_models.h"

typedef struct prov_catalog_cache_t prov_catalog_cache_t;

/* A process-wide cache living in p (thread-safe). ttl in seconds. */
apr_status_t prov_catalog_cache_create(prov_catalog_cache_t **c, apr_int64_t ttl, apr_pool_t *p);
/* The upstream ids the gateway lists (a hash id -> id, copied into p).
 * Refreshes when the cached list is older than ttl. When the gateway fails,
 * returns the last known list with *stale = 1, or APR_EGENERAL when there has
 * never been one. */
apr_status_t prov_catalog_available(apr_hash_t **ids, int *stale, prov_catalog_cache_t *c,
                                    prov_gateway_t *gateway, apr_pool_t *p);
/* Parses a gateway /v1/models body into a hash of ids; APR_EINVAL when malformed. */
apr_status_t prov_catalog_parse_list(apr_hash_t **ids, const char *body, apr_size_t len,
                                     apr_pool_t *p);
/* The catalog JSON: {"object":"list","data":[{id, object:"model", publicId,
 * display_name, owned_by, pricing:{input,output,cache,reasoning},
 * max_output_tokens}]}, the enabled models (prov_model_t*) whose upstream id
 * is in available; max_output_tokens is the model's own maximum output, else
 * default_max_output (ProviderDefaultMaxTokens). */
const char *prov_catalog_render(const apr_array_header_t *models, apr_hash_t *available,
                                apr_int64_t default_max_output, apr_pool_t *p);
/* Non-zero when the catalog offers m now: enabled, its upstream id in
 * available, and for the Anthropic family (anthropic != 0) open to Messages. */
int prov_catalog_offers(const prov_model_t *m, apr_hash_t *available, int anthropic);
/* One entry: OpenAI's {id, object:"model", created, owned_by} or Anthropic's
 * {type:"model", id, created_at (RFC 3339)}, both with publicId,
 * display_name, pricing and max_output_tokens. A new object (the caller owns it). */
json_object *prov_catalog_entry(const prov_model_t *m, apr_int64_t default_max_output,
                                int anthropic, apr_pool_t *p);

/* A page of the Anthropic-shaped list (GET /v1/models with anthropic-version
 * or x-api-key): limit 1-1000 (default 20), and at most one of after_id and
 * before_id. Ids are ordered bytewise, so a cursor stays valid when its
 * model leaves the catalog. */
typedef struct prov_catalog_page_t {
    int limit;
    const char *after_id;
    const char *before_id;
} prov_catalog_page_t;

#define PROV_CATALOG_PAGE_DEFAULT 20
#define PROV_CATALOG_PAGE_MAX     1000

/* Checks the query's limit, after_id and before_id (each NULL when absent);
 * APR_EINVAL with *err (INVALID_REQUEST, its param) on a bad one. */
apr_status_t prov_catalog_page_args(prov_catalog_page_t *page, prov_error_t **err,
                                    const char *limit, const char *after_id,
                                    const char *before_id, apr_pool_t *p);
/* {"data":[entries],"has_more","first_id","last_id"}: the models the catalog
 * offers to the Anthropic family (prov_catalog_offers), sorted by id, the
 * page's slice of them. */
const char *prov_catalog_page_render(const apr_array_header_t *models, apr_hash_t *available,
                                     apr_int64_t default_max_output,
                                     const prov_catalog_page_t *page, apr_pool_t *p);
/* One model (GET /v1/models/{id}) in either shape. */
const char *prov_catalog_render_one(const prov_model_t *m, apr_int64_t default_max_output,
                                    int anthropic, apr_pool_t *p);

#endif
