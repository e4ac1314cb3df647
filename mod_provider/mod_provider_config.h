/* mod_provider_config.h: the API of mod_provider_config.c: the directives,
 * their defaults and checks taken together, and the configuration and lookup
 * cache of a request's server. */
#ifndef MOD_PROVIDER_CONFIG_H
#define MOD_PROVIDER_CONFIG_H

#include "mod_provider.h"
#include "prov_cache.h"

/* The directives' default directory of billing journals (under DefaultRuntimeDir). */
#define PROVIDER_JOURNAL_DIR_DEFAULT "provider-journal"
/* The cabinet's files as make install puts them (ProviderWebRoot's default). */
#define PROVIDER_WEB_ROOT_DEFAULT PROV_DATADIR "/web"
extern const command_rec provider_config_cmds[];
void *provider_config_create(apr_pool_t *p, server_rec *s);
void *provider_config_merge(apr_pool_t *p, void *basev, void *addv);
/* Fills in the defaults of what c leaves unset (post_config). */
void provider_config_defaults(provider_srv_conf *c);
/* What is wrong with c's sign-in directives taken together (a message naming
 * the directive), or NULL (post_config). */
const char *provider_config_signin_check(const provider_srv_conf *c, apr_pool_t *p);
/* ProviderStreamMaxDuration against the engine's hold timeout (post_config):
 * a stream must end before its hold could expire. Set at or above it: what
 * is wrong (a start-up error). Unset: the default, 1800 s, or half the hold
 * timeout when that is not above it (*lowered: a start-up notice). */
const char *provider_config_stream_check(provider_srv_conf *c, apr_int64_t hold_timeout,
                                         int *lowered, apr_pool_t *p);
/* The effective configuration of r's server. A virtual host without
 * directives of this module shares its main server's structure. */
provider_srv_conf *provider_conf(request_rec *r);
/* The key and model lookup cache of r's server (per child; NULL when
 * ProviderLookupCacheTTL is 0). One per server, not per configuration:
 * servers that share this module's configuration may still have databases
 * of their own (DBDParams inside <VirtualHost>), and a key of one must never
 * be found through the other's cache. */
prov_cache_t *provider_lookups(request_rec *r);
/* Records s's lookup cache for provider_lookups (child_init). */
void provider_lookups_add(server_rec *s, prov_cache_t *lookups, apr_pool_t *pchild);

#endif
