/* mod_provider_sqlite.h: the API of mod_provider_sqlite.c, SQLite's start-up
 * checks and lock-wait report. */
#ifndef MOD_PROVIDER_SQLITE_H
#define MOD_PROVIDER_SQLITE_H

#include "mod_provider.h"

/* Start-up warnings about SQLite settings that cannot work well (post_config). */
void provider_sqlite_check(server_rec *s, apr_pool_t *ptemp);
/* Logs the child's SQLite lock waits (info) when it stops. */
void provider_sqlite_child_init(apr_pool_t *pchild, server_rec *s);

#endif
