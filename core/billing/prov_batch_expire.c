/* prov_batch_expire.c: holds given back without their request, inside a
 * batch: holds older than the hold timeout (their worker died), a dead
 * process's journal replayed (each settlement or progress once, then the
 * floors of its holds nobody settled, then its leases returned), and one
 * hold or lease released by hand (`providerctl hold release`). Each settles
 * rows exactly as the request would have. */
#include <string.h>
#include "prov_batch_int.h"
#include "prov_log.h"

/* The reserved rows that label (one argument) selects: request id, user,
 * key, source, hold, created at and floor, as reservations in *rows. */
static apr_status_t select_holds(apr_array_header_t **rows, batch_t *b, const char *label,
                                 const char *arg)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select(b->s, &res, label, PROV_ARGS(arg), b->p);
    *rows = apr_array_make(b->p, 8, sizeof(prov_reservation_t));
    if (rv != APR_SUCCESS)
        return rv;
    while ((rv = prov_store_row(b->s, res, &row, b->p)) == APR_SUCCESS) {
        prov_reservation_t *r = apr_array_push(*rows);
        const char *source = prov_store_get(b->s, row, 3);
        memset(r, 0, sizeof(*r));
        r->row.request_id = prov_store_get(b->s, row, 0);
        r->row.user_id = prov_store_get_i64(b->s, row, 1, 0);
        r->row.key_id = prov_store_get_i64(b->s, row, 2, 0);
        r->row.from_plan = source && !strcmp(source, "plan");
        r->row.hold = prov_store_get_i64(b->s, row, 4, 0);
        r->row.created_at = prov_store_get_i64(b->s, row, 5, 0);
        r->row.floor = prov_store_get_i64(b->s, row, 6, 0);
    }
    return rv == APR_EOF ? APR_SUCCESS : rv;
}

apr_status_t prov_batch_sweep(batch_t *b, apr_int64_t hold_timeout, int *count)
{
    apr_array_header_t *stale = NULL;
    apr_status_t rv = select_holds(&stale, b, "bill_stale_holds",
                                   prov_i64(b->now - hold_timeout, b->p));
    int i, moved;
    if (rv != APR_SUCCESS)
        return rv;
    for (i = 0; i < stale->nelts; i++) {
        prov_reservation_t *r = &APR_ARRAY_IDX(stale, i, prov_reservation_t);
        if ((rv = prov_batch_release_row(b, r, PROV_STATUS_EXPIRED, &moved)) != APR_SUCCESS)
            return rv;
        *count += moved;
    }
    if (stale->nelts)
        prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00051: released %d hold(s) older than %"
                 APR_INT64_T_FMT " s (their requests never settled)", *count, hold_timeout);
    return APR_SUCCESS;
}


/* The holds that the dead process owner took and that no record of its
 * journal settled (its records were all applied before): requests it died
 * under, whose prompt the gateway had read. Each is settled 'estimated' at
 * its floor (the charge of its input estimate, at most its hold), exactly
 * once (the row must still be reserved); *count counts them. */
static apr_status_t charge_floors(batch_t *b, const char *owner, int *count)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    apr_array_header_t *rows = NULL;
    apr_status_t rv = select_holds(&rows, b, "bill_owner_holds", owner);
    int i, moved;
    *count = 0;
    if (rv != APR_SUCCESS)
        return rv;
    /* Settled at the batch's time (its queue's latest), else now. */
    if (!b->now)
        b->now = prov_now();
    for (i = 0; i < rows->nelts; i++) {
        prov_reservation_t *r = &APR_ARRAY_IDX(rows, i, prov_reservation_t);
        const prov_ledger_row_t *w = &r->row;
        prov_micro_t charge = w->floor < 0 ? 0 : w->floor < w->hold ? w->floor : w->hold;
        if ((rv = prov_batch_settle(b, r, &none, charge, PROV_JOURNAL_PROGRESS_STATUS, &moved))
            != APR_SUCCESS)
            return rv;
        *count += moved;
    }
    return APR_SUCCESS;
}

/* A dead process's journal records (prov_replay.c): each
 * settlement exactly once. A hold still reserved is settled; a drawn
 * request whose row was never written gets it, charged as its lease's
 * batch would have; anything else was written before the process died.
 * A progress record (a request the process died under) goes the same way,
 * 'estimated' at the charge it carries. Then (op->owner) the holds of that
 * process that no record named are charged their floor, and the leases it
 * held are returned: together with the rows, exactly what it would have
 * written and returned, and what its requests in flight had cost. */
apr_status_t prov_batch_replay(batch_t *b, prov_op_t *op)
{
    apr_pool_t *p = b->p;
    apr_int64_t now = b->now;
    apr_status_t rv = APR_SUCCESS;
    int i, n, moved, leases = 0;

    op->swept = op->progressed = op->floors = 0;
    for (i = 0; i < op->nrecs && rv == APR_SUCCESS; i++) {
        const prov_journal_rec_t *j = &op->recs[i];
        const prov_ledger_row_t *w = &j->row;
        prov_reservation_t r;
        memset(&r, 0, sizeof(r));
        r.row = *w;
        b->now = w->settled_at;      /* the row says when it was settled */
        rv = prov_batch_settle(b, &r, &w->tokens, w->charge, w->status, &moved);
        b->now = now;
        if (rv != APR_SUCCESS || moved || !j->drawn) {
            op->swept += moved;
            op->progressed += moved && j->progress;
            continue;
        }
        n = 0;
        rv = prov_store_exec(b->s, &n, "bill_ledger_replay",
            PROV_ARGS(w->request_id, prov_i64(w->user_id, p), prov_i64(w->key_id, p),
                      prov_i64(w->model_id, p), w->transport, prov_i64(w->tokens.input, p),
                      prov_i64(w->tokens.output, p), prov_i64(w->tokens.cache, p),
                      prov_i64(w->tokens.reasoning, p), prov_i64(w->hold, p),
                      prov_i64(w->charge, p), prov_i64(w->from_plan ? w->charge : 0, p),
                      prov_batch_source(w->from_plan), prov_ledger_status_name(w->status),
                      prov_i64(w->created_at, p), prov_i64(w->settled_at, p)), p);
        if (rv == APR_SUCCESS && n == 1) {
            prov_batch_usage(b, w->user_id, w->key_id, w->created_at, w->charge, w->from_plan, 1);
            if (!w->from_plan)
                prov_batch_balance(b, w->user_id, -w->charge);
            op->swept++;
            op->progressed += j->progress;
        }
    }
    if (rv == APR_SUCCESS && op->owner)
        rv = charge_floors(b, op->owner, &op->floors);
    if (rv == APR_SUCCESS && op->owner)
        rv = prov_batch_lease_release(b, "bill_owner_leases", op->owner, &leases);
    op->returned = leases;
    return rv;
}

/* One hold or lease given back by hand (op->request_id): as an expiry. */
apr_status_t prov_batch_drop(batch_t *b, prov_op_t *op)
{
    apr_array_header_t *rows = NULL;
    apr_status_t rv;
    int moved = 0;

    op->swept = 0;
    if ((rv = prov_batch_lease_release(b, "bill_lease_by_id", op->request_id, &op->swept))
        != APR_SUCCESS || op->swept)
        return rv;
    if ((rv = select_holds(&rows, b, "bill_hold_by_id", op->request_id)) != APR_SUCCESS)
        return rv;
    if (rows->nelts) {
        apr_int64_t now = b->now;
        b->now = op->at;             /* the row says when it was released */
        rv = prov_batch_release_row(b, &APR_ARRAY_IDX(rows, 0, prov_reservation_t), op->status,
                                    &moved);
        b->now = now;
    }
    op->swept = moved;
    return rv;
}
