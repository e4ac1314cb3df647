/* prov_writer.c: a queue's writer thread (prov_writer_start), the
 * top of the engine beside the public API. In a server each httpd child
 * runs one per database: it runs the batches that leases make due (the
 * rows of drawn requests, written in groups after their answers, and
 * leases returned once their key has been idle for keep_idle), so that no
 * request waits for those writes; and its upkeep, once a second: the
 * process's settlement journal opened, the journals of dead processes
 * replayed (prov_replay.c), and holds and leases past the hold
 * timeout expired without waiting for traffic. Stopping writes what is
 * left and returns every lease. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "prov_billing_int.h"
#include "prov_log.h"

/* A queue's writer thread (prov_writer_start). */
struct prov_writer_t {
    prov_store_source_t src;
    prov_queue_t *q;
    pthread_t thread;
    pthread_cond_t cond;            /* under the engine's mutex: work may be due */
    int stop;
    apr_time_t retry_at;            /* after a failed batch: when to try again */
    apr_pool_t *pool;               /* the thread's own */
    /* upkeep (prov_writer_upkeep): expiry on time, the journal */
    int upkeep;
    char *journal_dir;              /* NULL: no journal */
    int journal_tried;              /* opened, or failed for good */
    char *db_id;                    /* the database's identity, once read */
    apr_time_t upkeep_at;           /* wall clock of the next round */
};

/* While any lease is held or any drawn request is unwritten, a writer
 * waits until the leases next have work by time alone
 * (prov_lease_next_due), but at least WRITER_TICK and at most
 * WRITER_TICK_MAX (settlements that leave a batch due wake it at once; the
 * rest, such as a key's other model ending, is not foreseen). It looked
 * every 2 ms once: 500 wake-ups a second
 * for as long as any agent streamed. And how long it waits after a failed
 * batch. */
#define WRITER_TICK apr_time_from_msec(2)
#define WRITER_TICK_MAX apr_time_from_msec(20)
#define WRITER_RETRY apr_time_from_sec(1)
/* How often the upkeep looks (wall clock): the journals of dead processes,
 * and whether the engine's clock says a sweep of expired holds is due. */
#define UPKEEP_EVERY apr_time_from_sec(1)
/* Batches a stopping writer runs at most to write what is left and return
 * every lease (a request still in flight may draw again meanwhile). */
#define STOP_ROUNDS 3

/* Opens w's journal (once the database's identity is known); from then on
 * leases are granted again. Without the engine's mutex. */
static void upkeep_journal(prov_writer_t *w, apr_pool_t *p)
{
    prov_queue_t *q = w->q;
    prov_journal_t *j = NULL;
    apr_status_t rv = prov_journal_open(&j, w->journal_dir, w->db_id, 0, p);
    w->journal_tried = 1;
    if (rv != APR_SUCCESS)
        prov_log(PROV_LOG_ERR, rv, "PROV00383: cannot keep a billing journal in %s: the "
                 "settled requests of a process killed before their rows are written are "
                 "lost (check ProviderJournalDir)", w->journal_dir);
    prov_queue_lock();
    if (j) {
        __atomic_store_n(&q->leases.journal, j, __ATOMIC_SEQ_CST);
        apr_cpystrn(q->leases.owner, prov_journal_owner(j), sizeof(q->leases.owner));
    }
    q->leases.no_grant = 0;
    prov_queue_unlock();
}

/* One round of the writer's upkeep (without the engine's mutex): the
 * journal and its spent segments, the journals of dead processes, and
 * holds that expired by the engine's clock, so that nothing waits for
 * traffic. */
static void upkeep(prov_writer_t *w)
{
    prov_queue_t *q = w->q;
    apr_pool_t *p = NULL;
    apr_int64_t now;
    const char *id = NULL;

    w->upkeep_at = apr_time_now() + UPKEEP_EVERY;
    apr_pool_create(&p, w->pool);
    /* Nothing before the database is usable (its schema may be old). */
    if (!w->db_id && (prov_replay_database_id(&id, &w->src, p) != APR_SUCCESS
                      || !(w->db_id = strdup(id)))) {
        apr_pool_destroy(p);
        return;
    }
    if (w->journal_dir && !w->journal_tried)
        upkeep_journal(w, p);
    /* spent segments of a batch that a request's thread led */
    prov_journal_reap(__atomic_load_n(&q->leases.journal, __ATOMIC_SEQ_CST));
    if (w->journal_dir)
        prov_replay_journals_db(NULL, &w->src, w->journal_dir, w->db_id, p);
    now = prov_now();
    if (prov_queue_sweep_due(q, now))
        prov_queue_expire(NULL, &w->src, now, p);
    apr_pool_destroy(p);
}

/* How long a writer with leases active waits (WRITER_TICK above). */
static apr_time_t active_until(const prov_writer_t *w, apr_time_t wall)
{
    const prov_queue_t *q = w->q;
    apr_time_t at = prov_lease_next_due(&q->leases, wall, WRITER_TICK, WRITER_TICK_MAX);
    if (q->leases.failing && w->retry_at < at)
        at = w->retry_at;
    if (w->upkeep && w->upkeep_at < at)
        at = w->upkeep_at;
    return at < wall + WRITER_TICK ? wall + WRITER_TICK : at;
}

/* Runs the batches that leases make due, and the upkeep, until told to
 * stop. */
static void *writer_main(void *arg)
{
    prov_writer_t *w = arg;
    prov_queue_t *q = w->q;
    prov_queue_lock();
    while (!w->stop) {
        apr_time_t wall = apr_time_now();
        int active = prov_lease_active(&q->leases), run = 0;
        if (w->upkeep && wall >= w->upkeep_at) {
            prov_queue_unlock();
            upkeep(w);
            prov_queue_lock();
            continue;
        }
        if (!q->leader && q->head) {
            run = 1;                 /* queued settlements nobody leads */
        }
        else if (!q->leader && active) {
            if (!q->leases.failing)
                run = prov_lease_due(&q->leases);
            else if (wall >= w->retry_at)
                run = 1;
        }
        if (run) {
            apr_status_t rv;
            prov_queue_unlock();
            /* No time of its own: the batch goes by its entries' times
             * (or the last batch's), the engine's clock being the
             * requests'. */
            rv = prov_queue_flush(&w->src, 0, w->pool);
            /* The journal's spent segments go here, outside the engine's
             * mutex (the journal is closed only once this thread ends). */
            prov_journal_reap(__atomic_load_n(&q->leases.journal, __ATOMIC_SEQ_CST));
            prov_queue_lock();
            if (rv != APR_SUCCESS || q->leases.failing)
                w->retry_at = apr_time_now() + WRITER_RETRY;
            continue;
        }
        if (active)
            prov_queue_wait_until(&w->cond, active_until(w, wall));
        else if (w->upkeep)
            prov_queue_wait_until(&w->cond, w->upkeep_at);
        else
            prov_queue_wait(&w->cond);
    }
    prov_queue_unlock();
    return NULL;
}

apr_status_t prov_writer_start(prov_writer_t **pw, const prov_store_source_t *src,
                               apr_interval_time_t keep_idle)
{
    prov_writer_t *w = calloc(1, sizeof(*w));
    pthread_condattr_t ca;
    apr_status_t rv;
    prov_queue_t *q;
    int err;

    *pw = NULL;
    if (!w)
        return APR_ENOMEM;
    w->src = *src;
    if ((rv = apr_pool_create_unmanaged_ex(&w->pool, NULL, NULL)) != APR_SUCCESS) {
        free(w);
        return rv;
    }
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    prov_queue_lock();
    q = prov_queue_of(src->channel);
    if (!q || q->writer) {
        prov_queue_unlock();
        rv = q ? APR_EEXIST : APR_ENOMEM;
        goto fail;
    }
    w->q = q;
    q->writer = &w->cond;
    q->leases.keep_idle = keep_idle > 0 ? keep_idle : PROV_LEASE_IDLE_DEFAULT;
    prov_queue_unlock();
    if ((err = pthread_create(&w->thread, NULL, writer_main, w)) != 0) {
        prov_queue_lock();
        q->writer = NULL;
        q->leases.keep_idle = 0;
        prov_queue_unlock();
        rv = APR_FROM_OS_ERROR(err);
        goto fail;
    }
    *pw = w;
    return APR_SUCCESS;
fail:
    pthread_cond_destroy(&w->cond);
    apr_pool_destroy(w->pool);
    free(w);
    return rv;
}

void prov_writer_stop(prov_writer_t *w)
{
    prov_journal_t *j;
    prov_queue_t *q;
    int i, left = 0;
    if (!w)
        return;
    q = w->q;
    prov_queue_lock();
    w->stop = 1;
    pthread_cond_signal(&w->cond);
    prov_queue_unlock();
    pthread_join(w->thread, NULL);

    /* What is left is written and every lease returned, from this thread;
     * a request still in flight settles the ordinary way afterwards. */
    prov_queue_lock();
    q->leases.stopping = 1;
    for (i = 0; i < STOP_ROUNDS && (left = prov_lease_active(&q->leases)) != 0; i++) {
        prov_queue_unlock();
        prov_queue_flush(&w->src, 0, w->pool);
        prov_queue_lock();
    }
    q->writer = NULL;
    q->leases.keep_idle = 0;
    q->leases.stopping = 0;
    /* What is journaled and not committed (nothing, unless the database
     * failed) stays for a survivor; the rest of the journal goes. */
    j = q->leases.journal;
    __atomic_store_n(&q->leases.journal, NULL, __ATOMIC_SEQ_CST);
    q->leases.owner[0] = '\0';
    q->leases.no_grant = 0;
    while (__atomic_load_n(&q->jusers, __ATOMIC_SEQ_CST)) {   /* one is being journaled */
        prov_queue_unlock();
        apr_sleep(apr_time_from_msec(1));
        prov_queue_lock();
    }
    prov_queue_unlock();
    prov_journal_close(j);
    if (left)
        prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00057: the billing writer stopped with "
                 "leases or unwritten requests left; requests still in flight write them");
    free(w->journal_dir);
    free(w->db_id);
    pthread_cond_destroy(&w->cond);
    apr_pool_destroy(w->pool);
    free(w);
}

apr_status_t prov_writer_upkeep(prov_writer_t *w, const char *journal_dir)
{
    char *dir = journal_dir ? strdup(journal_dir) : NULL;
    if (journal_dir && !dir)
        return APR_ENOMEM;
    prov_queue_lock();
    if (w->upkeep) {
        prov_queue_unlock();
        free(dir);
        return APR_EEXIST;
    }
    w->upkeep = 1;
    w->journal_dir = dir;
    w->upkeep_at = 0;
    if (dir)
        w->q->leases.no_grant = 1;   /* until the journal is open */
    pthread_cond_signal(&w->cond);
    prov_queue_unlock();
    return APR_SUCCESS;
}
