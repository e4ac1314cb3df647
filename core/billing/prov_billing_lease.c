/* prov_billing_lease.c: the in-memory half of billing leases. A queue
 * (one database) keeps a slot per key and model that this process serves:
 * how many of their reservations are in flight and, under concurrent load,
 * a lease: an amount the database holds for this process, from which
 * requests draw without a transaction. A drawn request is an entry until a
 * batch writes its ledger row: complete when it was settled by then, as an
 * ordinary hold when it is still running after a second (streams), or when
 * the lease is returned. Here: drawing, settling a drawn request, choosing
 * what the next batch writes, renews or returns, and applying its result.
 * Every function runs under the engine's queue mutex (prov_billing.c); the
 * SQL of it is in prov_billing_batch.c. */
#include <stdlib.h>
#include <string.h>
#include "prov_billing_int.h"
#include "prov_log.h"

/* The headroom a lease aims for, in holds of the request that asked for it,
 * and how far it grows when requests find it too small. */
#define LEASE_HOLDS     256
#define LEASE_HOLDS_MAX 4096
/* With a writer thread a lease also covers rows settled but not written yet
 * (up to a group and a batch's time): it starts larger where the limits
 * have room for it, and never smaller than without one. */
#define LEASE_HOLDS_WRITER 1024
/* Without a writer thread, a key whose lease was returned this recently
 * gets a new one with its next reservation (its requests come and go in
 * waves). */
#define LEASE_RECENT apr_time_from_sec(1)
/* A drawn request still running after this long gets its hold written. */
#define ENTRY_WRITE_AFTER apr_time_from_sec(1)
/* Settled entries wait for company before a batch writes them, while more
 * requests of the key are in flight and new ones keep coming: at most this
 * many, this long. */
#define WRITE_GROUP 32
#define WRITE_WAIT apr_time_from_msec(2)
#define WRITE_BUSY 4
/* With a writer thread nobody waits for them: larger groups, fewer
 * transactions. */
#define WRITER_GROUP 128
#define WRITER_WAIT apr_time_from_msec(10)
/* How often a lease in use is checked against the key, account and model
 * again (a deleted key or a blocked account stops drawing within this). */
#define LEASE_CHECK_EVERY apr_time_from_msec(100)
/* Accounts with a lease told apart when a batch is taken; beyond, every
 * refusal is checked twice. */
#define HELD_MAX 64

static unsigned slot_hash(apr_int64_t key_id, apr_int64_t model_id)
{
    apr_uint64_t h = (apr_uint64_t)key_id * 0x9E3779B97F4A7C15ULL ^ (apr_uint64_t)model_id;
    return (unsigned)(h >> 32) % 64;
}

static prov_slot_t *slot_find(const prov_leases_t *L, apr_int64_t key_id, apr_int64_t model_id)
{
    prov_slot_t *s;
    for (s = L->buckets[slot_hash(key_id, model_id)]; s; s = s->next) {
        if (s->key_id == key_id && s->model_id == model_id)
            return s;
    }
    return NULL;
}

static prov_slot_t *slot_get(prov_leases_t *L, apr_int64_t key_id, apr_int64_t model_id,
                             apr_int64_t user_id)
{
    prov_slot_t *s = slot_find(L, key_id, model_id);
    unsigned h;
    if (s)
        return s;
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return NULL;
    s->key_id = key_id;
    s->model_id = model_id;
    s->user_id = user_id;
    h = slot_hash(key_id, model_id);
    s->next = L->buckets[h];
    L->buckets[h] = s;
    return s;
}

static void lease_clear(prov_slot_t *s)
{
    if (s->state != PROV_LEASE_NONE)
        s->closed_at = apr_time_now();
    free(s->key_hash);
    s->key_hash = NULL;
    s->state = PROV_LEASE_NONE;
    s->amount = 0;
    s->id[0] = '\0';
}

/* A slot with nothing in flight and no lease is forgotten. */
static void slot_maybe_free(prov_leases_t *L, prov_slot_t *s)
{
    prov_slot_t **pp;
    if (!s || s->busy > 0 || s->state != PROV_LEASE_NONE || s->pending || s->taken
        || apr_time_now() - s->closed_at < LEASE_RECENT)
        return;
    for (pp = &L->buckets[slot_hash(s->key_id, s->model_id)]; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            free(s->key_hash);
            free(s);
            return;
        }
    }
}

/* One reservation of s fewer in flight. */
static void slot_unbusy(prov_slot_t *s)
{
    if (--s->busy == 0)
        s->idle_since = apr_time_now();
}

/* Whether s's lease is returned now that nothing of its key is in flight
 * (at once without a writer thread; with one, after its keep_idle). */
static int slot_idle_over(const prov_leases_t *L, const prov_slot_t *s, apr_time_t wall)
{
    return !s->busy && (!L->keep_idle || L->stopping || wall - s->idle_since >= L->keep_idle);
}

static void entry_free(prov_entry_t *e)
{
    free(e->request_id);
    free(e->transport);
    free(e);
}

static prov_micro_t entry_amount(const prov_entry_t *e)
{
    return e->state == PROV_ENT_SETTLED ? e->charge : e->hold;
}

int prov_lease_draw(prov_leases_t *L, prov_reservation_t **pr, const prov_auth_t *auth,
                    apr_int64_t model_id, const char *transport, const char *request_id,
                    prov_micro_t hold, apr_int64_t now, apr_pool_t *p)
{
    prov_slot_t *s = slot_find(L, auth->key_id, model_id);
    prov_reservation_t *r;
    prov_entry_t *e;

    if (!s || s->state != PROV_LEASE_OPEN || L->failing || s->user_id != auth->user_id)
        return 0;
    if (auth->key_hash && (!s->key_hash || strcmp(s->key_hash, auth->key_hash)))
        return 0;
    if (prov_i64_add_sat(s->drawn, hold) > s->amount) {
        s->exhausted = 1;
        return 0;
    }
    if ((e = calloc(1, sizeof(*e))) == NULL)
        return 0;
    e->request_id = strdup(request_id);
    e->transport = strdup(transport);
    if (!e->request_id || !e->transport) {
        entry_free(e);
        return 0;
    }
    e->slot = s;
    e->state = PROV_ENT_INFLIGHT;
    e->user_id = auth->user_id;
    e->key_id = auth->key_id;
    e->model_id = model_id;
    e->created_at = now;
    e->drawn_at = apr_time_now();
    e->from_plan = s->from_plan;
    e->hold = hold;
    e->next = s->pending;
    s->pending = e;
    s->drawn = prov_i64_add_sat(s->drawn, hold);
    s->busy++;
    s->last_draw = e->drawn_at;

    r = apr_pcalloc(p, sizeof(*r));
    r->request_id = apr_pstrdup(p, request_id);
    r->user_id = auth->user_id;
    r->key_id = auth->key_id;
    r->model_id = model_id;
    r->transport = apr_pstrdup(p, transport);
    r->hold = hold;
    r->from_plan = s->from_plan;
    r->created_at = now;
    r->leased = 1;
    r->windows = s->windows;
    r->windows.plan_name = s->windows.has_plan ? apr_pstrdup(p, s->plan_name) : NULL;
    r->slot = s;
    r->entry = e;
    *pr = r;
    return 1;
}

void prov_lease_pending(prov_leases_t *L, prov_op_t *op)
{
    op->slot = slot_get(L, op->auth->key_id, op->model_id, op->auth->user_id);
    if (op->slot)
        op->slot->busy++;
}

int prov_lease_settle(prov_leases_t *L, prov_reservation_t *r, const prov_tokens_t *t,
                      prov_micro_t charge, const char *status, apr_int64_t now)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    prov_slot_t *s = r->slot;
    prov_entry_t *e = r->entry;

    r->slot = NULL;
    r->entry = NULL;
    if (s)
        slot_unbusy(s);
    if (!e) {
        slot_maybe_free(L, s);
        return 0;
    }
    if (e->state == PROV_ENT_WRITTEN) {
        /* Its hold is in the ledger: an ordinary settlement from here. */
        entry_free(e);
        slot_maybe_free(L, s);
        return 0;
    }
    e->tokens = t ? *t : none;
    e->charge = charge;
    e->settled_at = now;
    apr_cpystrn(e->status, status, sizeof(e->status));
    if (e->state == PROV_ENT_INFLIGHT) {
        e->state = PROV_ENT_SETTLED;
        e->slot->drawn = prov_i64_add_sat(e->slot->drawn, prov_i64_sub_sat(charge, e->hold));
        if (!e->slot->settled_n++)
            e->slot->settled_since = apr_time_now();
    }
    else {
        e->settled = 1;              /* WRITING: queued as a settlement when written */
    }
    return s && !s->busy ? 2 : 1;
}

/* Whether a slot still has a lease held in the database or entries. */
static int has_work(const prov_slot_t *s)
{
    return s->state != PROV_LEASE_NONE || s->pending;
}

prov_slot_t *prov_lease_take(prov_leases_t *L, prov_op_t *ops)
{
    prov_slot_t *work = NULL, *s;
    prov_op_t *op, *o2;
    apr_time_t wall = apr_time_now();
    apr_int64_t held[HELD_MAX];
    int i, nheld = 0, rows = 0;

    for (i = 0; i < 64; i++) {
        for (s = L->buckets[i]; s; s = s->next) {
            prov_entry_t *e, *next, *keep = NULL;
            int closing, left = 0;
            if (!has_work(s))
                continue;
            closing = s->state != PROV_LEASE_OPEN || slot_idle_over(L, s, wall);
            s->writing = 0;
            s->take_drawn = s->drawn;
            for (e = s->pending; e; e = next) {
                next = e->next;
                if ((rows < PROV_BATCH_ROWS_MAX || closing)
                    && (closing || e->state == PROV_ENT_SETTLED
                        || wall - e->drawn_at >= ENTRY_WRITE_AFTER)) {
                    rows++;
                    s->writing = prov_i64_add_sat(s->writing, entry_amount(e));
                    e->complete = e->state == PROV_ENT_SETTLED;
                    e->settled = 0;
                    e->state = PROV_ENT_WRITING;
                    e->next = s->taken;
                    s->taken = e;
                }
                else {
                    e->next = keep;
                    keep = e;
                    left += e->state == PROV_ENT_SETTLED;
                }
            }
            s->pending = keep;
            /* Settled rows left for the next batch are due at once. */
            s->settled_n = left;
            if (left)
                s->settled_since = wall - WRITER_WAIT;
            if (!closing && s->exhausted && s->unit) {
                s->unit = prov_i64_mul_sat(s->unit, 2);
                if (s->unit > s->unit_max)
                    s->unit = s->unit_max;
            }
            s->renew = !closing && (s->exhausted
                                    || prov_i64_sub_sat(s->amount, s->drawn) < s->unit / 2
                                    || wall - s->checked >= LEASE_CHECK_EVERY);
            /* A lease with enough headroom and nothing to write waits. */
            if (!closing && !s->taken && !s->renew)
                continue;
            s->exhausted = 0;
            s->closing = closing;
            if (closing)
                s->state = PROV_LEASE_DRAINING;
            s->res_amount = 0;
            s->res_gone = s->res_drain = 0;
            s->work_next = work;
            work = s;
        }
    }
    /* The accounts with a lease that this batch keeps. */
    for (i = 0; i < 64; i++) {
        for (s = L->buckets[i]; s; s = s->next) {
            if (s->state == PROV_LEASE_NONE || s->closing)
                continue;
            if (nheld < HELD_MAX)
                held[nheld] = s->user_id;
            nheld++;
        }
    }
    for (op = ops; op; op = op->next) {
        int dup = 0;
        if (op->kind != PROV_OP_RESERVE)
            continue;
        op->lease_unit = 0;
        op->retry_ok = 0;
        /* A refusal while this process holds a lease of the account is
         * checked again once the lease is returned: the lease's unused
         * part must not refuse anybody. */
        if (!op->retried) {
            op->retry_ok = nheld > HELD_MAX;
            for (i = 0; i < nheld && i < HELD_MAX && !op->retry_ok; i++)
                op->retry_ok = held[i] == op->auth->user_id;
        }
        if (L->failing || L->no_grant)
            continue;
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
            continue;                /* an earlier one asks for the lease */
        s = slot_find(L, op->auth->key_id, op->model_id);
        /* Leases are for keys with requests in flight together (this one
         * is counted already), or (without a writer thread, which keeps a
         * lease through short gaps) that had one a moment ago. */
        if (!dup && !(s && (s->busy > 1
                            || (!L->keep_idle && wall - s->closed_at < LEASE_RECENT))))
            continue;
        if (s && s->state == PROV_LEASE_OPEN && !s->closing)
            continue;
        op->lease_floor = prov_i64_mul_sat(op->hold, LEASE_HOLDS);
        op->lease_unit = prov_i64_mul_sat(op->hold,
                                          L->keep_idle ? LEASE_HOLDS_WRITER : LEASE_HOLDS);
        if (s && s->unit > op->lease_unit)
            op->lease_unit = s->unit;
    }
    return work;
}

prov_op_t *prov_lease_done(prov_leases_t *L, prov_slot_t *work, prov_op_t *ops, apr_int64_t now,
                           apr_status_t rv)
{
    prov_op_t *requeue = NULL, *op;
    prov_slot_t *s, *next_s;
    int i, ticket = 0, written = 0;

    for (s = work; s; s = next_s) {
        prov_entry_t *e, *next;
        next_s = s->work_next;
        s->work_next = NULL;
        for (e = s->taken; e; e = next) {
            next = e->next;
            e->next = NULL;
            if (rv == APR_SUCCESS) {
                if (e->complete) {
                    /* Their journal records are done, a segment at a time. */
                    if (e->jticket != ticket) {
                        prov_journal_done_n(L->journal, ticket, written);
                        ticket = e->jticket;
                        written = 0;
                    }
                    written++;
                    entry_free(e);
                }
                else if (e->settled) {
                    /* Settled while its hold was written: settle the row. */
                    prov_reservation_t r;
                    prov_op_t *c;
                    memset(&r, 0, sizeof(r));
                    r.request_id = e->request_id;
                    r.user_id = e->user_id;
                    r.key_id = e->key_id;
                    r.model_id = e->model_id;
                    r.transport = e->transport;
                    r.hold = e->hold;
                    r.from_plan = e->from_plan;
                    r.created_at = e->created_at;
                    c = prov_batch_async_settle(&r, &e->tokens, e->charge, e->status, e->settled_at);
                    if (c) {
                        c->jticket = e->jticket;
                        c->next = requeue;
                        requeue = c;
                    }
                    else {
                        prov_log(PROV_LOG_ERR, APR_ENOMEM, "PROV00053: request %s was not "
                                 "settled (no memory); its hold stays until it expires",
                                 e->request_id);
                    }
                    entry_free(e);
                }
                else {
                    e->state = PROV_ENT_WRITTEN;
                    e->slot = NULL;
                }
            }
            else {
                if (e->complete || e->settled) {
                    if (!e->complete)
                        s->drawn = prov_i64_add_sat(s->drawn,
                                                    prov_i64_sub_sat(e->charge, e->hold));
                    e->state = PROV_ENT_SETTLED;
                    if (!s->settled_n++)
                        s->settled_since = apr_time_now();
                }
                else {
                    e->state = PROV_ENT_INFLIGHT;
                }
                e->next = s->pending;
                s->pending = e;
            }
        }
        s->taken = NULL;
        if (rv == APR_SUCCESS) {
            s->drawn = prov_i64_sub_sat(s->drawn, s->writing);
            if (s->closing || s->res_gone) {
                lease_clear(s);
            }
            else {
                s->amount = s->res_amount;
                s->at = s->res_at;
                if (s->renew)
                    s->checked = apr_time_now();
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
    prov_journal_done_n(L->journal, ticket, written);
    for (op = ops; op; op = op->next) {
        if (op->kind != PROV_OP_RESERVE)
            continue;
        if (op->retry) {
            /* Refused while a lease of the account was held: return every
             * lease of it in the next batch, then check again. */
            for (i = 0; i < 64; i++) {
                for (s = L->buckets[i]; s; s = s->next) {
                    if (s->user_id == op->auth->user_id && s->state == PROV_LEASE_OPEN)
                        s->state = PROV_LEASE_DRAINING;
                }
            }
            continue;
        }
        if (!op->out) {
            if ((s = op->slot) != NULL) {
                op->slot = NULL;
                slot_unbusy(s);
            }
            continue;
        }
        if ((s = op->slot) == NULL
            && (s = slot_get(L, op->auth->key_id, op->model_id, op->auth->user_id)) != NULL)
            s->busy++;
        op->slot = NULL;
        if (!s) {                    /* no memory: it settles without a slot */
            if (op->granted > 0)
                prov_log(PROV_LOG_ERR, APR_ENOMEM, "PROV00054: lease %s is released when "
                         "it expires (no memory)", op->lease_id);
            continue;
        }
        op->out->slot = s;
        if (op->granted > 0 && (s->state != PROV_LEASE_NONE || s->pending))
            prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00054: lease %s was granted to a key "
                     "that has one; it is released when it expires", op->lease_id);
        else if (op->granted > 0) {
            s->state = PROV_LEASE_OPEN;
            memcpy(s->id, op->lease_id, sizeof(s->id));
            free(s->key_hash);
            s->key_hash = op->auth->key_hash ? strdup(op->auth->key_hash) : NULL;
            s->from_plan = op->out->from_plan;
            s->amount = op->granted;
            s->drawn = 0;
            s->unit = op->lease_unit;
            s->unit_max = prov_i64_mul_sat(op->hold, LEASE_HOLDS_MAX);
            if (s->unit_max < s->unit)
                s->unit_max = s->unit;
            s->exhausted = 0;
            s->at = now;
            s->checked = apr_time_now();
            s->windows = op->lease_windows;
            memcpy(s->plan_name, op->lease_plan_name, sizeof(s->plan_name));
        }
    }
    L->failing = rv != APR_SUCCESS;
    if (L->failing) {
        for (i = 0; i < 64; i++) {
            for (s = L->buckets[i]; s; s = s->next) {
                if (s->state == PROV_LEASE_OPEN)
                    s->state = PROV_LEASE_DRAINING;
            }
        }
    }
    for (i = 0; i < 64; i++) {
        for (s = L->buckets[i]; s; s = next_s) {
            next_s = s->next;
            slot_maybe_free(L, s);
        }
    }
    return requeue;
}

/* Whether a slot has work for a batch now. Settled entries wait for more
 * while the key is busy and requests keep starting (the next settlements
 * come soon and see them); once few requests are left in flight or none
 * has started for a moment, they are written at once, so a burst never
 * ends with rows unwritten. */
static int slot_due(const prov_leases_t *L, const prov_slot_t *s, apr_time_t wall)
{
    const prov_entry_t *e;
    int group = L->keep_idle ? WRITER_GROUP : WRITE_GROUP;
    apr_interval_time_t wait = L->keep_idle ? WRITER_WAIT : WRITE_WAIT;
    if (s->state == PROV_LEASE_DRAINING
        || (s->state == PROV_LEASE_OPEN && slot_idle_over(L, s, wall)))
        return 1;
    if (s->settled_n && (s->settled_n >= group || s->busy < WRITE_BUSY
                         || wall - s->settled_since >= wait
                         || wall - s->last_draw >= wait))
        return 1;
    for (e = s->pending; e; e = e->next) {
        if (e->state == PROV_ENT_INFLIGHT && wall - e->drawn_at >= ENTRY_WRITE_AFTER)
            return 1;
    }
    return 0;
}

int prov_lease_due(const prov_leases_t *L)
{
    apr_time_t wall = apr_time_now();
    const prov_slot_t *s;
    int i;
    if (L->failing)
        return 0;
    for (i = 0; i < 64; i++) {
        for (s = L->buckets[i]; s; s = s->next) {
            if (slot_due(L, s, wall))
                return 1;
        }
    }
    return 0;
}

int prov_lease_active(const prov_leases_t *L)
{
    const prov_slot_t *s;
    int i;
    for (i = 0; i < 64; i++) {
        for (s = L->buckets[i]; s; s = s->next) {
            if (has_work(s))
                return 1;
        }
    }
    return 0;
}
