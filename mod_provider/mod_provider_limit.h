/* mod_provider_limit.h: the API of mod_provider_limit.c, the anonymous
 * endpoints' per-address limits in shared memory (docs/internals/ratelimit.md)
 * and the purge's turn among the children. */
#ifndef MOD_PROVIDER_LIMIT_H
#define MOD_PROVIDER_LIMIT_H

#include "mod_provider.h"
#include "apr_global_mutex.h"

/* Registers its hooks (the mutex type, the table, each child's mutex). */
void provider_limit_hooks(apr_pool_t *p);
/* Makes, in pconf at post_config, a global mutex of type (registered at
 * pre_config) and size bytes of shared memory (*mem) that every child sees;
 * mod_provider_keyctl.c's table of the keys' limits is made so too. */
apr_status_t provider_limit_shm(apr_global_mutex_t **m, void **mem, const char *type,
                                apr_size_t size, server_rec *s, apr_pool_t *pconf);
/* A child's use of such a mutex (child_init); nothing when *m is NULL. */
apr_status_t provider_limit_mutex_child(apr_global_mutex_t **m, apr_pool_t *pchild);
/* r's client address as the limits count it (r->useragent_ip: mod_remoteip's
 * when it runs; an IPv6 address by its /64). */
const char *provider_client_key(request_rec *r);
/* PROVIDER_GO, or r answered 429 with Retry-After in its endpoint's shape
 * (ep: r's endpoint) because its client address is over its class's limit. */
provider_step_t provider_limit_check(request_rec *r, provider_endpoint_e ep);
/* Non-zero when it is this caller's turn to purge (the server's children
 * share one turn every `every`; without shared memory, always). */
int provider_purge_turn(apr_interval_time_t every);

#endif
