/* prov_batch_books.c: one batch's books (prov_batch_int.h). What a batch
 * reads once (an account's balance, blocked flag and plan windows; a key's
 * secret, budget and week; whether a model is enabled), what it adds before
 * it writes (bucket and balance changes, summed per row), writing those in
 * one go, and settling one ledger row: the steps every other batch file is
 * made of. */
#include <string.h>
#include "prov_batch_int.h"
#include "prov_log.h"
#include "prov_store_billing.h"

/* A bucket's key in b->deltas: binary, no formatting on the hot path. A
 * scope is one of prov_batch_usage's few short names (zero-padded here;
 * one PostgreSQL upsert must not name a row twice, so the key is by value). */
typedef struct delta_key_t {
    apr_int64_t id, bucket;
    char scope[8];
} delta_key_t;

static void add_delta(batch_t *b, const char *scope, apr_int64_t id, apr_int64_t bucket,
                      prov_micro_t credits, prov_micro_t plan, apr_int64_t requests)
{
    delta_key_t key;
    prov_bucket_delta_t *d;
    memset(&key, 0, sizeof(key));
    key.id = id;
    key.bucket = bucket;
    apr_cpystrn(key.scope, scope, sizeof(key.scope));
    if (!(d = apr_hash_get(b->deltas, &key, sizeof(key)))) {
        delta_key_t *k = apr_pmemdup(b->p, &key, sizeof(key));
        d = apr_pcalloc(b->p, sizeof(*d));
        d->scope = scope;
        d->id = id;
        d->bucket = bucket;
        apr_hash_set(b->deltas, k, sizeof(*k), d);
    }
    d->credits = prov_i64_add_sat(d->credits, credits);
    d->plan = prov_i64_add_sat(d->plan, plan);
    d->requests = prov_i64_add_sat(d->requests, requests);
}

void prov_batch_balance(batch_t *b, apr_int64_t user_id, prov_micro_t amount)
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
void prov_batch_usage(batch_t *b, apr_int64_t user_id, apr_int64_t key_id, apr_int64_t at,
                      prov_micro_t credits, int plan, int requests)
{
    prov_micro_t pc = plan ? credits : 0;
    add_delta(b, "key:h", key_id, prov_bucket_of(at, PROV_BUCKET_HOUR), credits, pc, requests);
    add_delta(b, "user:h", user_id, prov_bucket_of(at, PROV_BUCKET_HOUR), credits, pc, requests);
    add_delta(b, "user:m", user_id, prov_bucket_of(at, PROV_BUCKET_MINUTES), credits, pc,
              requests);
}

apr_status_t prov_batch_flush(batch_t *b)
{
    apr_array_header_t *rows = apr_array_make(b->p, 8, sizeof(prov_bucket_delta_t));
    apr_array_header_t *ids, *amounts;
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
    ids = apr_array_make(b->p, 4, sizeof(apr_int64_t));
    amounts = apr_array_make(b->p, 4, sizeof(prov_micro_t));
    for (hi = apr_hash_first(b->p, b->balances); hi; hi = apr_hash_next(hi)) {
        const apr_int64_t *uid = apr_hash_this_key(hi);
        prov_micro_t *v = apr_hash_this_val(hi);
        if (!*v)
            continue;
        APR_ARRAY_PUSH(ids, apr_int64_t) = *uid;
        APR_ARRAY_PUSH(amounts, prov_micro_t) = *v;
    }
    rv = prov_store_bill_balances_add(b->s, (const apr_int64_t *)ids->elts,
                                      (const prov_micro_t *)amounts->elts, ids->nelts, b->p);
    if (rv != APR_SUCCESS)
        return rv;
    b->deltas = apr_hash_make(b->p);
    b->balances = apr_hash_make(b->p);
    return APR_SUCCESS;
}


/* Writes r's row (label: its status before, reserved or expired) with
 * tokens t, charge and status at b->now; *n: rows written (0 or 1). */
static apr_status_t settle_row(batch_t *b, const char *label, const prov_reservation_t *r,
                               const prov_tokens_t *t, prov_micro_t charge, prov_status_e status,
                               int *n)
{
    apr_pool_t *p = b->p;
    *n = 0;
    return prov_store_exec(b->s, n, label,
        PROV_ARGS(prov_i64(t->input, p), prov_i64(t->output, p), prov_i64(t->cache, p),
                  prov_i64(t->reasoning, p), prov_i64(charge, p), prov_i64(charge, p),
                  prov_ledger_status_name(status), prov_i64(b->now, p), r->row.request_id), p);
}

/* Moves amount of r's funding into (amount > 0) or out of the buckets of
 * the time its hold was taken, and out of or into the balance. */
static void charge_move(batch_t *b, const prov_reservation_t *r, prov_micro_t amount)
{
    if (!amount)
        return;
    prov_batch_usage(b, r->row.user_id, r->row.key_id, r->row.created_at, amount,
                     r->row.from_plan, 0);
    if (!r->row.from_plan)
        prov_batch_balance(b, r->row.user_id, prov_i64_sub_sat(0, amount));
}

/* A settlement that comes after the sweep expired its row: the expiry gave
 * the hold back, so the whole charge is applied as a charge (to the key's
 * week and the plan windows or the balance, whichever funded the hold).
 * Once: the row leaves 'expired' in the statement that finds it. */
static apr_status_t settle_late(batch_t *b, const prov_reservation_t *r, const prov_tokens_t *t,
                                prov_micro_t charge, prov_status_e status, int *moved)
{
    char buf[32];
    int n = 0;
    apr_status_t rv = settle_row(b, "bill_ledger_settle_late", r, t, charge, status, &n);
    if (rv != APR_SUCCESS || n != 1)
        return rv;
    *moved = 1;
    charge_move(b, r, charge);
    prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00058: request %s was settled (%s, %s credits) "
             "after its hold expired: charged late. ProviderHoldTimeout should stay above "
             "ProviderStreamMaxDuration", r->row.request_id, prov_ledger_status_name(status),
             prov_money_format_buf(buf, charge));
    return APR_SUCCESS;
}

apr_status_t prov_batch_settle(batch_t *b, const prov_reservation_t *r, const prov_tokens_t *t,
                               prov_micro_t charge, prov_status_e status, int *moved)
{
    int n = 0;
    apr_status_t rv = settle_row(b, "bill_ledger_settle", r, t, charge, status, &n);
    *moved = 0;
    if (rv != APR_SUCCESS)
        return rv;
    if (n != 1)                      /* settled or released before, or expired */
        return settle_late(b, r, t, charge, status, moved);
    *moved = 1;
    charge_move(b, r, prov_i64_sub_sat(charge, r->row.hold));
    return APR_SUCCESS;
}

apr_status_t prov_batch_release_row(batch_t *b, const prov_reservation_t *r, prov_status_e status,
                                    int *moved)
{
    static const prov_tokens_t none = { 0, 0, 0, 0 };
    int n = 0;
    apr_status_t rv = settle_row(b, "bill_ledger_settle", r, &none, 0, status, &n);
    *moved = rv == APR_SUCCESS && n == 1;
    if (*moved)
        charge_move(b, r, prov_i64_sub_sat(0, r->row.hold));
    return rv;
}


apr_status_t prov_batch_account(acct_t **pa, batch_t *b, apr_int64_t user_id)
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
        rv = prov_window_plan(&a->plan, &a->w5, &a->w7, b->s, user_id, b->now, b->p);
        if (rv != APR_SUCCESS)
            return rv;
        a->loaded = 1;
    }
    *pa = a;
    return APR_SUCCESS;
}

apr_status_t prov_batch_key(keyw_t **pk, batch_t *b, apr_int64_t key_id)
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

apr_status_t prov_batch_model(int *enabled, batch_t *b, apr_int64_t model_id)
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


const char *prov_batch_source(int from_plan)
{
    return from_plan ? "plan" : "balance";
}

