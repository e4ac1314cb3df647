/* prov_lease.c: the in-memory half of billing leases (see prov_lease.h).
 * A queue (one database) keeps a slot per key and model that this process
 * serves: how many of their reservations are in flight and, under
 * concurrent load, a lease: an amount the database holds for this process,
 * from which requests draw without a transaction. A drawn request is an
 * entry until a batch writes its ledger row: complete when it was settled
 * by then, as an ordinary hold when it is still running after a second
 * (streams), or when the lease is returned. A key's activity over its
 * models (prov_keyact_t) keeps a lease of one model while the key has
 * requests of another in flight. Here: the slot and key tables, drawing,
 * settling a drawn request, and whether a batch is due; handing work to a
 * batch and taking its result back is prov_lease_handoff.c. Every function
 * runs under the engine's queue mutex. */
#include <stdlib.h>
#include <string.h>
#include "prov_lease_int.h"

/* Fibonacci hashing: 2^64 over the golden ratio spreads consecutive key ids
 * over the high bits. */
#define SLOT_HASH_MUL 0x9E3779B97F4A7C15ULL

static unsigned slot_hash(apr_int64_t key_id, apr_int64_t model_id)
{
    apr_uint64_t h = (apr_uint64_t)key_id * SLOT_HASH_MUL ^ (apr_uint64_t)model_id;
    return (unsigned)(h >> 32) % PROV_LEASE_SLOTS;
}

prov_slot_t *prov_slot_find(const prov_leases_t *L, apr_int64_t key_id, apr_int64_t model_id)
{
    prov_slot_t *s;
    for (s = L->buckets[slot_hash(key_id, model_id)]; s; s = s->next) {
        if (s->key_id == key_id && s->model_id == model_id)
            return s;
    }
    return NULL;
}

prov_slot_t *prov_slot_get(prov_leases_t *L, apr_int64_t key_id, apr_int64_t model_id,
                           apr_int64_t user_id)
{
    prov_slot_t *s = prov_slot_find(L, key_id, model_id);
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

void prov_slot_clear(prov_slot_t *s)
{
    if (s->state != PROV_LEASE_NONE)
        s->closed_at = apr_time_now();
    free(s->key_hash);
    s->key_hash = NULL;
    s->state = PROV_LEASE_NONE;
    s->amount = 0;
    s->id[0] = '\0';
}

/* A slot with nothing in flight and no lease is forgotten, once its key's
 * last request is older than keep_idle (until then it is recent: the next
 * one is granted a lease, prov_slot_recent). */
void prov_slot_maybe_free(prov_leases_t *L, prov_slot_t *s)
{
    prov_slot_t **pp;
    apr_time_t wall = apr_time_now();
    if (!s || s->busy > 0 || s->state != PROV_LEASE_NONE || s->pending || s->taken
        || wall - s->closed_at < PROV_SLOT_KEEP || prov_slot_recent(L, s, wall))
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

struct prov_keyact_t {
    apr_int64_t key_id;
    int busy;                       /* reservations in flight, all models */
    apr_time_t idle_since;          /* wall clock busy last fell to 0 */
    struct prov_keyact_t *next;
};

/* The activity of key_id, or NULL. */
static prov_keyact_t *key_find(const prov_leases_t *L, apr_int64_t key_id)
{
    prov_keyact_t *k;
    for (k = L->keys[slot_hash(key_id, 0)]; k && k->key_id != key_id; k = k->next)
        ;
    return k;
}

/* The activity of key_id, made if need be (NULL without memory). */
static prov_keyact_t *keyact(prov_leases_t *L, apr_int64_t key_id)
{
    prov_keyact_t **head = &L->keys[slot_hash(key_id, 0)], *k = key_find(L, key_id);
    if (k || (k = calloc(1, sizeof(*k))) == NULL)
        return k;
    k->key_id = key_id;
    k->next = *head;
    *head = k;
    return k;
}

void prov_slot_busy(prov_leases_t *L, prov_slot_t *s)
{
    prov_keyact_t *k = keyact(L, s->key_id);
    s->busy++;
    if (k)
        k->busy++;
}

/* One reservation of s fewer in flight. */
void prov_slot_unbusy(prov_leases_t *L, prov_slot_t *s)
{
    prov_keyact_t *k = key_find(L, s->key_id);
    int slot_idle = --s->busy == 0, key_idle = k && k->busy > 0 && --k->busy == 0;
    apr_time_t now = slot_idle || key_idle ? apr_time_now() : 0;
    if (slot_idle)
        s->idle_since = now;
    if (key_idle)
        k->idle_since = now;
}

int prov_slot_beside(const prov_leases_t *L, const prov_slot_t *s)
{
    const prov_keyact_t *k = key_find(L, s->key_id);
    return k && k->busy > s->busy;
}

/* Whether s's key has requests of another model in flight, or had
 * requests of any model within keep_idle. */
static int key_recent(const prov_leases_t *L, const prov_slot_t *s, apr_time_t wall)
{
    const prov_keyact_t *k = key_find(L, s->key_id);
    return k && (k->busy > s->busy || (k->idle_since && wall - k->idle_since < L->keep_idle));
}

void prov_lease_keys_sweep(prov_leases_t *L, apr_time_t wall)
{
    prov_keyact_t **pp, *k;
    int i;
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        for (pp = &L->keys[i]; (k = *pp) != NULL;) {
            if (!k->busy && (L->stopping || !L->keep_idle
                             || (wall - k->idle_since >= L->keep_idle
                                 && wall - k->idle_since >= PROV_SLOT_KEEP))) {
                *pp = k->next;
                free(k);
            }
            else {
                pp = &k->next;
            }
        }
    }
}

void prov_lease_keys_forget(prov_leases_t *L)
{
    prov_keyact_t *k;
    int i;
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        while ((k = L->keys[i]) != NULL) {
            L->keys[i] = k->next;
            free(k);
        }
    }
}

int prov_slot_recent(const prov_leases_t *L, const prov_slot_t *s, apr_time_t wall)
{
    return L->keep_idle && !L->stopping
           && ((s->idle_since && wall - s->idle_since < L->keep_idle)
               || key_recent(L, s, wall));
}

/* Whether s's lease is returned now that nothing of its key is in flight:
 * after keep_idle; at once once the writer stops or is gone. */
int prov_slot_idle_over(const prov_leases_t *L, const prov_slot_t *s, apr_time_t wall)
{
    return !s->busy && (!L->keep_idle || L->stopping
                        || (wall - s->idle_since >= L->keep_idle
                            && !key_recent(L, s, wall)));
}

void prov_slot_pend(prov_slot_t *s, prov_entry_t *e)
{
    if (!s->pending || e->drawn_at < s->pending_oldest)
        s->pending_oldest = e->drawn_at;
    e->next = s->pending;
    s->pending = e;
}

void prov_entry_free(prov_entry_t *e)
{
    free(e);
}

prov_micro_t prov_entry_amount(const prov_entry_t *e)
{
    return e->state == PROV_ENT_SETTLED ? e->row.charge : e->row.hold;
}

/* Whether a slot still has a lease held in the database or entries. */
int prov_slot_has_work(const prov_slot_t *s)
{
    return s->state != PROV_LEASE_NONE || s->pending;
}

int prov_lease_lone(const prov_leases_t *L, const prov_auth_t *auth, apr_int64_t model_id)
{
    const prov_slot_t *s = prov_slot_find(L, auth->key_id, model_id);
    apr_time_t wall = apr_time_now();
    if (!s || s->state != PROV_LEASE_OPEN || s->busy || wall - s->idle_since < PROV_LEASE_LONE_GAP)
        return 0;
    /* beside the key's requests of another model: as overlapping ones */
    return !(prov_slot_beside(L, s) && wall - s->admitted < PROV_LEASE_CHECK_EVERY);
}

void prov_lease_admitted(prov_leases_t *L, const prov_auth_t *auth, apr_int64_t model_id)
{
    prov_slot_t *s = prov_slot_find(L, auth->key_id, model_id);
    if (s)
        s->admitted = apr_time_now();
}

int prov_lease_draw(prov_leases_t *L, prov_reservation_t **pr, const prov_auth_t *auth,
                    apr_int64_t model_id, const char *transport, const char *request_id,
                    prov_micro_t hold, apr_int64_t now, apr_pool_t *p)
{
    prov_slot_t *s = prov_slot_find(L, auth->key_id, model_id);
    prov_reservation_t *r;
    prov_entry_t *e;
    char *str;
    apr_size_t lid, lt;

    /* keep_idle 0: no writer thread to write the entry (a lease a stopped
     * writer left is only returned). */
    if (!s || s->state != PROV_LEASE_OPEN || L->failing || !L->keep_idle
        || s->user_id != auth->user_id)
        return 0;
    if (auth->key_hash && (!s->key_hash || strcmp(s->key_hash, auth->key_hash)))
        return 0;
    if (prov_i64_add_sat(s->drawn, hold) > s->amount) {
        s->exhausted = 1;
        return 0;
    }
    /* one allocation: the entry, then its two strings */
    lid = strlen(request_id) + 1;
    lt = strlen(transport) + 1;
    if ((e = calloc(1, sizeof(*e) + lid + lt)) == NULL)
        return 0;
    r = apr_pcalloc(p, sizeof(*r));
    r->row.request_id = apr_pstrdup(p, request_id);
    r->row.user_id = auth->user_id;
    r->row.key_id = auth->key_id;
    r->row.model_id = model_id;
    r->row.transport = apr_pstrdup(p, transport);
    r->row.hold = hold;
    r->row.from_plan = s->from_plan;
    r->row.created_at = now;
    e->row = r->row;                /* the same row, its strings the entry's own */
    str = (char *)(e + 1);
    e->row.request_id = memcpy(str, request_id, lid);
    e->row.transport = memcpy(str + lid, transport, lt);
    e->slot = s;
    e->state = PROV_ENT_INFLIGHT;
    e->drawn_at = apr_time_now();
    e->owner = L->owner;            /* the table's: "" while it has no journal */
    prov_slot_pend(s, e);
    s->drawn = prov_i64_add_sat(s->drawn, hold);
    prov_slot_busy(L, s);
    s->last_draw = e->drawn_at;

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
    op->slot = prov_slot_get(L, op->auth->key_id, op->model_id, op->auth->user_id);
    if (op->slot)
        prov_slot_busy(L, op->slot);
}

int prov_lease_draw_queued(prov_leases_t *L, prov_op_t *op)
{
    prov_slot_t *s = op->slot;
    if (op->kind != PROV_OP_RESERVE || op->retried || op->no_draw || !s
        || !prov_lease_draw(L, &op->out, op->auth, op->model_id, op->transport,
                            op->request_id, op->hold, op->now, op->p))
        return 0;
    op->out->row.floor = op->floor;
    ((prov_entry_t *)op->out->entry)->row.floor = op->floor;
    /* in flight once: the draw counted it again */
    op->slot = NULL;
    prov_slot_unbusy(L, s);
    return 1;
}

int prov_lease_settle(prov_leases_t *L, prov_reservation_t *r, const prov_tokens_t *t,
                      prov_micro_t charge, prov_status_e status, apr_int64_t now)
{
    prov_slot_t *s = r->slot;
    prov_entry_t *e = r->entry;

    r->slot = NULL;
    r->entry = NULL;
    if (s)
        prov_slot_unbusy(L, s);
    if (!e) {
        prov_slot_maybe_free(L, s);
        return PROV_LEASE_SETTLE_QUEUE;
    }
    if (e->state == PROV_ENT_WRITTEN) {
        /* Its hold is in the ledger: an ordinary settlement from here. */
        prov_entry_free(e);
        prov_slot_maybe_free(L, s);
        return PROV_LEASE_SETTLE_QUEUE;
    }
    prov_ledger_row_settle(&e->row, t, charge, status, now);
    if (e->state == PROV_ENT_INFLIGHT) {
        e->state = PROV_ENT_SETTLED;
        e->slot->drawn = prov_i64_add_sat(e->slot->drawn, prov_i64_sub_sat(charge, e->row.hold));
        if (!e->slot->settled_n++)
            e->slot->settled_since = apr_time_now();
    }
    else {
        e->settled = 1;              /* WRITING: queued as a settlement when written */
    }
    return PROV_LEASE_SETTLE_DRAWN;
}

/* Whether a slot has work for a batch now. Settled entries wait for more
 * while the key is busy and requests keep starting (the next settlements
 * come soon and see them); once few requests are left in flight or none
 * has started for a moment, they are written at once, so a burst never
 * ends with rows unwritten. */
static int slot_due(const prov_leases_t *L, const prov_slot_t *s, apr_time_t wall)
{
    const prov_entry_t *e;
    if (s->state == PROV_LEASE_DRAINING
        || (s->state == PROV_LEASE_OPEN && prov_slot_idle_over(L, s, wall)))
        return 1;
    if (s->settled_n && (s->settled_n >= PROV_WRITER_GROUP || s->busy < PROV_WRITER_BUSY
                         || wall - s->settled_since >= PROV_WRITER_WAIT
                         || wall - s->last_draw >= PROV_WRITER_WAIT))
        return 1;
    if (!s->pending || wall - s->pending_oldest < PROV_ENTRY_WRITE_AFTER)
        return 0;                    /* (no walk through the entries of a busy key) */
    for (e = s->pending; e; e = e->next) {
        if (e->state == PROV_ENT_INFLIGHT && wall - e->drawn_at >= PROV_ENTRY_WRITE_AFTER)
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
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        for (s = L->buckets[i]; s; s = s->next) {
            if (slot_due(L, s, wall))
                return 1;
        }
    }
    return 0;
}

static apr_time_t sooner(apr_time_t a, apr_time_t b)
{
    return a < b ? a : b;
}

/* The sooner of next and the times at which s has work by time alone
 * (slot_due's clocks). */
static apr_time_t slot_next(const prov_leases_t *L, const prov_slot_t *s, apr_time_t next)
{
    const prov_keyact_t *k;
    if (s->settled_n)
        next = sooner(next, sooner(s->settled_since, s->last_draw) + PROV_WRITER_WAIT);
    if (s->pending)
        next = sooner(next, s->pending_oldest + PROV_ENTRY_WRITE_AFTER);
    if (s->state == PROV_LEASE_OPEN && !s->busy && L->keep_idle) {
        /* idle for keep_idle, its key too (unless another model of the
         * key is in flight: its end is not foreseen) */
        k = key_find(L, s->key_id);
        if (!k || k->busy <= s->busy)
            next = sooner(next, (k && k->idle_since > s->idle_since ? k->idle_since
                                                                    : s->idle_since)
                                + L->keep_idle);
    }
    return next;
}

apr_time_t prov_lease_next_due(const prov_leases_t *L, apr_time_t wall, apr_interval_time_t lo,
                               apr_interval_time_t hi)
{
    apr_time_t next = wall + hi;
    const prov_slot_t *s;
    int i;
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        for (s = L->buckets[i]; s; s = s->next)
            next = slot_next(L, s, next);
    }
    return next < wall + lo ? wall + lo : next;
}

int prov_lease_active(const prov_leases_t *L)
{
    const prov_slot_t *s;
    int i;
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        for (s = L->buckets[i]; s; s = s->next) {
            if (prov_slot_has_work(s))
                return 1;
        }
    }
    return 0;
}
