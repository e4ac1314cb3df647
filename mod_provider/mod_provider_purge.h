/* mod_provider_purge.h: the API of mod_provider_purge.c, the periodic purge's
 * thread in a child. */
#ifndef MOD_PROVIDER_PURGE_H
#define MOD_PROVIDER_PURGE_H

#include "mod_provider.h"

/* Starts the purge's thread (child_init). */
void provider_purge_start(server_rec *s, apr_pool_t *pchild);

#endif
