/* prov_billing.c: the spend engine's public entry points for a request
 * (prov_billing.h), the top layer: the estimate; a reservation (drawn
 * from this process's lease when one has room, after a read of the key
 * when nothing else of it is in flight, else queued for a batch; a drawn
 * one's floor journaled); the progress of a request in flight; a
 * settlement or release (journaled first when it is
 * answered before its row is committed, then left to the writer thread,
 * to a running leader or run in a batch of its own); and the account and
 * key status that providerctl and the cabinet show. */
#include <string.h>
#include "prov_billing_int.h"
#include "prov_log.h"

/* The input estimate: tokenizers average 3-4 bytes per token on prose; take
 * 3, and an overhead per message and per request, so that the hold errs on
 * the side of covering the charge. */
#define EST_BYTES_PER_TOKEN 3
#define EST_TOKENS_PER_MESSAGE 8
#define EST_TOKENS_PER_REQUEST 16
/* A journal that cannot be written is logged at most this often. */
#define JOURNAL_LOG_EVERY apr_time_from_sec(60)

static void journal_floor(prov_reservation_t *r, apr_int64_t now);

apr_int64_t prov_billing_input_estimate(apr_size_t prompt_bytes, int n_messages)
{
    apr_int64_t est = prompt_bytes / EST_BYTES_PER_TOKEN > (apr_size_t)APR_INT64_MAX
                      ? APR_INT64_MAX : (apr_int64_t)(prompt_bytes / EST_BYTES_PER_TOKEN);
    est = prov_i64_add_sat(est, prov_i64_mul_sat(EST_TOKENS_PER_MESSAGE,
                                                 n_messages > 0 ? n_messages : 0));
    return prov_i64_add_sat(est, EST_TOKENS_PER_REQUEST);
}

/* Whether the database still admits auth's key: live, with the secret the
 * request showed, its account not blocked. Asked before a draw from a
 * lease that nothing else of the key has used for PROV_LEASE_LONE_GAP
 * (requests one after another): a key deleted or reissued, or an account
 * blocked, is then refused at once by the reservation in a batch that a
 * "no" (or a failure) sends the request to, as without a lease.
 * Overlapping requests draw without it, and so do requests beside the key's
 * requests of another model while the key was seen admitted within
 * PROV_LEASE_CHECK_EVERY (prov_lease_lone); the lease's renewal checks the
 * key every PROV_LEASE_CHECK_EVERY. */
static int admitted(const prov_store_source_t *src, const prov_auth_t *auth, apr_pool_t *p)
{
    prov_store_t *s = NULL;
    apr_dbd_row_t *row = NULL;
    const char *hash;
    int ok = 0;
    if (src->open(&s, src->baton, p) != APR_SUCCESS)
        return 0;
    if (prov_store_select_one(&row, s, "bill_admit", PROV_ARGS(prov_i64(auth->key_id, p)), p)
        == APR_SUCCESS) {
        hash = prov_store_get(s, row, 0);
        ok = hash && (!auth->key_hash || !strcmp(hash, auth->key_hash))
             && prov_store_get_i64(s, row, 1, 1) == 0;
    }
    src->close(s, src->baton);
    return ok;
}

apr_status_t prov_billing_reserve(prov_reservation_t **r, prov_error_t **err,
                                  const prov_store_source_t *src, const prov_auth_t *auth,
                                  apr_int64_t model_id, const char *transport,
                                  const char *request_id, prov_micro_t hold, apr_int64_t now,
                                  apr_pool_t *p)
{
    prov_hold_ask_t ask = { hold, hold, 0, NULL, PROV_CLIENT_NONE };
    return prov_billing_reserve_ask(r, err, src, auth, model_id, transport, request_id, &ask,
                                    now, p);
}

apr_status_t prov_billing_reserve_ask(prov_reservation_t **r, prov_error_t **err,
                                      const prov_store_source_t *src, const prov_auth_t *auth,
                                      apr_int64_t model_id, const char *transport,
                                      const char *request_id, const prov_hold_ask_t *ask,
                                      apr_int64_t now, apr_pool_t *p)
{
    prov_op_t op;
    apr_status_t rv;
    prov_queue_t *q;
    prov_micro_t hold = ask->hold < 0 ? 0 : ask->hold, floor = ask->floor < 0 ? 0 : ask->floor;
    int drawn = 0, ok = 1;
    prov_queue_lock();
    memset(&op, 0, sizeof(op));
    if ((q = prov_queue_of(src->channel)) != NULL) {
        if (prov_lease_lone(&q->leases, auth, model_id)) {
            prov_queue_unlock();
            ok = admitted(src, auth, p);
            prov_queue_lock();
            if (ok)
                prov_lease_admitted(&q->leases, auth, model_id);
        }
        op.transport = transport;
        op.request_id = request_id;
        op.session = ask->session;
        op.client = ask->client;
        drawn = ok && prov_lease_draw(&q->leases, r, auth, model_id, &op, hold, now, p);
        if (drawn) {
            (*r)->queue = q;
            (*r)->row.floor = floor;
            ((prov_entry_t *)(*r)->entry)->row.floor = floor;
        }
        else {
            op.auth = auth;
            op.model_id = model_id;
            op.no_draw = !ok;
            op.floor = floor;
            op.hold_owner = q->leases.owner[0] ? apr_pstrdup(p, q->leases.owner) : NULL;
            prov_lease_pending(&q->leases, &op);
        }
    }
    prov_queue_unlock();
    if (drawn) {
        journal_floor(*r, now);
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
    op.session = ask->session;
    op.client = ask->client;
    op.hold = hold;
    op.hold_min = ask->hold_min > 0 && ask->hold_min < op.hold ? ask->hold_min : op.hold;
    op.floor = floor;
    if ((rv = prov_queue_submit(&op, src, p)) != APR_SUCCESS)
        return rv;
    *r = op.out;
    if (op.out) {
        op.out->queue = q;
        journal_floor(op.out, now);  /* drawn as its batch ended */
    }
    *err = op.err;
    return APR_SUCCESS;
}

/* A journal record of r: its settlement (or progress) at now. */
static void journal_rec(prov_journal_rec_t *rec, const prov_reservation_t *r,
                        const prov_tokens_t *t, prov_micro_t charge, prov_status_e status,
                        apr_int64_t now)
{
    memset(rec, 0, sizeof(*rec));
    rec->row = r->row;
    prov_ledger_row_settle(&rec->row, t, charge, status, now);
    rec->drawn = r->entry != NULL;
}

/* Appends r's settlement to the queue's journal, if it has one, before
 * anything can answer the request; returns the record's ticket (0: none).
 * Without the engine's mutex: the request's queue is known from its
 * reservation, and the journal is not closed while q->jusers counts this
 * thread (*used: the caller uncounts it once it holds the mutex again). */
static int journal_note(int *used, const prov_store_source_t *src,
                        prov_reservation_t *r, const prov_tokens_t *t, prov_micro_t charge,
                        prov_status_e status, apr_int64_t now)
{
    static volatile apr_time_t failed_at;
    prov_journal_rec_t rec;
    prov_journal_t *j = NULL;
    prov_queue_t *q;
    apr_status_t rv;
    int ticket = 0;
    if ((q = r->queue) == NULL) {
        prov_queue_lock();
        q = prov_queue_of(src->channel);
        prov_queue_unlock();
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
    journal_rec(&rec, r, t, charge, status, now);
    if ((rv = prov_journal_append(j, &rec, &ticket)) != APR_SUCCESS
        && apr_time_now() - failed_at > JOURNAL_LOG_EVERY) {
        failed_at = apr_time_now();
        prov_log(PROV_LOG_ERR, rv, "PROV00382: request %s could not be journaled; if this "
                 "process dies before its row is written, the row is lost", r->row.request_id);
    }
    /* The settlement stands for the request from here: its floor may go. */
    prov_journal_done_kept(j, r->floor_ticket);
    r->floor_ticket = 0;
    return ticket;
}

/* Appends r's progress to its queue's journal, if it has one; keep: a
 * record that keeps its segment until prov_journal_done_kept(*keep). */
static void journal_progress(const prov_reservation_t *r, const prov_tokens_t *t,
                             prov_micro_t charge, apr_int64_t now, int *keep)
{
    prov_journal_rec_t rec;
    prov_journal_t *j;
    prov_queue_t *q = r ? r->queue : NULL;
    int ticket = 0;
    if (!q || r->settled)
        return;
    __atomic_add_fetch(&q->jusers, 1, __ATOMIC_SEQ_CST);
    if ((j = __atomic_load_n(&q->leases.journal, __ATOMIC_SEQ_CST)) != NULL) {
        journal_rec(&rec, r, t, charge < 0 ? 0 : charge, PROV_JOURNAL_PROGRESS_STATUS, now);
        rec.progress = 1;
        rec.keep = keep != NULL;
        /* A full journal loses a progress record: the replay then charges
         * the hold's floor (a drawn request's: nothing). */
        (void)prov_journal_append(j, &rec, keep ? keep : &ticket);
    }
    __atomic_sub_fetch(&q->jusers, 1, __ATOMIC_SEQ_CST);
}

void prov_billing_progress(const prov_reservation_t *r, const prov_tokens_t *t,
                           prov_micro_t charge, apr_int64_t now)
{
    journal_progress(r, t, charge, now, NULL);
}

/* A request drawn from a lease has no row until it is settled (or a
 * second old), so no floor_credits for the replay of its process's journal
 * to charge: its floor goes to the journal as its first progress (no
 * tokens, at most its hold: what a hold's row without a record is
 * charged), kept until its settlement is journaled (journal_note). */
static void journal_floor(prov_reservation_t *r, apr_int64_t now)
{
    if (r && r->entry && r->row.floor > 0)
        journal_progress(r, NULL, r->row.floor < r->row.hold ? r->row.floor : r->row.hold, now,
                         &r->floor_ticket);
}

/* The settlement of r (core/README's glossary; what the glue's commit
 * calls): its hold replaced by the charge with tokens t, or released with
 * no charge when t is NULL; journaled first when answered before its row is
 * committed; a drawn request settles in its lease, the others in a batch. */
static apr_status_t settle_hold(const prov_store_source_t *src, prov_reservation_t *r,
                                const prov_tokens_t *t, prov_micro_t charge,
                                prov_status_e status, apr_int64_t now, apr_pool_t *p)
{
    prov_op_t op;
    apr_status_t rv;
    prov_queue_t *q;
    int handled = PROV_LEASE_SETTLE_QUEUE, idle = 1, writer = 0, ticket, used = 0;
    if (r->settled)
        return APR_EINCOMPLETE;
    ticket = journal_note(&used, src, r, t, charge < 0 ? 0 : charge, status, now);
    prov_queue_lock();
    if ((q = prov_queue_of(src->channel)) != NULL) {
        if (used)
            __atomic_sub_fetch(&q->jusers, 1, __ATOMIC_SEQ_CST);
        if (r->entry)
            ((prov_entry_t *)r->entry)->jticket = ticket;
        handled = prov_lease_settle(&q->leases, r, t, charge < 0 ? 0 : charge, status, now);
        /* Without its journal (wanted, not open yet) nothing is answered
         * before it is committed. */
        idle = prov_queue_idle(q) || q->leases.no_grant;
        writer = q->writer != NULL;
        /* A drawn request: the writer thread writes it (and returns the
         * lease). */
        if (handled && writer && prov_lease_due(&q->leases))
            prov_queue_wake_writer(q);
    }
    prov_queue_unlock();
    if (handled) {
        r->settled = 1;
        /* Drawn from a lease that a stopped writer left: this thread
         * writes its row (and returns the lease once its key is idle). */
        if (!writer && (rv = prov_queue_flush(src, now, p)) != APR_SUCCESS)
            prov_log(PROV_LOG_ERR, rv, "PROV00055: request %s was settled but not "
                     "written yet; the next batch writes it", r->row.request_id);
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
        rv = c ? prov_queue_submit(c, src, p) : prov_queue_submit(&op, src, p);
    }
    if (rv == APR_SUCCESS || rv == APR_EINCOMPLETE)
        r->settled = 1;
    return rv;
}

apr_status_t prov_billing_settle(const prov_store_source_t *src, prov_reservation_t *r,
                                 const prov_tokens_t *t, prov_micro_t charge, prov_status_e status,
                                 apr_int64_t now, apr_pool_t *p)
{
    return settle_hold(src, r, t, charge, status, now, p);
}

apr_status_t prov_billing_release(const prov_store_source_t *src, prov_reservation_t *r,
                                  prov_status_e status, apr_int64_t now, apr_pool_t *p)
{
    return settle_hold(src, r, NULL, 0, status, now, p);
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
    rv = prov_window_plan(&st->windows, &w5, &w7, s, user_id, now, p);
    if (rv != APR_SUCCESS || !st->windows.has_plan)
        return rv;
    if ((rv = prov_window_list(&w5, s, p)) != APR_SUCCESS
        || (rv = prov_window_list(&w7, s, p)) != APR_SUCCESS)
        return rv;
    st->full_5h = prov_window_full(&w5, now);
    st->full_7d = prov_window_full(&w7, now);
    return APR_SUCCESS;
}

apr_status_t prov_billing_key_status(prov_micro_t *spent_7d, apr_int64_t *reset, prov_store_t *s,
                                     apr_int64_t key_id, apr_int64_t now, apr_pool_t *p)
{
    prov_window_t w;
    apr_dbd_row_t *row = NULL;
    prov_micro_t leased = 0;
    apr_status_t rv = prov_window_sum(&w, s, "key:h", key_id, PROV_BUCKET_HOUR, PROV_WINDOW_7D,
                                      0, now, p);
    if (rv != APR_SUCCESS)
        return rv;
    /* A lease is in the key's buckets whole; what its requests drew and
     * their charges settled are written as rows within a second or so: the
     * undrawn rest is no spend (the checks still count the whole lease). */
    if ((rv = prov_store_select_one(&row, s, "bill_key_leased",
                                    PROV_ARGS(prov_i64(key_id, p)), p)) == APR_SUCCESS)
        leased = prov_store_get_i64(s, row, 0, 0);
    else if (rv != APR_NOTFOUND)
        return rv;
    *spent_7d = w.sum > leased ? w.sum - leased : 0;
    *reset = prov_window_reset(&w, now);
    return APR_SUCCESS;
}
