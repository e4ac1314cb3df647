/* prov_idp_meta.h: what the service learns from an OpenID Connect
 * provider rather than from its configuration: the discovery document
 * ({issuer}/.well-known/openid-configuration, whose issuer must equal the
 * configured one exactly) and the JWKS it names. Both are cached in memory
 * per process and per provider (a mutex each, not held across a fetch),
 * fetched on first use by one thread at a time (a caller that comes while
 * a fetch is in flight gets the copy at hand, or APR_EBUSY at once),
 * fetched again when an hour old or after a call to the provider failed,
 * and the JWKS also when a token names a key it does not hold (at most once
 * per PROV_IDP_JWKS_FORCE_MIN seconds). A copy that cannot be refreshed is
 * kept in use; after a failed fetch the next try waits PROV_IDP_META_RETRY
 * seconds. Times are the caller's "now" (tests use a clock). A plain OAuth
 * 2.0 provider's endpoints are its configured ones. */
#ifndef PROV_IDP_META_H
#define PROV_IDP_META_H

#include "prov_idp.h"

#define PROV_IDP_META_TTL        3600
#define PROV_IDP_META_RETRY      5
#define PROV_IDP_JWKS_FORCE_MIN  10

typedef struct prov_idp_endpoints_t {
    const char *authorization;
    const char *token;
    const char *userinfo;        /* may be NULL for OIDC */
    const char *jwks_uri;        /* OIDC only */
} prov_idp_endpoints_t;

/* The empty cache of a provider, freed when p is cleared. */
apr_status_t prov_idp_meta_create(prov_idp_cache_t **cache, apr_pool_t *p);

/* The provider's endpoints (copies in p). OIDC: from the cached discovery
 * document, fetched first when needed (deadline: prov_idp_http's);
 * APR_SUCCESS, or, when no document is at hand, the fetch's failure
 * (APR_TIMEUP, APR_ECONNREFUSED, APR_EGENERAL for an unusable answer) or
 * APR_EBUSY (another thread's fetch is in flight). */
apr_status_t prov_idp_endpoints(prov_idp_endpoints_t **ep, prov_idp_t *idp, apr_int64_t now,
                                apr_time_t deadline, apr_pool_t *p);

/* The provider's JWKS as JSON text (a copy in p). force: the caller met a
 * key id the copy lacks: fetch again unless that was done less than
 * PROV_IDP_JWKS_FORCE_MIN seconds ago. *refreshed (may be NULL) tells
 * whether this call fetched a new copy. Failures as prov_idp_endpoints. */
apr_status_t prov_idp_jwks(const char **jwks, int *refreshed, prov_idp_t *idp, int force,
                           apr_int64_t now, apr_time_t deadline, apr_pool_t *p);

/* A call to one of the provider's endpoints failed in transport: the
 * discovery document is fetched again on next use (it may have moved). */
void prov_idp_meta_stale(prov_idp_t *idp);

#endif
