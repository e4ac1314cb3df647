/* prov_catalog.h: the public model catalog (GET /v1/models): which enabled
 * catalog models the gateway offers right now (its model list, cached for a
 * short time, the last known list when the gateway is down) and the catalog's
 * JSON shape, usable by OpenAI-style clients as well. */
#ifndef PROV_CATALOG_H
#define PROV_CATALOG_H

#include "prov_common.h"
#include "prov_gateway.h"

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

#endif
