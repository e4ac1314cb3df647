/* prov_lease_int.h: what the two files of the lease layer share: the
 * tuning of leases and of the groups of rows they leave to batches (one
 * place for every figure that bench/REPORT.md measured), and the slot and
 * entry helpers of prov_lease.c that prov_lease_batch.c uses. */
#ifndef PROV_LEASE_INT_H
#define PROV_LEASE_INT_H

#include "prov_lease.h"

/* The headroom a lease aims for, in holds of the request that asked for it,
 * and how far it grows when requests find it too small. */
#define PROV_LEASE_HOLDS     256
#define PROV_LEASE_HOLDS_MAX 4096
/* With a writer thread a lease also covers rows settled but not written yet
 * (up to a group and a batch's time): it starts larger where the limits
 * have room for it, and never smaller than without one. */
#define PROV_LEASE_HOLDS_WRITER 1024
/* Without a writer thread, a key whose lease was returned this recently
 * gets a new one with its next reservation (its requests come and go in
 * waves). */
#define PROV_LEASE_RECENT apr_time_from_sec(1)
/* A drawn request still running after this long gets its hold written. */
#define PROV_ENTRY_WRITE_AFTER apr_time_from_sec(1)
/* Settled entries wait for company before a batch writes them, while more
 * requests of the key are in flight and new ones keep coming: at most this
 * many, this long. */
#define PROV_WRITE_GROUP 32
#define PROV_WRITE_WAIT apr_time_from_msec(2)
#define PROV_WRITE_BUSY 4
/* With a writer thread nobody waits for them: larger groups, fewer
 * transactions. */
#define PROV_WRITER_GROUP 128
#define PROV_WRITER_WAIT apr_time_from_msec(10)
/* How often a lease in use is checked against the key, account and model
 * again (a deleted key or a blocked account stops drawing within this). */
#define PROV_LEASE_CHECK_EVERY apr_time_from_msec(100)
/* Accounts with a lease told apart when a batch is taken; beyond, every
 * refusal is checked twice. */
#define PROV_LEASE_HELD_MAX 64

/* The slot of key and model, or NULL; _get makes it (NULL without memory). */
prov_slot_t *prov_slot_find(const prov_leases_t *L, apr_int64_t key_id, apr_int64_t model_id);
prov_slot_t *prov_slot_get(prov_leases_t *L, apr_int64_t key_id, apr_int64_t model_id,
                           apr_int64_t user_id);
/* Forgets s when nothing is in flight, it has no lease and none was
 * returned a moment ago (s may be NULL). */
void prov_slot_maybe_free(prov_leases_t *L, prov_slot_t *s);
/* One reservation of s fewer in flight. */
void prov_slot_unbusy(prov_slot_t *s);
/* Whether s's lease is returned now that nothing of its key is in flight
 * (at once without a writer thread; with one, after its keep_idle). */
int prov_slot_idle_over(const prov_leases_t *L, const prov_slot_t *s, apr_time_t wall);
/* Whether s still has a lease held in the database or entries. */
int prov_slot_has_work(const prov_slot_t *s);
/* s no longer holds a lease. */
void prov_slot_clear(prov_slot_t *s);
void prov_entry_free(prov_entry_t *e);
/* What an entry holds of its lease: its charge once settled, else its hold. */
prov_micro_t prov_entry_amount(const prov_entry_t *e);

#endif
