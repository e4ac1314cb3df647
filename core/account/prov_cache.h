/* prov_cache.h: small process-wide lookup caches with a time to live, for
 * the inference hot path (key hash -> key and user ids, with the key's
 * controls; public model id ->
 * catalog row). Entries are flat copies owned by the cache; a full cache is
 * emptied rather than evicted entry by entry. Everything a cached entry
 * decides is checked again, authoritatively, inside the billing batch. */
#ifndef PROV_CACHE_H
#define PROV_CACHE_H

#include "prov_common.h"
#include "prov_account.h"
#include "prov_models.h"

typedef struct prov_cache_t prov_cache_t;

/* ttl in seconds (0 = caching off: every get misses); max entries. Lives in p. */
apr_status_t prov_cache_create(prov_cache_t **c, apr_int64_t ttl, int max_entries, apr_pool_t *p);

/* A copy in p of the cached auth for key_hash, or NULL (also for the one
 * lookup that is to read it again ahead of its expiry, prov_cache.c). */
prov_auth_t *prov_cache_get_auth(prov_cache_t *c, const char *key_hash, apr_int64_t now,
                                 apr_pool_t *p);
void prov_cache_put_auth(prov_cache_t *c, const prov_auth_t *a, apr_int64_t now);
/* Drops every cached auth of key_id, whatever its secret: after a reissue
 * or a deletion the old secret goes to the database again on this process's
 * next request (and is refused there). */
void prov_cache_forget_key(prov_cache_t *c, apr_int64_t key_id);
/* A copy in p of the cached model for public_id, or NULL (as for auth). */
prov_model_t *prov_cache_get_model(prov_cache_t *c, const char *public_id, apr_int64_t now,
                                   apr_pool_t *p);
void prov_cache_put_model(prov_cache_t *c, const prov_model_t *m, apr_int64_t now);

#endif
