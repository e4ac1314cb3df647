/* prov_batch_lease.c: the database side of leases, inside a batch. A
 * lease is one held amount (a billing_leases row) from which a process draws
 * in memory (prov_lease.c). Here: writing the rows of the requests drawn
 * (complete when settled, as holds when still running), moving the lease's
 * own hold between buckets and the balance, renewing a kept lease (checked
 * again, topped up while half the room left covers it, drained near a
 * limit), granting a new one, and returning leases (closed, stale, or of a
 * dead process). The lease table in memory, and its hand-off to a batch,
 * are prov_lease.c and prov_lease_handoff.c. */
#include <string.h>
#include "prov_batch_int.h"
#include "prov_log.h"
#include "prov_store_billing.h"

/* A renewal smaller than this part of the lease's headroom is not worth it. */
#define LEASE_MIN_PART 64
/* A lease's id: the prefix and this many random bytes in hex. */
#define LEASE_ID_PREFIX "lease_"
#define LEASE_ID_BYTES 12
_Static_assert(sizeof(LEASE_ID_PREFIX) + 2 * LEASE_ID_BYTES <= PROV_LEASE_ID_MAX,
               "a lease id fits its room");

/* Moves amount of a lease's hold: into (amount > 0) or out of the buckets
 * of time at and the balance. */
static void lease_move(batch_t *b, const prov_slot_t *w, apr_int64_t at, prov_micro_t amount)
{
    if (!amount)
        return;
    prov_batch_usage(b, w->user_id, w->key_id, at, amount, w->from_plan, 0);
    if (!w->from_plan)
        prov_batch_balance(b, w->user_id, prov_i64_sub_sat(0, amount));
}

/* The settled entries among those taken, written whole (on PostgreSQL many
 * to a statement). */
static apr_status_t insert_complete(batch_t *b, const prov_entry_t *taken)
{
    apr_array_header_t *rows = apr_array_make(b->p, 8, sizeof(prov_ledger_row_t));
    const prov_entry_t *e;
    for (e = taken; e; e = e->next) {
        if (e->complete)
            *(prov_ledger_row_t *)apr_array_push(rows) = e->row;
    }
    return prov_store_bill_ledger_insert(b->s, (const prov_ledger_row_t *)rows->elts,
                                         rows->nelts, b->p);
}

/* Writes the entries a lease's slot handed over, and returns the lease (or
 * all but what its unwritten entries still hold: the base a renewal starts
 * from). */
apr_status_t prov_batch_lease_write(batch_t *b, prov_slot_t *w)
{
    apr_pool_t *p = b->p;
    prov_entry_t *e;
    apr_status_t rv;
    int n = 0;

    if ((rv = insert_complete(b, w->taken)) != APR_SUCCESS)
        return rv;
    for (e = w->taken; e; e = e->next) {
        prov_micro_t amount = e->complete ? e->row.charge : e->row.hold;
        if (!e->complete) {
            rv = prov_store_exec(b->s, NULL, "bill_ledger_reserve",
                PROV_ARGS(e->row.request_id, prov_i64(e->row.user_id, p), prov_i64(e->row.key_id,
                                                                                   p),
                          prov_i64(e->row.model_id, p), e->row.transport, prov_i64(e->row.hold, p),
                          prov_batch_source(e->row.from_plan), prov_i64(e->row.created_at, p),
                          e->owner && e->owner[0] ? e->owner : NULL, prov_i64(e->row.floor, p)), p);
            if (rv != APR_SUCCESS)
                return rv;
        }
        prov_batch_usage(b, e->row.user_id, e->row.key_id, e->row.created_at, amount,
                         e->row.from_plan, 1);
        if (!e->row.from_plan)
            prov_batch_balance(b, e->row.user_id, -amount);
    }
    if (!w->id[0])
        return APR_SUCCESS;
    if (w->closing) {
        rv = prov_store_exec(b->s, &n, "bill_lease_delete", PROV_ARGS(w->id), p);
        if (rv != APR_SUCCESS)
            return rv;
        if (n == 1)
            lease_move(b, w, w->at, -w->amount);
        else
            w->res_gone = 1;
        return APR_SUCCESS;
    }
    /* Kept: what the entries took leaves the lease (for a balance lease
     * that nets out with their charges); lease_keep writes the rest. */
    lease_move(b, w, w->at, -w->writing);
    return APR_SUCCESS;
}

/* What is left under the tightest limit of a lease's scope (negative when
 * a limit is passed, or the account no longer funds it this way). */
static prov_micro_t lease_room(const acct_t *a, const keyw_t *k, int from_plan)
{
    prov_micro_t room;
    if (from_plan) {
        prov_micro_t r7 = prov_i64_sub_sat(a->plan.quota_7d, a->w7.sum);
        if (!a->plan.has_plan)
            return -1;
        room = prov_i64_sub_sat(a->plan.quota_5h, a->w5.sum);
        if (r7 < room)
            room = r7;
    }
    else {
        if (a->plan.has_plan)
            return -1;
        room = a->balance;
    }
    if (k->has_budget && prov_i64_sub_sat(k->budget, k->w.sum) < room)
        room = prov_i64_sub_sat(k->budget, k->w.sum);
    return room;
}

/* Whether the key, account and model still allow the lease at all. */
static apr_status_t lease_valid(int *ok, batch_t *b, const prov_slot_t *w, const char *hash,
                                acct_t **pa, keyw_t **pk)
{
    int enabled = 0;
    apr_status_t rv;
    *ok = 0;
    if ((rv = prov_batch_account(pa, b, w->user_id)) != APR_SUCCESS
        || (rv = prov_batch_key(pk, b, w->key_id)) != APR_SUCCESS
        || (rv = prov_batch_model(&enabled, b, w->model_id)) != APR_SUCCESS)
        return rv;
    *ok = enabled && !(*pa)->blocked && (*pk)->live && (*pk)->hash
          && (!hash || !strcmp((*pk)->hash, hash))
          && (w->from_plan ? (*pa)->plan.has_plan : !(*pa)->plan.has_plan);
    return APR_SUCCESS;
}

/* The plan windows a drawn reservation reports: the account's use without
 * the unused part of the lease. */
static void lease_windows(prov_plan_windows_t *pw, char *name, apr_size_t len, const acct_t *a,
                          prov_micro_t unused, apr_int64_t now)
{
    memset(pw, 0, sizeof(*pw));
    name[0] = '\0';
    if (!a->plan.has_plan)
        return;
    *pw = a->plan;
    pw->plan_name = NULL;
    if (a->plan.plan_name)
        apr_cpystrn(name, a->plan.plan_name, len);
    pw->used_5h = prov_i64_sub_sat(a->w5.sum, unused);
    pw->used_7d = prov_i64_sub_sat(a->w7.sum, unused);
    if (pw->used_5h < 0)
        pw->used_5h = 0;
    if (pw->used_7d < 0)
        pw->used_7d = 0;
    pw->reset_5h = prov_window_reset(&a->w5, now);
    pw->reset_7d = prov_window_reset(&a->w7, now);
}

static void lease_add(batch_t *b, const prov_slot_t *w, acct_t *a, keyw_t *k,
                      prov_micro_t amount)
{
    lease_move(b, w, b->now, amount);
    if (k->has_budget)
        prov_window_add(&k->w, b->now, amount, b->p);
    if (w->from_plan) {
        prov_window_add(&a->w5, b->now, amount, b->p);
        prov_window_add(&a->w7, b->now, amount, b->p);
    }
    else {
        a->balance = prov_i64_sub_sat(a->balance, amount);
    }
}

/* A kept lease, after the batch's reservations: written with what is left
 * of it. When its headroom runs low, its unit grew or its last check is
 * old (w->renew), the key, account and model are checked again and it is
 * topped up to its headroom while half the room left covers that; it is
 * drained (no more draws) when they no longer allow it or a limit is
 * passed. It moves to the current bucket when topped up or when its own
 * bucket is over, so that it never leaves a window while it is held. */
apr_status_t prov_batch_lease_keep(batch_t *b, prov_slot_t *w)
{
    prov_micro_t base = prov_i64_sub_sat(w->amount, w->writing), extra = 0;
    apr_int64_t at = w->at;
    acct_t *a = NULL;
    keyw_t *k = NULL;
    int ok = 1, n = 0;
    apr_status_t rv;

    if (w->renew) {
        if ((rv = lease_valid(&ok, b, w, w->key_hash, &a, &k)) != APR_SUCCESS)
            return rv;
        if (ok) {
            /* Up to the headroom, never more than half of the room left:
             * near a limit leases shrink, and requests go to the database. */
            prov_micro_t want = prov_i64_sub_sat(w->unit,
                                                 prov_i64_sub_sat(w->amount, w->take_drawn)),
                         room = lease_room(a, k, w->from_plan);
            if (room < 0)
                ok = 0;              /* a limit was lowered below what is held */
            else if (want > 0)
                extra = want < room / 2 ? want : room / 2;
            if (extra < w->unit / LEASE_MIN_PART)
                extra = 0;
        }
    }
    if (extra || prov_bucket_of(at, PROV_BUCKET_MINUTES)
                 != prov_bucket_of(b->now, PROV_BUCKET_MINUTES))
        at = b->now;
    rv = prov_store_exec(b->s, &n, "bill_lease_update",
                         PROV_ARGS(prov_i64(prov_i64_add_sat(base, extra), b->p),
                                   prov_i64(at, b->p), w->id),
                         b->p);
    if (rv != APR_SUCCESS)
        return rv;
    if (n != 1) {
        /* Expired meanwhile (its process stopped renewing it for the hold
         * timeout): it is no longer held; what lease_write took out of it
         * goes back. */
        lease_move(b, w, w->at, w->writing);
        w->res_gone = 1;
        return APR_SUCCESS;
    }
    if (at != w->at) {
        lease_move(b, w, w->at, prov_i64_sub_sat(0, base));
        lease_move(b, w, at, base);
    }
    if (extra)
        lease_add(b, w, a, k, extra);
    w->res_amount = prov_i64_add_sat(base, extra);
    w->res_at = at;
    w->res_drain = !ok;
    if (w->renew && a)
        lease_windows(&w->res_windows, w->res_plan_name, sizeof(w->res_plan_name), a,
                      prov_i64_sub_sat(w->res_amount,
                                       prov_i64_sub_sat(w->take_drawn, w->writing)), b->now);
    return APR_SUCCESS;
}

/* A reservation of a key with others in flight: a lease of lease_unit (or
 * of half, a quarter... down to lease_floor) when the account funds it the
 * same way and room for as much again is left. */
apr_status_t prov_batch_lease_grant(batch_t *b, prov_op_t *op)
{
    prov_slot_t w;
    acct_t *a = NULL;
    keyw_t *k = NULL;
    unsigned char rnd[LEASE_ID_BYTES];
    prov_micro_t room;
    int ok = 0, i;
    apr_status_t rv;

    memset(&w, 0, sizeof(w));
    w.user_id = op->auth->user_id;
    w.key_id = op->auth->key_id;
    w.model_id = op->model_id;
    w.from_plan = op->out->row.from_plan;
    if ((rv = lease_valid(&ok, b, &w, op->auth->key_hash, &a, &k)) != APR_SUCCESS)
        return rv;
    if (!ok || op->lease_unit <= 0)
        return APR_SUCCESS;
    room = lease_room(a, k, w.from_plan);
    while (op->lease_unit > op->lease_floor && room < prov_i64_mul_sat(2, op->lease_unit))
        op->lease_unit = op->lease_unit / 2 > op->lease_floor ? op->lease_unit / 2
                                                               : op->lease_floor;
    if (room < prov_i64_mul_sat(2, op->lease_unit))
        return APR_SUCCESS;
    if (apr_generate_random_bytes(rnd, sizeof(rnd)) != APR_SUCCESS)
        return APR_SUCCESS;          /* no lease: requests reserve one by one */
    memcpy(op->lease_id, LEASE_ID_PREFIX, sizeof(LEASE_ID_PREFIX) - 1);
    for (i = 0; i < (int)sizeof(rnd); i++)
        apr_snprintf(op->lease_id + sizeof(LEASE_ID_PREFIX) - 1 + 2 * i, 3, "%02x", rnd[i]);
    rv = prov_store_exec(b->s, NULL, "bill_lease_insert",
                         PROV_ARGS(op->lease_id, prov_i64(w.user_id, b->p),
                                   prov_i64(w.key_id, b->p), prov_i64(w.model_id, b->p),
                                   prov_batch_source(w.from_plan),
                                   prov_i64(op->lease_unit, b->p),
                                   prov_i64(b->now, b->p), op->lease_owner), b->p);
    if (rv != APR_SUCCESS)
        return rv;
    lease_add(b, &w, a, k, op->lease_unit);
    op->granted = op->lease_unit;
    lease_windows(&op->lease_windows, op->lease_plan_name, sizeof(op->lease_plan_name), a,
                  op->lease_unit, b->now);
    return APR_SUCCESS;
}

/* Returns the leases that label (with one argument) selects, each once:
 * their rows deleted, what they held given back; *count counts them. */
apr_status_t prov_batch_lease_release(batch_t *b, const char *label, const char *arg, int *count)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *stale = apr_array_make(b->p, 4, sizeof(prov_slot_t));
    apr_status_t rv = prov_store_select(b->s, &res, label, PROV_ARGS(arg), b->p);
    int i;
    if (rv != APR_SUCCESS)
        return rv;
    while ((rv = prov_store_row(b->s, res, &row, b->p)) == APR_SUCCESS) {
        prov_slot_t *w = apr_array_push(stale);
        const char *id = prov_store_get(b->s, row, 0), *source = prov_store_get(b->s, row, 3);
        memset(w, 0, sizeof(*w));
        apr_cpystrn(w->id, id ? id : "", sizeof(w->id));
        w->user_id = prov_store_get_i64(b->s, row, 1, 0);
        w->key_id = prov_store_get_i64(b->s, row, 2, 0);
        w->from_plan = source && !strcmp(source, "plan");
        w->amount = prov_store_get_i64(b->s, row, 4, 0);
        w->at = prov_store_get_i64(b->s, row, 5, 0);
    }
    if (rv != APR_EOF)
        return rv;
    for (i = 0; i < stale->nelts; i++) {
        prov_slot_t *w = &APR_ARRAY_IDX(stale, i, prov_slot_t);
        int n = 0;
        if ((rv = prov_store_exec(b->s, &n, "bill_lease_delete", PROV_ARGS(w->id), b->p))
            != APR_SUCCESS)
            return rv;
        if (n == 1) {
            lease_move(b, w, w->at, -w->amount);
            (*count)++;
        }
    }
    return APR_SUCCESS;
}

/* Leases whose process stopped renewing them: released. */
apr_status_t prov_batch_lease_sweep(batch_t *b, apr_int64_t hold_timeout)
{
    int count = 0;
    apr_status_t rv = prov_batch_lease_release(b, "bill_stale_leases",
                                               prov_i64(b->now - hold_timeout, b->p), &count);
    if (rv != APR_SUCCESS)
        return rv;
    if (count)
        prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00056: released %d lease(s) not renewed for "
                 "%" APR_INT64_T_FMT " s (their process stopped)", count, hold_timeout);
    return APR_SUCCESS;
}

