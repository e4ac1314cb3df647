/* prov_billing_batch.c: one billing batch, in one transaction. First every
 * account the batch touches is locked (PostgreSQL row locks in id order, so
 * that batches of different processes or nodes queue instead of racing;
 * SQLite's BEGIN IMMEDIATE already holds the database). Then settlements
 * (and expired holds) complete their ledger rows and give back the
 * difference between hold and charge; then reservations are checked in
 * order against what the database holds plus what earlier operations of the
 * batch took: the key's rolling week, the plan's 5-hour and 7-day windows,
 * the balance. Bucket and balance changes are summed per row and written
 * once per batch. */
#include <stdarg.h>
#include <string.h>
#include "prov_billing_int.h"
#include "prov_log.h"
#include "prov_store_billing.h"

typedef struct acct_t {
    apr_int64_t user_id;
    int loaded;                     /* balance and plan read in this batch */
    int blocked;
    prov_micro_t balance;           /* including this batch's holds */
    prov_plan_windows_t plan;
    prov_window_t w5, w7;           /* including this batch's plan holds */
} acct_t;

typedef struct keyw_t {
    prov_window_t w;                /* including this batch's holds */
    const char *hash;               /* the key as the database has it now */
    int live;
    int has_budget;
    prov_micro_t budget;
} keyw_t;

typedef struct batch_t {
    prov_store_t *s;
    apr_pool_t *p;
    apr_int64_t now;
    apr_hash_t *accts;              /* user id -> acct_t */
    apr_hash_t *keys;               /* key id -> keyw_t */
    apr_hash_t *models;             /* model id -> int enabled */
    apr_hash_t *deltas;             /* "scope|id|bucket" -> prov_bucket_delta_t */
    apr_hash_t *balances;           /* user id -> prov_micro_t* delta */
} batch_t;

static void add_delta(batch_t *b, const char *scope, apr_int64_t id, apr_int64_t bucket,
                      prov_micro_t credits, prov_micro_t plan, apr_int64_t requests)
{
    const char *k = apr_psprintf(b->p, "%s|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT,
                                 scope, id, bucket);
    prov_bucket_delta_t *d = apr_hash_get(b->deltas, k, APR_HASH_KEY_STRING);
    if (!d) {
        d = apr_pcalloc(b->p, sizeof(*d));
        d->scope = scope;
        d->id = id;
        d->bucket = bucket;
        apr_hash_set(b->deltas, k, APR_HASH_KEY_STRING, d);
    }
    d->credits = prov_i64_add_sat(d->credits, credits);
    d->plan = prov_i64_add_sat(d->plan, plan);
    d->requests = prov_i64_add_sat(d->requests, requests);
}

static void add_balance(batch_t *b, apr_int64_t user_id, prov_micro_t amount)
{
    prov_micro_t *v = apr_hash_get(b->balances, &user_id, sizeof(user_id));
    if (!v) {
        apr_int64_t *k = apr_palloc(b->p, sizeof(*k));
        *k = user_id;
        v = apr_pcalloc(b->p, sizeof(*v));
        apr_hash_set(b->balances, k, sizeof(*k), v);
    }
    *v = prov_i64_add_sat(*v, amount);
}

/* One request's usage, at the buckets of the time its hold was taken. */
static void usage_deltas(batch_t *b, apr_int64_t user_id, apr_int64_t key_id, apr_int64_t at,
                         prov_micro_t credits, int plan, int requests)
{
    prov_micro_t pc = plan ? credits : 0;
    add_delta(b, "key:h", key_id, prov_bucket_of(at, PROV_BUCKET_HOUR), credits, pc, requests);
    add_delta(b, "user:h", user_id, prov_bucket_of(at, PROV_BUCKET_HOUR), credits, pc, requests);
    add_delta(b, "user:m", user_id, prov_bucket_of(at, PROV_BUCKET_MINUTES), credits, pc,
              requests);
}

static apr_status_t flush(batch_t *b)
{
    apr_array_header_t *rows = apr_array_make(b->p, 8, sizeof(prov_bucket_delta_t));
    apr_hash_index_t *hi;
    apr_status_t rv;
    for (hi = apr_hash_first(b->p, b->deltas); hi; hi = apr_hash_next(hi)) {
        prov_bucket_delta_t *d = apr_hash_this_val(hi);
        if (!d->credits && !d->plan && !d->requests)
            continue;
        APR_ARRAY_PUSH(rows, prov_bucket_delta_t) = *d;
    }
    rv = prov_store_bill_buckets_add(b->s, (const prov_bucket_delta_t *)rows->elts, rows->nelts,
                                     b->p);
    if (rv != APR_SUCCESS)
        return rv;
    for (hi = apr_hash_first(b->p, b->balances); hi; hi = apr_hash_next(hi)) {
        const apr_int64_t *uid = apr_hash_this_key(hi);
        prov_micro_t *v = apr_hash_this_val(hi);
        if (!*v)
            continue;
        rv = prov_store_exec(b->s, NULL, "bill_balance_add",
                             PROV_ARGS(prov_i64(*v, b->p), prov_i64(*uid, b->p)), b->p);
        if (rv != APR_SUCCESS)
            return rv;
    }
    b->deltas = apr_hash_make(b->p);
    b->balances = apr_hash_make(b->p);
    return APR_SUCCESS;
}

/* ---- settlements ------------------------------------------------------------ */

static apr_status_t settle_one(batch_t *b, const prov_reservation_t *r, const prov_tokens_t *t,
                               prov_micro_t charge, const char *status, int *moved)
{
    apr_pool_t *p = b->p;
    int n = 0;
    prov_micro_t diff = prov_i64_sub_sat(charge, r->hold);
    apr_status_t rv = prov_store_exec(b->s, &n, "bill_ledger_settle",
        PROV_ARGS(prov_i64(t->input, p), prov_i64(t->output, p), prov_i64(t->cache, p),
                  prov_i64(t->reasoning, p), prov_i64(charge, p), prov_i64(charge, p),
                  status, prov_i64(b->now, p), r->request_id), p);
    if (rv != APR_SUCCESS)
        return rv;
    *moved = (n == 1);
    if (n != 1)
        return APR_SUCCESS;          /* settled, released or expired before */
    if (diff) {
        usage_deltas(b, r->user_id, r->key_id, r->created_at, diff, r->from_plan, 0);
        if (!r->from_plan)
            add_balance(b, r->user_id, prov_i64_sub_sat(0, diff));
    }
    return APR_SUCCESS;
}

static apr_status_t sweep(batch_t *b, apr_int64_t hold_timeout, int *count)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *stale = apr_array_make(b->p, 8, sizeof(prov_reservation_t));
    apr_status_t rv = prov_store_select(b->s, &res, "bill_stale_holds",
                                        PROV_ARGS(prov_i64(b->now - hold_timeout, b->p)), b->p);
    int i, moved;
    if (rv != APR_SUCCESS)
        return rv;
    while ((rv = prov_store_row(b->s, res, &row, b->p)) == APR_SUCCESS) {
        prov_reservation_t *r = apr_array_push(stale);
        const char *source = prov_store_get(b->s, row, 3);
        memset(r, 0, sizeof(*r));
        r->request_id = prov_store_get(b->s, row, 0);
        r->user_id = prov_store_get_i64(b->s, row, 1, 0);
        r->key_id = prov_store_get_i64(b->s, row, 2, 0);
        r->from_plan = source && !strcmp(source, "plan");
        r->hold = prov_store_get_i64(b->s, row, 4, 0);
        r->created_at = prov_store_get_i64(b->s, row, 5, 0);
    }
    if (rv != APR_EOF)
        return rv;
    for (i = 0; i < stale->nelts; i++) {
        prov_reservation_t *r = &APR_ARRAY_IDX(stale, i, prov_reservation_t);
        if ((rv = settle_one(b, r, &none, 0, "expired", &moved)) != APR_SUCCESS)
            return rv;
        *count += moved;
    }
    if (stale->nelts)
        prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00051: released %d hold(s) older than %"
                 APR_INT64_T_FMT " s (their requests never settled)", *count, hold_timeout);
    return APR_SUCCESS;
}

/* ---- reservations ----------------------------------------------------------- */

static apr_status_t load_account(acct_t **pa, batch_t *b, apr_int64_t user_id)
{
    acct_t *a = apr_hash_get(b->accts, &user_id, sizeof(user_id));
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;
    int found = 0;

    if (!a) {
        a = apr_pcalloc(b->p, sizeof(*a));
        a->user_id = user_id;
        apr_hash_set(b->accts, &a->user_id, sizeof(a->user_id), a);
    }
    if (!a->loaded) {
        rv = prov_store_select(b->s, &res, "bill_account",
                               PROV_ARGS(prov_i64(user_id, b->p)), b->p);
        if (rv != APR_SUCCESS)
            return rv;
        while ((rv = prov_store_row(b->s, res, &row, b->p)) == APR_SUCCESS) {
            if (!found++) {
                a->balance = prov_store_get_i64(b->s, row, 0, 0);
                a->blocked = prov_store_get_i64(b->s, row, 1, 0) != 0;
            }
        }
        if (rv != APR_EOF)
            return rv;
        if (!found)
            a->blocked = 1;          /* the user is gone: nothing may be held */
        rv = prov_billing_plan_windows(&a->plan, &a->w5, &a->w7, b->s, user_id, b->now, b->p);
        if (rv != APR_SUCCESS)
            return rv;
        a->loaded = 1;
    }
    *pa = a;
    return APR_SUCCESS;
}

static apr_status_t load_key(keyw_t **pk, batch_t *b, apr_int64_t key_id)
{
    keyw_t *k = apr_hash_get(b->keys, &key_id, sizeof(key_id));
    if (!k) {
        apr_int64_t *id = apr_palloc(b->p, sizeof(*id));
        apr_status_t rv;
        *id = key_id;
        apr_dbd_results_t *res = NULL;
        apr_dbd_row_t *row = NULL;
        k = apr_pcalloc(b->p, sizeof(*k));
        rv = prov_store_select(b->s, &res, "bill_key", PROV_ARGS(prov_i64(key_id, b->p)), b->p);
        if (rv != APR_SUCCESS)
            return rv;
        while ((rv = prov_store_row(b->s, res, &row, b->p)) == APR_SUCCESS) {
            k->hash = prov_store_get(b->s, row, 0);
            k->live = prov_store_get(b->s, row, 1) == NULL;
            k->has_budget = prov_store_get(b->s, row, 2) != NULL;
            k->budget = prov_store_get_i64(b->s, row, 2, 0);
        }
        if (rv != APR_EOF)
            return rv;
        /* The key's week is read only when a budget limits it. */
        if (k->has_budget) {
            rv = prov_window_sum(&k->w, b->s, "key:h", key_id, PROV_BUCKET_HOUR, PROV_WINDOW_7D,
                                 0, b->now, b->p);
            if (rv != APR_SUCCESS)
                return rv;
        }
        else {
            k->w.len = PROV_BUCKET_HOUR;
            k->w.span = PROV_WINDOW_7D;
            k->w.scope = "key:h";
            k->w.id = key_id;
            k->w.now = b->now;
        }
        apr_hash_set(b->keys, id, sizeof(*id), k);
    }
    *pk = k;
    return APR_SUCCESS;
}

static apr_status_t model_enabled(int *enabled, batch_t *b, apr_int64_t model_id)
{
    int *v = apr_hash_get(b->models, &model_id, sizeof(model_id));
    if (!v) {
        apr_dbd_results_t *res = NULL;
        apr_dbd_row_t *row = NULL;
        apr_int64_t *id = apr_palloc(b->p, sizeof(*id));
        apr_status_t rv = prov_store_select(b->s, &res, "bill_model",
                                            PROV_ARGS(prov_i64(model_id, b->p)), b->p);
        if (rv != APR_SUCCESS)
            return rv;
        v = apr_pcalloc(b->p, sizeof(*v));
        while ((rv = prov_store_row(b->s, res, &row, b->p)) == APR_SUCCESS)
            *v = prov_store_get_i64(b->s, row, 0, 0) != 0;
        if (rv != APR_EOF)
            return rv;
        *id = model_id;
        apr_hash_set(b->models, id, sizeof(*id), v);
    }
    *enabled = *v;
    return APR_SUCCESS;
}

static prov_error_t *refuse(prov_op_t *op, prov_errcode_e code, apr_int64_t retry_after,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static prov_error_t *refuse(prov_op_t *op, prov_errcode_e code, apr_int64_t retry_after,
                            const char *fmt, ...)
{
    prov_error_t *e = prov_error_make(op->p, code, NULL, "%s", "");
    va_list ap;
    va_start(ap, fmt);
    e->message = apr_pvsprintf(op->p, fmt, ap);
    va_end(ap);
    e->retry_after = retry_after > 0 ? retry_after : 0;
    return e;
}

static const char *when(apr_int64_t seconds, apr_pool_t *p)
{
    if (seconds <= 0)
        return "";
    if (seconds < 120)
        return apr_psprintf(p, " Capacity returns in %" APR_INT64_T_FMT " seconds.", seconds);
    if (seconds < 7200)
        return apr_psprintf(p, " Capacity returns in %" APR_INT64_T_FMT " minutes.",
                            (seconds + 59) / 60);
    return apr_psprintf(p, " Capacity returns in %" APR_INT64_T_FMT " hours.",
                        (seconds + 3599) / 3600);
}

static apr_status_t reserve_one(batch_t *b, prov_op_t *op)
{
    const prov_auth_t *auth = op->auth;
    prov_micro_t hold = op->hold;
    apr_pool_t *p = op->p;
    prov_reservation_t *r;
    acct_t *a = NULL;
    keyw_t *k = NULL;
    int from_plan = 0, enabled = 0;
    apr_status_t rv;

    if ((rv = load_account(&a, b, auth->user_id)) != APR_SUCCESS)
        return rv;
    if (a->blocked) {
        op->err = refuse(op, PROV_E_USER_BLOCKED, 0,
                         "This account is blocked. Contact the service's administrator.");
        return APR_SUCCESS;
    }
    if ((rv = load_key(&k, b, auth->key_id)) != APR_SUCCESS)
        return rv;
    /* The caller's lookup may come from a cache: the key must still be live
     * with the same secret, and its budget is the one the database has. */
    if (!k->live || !k->hash || (auth->key_hash && strcmp(k->hash, auth->key_hash))) {
        op->err = refuse(op, PROV_E_INVALID_API_KEY, 0, "Invalid API key.");
        return APR_SUCCESS;
    }
    if ((rv = model_enabled(&enabled, b, op->model_id)) != APR_SUCCESS)
        return rv;
    if (!enabled) {
        op->err = refuse(op, PROV_E_MODEL_NOT_FOUND, 0,
                         "The model does not exist or is not available; GET /v1/models lists "
                         "the models you can use.");
        return APR_SUCCESS;
    }
    if (k->has_budget && prov_i64_add_sat(k->w.sum, hold) > k->budget) {
        apr_int64_t ra;
        if (op->retry_ok) {
            op->retry = 1;           /* first return this process's lease */
            return APR_SUCCESS;
        }
        if ((rv = prov_window_list(&k->w, b->s, b->p)) != APR_SUCCESS)
            return rv;
        ra = prov_window_retry_after(&k->w, hold, k->budget, b->now);
        op->err = refuse(op, PROV_E_KEY_BUDGET_EXCEEDED, ra,
            "This API key's weekly credit budget is used up: %s of %s credits in the last "
            "7 days, and this request may cost up to %s. Raise this key's budget "
            "(providerctl key budget), or free plan quota for it: capacity returns as "
            "earlier usage leaves the 7-day window.%s",
            prov_money_format(k->w.sum, p), prov_money_format(k->budget, p),
            prov_money_format(hold, p), ra > 0 ? when(ra, p)
                : " This request alone costs more than the whole budget.");
        return APR_SUCCESS;
    }
    if (a->plan.has_plan && prov_i64_add_sat(a->w5.sum, hold) <= a->plan.quota_5h
        && prov_i64_add_sat(a->w7.sum, hold) <= a->plan.quota_7d) {
        from_plan = 1;
    }
    else if (a->balance >= hold) {
        from_plan = 0;
    }
    else if (op->retry_ok) {
        op->retry = 1;
        return APR_SUCCESS;
    }
    else if (a->plan.has_plan) {
        apr_int64_t r5, r7, ra;
        if ((rv = prov_window_list(&a->w5, b->s, b->p)) != APR_SUCCESS
            || (rv = prov_window_list(&a->w7, b->s, b->p)) != APR_SUCCESS)
            return rv;
        r5 = prov_window_retry_after(&a->w5, hold, a->plan.quota_5h, b->now);
        r7 = prov_window_retry_after(&a->w7, hold, a->plan.quota_7d, b->now);
        ra = (r5 < 0 || r7 < 0) ? -1 : (r5 > r7 ? r5 : r7);
        op->err = refuse(op, PROV_E_QUOTA_EXCEEDED, ra,
            "The plan's quota is used up: %s of %s credits in the last 5 hours, %s of %s "
            "in the last 7 days, and this request may cost up to %s; the balance (%s) "
            "does not cover it either.%s",
            prov_money_format(a->w5.sum, p), prov_money_format(a->plan.quota_5h, p),
            prov_money_format(a->w7.sum, p), prov_money_format(a->plan.quota_7d, p),
            prov_money_format(hold, p), prov_money_format(a->balance, p),
            ra > 0 ? when(ra, p) : " This request alone costs more than the plan's quota.");
        return APR_SUCCESS;
    }
    else {
        op->err = refuse(op, PROV_E_INSUFFICIENT_CREDITS, 0,
            "Not enough credits: this request may cost up to %s credits and the balance is "
            "%s. Add credits, or lower max_tokens.",
            prov_money_format(hold, p), prov_money_format(a->balance, p));
        return APR_SUCCESS;
    }

    rv = prov_store_exec(b->s, NULL, "bill_ledger_reserve",
        PROV_ARGS(op->request_id, prov_i64(auth->user_id, b->p), prov_i64(auth->key_id, b->p),
                  prov_i64(op->model_id, b->p), op->transport, prov_i64(hold, b->p),
                  from_plan ? "plan" : "balance", prov_i64(b->now, b->p)), b->p);
    if (rv != APR_SUCCESS)
        return rv;
    usage_deltas(b, auth->user_id, auth->key_id, b->now, hold, from_plan, 1);
    prov_window_add(&k->w, b->now, hold, b->p);
    if (from_plan) {
        prov_window_add(&a->w5, b->now, hold, b->p);
        prov_window_add(&a->w7, b->now, hold, b->p);
    }
    else {
        a->balance = prov_i64_sub_sat(a->balance, hold);
        add_balance(b, auth->user_id, prov_i64_sub_sat(0, hold));
    }

    r = apr_pcalloc(p, sizeof(*r));
    r->request_id = apr_pstrdup(p, op->request_id);
    r->user_id = auth->user_id;
    r->key_id = auth->key_id;
    r->model_id = op->model_id;
    r->transport = apr_pstrdup(p, op->transport);
    r->hold = hold;
    r->from_plan = from_plan;
    r->created_at = b->now;
    if (a->plan.has_plan) {
        r->windows = a->plan;
        r->windows.plan_name = a->plan.plan_name ? apr_pstrdup(p, a->plan.plan_name) : NULL;
        r->windows.used_5h = a->w5.sum;
        r->windows.used_7d = a->w7.sum;
        r->windows.reset_5h = prov_window_reset(&a->w5, b->now);
        r->windows.reset_7d = prov_window_reset(&a->w7, b->now);
    }
    op->out = r;
    return APR_SUCCESS;
}

/* ---- leases ------------------------------------------------------------------ */

/* A renewal smaller than this part of the lease's headroom is not worth it. */
#define LEASE_MIN_PART 64

static const char *source_of(int from_plan)
{
    return from_plan ? "plan" : "balance";
}

/* Moves amount of a lease's hold: into (amount > 0) or out of the buckets
 * of time at and the balance. */
static void lease_move(batch_t *b, const prov_slot_t *w, apr_int64_t at, prov_micro_t amount)
{
    if (!amount)
        return;
    usage_deltas(b, w->user_id, w->key_id, at, amount, w->from_plan, 0);
    if (!w->from_plan)
        add_balance(b, w->user_id, prov_i64_sub_sat(0, amount));
}

/* The settled entries among those taken, written whole (on PostgreSQL many
 * to a statement). */
static apr_status_t insert_complete(batch_t *b, const prov_entry_t *taken)
{
    apr_array_header_t *rows = apr_array_make(b->p, 8, sizeof(prov_ledger_row_t));
    const prov_entry_t *e;
    for (e = taken; e; e = e->next) {
        prov_ledger_row_t *r;
        if (!e->complete)
            continue;
        r = apr_array_push(rows);
        r->request_id = e->request_id;
        r->transport = e->transport;
        r->status = e->status;
        r->user_id = e->user_id;
        r->key_id = e->key_id;
        r->model_id = e->model_id;
        r->tokens = e->tokens;
        r->hold = e->hold;
        r->charge = e->charge;
        r->from_plan = e->from_plan;
        r->created_at = e->created_at;
        r->settled_at = e->settled_at;
    }
    return prov_store_bill_ledger_insert(b->s, (const prov_ledger_row_t *)rows->elts,
                                         rows->nelts, b->p);
}

/* Writes the entries a lease's slot handed over, and returns the lease (or
 * all but what its unwritten entries still hold: the base a renewal starts
 * from). */
static apr_status_t lease_write(batch_t *b, prov_slot_t *w)
{
    apr_pool_t *p = b->p;
    prov_entry_t *e;
    apr_status_t rv;
    int n = 0;

    if ((rv = insert_complete(b, w->taken)) != APR_SUCCESS)
        return rv;
    for (e = w->taken; e; e = e->next) {
        prov_micro_t amount = e->complete ? e->charge : e->hold;
        if (!e->complete) {
            rv = prov_store_exec(b->s, NULL, "bill_ledger_reserve",
                PROV_ARGS(e->request_id, prov_i64(e->user_id, p), prov_i64(e->key_id, p),
                          prov_i64(e->model_id, p), e->transport, prov_i64(e->hold, p),
                          source_of(e->from_plan), prov_i64(e->created_at, p)), p);
            if (rv != APR_SUCCESS)
                return rv;
        }
        usage_deltas(b, e->user_id, e->key_id, e->created_at, amount, e->from_plan, 1);
        if (!e->from_plan)
            add_balance(b, e->user_id, -amount);
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
    if ((rv = load_account(pa, b, w->user_id)) != APR_SUCCESS
        || (rv = load_key(pk, b, w->key_id)) != APR_SUCCESS
        || (rv = model_enabled(&enabled, b, w->model_id)) != APR_SUCCESS)
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
static apr_status_t lease_keep(batch_t *b, prov_slot_t *w)
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
static apr_status_t lease_grant(batch_t *b, prov_op_t *op)
{
    prov_slot_t w;
    acct_t *a = NULL;
    keyw_t *k = NULL;
    unsigned char rnd[12];
    prov_micro_t room;
    int ok = 0, i;
    apr_status_t rv;

    memset(&w, 0, sizeof(w));
    w.user_id = op->auth->user_id;
    w.key_id = op->auth->key_id;
    w.model_id = op->model_id;
    w.from_plan = op->out->from_plan;
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
    memcpy(op->lease_id, "lease_", 6);
    for (i = 0; i < (int)sizeof(rnd); i++)
        apr_snprintf(op->lease_id + 6 + 2 * i, 3, "%02x", rnd[i]);
    rv = prov_store_exec(b->s, NULL, "bill_lease_insert",
                         PROV_ARGS(op->lease_id, prov_i64(w.user_id, b->p),
                                   prov_i64(w.key_id, b->p), prov_i64(w.model_id, b->p),
                                   source_of(w.from_plan), prov_i64(op->lease_unit, b->p),
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
static apr_status_t release_leases(batch_t *b, const char *label, const char *arg, int *count)
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
static apr_status_t sweep_leases(batch_t *b, apr_int64_t hold_timeout)
{
    int count = 0;
    apr_status_t rv = release_leases(b, "bill_stale_leases",
                                     prov_i64(b->now - hold_timeout, b->p), &count);
    if (rv != APR_SUCCESS)
        return rv;
    if (count)
        prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00056: released %d lease(s) not renewed for "
                 "%" APR_INT64_T_FMT " s (their process stopped)", count, hold_timeout);
    return APR_SUCCESS;
}

/* ---- journals and holds given back by hand ---------------------------------- */

/* A dead process's journal records (prov_billing_journal.c): each
 * settlement exactly once. A hold still reserved is settled; a drawn
 * request whose row was never written gets it, charged as its lease's
 * batch would have; anything else was written before the process died.
 * Then (op->owner) the leases that process held are returned: together
 * with the rows, exactly what it would have written and returned. */
static apr_status_t replay(batch_t *b, prov_op_t *op)
{
    apr_pool_t *p = b->p;
    apr_int64_t now = b->now;
    apr_status_t rv = APR_SUCCESS;
    int i, n, moved, leases = 0;

    op->swept = 0;
    for (i = 0; i < op->nrecs && rv == APR_SUCCESS; i++) {
        const prov_journal_rec_t *j = &op->recs[i];
        prov_reservation_t r;
        memset(&r, 0, sizeof(r));
        r.request_id = j->request_id;
        r.user_id = j->user_id;
        r.key_id = j->key_id;
        r.model_id = j->model_id;
        r.transport = j->transport;
        r.hold = j->hold;
        r.from_plan = j->from_plan;
        r.created_at = j->created_at;
        b->now = j->settled_at;      /* the row says when it was settled */
        rv = settle_one(b, &r, &j->tokens, j->charge, j->status, &moved);
        b->now = now;
        if (rv != APR_SUCCESS || moved || !j->drawn) {
            op->swept += moved;
            continue;
        }
        n = 0;
        rv = prov_store_exec(b->s, &n, "bill_ledger_replay",
            PROV_ARGS(j->request_id, prov_i64(j->user_id, p), prov_i64(j->key_id, p),
                      prov_i64(j->model_id, p), j->transport, prov_i64(j->tokens.input, p),
                      prov_i64(j->tokens.output, p), prov_i64(j->tokens.cache, p),
                      prov_i64(j->tokens.reasoning, p), prov_i64(j->hold, p),
                      prov_i64(j->charge, p), prov_i64(j->from_plan ? j->charge : 0, p),
                      source_of(j->from_plan), j->status, prov_i64(j->created_at, p),
                      prov_i64(j->settled_at, p)), p);
        if (rv == APR_SUCCESS && n == 1) {
            usage_deltas(b, j->user_id, j->key_id, j->created_at, j->charge, j->from_plan, 1);
            if (!j->from_plan)
                add_balance(b, j->user_id, -j->charge);
            op->swept++;
        }
    }
    if (rv == APR_SUCCESS && op->owner)
        rv = release_leases(b, "bill_owner_leases", op->owner, &leases);
    op->returned = leases;
    return rv;
}

/* One hold or lease given back by hand (op->request_id): as an expiry. */
static apr_status_t drop(batch_t *b, prov_op_t *op)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    prov_reservation_t r;
    apr_status_t rv;
    int found = 0, moved = 0;

    op->swept = 0;
    if ((rv = release_leases(b, "bill_lease_by_id", op->request_id, &op->swept))
        != APR_SUCCESS || op->swept)
        return rv;
    rv = prov_store_select(b->s, &res, "bill_hold_by_id", PROV_ARGS(op->request_id), b->p);
    if (rv != APR_SUCCESS)
        return rv;
    memset(&r, 0, sizeof(r));
    while ((rv = prov_store_row(b->s, res, &row, b->p)) == APR_SUCCESS) {
        const char *source = prov_store_get(b->s, row, 3);
        found = 1;
        r.request_id = op->request_id;
        r.user_id = prov_store_get_i64(b->s, row, 1, 0);
        r.key_id = prov_store_get_i64(b->s, row, 2, 0);
        r.from_plan = source && !strcmp(source, "plan");
        r.hold = prov_store_get_i64(b->s, row, 4, 0);
        r.created_at = prov_store_get_i64(b->s, row, 5, 0);
    }
    if (rv != APR_EOF)
        return rv;
    rv = APR_SUCCESS;
    if (found) {
        apr_int64_t now = b->now;
        b->now = op->at;             /* the row says when it was released */
        rv = settle_one(b, &r, &none, 0, op->status, &moved);
        b->now = now;
    }
    op->swept = moved;
    return rv;
}

/* ---- the batch ------------------------------------------------------------- */

/* The accounts the batch touches, locked before anything else. */
static apr_status_t lock_accounts(batch_t *b, prov_op_t *ops, prov_slot_t *work)
{
    apr_array_header_t *ids = apr_array_make(b->p, 8, sizeof(apr_int64_t));
    prov_op_t *op;
    prov_slot_t *w;
    int i;
    for (op = ops; op; op = op->next) {
        if (op->kind == PROV_OP_RESERVE)
            APR_ARRAY_PUSH(ids, apr_int64_t) = op->auth->user_id;
        else if (op->kind == PROV_OP_SETTLE)
            APR_ARRAY_PUSH(ids, apr_int64_t) = op->res->user_id;
        else if (op->kind == PROV_OP_REPLAY) {
            for (i = 0; i < op->nrecs; i++)
                APR_ARRAY_PUSH(ids, apr_int64_t) = op->recs[i].user_id;
        }
    }
    for (w = work; w; w = w->work_next)
        APR_ARRAY_PUSH(ids, apr_int64_t) = w->user_id;
    return prov_store_bill_lock_accounts(b->s, (apr_int64_t *)ids->elts, ids->nelts, b->p);
}

static apr_status_t run(batch_t *b, prov_op_t *ops, prov_slot_t *work, int do_sweep,
                        apr_int64_t hold_timeout)
{
    prov_op_t *op;
    prov_slot_t *w;
    int swept = 0, reads = 0;
    apr_status_t rv;

    if ((rv = lock_accounts(b, ops, work)) != APR_SUCCESS)
        return rv;
    if (do_sweep && ((rv = sweep(b, hold_timeout, &swept)) != APR_SUCCESS
                     || (rv = sweep_leases(b, hold_timeout)) != APR_SUCCESS))
        return rv;
    for (op = ops; op; op = op->next) {
        int moved = 0;
        if (op->kind == PROV_OP_SWEEP)
            op->swept = swept;
        if (op->kind != PROV_OP_SETTLE)
            continue;
        if ((rv = settle_one(b, op->res, &op->tokens, op->charge, op->status, &moved))
            != APR_SUCCESS)
            return rv;
        op->rv = moved ? APR_SUCCESS : APR_EINCOMPLETE;
    }
    for (op = ops; op; op = op->next) {
        if ((op->kind == PROV_OP_REPLAY && (rv = replay(b, op)) != APR_SUCCESS)
            || (op->kind == PROV_OP_DROP && (rv = drop(b, op)) != APR_SUCCESS))
            return rv;
    }
    for (w = work; w; w = w->work_next) {
        if ((rv = lease_write(b, w)) != APR_SUCCESS)
            return rv;
        if (!w->closing && w->renew)
            reads = 1;
    }
    for (op = ops; op; op = op->next)
        reads |= op->kind == PROV_OP_RESERVE;
    /* Reservations (and leases checked again) see the settlements' and
     * the written entries' effects through the database. */
    if (reads && (rv = flush(b)) != APR_SUCCESS)
        return rv;
    for (op = ops; op; op = op->next) {
        if (op->kind == PROV_OP_RESERVE && (rv = reserve_one(b, op)) != APR_SUCCESS)
            return rv;
    }
    for (w = work; w; w = w->work_next) {
        if (!w->closing && !w->res_gone && (rv = lease_keep(b, w)) != APR_SUCCESS)
            return rv;
    }
    for (op = ops; op; op = op->next) {
        if (op->kind == PROV_OP_RESERVE && op->out && op->lease_unit
            && (rv = lease_grant(b, op)) != APR_SUCCESS)
            return rv;
    }
    return flush(b);
}

apr_status_t prov_billing_run_batch(prov_store_t *s, prov_op_t *ops, prov_slot_t *work,
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
    if ((rv = prov_store_begin(s, bp)) == APR_SUCCESS) {
        rv = run(&b, ops, work, do_sweep, hold_timeout);
        if (rv == APR_SUCCESS)
            rv = prov_store_commit(s, bp);
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
