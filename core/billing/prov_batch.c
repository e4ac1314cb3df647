/* prov_batch.c: one billing batch, in one transaction. First every
 * account the batch touches is locked (the store takes PostgreSQL row locks
 * in id order with the BEGIN, so that batches of different processes or
 * nodes queue instead of racing; SQLite's BEGIN IMMEDIATE already holds the
 * database).
 * Then settlements (and expired holds) complete their ledger rows and give
 * back the difference between hold and charge; journals are replayed and
 * holds dropped; the leases' entries are written; then reservations are
 * checked in order against what the database holds plus what earlier
 * operations of the batch took; then kept leases are renewed and new ones
 * granted. Bucket and balance changes are summed per row and written once
 * per batch. Also: a settlement copied out for a batch nobody waits for. */
#include <stdlib.h>
#include <string.h>
#include "prov_batch_int.h"
#include "prov_store_billing.h"
#include "prov_metrics.h"

/* The batch's transaction, holding every account it touches before
 * anything else (on PostgreSQL in the same round trip as its BEGIN). */
static apr_status_t begin(batch_t *b, prov_op_t *ops, prov_slot_t *work)
{
    apr_array_header_t *ids = apr_array_make(b->p, 8, sizeof(apr_int64_t));
    prov_op_t *op;
    prov_slot_t *w;
    int i;
    for (op = ops; op; op = op->next) {
        if (op->kind == PROV_OP_RESERVE)
            APR_ARRAY_PUSH(ids, apr_int64_t) = op->auth->user_id;
        else if (op->kind == PROV_OP_SETTLE)
            APR_ARRAY_PUSH(ids, apr_int64_t) = op->res->row.user_id;
        else if (op->kind == PROV_OP_REPLAY) {
            for (i = 0; i < op->nrecs; i++)
                APR_ARRAY_PUSH(ids, apr_int64_t) = op->recs[i].row.user_id;
        }
    }
    for (w = work; w; w = w->work_next)
        APR_ARRAY_PUSH(ids, apr_int64_t) = w->user_id;
    return prov_store_bill_begin(b->s, (apr_int64_t *)ids->elts, ids->nelts, b->p);
}


static apr_status_t run(batch_t *b, prov_op_t *ops, prov_slot_t *work, int do_sweep,
                        apr_int64_t hold_timeout)
{
    prov_op_t *op;
    prov_slot_t *w;
    int swept = 0, reads = 0;
    apr_status_t rv;

    if (do_sweep && ((rv = prov_batch_sweep(b, hold_timeout, &swept)) != APR_SUCCESS
                     || (rv = prov_batch_lease_sweep(b, hold_timeout)) != APR_SUCCESS))
        return rv;
    for (op = ops; op; op = op->next) {
        int moved = 0;
        if (op->kind == PROV_OP_SWEEP)
            op->swept = swept;
        if (op->kind != PROV_OP_SETTLE)
            continue;
        if ((rv = prov_batch_settle(b, op->res, &op->tokens, op->charge, op->status, &moved))
            != APR_SUCCESS)
            return rv;
        op->rv = moved ? APR_SUCCESS : APR_EINCOMPLETE;
    }
    for (op = ops; op; op = op->next) {
        if ((op->kind == PROV_OP_REPLAY && (rv = prov_batch_replay(b, op)) != APR_SUCCESS)
            || (op->kind == PROV_OP_DROP && (rv = prov_batch_drop(b, op)) != APR_SUCCESS))
            return rv;
    }
    for (w = work; w; w = w->work_next) {
        if ((rv = prov_batch_lease_write(b, w)) != APR_SUCCESS)
            return rv;
        if (!w->closing && w->renew)
            reads = 1;
    }
    for (op = ops; op; op = op->next)
        reads |= op->kind == PROV_OP_RESERVE;
    /* Reservations (and leases checked again) see the settlements' and
     * the written entries' effects through the database. */
    if (reads && (rv = prov_batch_flush(b)) != APR_SUCCESS)
        return rv;
    for (op = ops; op; op = op->next) {
        if (op->kind == PROV_OP_RESERVE && (rv = prov_batch_reserve(b, op)) != APR_SUCCESS)
            return rv;
    }
    for (w = work; w; w = w->work_next) {
        if (!w->closing && !w->res_gone && (rv = prov_batch_lease_keep(b, w)) != APR_SUCCESS)
            return rv;
    }
    for (op = ops; op; op = op->next) {
        if (op->kind == PROV_OP_RESERVE && op->out && op->lease_unit
            && (rv = prov_batch_lease_grant(b, op)) != APR_SUCCESS)
            return rv;
    }
    return prov_batch_flush(b);
}

/* The committed batch's size for the metrics: its operations and the
 * lease entries it wrote. */
static void observe_size(const prov_op_t *ops, const prov_slot_t *work)
{
    apr_int64_t n = 0;
    for (; ops; ops = ops->next)
        n++;
    for (; work; work = work->work_next)
        n++;
    prov_metrics_observe(prov_metrics_current(), PROV_MX_H_BATCH, n);
}

apr_status_t prov_batch_run(prov_store_t *s, prov_op_t *ops, prov_slot_t *work,
                            apr_int64_t now, int do_sweep, apr_int64_t hold_timeout,
                            apr_pool_t *p)
{
    prov_slot_t *w;
    apr_pool_t *bp = NULL;
    batch_t b;
    prov_op_t *op;
    apr_status_t rv;

    apr_pool_create(&bp, p);
    memset(&b, 0, sizeof(b));
    b.s = s;
    b.p = bp;
    b.accts = apr_hash_make(bp);
    b.keys = apr_hash_make(bp);
    b.models = apr_hash_make(bp);
    b.deltas = apr_hash_make(bp);
    b.balances = apr_hash_make(bp);
    b.now = now;
    for (op = ops; op; op = op->next) {
        if (op->now > b.now)
            b.now = op->now;
        op->rv = APR_SUCCESS;
        op->out = NULL;
        op->err = NULL;
        op->retry = 0;
        op->granted = 0;
    }
    for (w = work; w; w = w->work_next) {
        w->res_amount = 0;
        w->res_at = w->at;
        w->res_gone = w->res_drain = 0;
        memset(&w->res_windows, 0, sizeof(w->res_windows));
    }
    if ((rv = begin(&b, ops, work)) == APR_SUCCESS) {
        rv = run(&b, ops, work, do_sweep, hold_timeout);
        if (rv == APR_SUCCESS) {
            if ((rv = prov_store_commit(s, bp)) == APR_SUCCESS)
                observe_size(ops, work);
        }
        else
            prov_store_rollback(s, bp);
    }
    if (rv != APR_SUCCESS) {
        for (op = ops; op; op = op->next) {
            op->out = NULL;
            op->err = NULL;
            op->retry = 0;
            op->granted = 0;
        }
    }
    apr_pool_destroy(bp);
    return rv;
}

/* A settlement or release does not wait for its batch when another thread
 * is leading one: it is queued (copied out of the request's memory) and the
 * running leader commits it before its own request ends, so its thread can
 * answer at once. With no batch running, it leads its own batch and returns
 * the result, as a reservation always does. */
prov_op_t *prov_batch_async_settle(const prov_reservation_t *r, const prov_tokens_t *t,
                                   prov_micro_t charge, prov_status_e status, apr_int64_t now)
{
    apr_size_t lid = strlen(r->row.request_id) + 1, lt = strlen(r->row.transport) + 1;
    prov_op_t *c = calloc(1, sizeof(*c) + sizeof(*r) + lid + lt);
    prov_reservation_t *cr;
    char *str;
    if (!c)
        return NULL;
    c->kind = PROV_OP_SETTLE;
    c->now = now;
    if (t)
        c->tokens = *t;
    c->charge = charge;
    cr = (prov_reservation_t *)(c + 1);
    *cr = *r;
    str = (char *)(cr + 1);
    cr->row.request_id = memcpy(str, r->row.request_id, lid);
    cr->row.transport = memcpy(str + lid, r->row.transport, lt);
    c->status = status;
    cr->windows.plan_name = NULL;
    cr->slot = cr->entry = NULL;
    c->res = cr;
    c->async = 1;
    return c;
}
