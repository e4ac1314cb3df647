/* prov_queue.c: the queues that group one process's billing operations
 * into batches (see prov_queue.h), and the engine's mutex. A thread that
 * finds no batch running leads the next one with everything queued and the
 * leases' work, and hands over after LEADER_ROUNDS batches; every other
 * thread sleeps on a condition of its own until its operation is done. A
 * settlement nobody waits for (a leader is running) returns at once and is
 * committed by that leader. As a batch ends, the reservations queued
 * meanwhile draw from a lease it opened or topped up (a burst after idle)
 * rather than wait for the next batch. Also here: the hold timeout, the
 * sweep of expired holds every SWEEP_EVERY seconds of engine time, and the
 * public prov_queue_expire and prov_queue_active. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "prov_queue.h"
#include "prov_log.h"

/* How often (in engine time) a batch also sweeps expired holds. */
#define SWEEP_EVERY 30
/* A request's thread leads at most this many batches in a row: a
 * settlement that comes during the last one waits and takes over, so that
 * no request is kept from answering by other requests' work. */
#define LEADER_ROUNDS 3
/* The writer's sweep without traffic: every hold timeout / SWEEP_PART,
 * between 1 and SWEEP_MAX seconds. */
#define SWEEP_PART 4
#define SWEEP_MAX 60
#define NSEC_PER_SEC 1000000000L

static pthread_mutex_t q_mutex = PTHREAD_MUTEX_INITIALIZER;
/* Every queue; under q_mutex. */
static prov_queue_t *q_list;
static apr_int64_t q_hold_timeout = PROV_HOLD_TIMEOUT_DEFAULT;

void prov_queue_configure(apr_int64_t hold_timeout)
{
    pthread_mutex_lock(&q_mutex);
    q_hold_timeout = hold_timeout > 0 ? hold_timeout : PROV_HOLD_TIMEOUT_DEFAULT;
    pthread_mutex_unlock(&q_mutex);
}

void prov_queue_lock(void)
{
    pthread_mutex_lock(&q_mutex);
}

void prov_queue_unlock(void)
{
    pthread_mutex_unlock(&q_mutex);
}

void prov_queue_wait(pthread_cond_t *cond)
{
    pthread_cond_wait(cond, &q_mutex);
}

void prov_queue_wait_until(pthread_cond_t *cond, apr_time_t at)
{
    struct timespec ts;
    apr_interval_time_t d = at - apr_time_now();
    if (d <= 0)
        return;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(d / APR_USEC_PER_SEC);
    ts.tv_nsec += (long)(d % APR_USEC_PER_SEC) * 1000;
    if (ts.tv_nsec >= NSEC_PER_SEC) {
        ts.tv_sec++;
        ts.tv_nsec -= NSEC_PER_SEC;
    }
    pthread_cond_timedwait(cond, &q_mutex, &ts);
}

/* Runs batch and work in one transaction on a connection from src, at the
 * latest engine time they carry (*pnow); a failure fails every op. */
static apr_status_t lead(prov_queue_t *q, prov_op_t *batch, prov_slot_t *work,
                         apr_int64_t *pnow, const prov_store_source_t *src, apr_pool_t *pool)
{
    apr_pool_t *scratch = NULL;
    prov_store_t *s = NULL;
    prov_op_t *op;
    apr_int64_t now = 0, timeout;
    int sweep = 0;
    apr_status_t rv;

    for (op = batch; op; op = op->next) {
        if (op->now > now)
            now = op->now;
        if (op->kind == PROV_OP_SWEEP)
            sweep = 1;
    }
    {
        /* A batch of leases' work only: the latest time it carries. */
        const prov_slot_t *w;
        const prov_entry_t *e;
        for (w = work; w; w = w->work_next) {
            for (e = w->taken; e; e = e->next) {
                apr_int64_t t = e->complete ? e->row.settled_at : e->row.created_at;
                if (t > now)
                    now = t;
            }
        }
    }
    pthread_mutex_lock(&q_mutex);
    if (!now)
        now = q->last_now;
    *pnow = now;
    if (now - q->last_sweep >= SWEEP_EVERY || now < q->last_sweep)
        sweep = 1;
    if (sweep)
        q->last_sweep = now;
    timeout = q_hold_timeout;
    pthread_mutex_unlock(&q_mutex);

    apr_pool_create(&scratch, pool);
    rv = src->open(&s, src->baton, scratch);
    if (rv == APR_SUCCESS) {
        rv = prov_batch_run(s, batch, work, now, sweep, timeout, scratch);
        /* One retry: a busy database (another process's writer) is the
         * usual cause, and it is gone a moment later. */
        if (rv != APR_SUCCESS)
            rv = prov_batch_run(s, batch, work, now, sweep, timeout, scratch);
        src->close(s, src->baton);
    }
    if (rv != APR_SUCCESS) {
        prov_log(PROV_LOG_ERR, rv, "PROV00050: a billing batch failed; its requests are "
                 "refused or keep their holds until they expire");
        for (op = batch; op; op = op->next)
            op->rv = rv;
    }
    apr_pool_destroy(scratch);
    return rv;
}

/* Ends a batch's operations (q_mutex held): a settlement's journal record
 * is done once it is committed (a failed one stays for a replay), a waiting
 * thread is woken, a queued settlement is freed (mine: the caller's, freed
 * by the caller). */
static void complete(const prov_queue_t *q, prov_op_t *batch, prov_op_t *mine)
{
    prov_op_t *o, *next;
    int ticket = 0, n = 0;
    for (o = batch; o; o = next) {
        next = o->next;              /* o may be gone once done is seen */
        if (o->jticket && (o->rv == APR_SUCCESS || o->rv == APR_EINCOMPLETE)) {
            if (o->jticket != ticket) {
                prov_journal_done_n(q->leases.journal, ticket, n);
                ticket = o->jticket;
                n = 0;
            }
            n++;
        }
        if (o->retry) {
            continue;                /* queued again by the caller */
        }
        if (o->async) {
            if (o->rv != APR_SUCCESS && o->rv != APR_EINCOMPLETE)
                prov_log(PROV_LOG_ERR, o->rv, "PROV00052: request %s was not %s; its hold "
                         "of %" APR_INT64_T_FMT " micro-credits stays reserved until it "
                         "expires", o->res->row.request_id, o->charge ? "settled" : "released",
                         o->res->row.hold);
            o->done = 1;
            if (o != mine)
                free(o);
            continue;
        }
        o->done = 1;
        if (o != mine)
            pthread_cond_signal(&o->cond);
    }
    prov_journal_done_n(q->leases.journal, ticket, n);
}

/* Appends op to q's queue (q_mutex held). */
static void enqueue(prov_queue_t *q, prov_op_t *op)
{
    op->next = NULL;
    if (q->tail)
        q->tail->next = op;
    else
        q->head = op;
    q->tail = op;
}

/* The first queued operation whose thread waits for it (q_mutex held). */
static prov_op_t *first_waiting(const prov_queue_t *q)
{
    prov_op_t *o;
    for (o = q->head; o && o->async; o = o->next)
        ;
    return o;
}

/* One per database a process writes to. */
prov_queue_t *prov_queue_of(const void *channel)
{
    prov_queue_t *q;
    for (q = q_list; q; q = q->next) {
        if (q->channel == channel)
            return q;
    }
    if ((q = calloc(1, sizeof(*q))) != NULL) {
        q->channel = channel;
        q->next = q_list;
        q_list = q;
    }
    return q;
}

/* Puts back at the head of q the reservations of batch refused while a
 * lease of their account was held (they run again first), then queues the
 * settlements of rows written while their requests ended (again). */
static void requeue(prov_queue_t *q, prov_op_t *retry, prov_op_t *again)
{
    prov_op_t *o;
    while (retry) {
        o = retry;
        retry = retry->retry_next;
        o->retry = 0;
        o->retried = 1;
        o->next = q->head;
        q->head = o;
        if (!q->tail)
            q->tail = o;
    }
    while (again) {
        o = again;
        again = again->next;
        enqueue(q, o);
    }
}

/* The reservations queued while a batch ran that a lease it opened or
 * topped up covers are drawn from it and done at once (a burst after idle:
 * they came while the batch granted the lease), instead of waiting for the
 * next batch to hold each in the database. */
static void draw_queued(prov_queue_t *q)
{
    prov_op_t **pp = &q->head, *o;
    q->tail = NULL;
    while ((o = *pp) != NULL) {
        if (prov_lease_draw_queued(&q->leases, o)) {
            *pp = o->next;
            o->done = 1;
            pthread_cond_signal(&o->cond);
        }
        else {
            q->tail = o;
            pp = &o->next;
        }
    }
}

/* The calling thread (its op mine) leads one batch of q: everything queued
 * and the leases' work, round led of its turn; then wakes the next leader
 * (the first waiting thread, else the writer while leases are held). The
 * mutex held, released while the batch runs. */
static void lead_round(prov_queue_t *q, prov_op_t *mine, int led,
                       const prov_store_source_t *src, apr_pool_t *pool)
{
    prov_op_t *batch = q->head, *w, *again, *o, *retry = NULL;
    prov_slot_t *work;
    apr_int64_t now = 0;
    apr_status_t rv;

    q->leader = 1;
    q->rounds = led;
    q->head = q->tail = NULL;
    work = prov_lease_handoff_take(&q->leases, batch);
    pthread_mutex_unlock(&q_mutex);
    rv = lead(q, batch, work, &now, src, pool);
    pthread_mutex_lock(&q_mutex);
    q->leader = 0;
    if (now > q->last_now)
        q->last_now = now;
    again = prov_lease_handoff_done(&q->leases, work, batch, now, rv);
    /* Reservations refused while a lease of their account was
     * held run again first, then the settlements of rows that were
     * written while their requests ended. (Collected before the
     * others are completed: their threads may be gone after.) */
    for (o = batch; o; o = o->next) {
        if (o->retry) {
            o->retry_next = retry;
            retry = o;
        }
    }
    complete(q, batch, mine);
    draw_queued(q);
    requeue(q, retry, again);
    if ((w = first_waiting(q)) != NULL && w != mine)
        pthread_cond_signal(&w->cond);
    else if (q->writer && prov_lease_active(&q->leases))
        prov_queue_wake_writer(q);   /* a lease it must return in time, at least */
}

/* Each waiting thread sleeps on its own condition: when a batch ends, its
 * leader wakes exactly the threads whose operations it carried, and the
 * first queued waiter (if any) to lead the next batch. A broadcast would
 * wake every waiter to find most of them not done yet. A leader whose
 * queue holds only settlements of threads that did not wait runs them too
 * before it returns. */
apr_status_t prov_queue_submit(prov_op_t *op, const prov_store_source_t *src, apr_pool_t *pool)
{
    apr_status_t rv;
    int async = op->async, led = 0;
    prov_queue_t *q;
    pthread_mutex_lock(&q_mutex);
    if ((q = prov_queue_of(src->channel)) == NULL) {
        pthread_mutex_unlock(&q_mutex);
        if (async)
            free(op);
        return APR_ENOMEM;
    }
    enqueue(q, op);
    if (async && q->leader && q->rounds < LEADER_ROUNDS) {
        pthread_mutex_unlock(&q_mutex);
        return APR_SUCCESS;
    }
    op->async = 0;                   /* this thread waits for it (and frees it) */
    pthread_cond_init(&op->cond, NULL);
    for (;;) {
        /* Done: unless nobody leads and settlements nobody waits for are
         * left. */
        if (op->done && (q->leader || first_waiting(q) || led >= LEADER_ROUNDS || !q->head))
            break;
        if (!q->leader)
            lead_round(q, op, ++led, src, pool);
        else
            pthread_cond_wait(&op->cond, &q_mutex);
    }
    rv = op->rv;
    pthread_mutex_unlock(&q_mutex);
    pthread_cond_destroy(&op->cond);
    if (async)
        free(op);
    return rv;
}

apr_status_t prov_queue_flush(const prov_store_source_t *src, apr_int64_t now, apr_pool_t *p)
{
    prov_op_t op;
    memset(&op, 0, sizeof(op));
    op.kind = PROV_OP_FLUSH;
    op.p = p;
    op.now = now;
    return prov_queue_submit(&op, src, p);
}


int prov_queue_idle(const prov_queue_t *q)
{
    return !q->leader || q->rounds >= LEADER_ROUNDS;
}

void prov_queue_wake_writer(prov_queue_t *q)
{
    if (q->writer)
        pthread_cond_signal(q->writer);
}

int prov_queue_sweep_due(const prov_queue_t *q, apr_int64_t now)
{
    apr_int64_t every;
    int due;
    pthread_mutex_lock(&q_mutex);
    every = q_hold_timeout / SWEEP_PART < 1 ? 1
            : q_hold_timeout / SWEEP_PART > SWEEP_MAX ? SWEEP_MAX : q_hold_timeout / SWEEP_PART;
    due = now - q->last_sweep >= every || now < q->last_sweep;
    pthread_mutex_unlock(&q_mutex);
    return due;
}

apr_status_t prov_queue_expire(int *n, const prov_store_source_t *src, apr_int64_t now,
                               apr_pool_t *p)
{
    prov_op_t op;
    apr_status_t rv;
    memset(&op, 0, sizeof(op));
    op.kind = PROV_OP_SWEEP;
    op.p = p;
    op.now = now;
    rv = prov_queue_submit(&op, src, p);
    if (rv == APR_SUCCESS && n)
        *n = op.swept;
    return rv;
}

int prov_queue_active(const prov_store_source_t *src)
{
    prov_queue_t *q;
    int active = 0;
    pthread_mutex_lock(&q_mutex);
    for (q = q_list; q; q = q->next) {
        if (q->channel == src->channel)
            active = prov_lease_active(&q->leases) || q->leader || q->head;
    }
    pthread_mutex_unlock(&q_mutex);
    return active;
}
