/* prov_billing_int.h: what the two halves of the spend engine share inside
 * libprovider: the queued operation, the batch executor (prov_billing_batch.c)
 * and the window arithmetic that the batch and the status functions both use.
 * Not for callers outside core/prov_billing*.c. */
#ifndef PROV_BILLING_INT_H
#define PROV_BILLING_INT_H

#include "prov_batch.h"
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

/* The queue side of leases, all called with the queue mutex held. A lease
 * table is one per queue. */
typedef struct prov_leases_t {
    prov_slot_t *buckets[64];
    int failing;                    /* the last batch failed: no draws, no eager batches */
    /* A writer thread serves the queue (prov_billing_writer_start): a
     * lease whose key has nothing in flight is kept PROV_LEASE_IDLE before
     * it is returned, so that a key's requests coming in waves keep
     * drawing; stopping: the writer's last batches return every lease. */
    apr_interval_time_t keep_idle;  /* 0: no writer, returned at once */
    int stopping;
    /* The queue's journal (prov_billing_writer_upkeep): written entries'
     * records are done there, and leases are granted in its owner's name.
     * no_grant: a journal is wanted and not open yet (no lease meanwhile). */
    prov_journal_t *journal;
    char owner[96];
    int no_grant;
} prov_leases_t;

/* Draws r (allocated in p) from an open lease of auth's key and model;
 * returns 0 when none has room (the caller reserves in the database). */
int prov_lease_draw(prov_leases_t *L, prov_reservation_t **r, const prov_auth_t *auth,
                    apr_int64_t model_id, const char *transport, const char *request_id,
                    prov_micro_t hold, apr_int64_t now, apr_pool_t *p);
/* Counts a reservation that goes to the database as in flight from now on
 * (op->slot), so that its key's lease is not returned as idle meanwhile. */
void prov_lease_pending(prov_leases_t *L, prov_op_t *op);
/* Records the end of r. Returns 1 when nothing more is to be done in the
 * database now (a drawn request: the next batch writes it), 2 when that is
 * so and no other request of its key is in flight, 0 when the caller
 * queues an ordinary settlement. */
int prov_lease_settle(prov_leases_t *L, prov_reservation_t *r, const prov_tokens_t *t,
                      prov_micro_t charge, const char *status, apr_int64_t now);
/* Before a batch runs ops: decides which leases it renews or returns, hands
 * it their unwritten entries, and marks the reservations that may be
 * granted a lease. Returns the work list. */
prov_slot_t *prov_lease_take(prov_leases_t *L, prov_op_t *ops);
/* After the batch (rv its result): applies its results; settlements that
 * came while their holds were written are returned as ops to queue. */
prov_op_t *prov_lease_done(prov_leases_t *L, prov_slot_t *work, prov_op_t *ops,
                           apr_int64_t now, apr_status_t rv);
/* Whether the leases have work for a batch now (written rows, leases to
 * return). */
int prov_lease_due(const prov_leases_t *L);
/* Whether any lease is held or any drawn request is not written yet. */
int prov_lease_active(const prov_leases_t *L);

#endif
