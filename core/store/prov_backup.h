/* prov_backup.h: a consistent copy of a live SQLite database, taken while
 * the server keeps writing (`providerctl db backup`). PostgreSQL has its own
 * tools (pg_dump); this file does not reach for them. */
#ifndef PROV_BACKUP_H
#define PROV_BACKUP_H

#include "prov_store.h"

/* Copies the database s is open on into file, a new SQLite database: what
 * was committed when the copy began, nothing after (one read transaction;
 * in WAL mode writers go on meanwhile). APR_EEXIST when file exists (it is
 * never overwritten), APR_ENOTIMPL on PostgreSQL, else the copy's outcome
 * (a failed copy leaves no file behind). */
apr_status_t prov_backup_sqlite(prov_store_t *s, const char *file, apr_pool_t *p);

#endif
