/* prov_lease_int.h: what the two files of the lease layer share: the
 * tuning of leases and of the groups of rows they leave to batches (one
 * place for every figure that bench/REPORT.md measured), and the slot and
 * entry helpers of prov_lease.c that prov_lease_handoff.c uses. */
#ifndef PROV_LEASE_INT_H
#define PROV_LEASE_INT_H

#include "prov_lease.h"

/* The size a lease aims for, in holds of the request that asked for it:
 * it also covers rows settled and not written yet (up to a group and a
 * batch's time), halved down to _MIN where the limits keep no room for
 * twice as much, and grown up to _MAX when requests find it too small.
 * _MIN is a few holds: a hold is the worst case, and an uncapped agent's
 * turn holds its model's whole maximum output (32,768 tokens: about half a
 * credit on a model at 15 credits a million) while it spends a fraction of
 * it; what a lease must cover at once is the holds in flight and the
 * charges not written yet, so that a lease of half the room of an account
 * of modest means (a few credits, a key's budget, a plan's window) serves
 * such turns too. _MIN was once 256, and such
 * an account reserved every request in the database (bench/REPORT.md). */
#define PROV_LEASE_HOLDS     1024
#define PROV_LEASE_HOLDS_MIN 4
#define PROV_LEASE_HOLDS_MAX 4096
/* A slot whose lease was returned is kept this long (with the size its
 * lease grew to), so that its key's next lease starts at that size. */
#define PROV_SLOT_KEEP apr_time_from_sec(1)
/* A drawn request still running after this long gets its hold written. */
#define PROV_ENTRY_WRITE_AFTER apr_time_from_sec(1)
/* Settled entries wait for company before the writer thread's batch writes
 * them, while at least PROV_WRITER_BUSY requests of the key are in flight
 * and new ones keep coming: at most this many, this long. A bigger group
 * costs the writer less a row (SQLite: 30-row groups 7.6 µs a row, 72 5.9,
 * 128 5.3; bench/REPORT.md, tenth session); the key's last request in flight
 * settling still writes at once. */
#define PROV_WRITER_GROUP 256
#define PROV_WRITER_WAIT apr_time_from_msec(20)
#define PROV_WRITER_BUSY 1
/* How often a lease in use is checked against the key, account and model
 * again (a deleted key or a blocked account stops drawing within this). */
#define PROV_LEASE_CHECK_EVERY apr_time_from_msec(100)
/* ... and half as long for a lease beside its key's requests of another
 * model, whose requests rely on that check instead of reading the key
 * (prov_lease_lone): an agent's small requests every 50 to 100 ms beside
 * its stream keep it fresh through the batches that write their rows. */
#define PROV_LEASE_CHECK_BESIDE (PROV_LEASE_CHECK_EVERY / 2)
/* Accounts with a lease told apart when a batch is taken; beyond, every
 * refusal is checked twice. */
#define PROV_LEASE_HELD_MAX 64

/* The slot of key and model, or NULL; _get makes it (NULL without memory). */
prov_slot_t *prov_slot_find(const prov_leases_t *L, apr_int64_t key_id, apr_int64_t model_id);
prov_slot_t *prov_slot_get(prov_leases_t *L, apr_int64_t key_id, apr_int64_t model_id,
                           apr_int64_t user_id);
/* Forgets s when nothing is in flight, it has no lease and none was
 * returned within PROV_SLOT_KEEP (s may be NULL). */
void prov_slot_maybe_free(prov_leases_t *L, prov_slot_t *s);
/* One reservation of s more, or fewer, in flight (counted for its key too). */
void prov_slot_busy(prov_leases_t *L, prov_slot_t *s);
void prov_slot_unbusy(prov_leases_t *L, prov_slot_t *s);
/* Whether s's lease is returned now that nothing of its key and model is
 * in flight: after the writer's keep_idle, and only once the key has had
 * nothing of any model in flight for as long; at once when the writer
 * stops or is gone (a lease it left behind). */
int prov_slot_idle_over(const prov_leases_t *L, const prov_slot_t *s, apr_time_t wall);
/* Whether s's key has requests of another model in flight. */
int prov_slot_beside(const prov_leases_t *L, const prov_slot_t *s);
/* Whether s's key and model last had nothing in flight less than keep_idle
 * ago, or its key has requests of any model in flight or had within
 * keep_idle (a lease of it would still be kept): its requests come one
 * after another, or beside the key's others, and the next reservation is
 * granted a lease as if they overlapped. */
int prov_slot_recent(const prov_leases_t *L, const prov_slot_t *s, apr_time_t wall);
/* Forgets the keys with nothing in flight for keep_idle (PROV_SLOT_KEEP at
 * least). */
void prov_lease_keys_sweep(prov_leases_t *L, apr_time_t wall);
/* Forgets every key, in flight or not (a table dropped whole). */
void prov_lease_keys_forget(prov_leases_t *L);
/* Whether s still has a lease held in the database or entries. */
int prov_slot_has_work(const prov_slot_t *s);
/* s no longer holds a lease. */
void prov_slot_clear(prov_slot_t *s);
/* e joins s's pending entries (pending_oldest kept a lower bound). */
void prov_slot_pend(prov_slot_t *s, prov_entry_t *e);
void prov_entry_free(prov_entry_t *e);
/* What an entry holds of its lease: its charge once settled, else its hold. */
prov_micro_t prov_entry_amount(const prov_entry_t *e);

#endif
