/* prov_billing_int.h: the spend engine's internals, for its top files
 * (prov_billing.c, prov_writer.c, prov_hold.c,
 * prov_replay.c), the unit tests and bench/checkpath. Its layers,
 * bottom up, each calling only those below it: prov_window.h (windows),
 * prov_batch.h (the ledger batch writer), prov_lease.h (leases),
 * prov_queue.h (queues and the engine's mutex); then the journal's replay
 * (prov_replay.c), the writer thread and the public API. Not for
 * callers outside core/billing. */
#ifndef PROV_BILLING_INT_H
#define PROV_BILLING_INT_H

#include "prov_queue.h"
#include "prov_window.h"

/* The database's identity (prov_replay.c): a journal names it,
 * and is replayed only into that database. */
apr_status_t prov_replay_database_id(const char **id, const prov_store_source_t *src,
                                     apr_pool_t *p);
/* prov_replay_journals for a database whose identity is known already. */
apr_status_t prov_replay_journals_db(int *journals, const prov_store_source_t *src,
                                     const char *dir, const char *db_id, apr_pool_t *p);

#endif
