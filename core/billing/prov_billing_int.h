/* prov_billing_int.h: what the two halves of the spend engine share inside
 * libprovider: the queued operation, the batch executor (prov_billing_batch.c)
 * and the window arithmetic that the batch and the status functions both use.
 * Not for callers outside core/prov_billing*.c. */
#ifndef PROV_BILLING_INT_H
#define PROV_BILLING_INT_H

#include "prov_lease.h"
#include "prov_window.h"


/* Queues op on src's channel and returns its result (the thread leads a
 * batch or waits for one; an async op may return at once). */
apr_status_t prov_billing_submit(prov_op_t *op, const prov_store_source_t *src, apr_pool_t *p);

/* The database's identity (prov_billing_journal.c): a journal names it,
 * and is replayed only into that database. */
apr_status_t prov_billing_database_id(const char **id, const prov_store_source_t *src,
                                      apr_pool_t *p);
/* prov_billing_recover for a database whose identity is known already. */
apr_status_t prov_billing_recover_db(int *journals, const prov_store_source_t *src,
                                     const char *dir, const char *db_id, apr_pool_t *p);

#endif
