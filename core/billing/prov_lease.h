/* prov_lease.h: leases, the billing engine's third layer (above the batch
 * writer, below the queue). Per queue (one database) a table of slots, one
 * per key and model this process serves: how many of their reservations
 * are in flight and, under concurrent load or requests one right after
 * another, a lease (an amount the database
 * holds for this process) from which requests draw in memory without a
 * transaction. A drawn request is an entry until a batch writes its ledger
 * row. Here: drawing, settling a drawn request, the hand-off to a batch
 * (prov_lease_handoff.c: choosing what the next batch writes, renews or
 * returns, applying its result), and whether a batch is due. Every function
 * is called with the queue's mutex held; the database side is
 * prov_batch_lease.c. */
#ifndef PROV_LEASE_H
#define PROV_LEASE_H

#include "prov_batch.h"

/* Buckets of a lease table's hash of slots (by key and model). */
#define PROV_LEASE_SLOTS 64

/* A key's requests in flight in this process over all its models' slots,
 * and when they last fell to none (prov_lease.c). */
typedef struct prov_keyact_t prov_keyact_t;

/* The queue side of leases, all called with the queue mutex held. A lease
 * table is one per queue. */
typedef struct prov_leases_t {
    prov_slot_t *buckets[PROV_LEASE_SLOTS];
    prov_keyact_t *keys[PROV_LEASE_SLOTS];
    int failing;                    /* the last batch failed: no draws, no eager batches */
    /* A writer thread serves the queue (prov_writer_start): only
     * then are leases granted (without one every reservation and
     * settlement goes through the batches). A lease whose key has nothing
     * in flight is kept keep_idle before it is returned, so that a key's
     * requests coming in waves keep drawing, and as long as the key has
     * requests of another model in flight here (an agent's small requests
     * beside its streams); stopping: the writer's last batches return
     * every lease. */
    apr_interval_time_t keep_idle;  /* 0: no writer, no lease granted */
    int stopping;
    /* The queue's journal (prov_writer_upkeep): written entries'
     * records are done there, and leases are granted in its owner's name.
     * no_grant: a journal is wanted and not open yet (no lease meanwhile). */
    prov_journal_t *journal;
    char owner[PROV_JOURNAL_OWNER_MAX];
    int no_grant;
} prov_leases_t;

/* Whether a draw for auth's key and model would come from an open lease
 * that nothing else of the key and model has used for PROV_LEASE_LONE_GAP
 * (requests one after another, a client waiting for each answer: the
 * caller checks the key first, prov_billing_reserve). A request that comes
 * sooner after the last one ended is one of a burst, which draws as
 * overlapping requests do (the lease's renewal checks the key every
 * PROV_LEASE_CHECK_EVERY); so does one beside the key's requests of another
 * model in flight (an agent's small requests beside its stream) while the
 * key was seen admitted less than PROV_LEASE_CHECK_EVERY ago, by the lease's
 * check or by such a read (prov_lease_admitted records it). */
#define PROV_LEASE_LONE_GAP apr_time_from_msec(2)
int prov_lease_lone(const prov_leases_t *L, const prov_auth_t *auth, apr_int64_t model_id);
void prov_lease_admitted(prov_leases_t *L, const prov_auth_t *auth, apr_int64_t model_id);
/* Draws r (allocated in p) from an open lease of auth's key and model;
 * returns 0 when none has room (the caller reserves in the database). */
int prov_lease_draw(prov_leases_t *L, prov_reservation_t **r, const prov_auth_t *auth,
                    apr_int64_t model_id, const char *transport, const char *request_id,
                    prov_micro_t hold, apr_int64_t now, apr_pool_t *p);
/* Counts a reservation that goes to the database as in flight from now on
 * (op->slot), so that its key's lease is not returned as idle meanwhile. */
void prov_lease_pending(prov_leases_t *L, prov_op_t *op);
/* A reservation op queued while a batch ran (the batch that granted or
 * topped up its key and model's lease) draws from that lease instead of
 * waiting for the next batch: op->out is then the drawn reservation (in
 * op->p); returns 0 when it cannot (no open lease with room, or not such
 * an op: one asked again after a refusal, or one whose key the database
 * did not admit just now, op->no_draw). */
int prov_lease_draw_queued(prov_leases_t *L, prov_op_t *op);
/* What prov_lease_settle leaves to its caller: an ordinary settlement to
 * queue, or nothing in the database now (a drawn request: the next batch
 * writes it). */
#define PROV_LEASE_SETTLE_QUEUE 0
#define PROV_LEASE_SETTLE_DRAWN 1

/* Records the end of r: PROV_LEASE_SETTLE_*. */
int prov_lease_settle(prov_leases_t *L, prov_reservation_t *r, const prov_tokens_t *t,
                      prov_micro_t charge, prov_status_e status, apr_int64_t now);
/* Before a batch runs ops: decides which leases it renews or returns, hands
 * it their unwritten entries, and marks the reservations that may be
 * granted a lease. Returns the work list. */
prov_slot_t *prov_lease_handoff_take(prov_leases_t *L, prov_op_t *ops);
/* After the batch (rv its result): applies its results; settlements that
 * came while their holds were written are returned as ops to queue. */
prov_op_t *prov_lease_handoff_done(prov_leases_t *L, prov_slot_t *work, prov_op_t *ops,
                                   apr_int64_t now, apr_status_t rv);
/* Whether the leases have work for a batch now (written rows, leases to
 * return). */
int prov_lease_due(const prov_leases_t *L);
/* Whether any lease is held or any drawn request is not written yet. */
int prov_lease_active(const prov_leases_t *L);
/* When (wall clock) the leases next have work by time alone: settled rows
 * that have waited long enough, a running drawn request a second old, a
 * lease idle for keep_idle; no sooner than wall + lo, no later than
 * wall + hi (what makes work due sooner, a drawn settlement, wakes the
 * writer itself; hi bounds what is not foreseen here). */
apr_time_t prov_lease_next_due(const prov_leases_t *L, apr_time_t wall, apr_interval_time_t lo,
                               apr_interval_time_t hi);

#endif
