/* prov_lease_handoff.c: the lease table (in memory) handed to a batch and
 * back; the batch's side, the lease rows it writes, is prov_batch_lease.c.
 * Before a batch runs (prov_lease_handoff_take): which leases it renews or
 * returns, which unwritten entries it writes (settled ones, holds still
 * running after a second, all of a lease it returns, at most
 * PROV_BATCH_ROWS_MAX), and which of its reservations may be granted a
 * lease or must be asked again once this process's lease of the account is
 * returned. After it (prov_lease_handoff_done): its results applied to the
 * slots and entries, or on failure everything put back for the next batch.
 * Runs under the engine's queue mutex. */
#include <stdlib.h>
#include <string.h>
#include "prov_lease_int.h"
#include "prov_log.h"

/* Hands the batch s's entries due for writing (s->taken; *rows counts the
 * rows of the batch so far) and decides whether it returns or renews the
 * lease. Returns 1 when s goes to the batch. */
static int take_slot(const prov_leases_t *L, prov_slot_t *s, apr_time_t wall, int *rows)
{
    prov_entry_t *e, *next, *keep = NULL;
    int closing, left = 0;

    closing = s->state != PROV_LEASE_OPEN || prov_slot_idle_over(L, s, wall);
    s->writing = 0;
    s->take_drawn = s->drawn;
    for (e = s->pending; e; e = next) {
        next = e->next;
        if ((*rows < PROV_BATCH_ROWS_MAX || closing)
            && (closing || e->state == PROV_ENT_SETTLED
                || wall - e->drawn_at >= PROV_ENTRY_WRITE_AFTER)) {
            (*rows)++;
            s->writing = prov_i64_add_sat(s->writing, prov_entry_amount(e));
            e->complete = e->state == PROV_ENT_SETTLED;
            e->settled = 0;
            e->state = PROV_ENT_WRITING;
            e->next = s->taken;
            s->taken = e;
        }
        else {
            if (!keep || e->drawn_at < s->pending_oldest)
                s->pending_oldest = e->drawn_at;
            e->next = keep;
            keep = e;
            left += e->state == PROV_ENT_SETTLED;
        }
    }
    s->pending = keep;
    /* Settled rows left for the next batch are due at once. */
    s->settled_n = left;
    if (left)
        s->settled_since = wall - PROV_WRITER_WAIT;
    if (!closing && s->exhausted && s->unit) {
        s->unit = prov_i64_mul_sat(s->unit, 2);
        if (s->unit > s->unit_max)
            s->unit = s->unit_max;
    }
    s->renew = !closing && (s->exhausted
                            || prov_i64_sub_sat(s->amount, s->drawn) < s->unit / 2
                            || wall - s->checked >= (prov_slot_beside(L, s)
                                                     ? PROV_LEASE_CHECK_BESIDE
                                                     : PROV_LEASE_CHECK_EVERY));
    /* A lease with enough headroom and nothing to write waits. */
    if (!closing && !s->taken && !s->renew)
        return 0;
    s->exhausted = 0;
    s->closing = closing;
    if (closing)
        s->state = PROV_LEASE_DRAINING;
    s->res_amount = 0;
    s->res_gone = s->res_drain = 0;
    return 1;
}

/* The accounts with a lease that this batch keeps (the first
 * PROV_LEASE_HELD_MAX in held); returns how many there are. */
static int held_accounts(const prov_leases_t *L, apr_int64_t *held)
{
    const prov_slot_t *s;
    int i, nheld = 0;
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        for (s = L->buckets[i]; s; s = s->next) {
            if (s->state == PROV_LEASE_NONE || s->closing)
                continue;
            if (nheld < PROV_LEASE_HELD_MAX)
                held[nheld] = s->user_id;
            nheld++;
        }
    }
    return nheld;
}

/* Marks op (a reservation of the batch ops) to be asked again if refused
 * while a lease of its account is held (retry_ok), and with the size of
 * the lease it may be granted (lease_unit, 0: none). */
static void mark_reserve(const prov_leases_t *L, prov_op_t *ops, prov_op_t *op,
                         const apr_int64_t *held, int nheld, apr_time_t wall)
{
    const prov_slot_t *s;
    prov_op_t *o2;
    int i, dup = 0;

    op->lease_unit = 0;
    op->retry_ok = 0;
    /* A refusal while this process holds a lease of the account is
     * checked again once the lease is returned: the lease's unused
     * part must not refuse anybody. */
    if (!op->retried) {
        op->retry_ok = nheld > PROV_LEASE_HELD_MAX;
        for (i = 0; i < nheld && i < PROV_LEASE_HELD_MAX && !op->retry_ok; i++)
            op->retry_ok = held[i] == op->auth->user_id;
    }
    /* No lease without a writer thread to write what is drawn from it
     * (keep_idle 0): every request is reserved in the database. */
    if (L->failing || L->no_grant || !L->keep_idle)
        return;
    op->lease_owner = L->owner[0] ? L->owner : NULL;
    for (o2 = ops; o2 != op; o2 = o2->next) {
        if (o2->kind == PROV_OP_RESERVE && o2->auth->key_id == op->auth->key_id
            && o2->model_id == op->model_id) {
            dup = 1;
            if (o2->lease_unit)
                break;
        }
    }
    if (o2 != op)
        return;                      /* an earlier one asks for the lease */
    s = prov_slot_find(L, op->auth->key_id, op->model_id);
    /* Leases are for keys with requests in flight together (this one
     * is counted already), or one right after another: the last one
     * ended within keep_idle, the time a lease of the key would be kept
     * (a lease granted then is returned no sooner than one of
     * overlapping requests; slower keys never get one). */
    if (!dup && !(s && (s->busy > 1 || prov_slot_recent(L, s, wall))))
        return;
    if (s && s->state == PROV_LEASE_OPEN && !s->closing)
        return;
    op->lease_floor = prov_i64_mul_sat(op->hold, PROV_LEASE_HOLDS_MIN);
    op->lease_unit = prov_i64_mul_sat(op->hold, PROV_LEASE_HOLDS);
    if (s && s->unit > op->lease_unit)
        op->lease_unit = s->unit;
}

prov_slot_t *prov_lease_handoff_take(prov_leases_t *L, prov_op_t *ops)
{
    prov_slot_t *work = NULL, *s;
    prov_op_t *op;
    apr_time_t wall = apr_time_now();
    apr_int64_t held[PROV_LEASE_HELD_MAX];
    int i, nheld, rows = 0;

    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        for (s = L->buckets[i]; s; s = s->next) {
            if (prov_slot_has_work(s) && take_slot(L, s, wall, &rows)) {
                s->work_next = work;
                work = s;
            }
        }
    }
    nheld = held_accounts(L, held);
    for (op = ops; op; op = op->next) {
        if (op->kind == PROV_OP_RESERVE)
            mark_reserve(L, ops, op, held, nheld, wall);
    }
    return work;
}

/* What prov_lease_handoff_done gathers on its way: the journal records
 * done, a segment (ticket) at a time, and the settlements to queue. */
typedef struct done_t {
    int ticket, written;
    prov_op_t *requeue;
} done_t;

/* A settlement that came while e's hold was being written: queued as an
 * ordinary settlement of the row just written. */
static void requeue_settled(done_t *d, const prov_entry_t *e)
{
    prov_reservation_t r;
    prov_op_t *c;
    memset(&r, 0, sizeof(r));
    r.row = e->row;
    c = prov_batch_async_settle(&r, &e->row.tokens, e->row.charge, e->row.status,
                                e->row.settled_at);
    if (c) {
        c->jticket = e->jticket;
        c->next = d->requeue;
        d->requeue = c;
    }
    else {
        prov_log(PROV_LOG_ERR, APR_ENOMEM, "PROV00053: request %s was not "
                 "settled (no memory); its hold stays until it expires",
                 e->row.request_id);
    }
}

/* e's row was committed: complete (done; its journal record too), or as a
 * hold (settled meanwhile: queued as a settlement; else settled later as
 * an ordinary one). */
static void entry_written(const prov_leases_t *L, prov_entry_t *e, done_t *d)
{
    if (e->complete) {
        /* Their journal records are done, a segment at a time. */
        if (e->jticket != d->ticket) {
            prov_journal_done_n(L->journal, d->ticket, d->written);
            d->ticket = e->jticket;
            d->written = 0;
        }
        d->written++;
        prov_entry_free(e);
    }
    else if (e->settled) {
        /* Settled while its hold was written: settle the row. */
        requeue_settled(d, e);
        prov_entry_free(e);
    }
    else {
        e->state = PROV_ENT_WRITTEN;
        e->slot = NULL;
    }
}

/* The batch failed: e goes back to s, unwritten, for the next one. */
static void entry_back(prov_slot_t *s, prov_entry_t *e)
{
    if (e->complete || e->settled) {
        if (!e->complete)
            s->drawn = prov_i64_add_sat(s->drawn,
                                        prov_i64_sub_sat(e->row.charge, e->row.hold));
        e->state = PROV_ENT_SETTLED;
        if (!s->settled_n++)
            s->settled_since = apr_time_now();
    }
    else {
        e->state = PROV_ENT_INFLIGHT;
    }
    prov_slot_pend(s, e);
}

/* s's lease after the batch (rv): returned, or kept with what the batch
 * wrote of it; on failure a lease being returned stays draining. */
static void slot_done(prov_slot_t *s, apr_status_t rv)
{
    if (rv == APR_SUCCESS) {
        s->drawn = prov_i64_sub_sat(s->drawn, s->writing);
        if (s->closing || s->res_gone) {
            prov_slot_clear(s);
        }
        else {
            s->amount = s->res_amount;
            s->at = s->res_at;
            if (s->renew)
                s->checked = s->admitted = apr_time_now();
            s->state = s->res_drain ? PROV_LEASE_DRAINING : PROV_LEASE_OPEN;
            if (s->res_windows.has_plan) {
                s->windows = s->res_windows;
                memcpy(s->plan_name, s->res_plan_name, sizeof(s->plan_name));
            }
        }
    }
    else if (s->closing) {
        s->state = PROV_LEASE_DRAINING;
    }
    s->writing = 0;
    s->closing = 0;
    s->renew = 0;
}

/* No more draws from the open leases of user_id (NULL: of everybody):
 * the next batch returns them. */
static void drain(prov_leases_t *L, const apr_int64_t *user_id)
{
    prov_slot_t *s;
    int i;
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        for (s = L->buckets[i]; s; s = s->next) {
            if ((!user_id || s->user_id == *user_id) && s->state == PROV_LEASE_OPEN)
                s->state = PROV_LEASE_DRAINING;
        }
    }
}

/* The lease op was granted, opened on its slot s at engine time now. */
static void lease_open(prov_slot_t *s, const prov_op_t *op, apr_int64_t now)
{
    s->state = PROV_LEASE_OPEN;
    memcpy(s->id, op->lease_id, sizeof(s->id));
    free(s->key_hash);
    s->key_hash = op->auth->key_hash ? strdup(op->auth->key_hash) : NULL;
    s->from_plan = op->out->row.from_plan;
    s->amount = op->granted;
    s->drawn = 0;
    s->unit = op->lease_unit;
    s->unit_max = prov_i64_mul_sat(op->hold, PROV_LEASE_HOLDS_MAX);
    if (s->unit_max < s->unit)
        s->unit_max = s->unit;
    s->exhausted = 0;
    s->at = now;
    s->checked = s->admitted = apr_time_now();
    s->windows = op->lease_windows;
    memcpy(s->plan_name, op->lease_plan_name, sizeof(s->plan_name));
}

/* A reservation of the batch: asked again (its account's leases drain
 * first), refused (no longer in flight), or reserved: counted on its slot,
 * with the lease it was granted. */
static void reserve_done(prov_leases_t *L, prov_op_t *op, apr_int64_t now)
{
    prov_slot_t *s;
    if (op->retry) {
        /* Refused while a lease of the account was held: return every
         * lease of it in the next batch, then check again. */
        drain(L, &op->auth->user_id);
        return;
    }
    if (!op->out) {
        if ((s = op->slot) != NULL) {
            op->slot = NULL;
            prov_slot_unbusy(L, s);
        }
        return;
    }
    if ((s = op->slot) == NULL
        && (s = prov_slot_get(L, op->auth->key_id, op->model_id, op->auth->user_id)) != NULL)
        prov_slot_busy(L, s);
    op->slot = NULL;
    if (!s) {                        /* no memory: it settles without a slot */
        if (op->granted > 0)
            prov_log(PROV_LOG_ERR, APR_ENOMEM, "PROV00054: lease %s is released when "
                     "it expires (no memory)", op->lease_id);
        return;
    }
    op->out->slot = s;
    if (op->granted > 0 && (s->state != PROV_LEASE_NONE || s->pending))
        prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00059: lease %s was granted to a key "
                 "that has one; it is released when it expires", op->lease_id);
    else if (op->granted > 0)
        lease_open(s, op, now);
}

prov_op_t *prov_lease_handoff_done(prov_leases_t *L, prov_slot_t *work, prov_op_t *ops,
                                   apr_int64_t now, apr_status_t rv)
{
    prov_op_t *op;
    prov_slot_t *s, *next_s;
    done_t d;
    int i;

    memset(&d, 0, sizeof(d));
    for (s = work; s; s = next_s) {
        prov_entry_t *e, *next;
        next_s = s->work_next;
        s->work_next = NULL;
        for (e = s->taken; e; e = next) {
            next = e->next;
            e->next = NULL;
            if (rv == APR_SUCCESS)
                entry_written(L, e, &d);
            else
                entry_back(s, e);
        }
        s->taken = NULL;
        slot_done(s, rv);
    }
    prov_journal_done_n(L->journal, d.ticket, d.written);
    for (op = ops; op; op = op->next) {
        if (op->kind == PROV_OP_RESERVE)
            reserve_done(L, op, now);
    }
    L->failing = rv != APR_SUCCESS;
    if (L->failing)
        drain(L, NULL);
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        for (s = L->buckets[i]; s; s = next_s) {
            next_s = s->next;
            prov_slot_maybe_free(L, s);
        }
    }
    prov_lease_keys_sweep(L, apr_time_now());
    return d.requeue;
}
