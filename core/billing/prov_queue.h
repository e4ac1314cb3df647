/* prov_queue.h: the queues, the billing engine's fourth layer (above the
 * leases, below the writer thread and the public API). One queue per
 * channel (database) groups the operations of this process's threads into
 * batches: a thread that finds no batch running leads the next one (its
 * leases' work included), the others sleep until theirs is done; a leader
 * hands over after LEADER_ROUNDS batches. Here too: the engine's one
 * mutex, which guards every queue, its lease table and its writer's
 * state; the hold timeout; and when a sweep of expired holds is due. */
#ifndef PROV_QUEUE_H
#define PROV_QUEUE_H

#include "prov_lease.h"

/* One queue per channel; every field under the engine's mutex. */
typedef struct prov_queue_t {
    const void *channel;
    prov_op_t *head, *tail;
    int leader;                     /* a thread runs a batch of this queue */
    int rounds;                     /* batches its leader has started in a row */
    apr_int64_t last_sweep;
    apr_int64_t last_now;           /* engine time of the last batch */
    prov_leases_t leases;
    int jusers;                     /* threads appending to leases.journal now */
    /* Its writer thread's wake-up (prov_writer_start), NULL when it
     * has none: signalled when work may be due. */
    pthread_cond_t *writer;
    struct prov_queue_t *next;
} prov_queue_t;

/* The engine's mutex. */
void prov_queue_lock(void);
void prov_queue_unlock(void);
/* Sleeps on cond (made with CLOCK_MONOTONIC) until signalled, or _until
 * the wall clock reaches at (at once when it has); the mutex held. */
void prov_queue_wait(pthread_cond_t *cond);
void prov_queue_wait_until(pthread_cond_t *cond, apr_time_t at);

/* The channel's queue, made on first use; they live as long as the
 * process. NULL without memory. The mutex held. */
prov_queue_t *prov_queue_of(const void *channel);
/* Whether no batch is running that would take a settlement in before it
 * ends (nobody leads, or the leader is in its last round). The mutex held. */
int prov_queue_idle(const prov_queue_t *q);
/* Wakes q's writer thread, if it has one. The mutex held. */
void prov_queue_wake_writer(prov_queue_t *q);

/* Queues op on src's channel and returns its result (the thread leads a
 * batch or waits for one; an async op may return at once). Without the
 * mutex. */
apr_status_t prov_queue_submit(prov_op_t *op, const prov_store_source_t *src, apr_pool_t *p);
/* Runs (or waits for) a batch that writes what leases drew. */
apr_status_t prov_queue_flush(const prov_store_source_t *src, apr_int64_t now, apr_pool_t *p);
/* Whether the engine's clock (now) says q's next sweep of expired holds is
 * due: min(hold timeout / 4, 60 s) after the last. Takes the mutex. */
int prov_queue_sweep_due(const prov_queue_t *q, apr_int64_t now);

#endif
