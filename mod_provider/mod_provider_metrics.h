/* mod_provider_metrics.h: the API of mod_provider_metrics.c, the server's
 * counters in shared memory and the provider-metrics handler. */
#ifndef MOD_PROVIDER_METRICS_H
#define MOD_PROVIDER_METRICS_H

#include "mod_provider.h"

/* The shared memory (post_config) and the handler. */
void provider_metrics_hooks(apr_pool_t *p);

#endif
