/* prov_billing.c: the spend engine's entry points. The estimate; the queues
 * (one per database) that group the reservations and settlements of one
 * process into batches (a thread that finds no batch running leads the next
 * one; the others wait for their result); the hold timeout and the occasional sweep of expired
 * holds; the window arithmetic over usage buckets; and the account and key
 * status shown by providerctl. The batch itself is in prov_billing_batch.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "prov_billing_int.h"
#include "prov_log.h"

/* How often (in engine time) a batch also sweeps expired holds. */
#define SWEEP_EVERY 30
/* A request's thread leads at most this many batches in a row: a
 * settlement that comes during the last one waits and takes over, so that
 * no request is kept from answering by other requests' work. */
#define LEADER_ROUNDS 3

static pthread_mutex_t q_mutex = PTHREAD_MUTEX_INITIALIZER;
/* One queue per channel (database); all under q_mutex. */
typedef struct queue_t {
    const void *channel;
    prov_op_t *head, *tail;
    int leader;                     /* a thread runs a batch of this queue */
    int rounds;                     /* batches its leader has started in a row */
    apr_int64_t last_sweep;
    apr_int64_t last_now;           /* engine time of the last batch */
    prov_leases_t leases;
    int jusers;                     /* threads appending to leases.journal now */
    struct prov_billing_writer_t *writer;   /* its writer thread, if any */
    struct queue_t *next;
} queue_t;

static queue_t *q_list;

/* A queue's writer thread (prov_billing_writer_start). */
struct prov_billing_writer_t {
    prov_store_source_t src;
    queue_t *q;
    pthread_t thread;
    pthread_cond_t cond;            /* under q_mutex: work may be due */
    int stop;
    apr_time_t retry_at;            /* after a failed batch: when to try again */
    apr_pool_t *pool;               /* the thread's own */
    /* upkeep (prov_billing_writer_upkeep): expiry on time, the journal */
    int upkeep;
    char *journal_dir;              /* NULL: no journal */
    int journal_tried;              /* opened, or failed for good */
    char *db_id;                    /* the database's identity, once read */
    apr_time_t upkeep_at;           /* wall clock of the next round */
};

/* How often a writer looks at the leases while any is held or any drawn
 * request is unwritten (settlements that leave a batch due wake it at
 * once); and how long it waits after a failed batch. */
#define WRITER_TICK apr_time_from_msec(2)
#define WRITER_RETRY apr_time_from_sec(1)
/* How often the upkeep looks (wall clock): the journals of dead processes,
 * and whether the engine's clock says a sweep of expired holds is due. */
#define UPKEEP_EVERY apr_time_from_sec(1)

/* Wakes q's writer thread, if it has one (q_mutex held). */
static void writer_wake(queue_t *q)
{
    if (q->writer)
        pthread_cond_signal(&q->writer->cond);
}
static apr_int64_t q_hold_timeout = PROV_HOLD_TIMEOUT_DEFAULT;

void prov_billing_configure(apr_int64_t hold_timeout)
{
    pthread_mutex_lock(&q_mutex);
    q_hold_timeout = hold_timeout > 0 ? hold_timeout : PROV_HOLD_TIMEOUT_DEFAULT;
    pthread_mutex_unlock(&q_mutex);
}

prov_micro_t prov_billing_estimate(const prov_rates_t *eff, apr_int64_t input_tokens_est,
                                   apr_int64_t max_output)
{
    prov_tokens_t t = { input_tokens_est, max_output, 0, 0 };
    return prov_money_charge(eff, &t);
}

apr_int64_t prov_billing_input_estimate(apr_size_t prompt_bytes, int n_messages)
{
    /* Tokenizers average 3-4 bytes per token on prose; take 3 and a
     * per-message overhead, so that the hold errs on the side of covering
     * the charge. */
    apr_int64_t est = prompt_bytes / 3 > (apr_size_t)APR_INT64_MAX
                      ? APR_INT64_MAX : (apr_int64_t)(prompt_bytes / 3);
    est = prov_i64_add_sat(est, prov_i64_mul_sat(8, n_messages > 0 ? n_messages : 0));
    return prov_i64_add_sat(est, 16);
}

/* ---- store sources ------------------------------------------------------- */

static apr_status_t fixed_open(prov_store_t **s, void *baton, apr_pool_t *p)
{
    (void)p;
    *s = baton;
    return APR_SUCCESS;
}

static void fixed_close(prov_store_t *s, void *baton)
{
    (void)s;
    (void)baton;
}

prov_store_source_t *prov_store_source_fixed(prov_store_t *s, apr_pool_t *p)
{
    prov_store_source_t *src = apr_pcalloc(p, sizeof(*src));
    src->open = fixed_open;
    src->close = fixed_close;
    src->baton = s;
    src->channel = s;
    return src;
}

/* ---- the queue ----------------------------------------------------------- */

static apr_status_t lead(queue_t *q, prov_op_t *batch, prov_slot_t *work,
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
                apr_int64_t t = e->complete ? e->settled_at : e->created_at;
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
        rv = prov_billing_run_batch(s, batch, work, now, sweep, timeout, scratch);
        /* One retry: a busy database (another process's writer) is the
         * usual cause, and it is gone a moment later. */
        if (rv != APR_SUCCESS)
            rv = prov_billing_run_batch(s, batch, work, now, sweep, timeout, scratch);
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
static void complete(const queue_t *q, prov_op_t *batch, prov_op_t *mine)
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
                         "expires", o->res->request_id, o->charge ? "settled" : "released",
                         o->res->hold);
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
static void enqueue(queue_t *q, prov_op_t *op)
{
    op->next = NULL;
    if (q->tail)
        q->tail->next = op;
    else
        q->head = op;
    q->tail = op;
}

/* The first queued operation whose thread waits for it (q_mutex held). */
static prov_op_t *first_waiting(const queue_t *q)
{
    prov_op_t *o;
    for (o = q->head; o && o->async; o = o->next)
        ;
    return o;
}

/* The channel's queue, made on first use; they live as long as the
 * process (one per database a process writes to). NULL without memory. */
static queue_t *queue_of(const void *channel)
{
    queue_t *q;
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

/* Each waiting thread sleeps on its own condition: when a batch ends, its
 * leader wakes exactly the threads whose operations it carried, and the
 * first queued waiter (if any) to lead the next batch. A broadcast would
 * wake every waiter to find most of them not done yet. A leader whose
 * queue holds only settlements of threads that did not wait runs them too
 * before it returns. */
static apr_status_t submit(prov_op_t *op, const prov_store_source_t *src, apr_pool_t *pool)
{
    apr_status_t rv;
    int async = op->async, led = 0;
    queue_t *q;
    pthread_mutex_lock(&q_mutex);
    if ((q = queue_of(src->channel)) == NULL) {
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
        /* Done: unless nobody leads and settlements nobody waits for (or
         * what leases drew) are left. */
        if (op->done && (q->leader || first_waiting(q) || led >= LEADER_ROUNDS
                         || (!q->head && (q->writer || !prov_lease_due(&q->leases)))))
            break;
        if (!q->leader) {
            prov_op_t *batch = q->head, *w, *again, *o, *retry = NULL;
            prov_slot_t *work;
            apr_int64_t now = 0;
            q->leader = 1;
            q->rounds = ++led;
            q->head = q->tail = NULL;
            work = prov_lease_take(&q->leases, batch);
            pthread_mutex_unlock(&q_mutex);
            rv = lead(q, batch, work, &now, src, pool);
            pthread_mutex_lock(&q_mutex);
            q->leader = 0;
            if (now > q->last_now)
                q->last_now = now;
            again = prov_lease_done(&q->leases, work, batch, now, rv);
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
            complete(q, batch, op);
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
            if ((w = first_waiting(q)) != NULL && w != op)
                pthread_cond_signal(&w->cond);
            else if (q->writer && prov_lease_active(&q->leases))
                writer_wake(q);      /* a lease it must return in time, at least */
        }
        else {
            pthread_cond_wait(&op->cond, &q_mutex);
        }
    }
    rv = op->rv;
    pthread_mutex_unlock(&q_mutex);
    pthread_cond_destroy(&op->cond);
    if (async)
        free(op);
    return rv;
}

apr_status_t prov_billing_submit(prov_op_t *op, const prov_store_source_t *src, apr_pool_t *p)
{
    return submit(op, src, p);
}

apr_status_t prov_billing_reserve(prov_reservation_t **r, prov_error_t **err,
                                  const prov_store_source_t *src, const prov_auth_t *auth,
                                  apr_int64_t model_id, const char *transport,
                                  const char *request_id, prov_micro_t hold, apr_int64_t now,
                                  apr_pool_t *p)
{
    prov_op_t op;
    apr_status_t rv;
    queue_t *q;
    int drawn = 0;
    pthread_mutex_lock(&q_mutex);
    memset(&op, 0, sizeof(op));
    if ((q = queue_of(src->channel)) != NULL) {
        drawn = prov_lease_draw(&q->leases, r, auth, model_id, transport, request_id,
                                hold < 0 ? 0 : hold, now, p);
        if (drawn)
            (*r)->queue = q;
        if (!drawn) {
            op.auth = auth;
            op.model_id = model_id;
            prov_lease_pending(&q->leases, &op);
        }
    }
    pthread_mutex_unlock(&q_mutex);
    if (drawn) {
        *err = NULL;
        return APR_SUCCESS;
    }
    op.kind = PROV_OP_RESERVE;
    op.p = p;
    op.now = now;
    op.auth = auth;
    op.model_id = model_id;
    op.transport = transport;
    op.request_id = request_id;
    op.hold = hold < 0 ? 0 : hold;
    if ((rv = submit(&op, src, p)) != APR_SUCCESS)
        return rv;
    *r = op.out;
    if (op.out)
        op.out->queue = q;
    *err = op.err;
    return APR_SUCCESS;
}

/* Runs (or waits for) a batch that writes what leases drew. */
static apr_status_t run_flush(const prov_store_source_t *src, apr_int64_t now, apr_pool_t *p)
{
    prov_op_t op;
    memset(&op, 0, sizeof(op));
    op.kind = PROV_OP_FLUSH;
    op.p = p;
    op.now = now;
    return submit(&op, src, p);
}

/* Appends r's settlement to the queue's journal, if it has one, before
 * anything can answer the request; returns the record's ticket (0: none).
 * Without q_mutex: the request's queue is known from its reservation, and
 * the journal is not closed while q->jusers counts this thread (*used: the
 * caller uncounts it once it holds q_mutex again). */
static int journal_note(int *used, const prov_store_source_t *src,
                        const prov_reservation_t *r, const prov_tokens_t *t, prov_micro_t charge,
                        const char *status, apr_int64_t now)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    static volatile apr_time_t failed_at;
    prov_journal_rec_t rec;
    prov_journal_t *j = NULL;
    queue_t *q;
    apr_status_t rv;
    int ticket = 0;
    if ((q = r->queue) == NULL) {
        pthread_mutex_lock(&q_mutex);
        q = queue_of(src->channel);
        pthread_mutex_unlock(&q_mutex);
    }
    *used = 0;
    if (!q)
        return 0;
    __atomic_add_fetch(&q->jusers, 1, __ATOMIC_SEQ_CST);
    if ((j = __atomic_load_n(&q->leases.journal, __ATOMIC_SEQ_CST)) == NULL) {
        __atomic_sub_fetch(&q->jusers, 1, __ATOMIC_SEQ_CST);
        return 0;
    }
    *used = 1;
    memset(&rec, 0, sizeof(rec));
    rec.request_id = r->request_id;
    rec.transport = r->transport;
    rec.status = status;
    rec.user_id = r->user_id;
    rec.key_id = r->key_id;
    rec.model_id = r->model_id;
    rec.created_at = r->created_at;
    rec.settled_at = now;
    rec.tokens = t ? *t : none;
    rec.hold = r->hold;
    rec.charge = charge;
    rec.from_plan = r->from_plan;
    rec.drawn = r->entry != NULL;
    if ((rv = prov_journal_append(j, &rec, &ticket)) != APR_SUCCESS
        && apr_time_now() - failed_at > apr_time_from_sec(60)) {
        failed_at = apr_time_now();
        prov_log(PROV_LOG_ERR, rv, "PROV00382: request %s could not be journaled; if this "
                 "process dies before its row is written, the row is lost", r->request_id);
    }
    return ticket;
}

static apr_status_t finish(const prov_store_source_t *src, prov_reservation_t *r,
                           const prov_tokens_t *t, prov_micro_t charge, const char *status,
                           apr_int64_t now, apr_pool_t *p)
{
    prov_op_t op;
    apr_status_t rv;
    queue_t *q;
    int handled = 0, idle = 1, ticket, used = 0;
    if (r->settled)
        return APR_EINCOMPLETE;
    ticket = journal_note(&used, src, r, t, charge < 0 ? 0 : charge, status, now);
    pthread_mutex_lock(&q_mutex);
    if ((q = queue_of(src->channel)) != NULL) {
        if (used)
            __atomic_sub_fetch(&q->jusers, 1, __ATOMIC_SEQ_CST);
        if (r->entry)
            ((prov_entry_t *)r->entry)->jticket = ticket;
        handled = prov_lease_settle(&q->leases, r, t, charge < 0 ? 0 : charge, status, now);
        /* Without its journal (wanted, not open yet) nothing is answered
         * before it is committed. */
        idle = !q->leader || q->rounds >= LEADER_ROUNDS || q->leases.no_grant;
        if (handled && q->writer) {
            /* The writer thread writes it (and returns the lease). */
            if (prov_lease_due(&q->leases))
                writer_wake(q);
            handled = 3;
        }
        else if (handled == 1 && idle)
            idle = prov_lease_due(&q->leases);
    }
    pthread_mutex_unlock(&q_mutex);
    if (handled == 3) {
        r->settled = 1;
        return APR_SUCCESS;
    }
    if (handled) {
        /* A drawn request. The last of its key in flight waits for the
         * batch that writes it (and returns the lease): when the burst's
         * answers are out, its rows are written. Another one leaves it to
         * the running leader, or (when a batch is due and nobody runs it)
         * to the caller once the answer is out (prov_billing_flush). */
        r->settled = 1;
        if (handled == 1) {
            r->flush_due = idle;
            return APR_SUCCESS;
        }
        if ((rv = run_flush(src, now, p)) != APR_SUCCESS)
            prov_log(PROV_LOG_ERR, rv, "PROV00055: request %s was settled but not "
                     "written yet; the next batch writes it", r->request_id);
        return APR_SUCCESS;
    }
    memset(&op, 0, sizeof(op));
    op.kind = PROV_OP_SETTLE;
    op.p = p;
    op.now = now;
    op.res = r;
    if (t)
        op.tokens = *t;
    op.charge = charge < 0 ? 0 : charge;
    op.status = status;
    op.jticket = ticket;             /* done by the batch that commits it */
    {
        prov_op_t *c = idle ? NULL : prov_batch_async_settle(r, t, op.charge, status, now);
        if (c)
            c->jticket = ticket;
        rv = c ? submit(c, src, p) : submit(&op, src, p);
    }
    if (rv == APR_SUCCESS || rv == APR_EINCOMPLETE)
        r->settled = 1;
    return rv;
}

apr_status_t prov_billing_flush(const prov_store_source_t *src, apr_int64_t now, apr_pool_t *p)
{
    queue_t *q;
    int due = 0;
    pthread_mutex_lock(&q_mutex);
    if ((q = queue_of(src->channel)) != NULL)
        due = !q->writer && (!q->leader || q->rounds >= LEADER_ROUNDS)
              && prov_lease_due(&q->leases);
    pthread_mutex_unlock(&q_mutex);
    return due ? run_flush(src, now, p) : APR_SUCCESS;
}

apr_status_t prov_billing_settle(const prov_store_source_t *src, prov_reservation_t *r,
                                 const prov_tokens_t *t, prov_micro_t charge, const char *status,
                                 apr_int64_t now, apr_pool_t *p)
{
    return finish(src, r, t, charge, status, now, p);
}

apr_status_t prov_billing_release(const prov_store_source_t *src, prov_reservation_t *r,
                                  const char *status, apr_int64_t now, apr_pool_t *p)
{
    return finish(src, r, NULL, 0, status, now, p);
}

apr_status_t prov_billing_expire(int *n, const prov_store_source_t *src, apr_int64_t now,
                                 apr_pool_t *p)
{
    prov_op_t op;
    apr_status_t rv;
    memset(&op, 0, sizeof(op));
    op.kind = PROV_OP_SWEEP;
    op.p = p;
    op.now = now;
    rv = submit(&op, src, p);
    if (rv == APR_SUCCESS && n)
        *n = op.swept;
    return rv;
}

/* ---- the writer thread ----------------------------------------------------- */

/* Opens w's journal (once the database's identity is known); from then on
 * leases are granted again. Without q_mutex. */
static void upkeep_journal(prov_billing_writer_t *w, apr_pool_t *p)
{
    queue_t *q = w->q;
    prov_journal_t *j = NULL;
    apr_status_t rv = prov_journal_open(&j, w->journal_dir, w->db_id, 0, p);
    w->journal_tried = 1;
    if (rv != APR_SUCCESS)
        prov_log(PROV_LOG_ERR, rv, "PROV00383: cannot keep a billing journal in %s: the "
                 "settled requests of a process killed before their rows are written are "
                 "lost (check ProviderJournalDir)", w->journal_dir);
    pthread_mutex_lock(&q_mutex);
    if (j) {
        __atomic_store_n(&q->leases.journal, j, __ATOMIC_SEQ_CST);
        apr_cpystrn(q->leases.owner, prov_journal_owner(j), sizeof(q->leases.owner));
    }
    q->leases.no_grant = 0;
    pthread_mutex_unlock(&q_mutex);
}

/* One round of the writer's upkeep (without q_mutex): the journal, the
 * journals of dead processes, and holds that expired by the engine's
 * clock, so that nothing waits for traffic. */
static void upkeep(prov_billing_writer_t *w)
{
    queue_t *q = w->q;
    apr_pool_t *p = NULL;
    apr_int64_t now, every;
    const char *id = NULL;
    int due;

    w->upkeep_at = apr_time_now() + UPKEEP_EVERY;
    apr_pool_create(&p, w->pool);
    /* Nothing before the database is usable (its schema may be old). */
    if (!w->db_id && (prov_billing_database_id(&id, &w->src, p) != APR_SUCCESS
                      || !(w->db_id = strdup(id)))) {
        apr_pool_destroy(p);
        return;
    }
    if (w->journal_dir && !w->journal_tried)
        upkeep_journal(w, p);
    if (w->journal_dir)
        prov_billing_recover_db(NULL, &w->src, w->journal_dir, w->db_id, p);
    now = prov_now();
    pthread_mutex_lock(&q_mutex);
    every = q_hold_timeout / 4 < 1 ? 1 : q_hold_timeout / 4 > 60 ? 60 : q_hold_timeout / 4;
    due = now - q->last_sweep >= every || now < q->last_sweep;
    pthread_mutex_unlock(&q_mutex);
    if (due)
        prov_billing_expire(NULL, &w->src, now, p);
    apr_pool_destroy(p);
}

/* Waits on w's condition until woken or wall clock at (q_mutex held). */
static void writer_wait(prov_billing_writer_t *w, apr_time_t at)
{
    struct timespec ts;
    apr_interval_time_t d = at - apr_time_now();
    if (d <= 0)
        return;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(d / APR_USEC_PER_SEC);
    ts.tv_nsec += (long)(d % APR_USEC_PER_SEC) * 1000;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&w->cond, &q_mutex, &ts);
}

/* Runs the batches that leases make due, and the upkeep, until told to
 * stop. */
static void *writer_main(void *arg)
{
    prov_billing_writer_t *w = arg;
    queue_t *q = w->q;
    pthread_mutex_lock(&q_mutex);
    while (!w->stop) {
        apr_time_t wall = apr_time_now();
        int active = prov_lease_active(&q->leases), run = 0;
        if (w->upkeep && wall >= w->upkeep_at) {
            pthread_mutex_unlock(&q_mutex);
            upkeep(w);
            pthread_mutex_lock(&q_mutex);
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
            pthread_mutex_unlock(&q_mutex);
            /* No time of its own: the batch goes by its entries' times
             * (or the last batch's), the engine's clock being the
             * requests'. */
            rv = run_flush(&w->src, 0, w->pool);
            pthread_mutex_lock(&q_mutex);
            if (rv != APR_SUCCESS || q->leases.failing)
                w->retry_at = apr_time_now() + WRITER_RETRY;
            continue;
        }
        if (active)
            writer_wait(w, wall + WRITER_TICK);
        else if (w->upkeep)
            writer_wait(w, w->upkeep_at);
        else
            pthread_cond_wait(&w->cond, &q_mutex);
    }
    pthread_mutex_unlock(&q_mutex);
    return NULL;
}

apr_status_t prov_billing_writer_start(prov_billing_writer_t **pw, const prov_store_source_t *src,
                                       apr_interval_time_t keep_idle)
{
    prov_billing_writer_t *w = calloc(1, sizeof(*w));
    pthread_condattr_t ca;
    apr_status_t rv;
    queue_t *q;
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
    pthread_mutex_lock(&q_mutex);
    q = queue_of(src->channel);
    if (!q || q->writer) {
        pthread_mutex_unlock(&q_mutex);
        rv = q ? APR_EEXIST : APR_ENOMEM;
        goto fail;
    }
    w->q = q;
    q->writer = w;
    q->leases.keep_idle = keep_idle > 0 ? keep_idle : PROV_LEASE_IDLE_DEFAULT;
    pthread_mutex_unlock(&q_mutex);
    if ((err = pthread_create(&w->thread, NULL, writer_main, w)) != 0) {
        pthread_mutex_lock(&q_mutex);
        q->writer = NULL;
        q->leases.keep_idle = 0;
        pthread_mutex_unlock(&q_mutex);
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

void prov_billing_writer_stop(prov_billing_writer_t *w)
{
    prov_journal_t *j;
    queue_t *q;
    int i, left = 0;
    if (!w)
        return;
    q = w->q;
    pthread_mutex_lock(&q_mutex);
    w->stop = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&q_mutex);
    pthread_join(w->thread, NULL);

    /* What is left is written and every lease returned, from this thread;
     * a request still in flight settles the ordinary way afterwards. */
    pthread_mutex_lock(&q_mutex);
    q->leases.stopping = 1;
    for (i = 0; i < 3 && (left = prov_lease_active(&q->leases)) != 0; i++) {
        pthread_mutex_unlock(&q_mutex);
        run_flush(&w->src, 0, w->pool);
        pthread_mutex_lock(&q_mutex);
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
        pthread_mutex_unlock(&q_mutex);
        apr_sleep(apr_time_from_msec(1));
        pthread_mutex_lock(&q_mutex);
    }
    pthread_mutex_unlock(&q_mutex);
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

apr_status_t prov_billing_writer_upkeep(prov_billing_writer_t *w, const char *journal_dir)
{
    char *dir = journal_dir ? strdup(journal_dir) : NULL;
    if (journal_dir && !dir)
        return APR_ENOMEM;
    pthread_mutex_lock(&q_mutex);
    if (w->upkeep) {
        pthread_mutex_unlock(&q_mutex);
        free(dir);
        return APR_EEXIST;
    }
    w->upkeep = 1;
    w->journal_dir = dir;
    w->upkeep_at = 0;
    if (dir)
        w->q->leases.no_grant = 1;   /* until the journal is open */
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&q_mutex);
    return APR_SUCCESS;
}

int prov_billing_active(const prov_store_source_t *src)
{
    queue_t *q;
    int active = 0;
    pthread_mutex_lock(&q_mutex);
    for (q = q_list; q; q = q->next) {
        if (q->channel == src->channel)
            active = prov_lease_active(&q->leases) || q->leader || q->head;
    }
    pthread_mutex_unlock(&q_mutex);
    return active;
}

/* ---- status ---------------------------------------------------------------- */

static apr_status_t one_i64(apr_int64_t *out, prov_store_t *s, const char *label, int nargs,
                            const char *const *args, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, label, nargs, args, p);
    if (rv == APR_SUCCESS)
        *out = prov_store_get_i64(s, row, 0, 0);
    return rv;
}

apr_status_t prov_billing_account_status(prov_account_status_t *st, prov_store_t *s,
                                         apr_int64_t user_id, apr_int64_t now, apr_pool_t *p)
{
    prov_window_t w5, w7;
    apr_int64_t balance = 0, held = 0;
    const char *uid = prov_i64(user_id, p);
    apr_status_t rv;

    if ((rv = one_i64(&balance, s, "user_by_id_balance", PROV_ARGS(uid), p)) != APR_SUCCESS
        || (rv = one_i64(&held, s, "bill_held", PROV_ARGS(uid, uid), p)) != APR_SUCCESS)
        return rv;
    memset(st, 0, sizeof(*st));
    st->balance = balance;
    st->held = held;
    return prov_billing_plan_windows(&st->windows, &w5, &w7, s, user_id, now, p);
}

apr_status_t prov_billing_key_status(prov_micro_t *spent_7d, apr_int64_t *reset, prov_store_t *s,
                                     apr_int64_t key_id, apr_int64_t now, apr_pool_t *p)
{
    prov_window_t w;
    apr_status_t rv = prov_window_sum(&w, s, "key:h", key_id, PROV_BUCKET_HOUR, PROV_WINDOW_7D,
                                      0, now, p);
    if (rv != APR_SUCCESS)
        return rv;
    *spent_7d = w.sum;
    *reset = prov_window_reset(&w, now);
    return APR_SUCCESS;
}
