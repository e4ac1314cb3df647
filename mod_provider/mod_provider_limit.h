/* mod_provider_limit.h: the API of mod_provider_limit.c, the anonymous
 * endpoints' per-address limits in shared memory (docs/internals/ratelimit.md)
 * and the purge's turn among the children. */
#ifndef MOD_PROVIDER_LIMIT_H
#define MOD_PROVIDER_LIMIT_H

#include "mod_provider.h"

/* Registers its hooks (the mutex type, the table, each child's mutex). */
void provider_limit_hooks(apr_pool_t *p);
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
