/* billing_fixture.c: the billing suites' shared fixture (billing_fixture.h):
 * a database of each test's own with an engine channel of its own (the
 * engine keeps per-database state, queues and leases, for the life of the
 * process), the reads that check the books, a lease table of a test's own
 * and its freeing, and the threads that load one key with requests. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "billing_fixture.h"

#define LEASE_THREADS 6
#define LEASE_ROUNDS 150

static char channels[256];
static int next_channel;

void bf_fill(bf_fixture_t *f, apr_pool_t *p, prov_store_t *s, const char *email,
             prov_micro_t balance, int has_budget, prov_micro_t budget)
{
    memset(f, 0, sizeof(*f));
    f->p = p;
    f->s = s;
    f->src = prov_store_source_fixed(f->s, f->p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&f->u, f->s, email, NULL, f->p), APR_SUCCESS);
    if (balance)
        CU_ASSERT_EQUAL_FATAL(prov_balance_add(NULL, f->s, f->u->id, balance, "test", f->p),
                              APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_key_create(&f->k, &f->secret, f->s, f->u->id, "k",
                                          has_budget, budget, f->p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(&f->m, f->s, "m1", "up-m1", NULL, NULL, f->p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_auth_lookup(&f->auth, f->s, f->secret, f->p), APR_SUCCESS);
    /* every test gets a database, and so engine state, of its own */
    f->src->channel = &channels[next_channel++ % (int)sizeof(channels)];
}

void bf_setup(bf_fixture_t *f, prov_micro_t balance, int has_budget, prov_micro_t budget)
{
    apr_pool_t *p = NULL;
    apr_pool_create(&p, prov_test_pool());
    bf_fill(f, p, prov_test_store_any(p), "bill@example.com", balance, has_budget, budget);
}

void bf_journal_dir(bf_fixture_t *f)
{
    strcpy(f->dir, "/tmp/prov-unit-bj-XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(f->dir));
}

int bf_files_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

void bf_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[512];
    while (d && (de = readdir(d)) != NULL) {
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int bf_dir_has(const char *dir, const char *text)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[512], buf[65536];
    int found = 0;
    while (d && !found && (de = readdir(d)) != NULL) {
        FILE *fp;
        size_t n;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (!strstr(de->d_name, ".log") || !(fp = fopen(path, "r")))
            continue;
        n = fread(buf, 1, sizeof(buf) - 1, fp);
        buf[n] = '\0';
        found = strstr(buf, text) != NULL;
        fclose(fp);
    }
    if (d)
        closedir(d);
    return found;
}

void bf_journal(prov_journal_t *j, const prov_reservation_t *r, prov_micro_t charge,
                prov_status_e status, int progress, apr_int64_t at)
{
    prov_journal_rec_t rec;
    int ticket = -1;
    memset(&rec, 0, sizeof(rec));
    rec.row.request_id = r->row.request_id;
    rec.row.transport = r->row.transport ? r->row.transport : "chat";
    rec.row.status = status;
    rec.row.user_id = r->row.user_id;
    rec.row.key_id = r->row.key_id;
    rec.row.model_id = r->row.model_id;
    rec.row.created_at = r->row.created_at;
    rec.row.settled_at = at;
    rec.row.tokens.input = 4;
    rec.row.tokens.output = charge / 10;
    rec.row.hold = r->row.hold;
    rec.row.charge = charge;
    rec.row.from_plan = r->row.from_plan;
    rec.drawn = r->entry != NULL;
    rec.progress = progress;
    CU_ASSERT_EQUAL(prov_journal_append(j, &rec, &ticket), APR_SUCCESS);
    CU_ASSERT_EQUAL(ticket == 0, progress);
}

void bf_check_books(bf_fixture_t *f, prov_micro_t topup)
{
    prov_micro_t charged = bf_value(f, "SELECT COALESCE(SUM(credits), 0) FROM ledger "
                                       "WHERE status <> 'reserved'"),
                 held = bf_value(f, "SELECT COALESCE(SUM(reserved), 0) FROM ledger "
                                    "WHERE status = 'reserved'"),
                 leased = bf_value(f, "SELECT COALESCE(SUM(amount), 0) FROM billing_leases");
    CU_ASSERT_EQUAL(bf_balance(f) + charged + held + leased, topup);
    CU_ASSERT_EQUAL(bf_value(f, "SELECT COALESCE(SUM(credits), 0) FROM usage_buckets "
                                "WHERE scope = 'key:h'"), charged + held + leased);
    CU_ASSERT_EQUAL(bf_value(f, "SELECT COALESCE(SUM(credits), 0) FROM usage_buckets "
                                "WHERE scope = 'user:m'"), charged + held + leased);
}

/* The fixture's one connection, held from the writer thread (whose
 * batches take it through f->src, prov_store_source_fixed): PostgreSQL's
 * client library takes one thread at a time on a connection. */
void bf_hold_store(bf_fixture_t *f)
{
    prov_store_t *s = NULL;
    f->src->open(&s, f->src->baton, f->p);
}

void bf_release_store(bf_fixture_t *f)
{
    f->src->close(f->s, f->src->baton);
}

apr_int64_t bf_value(bf_fixture_t *f, const char *sql)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t n = -1;
    int rc;
    bf_hold_store(f);
    rc = apr_dbd_select(f->s->driver, f->p, f->s->handle, &res, sql, 1);
    CU_ASSERT_EQUAL(rc, 0);
    while (rc == 0 && apr_dbd_get_row(f->s->driver, f->p, res, &row, -1) == 0)
        n = prov_store_get_i64(f->s, row, 0, 0);
    bf_release_store(f);
    return n;
}

prov_micro_t bf_balance(bf_fixture_t *f)
{
    prov_user_t *u = NULL;
    apr_status_t rv;
    bf_hold_store(f);
    rv = prov_user_find(&u, f->s, f->u->email, f->p);
    bf_release_store(f);
    CU_ASSERT_EQUAL_FATAL(rv, APR_SUCCESS);
    return u->balance;
}

apr_int64_t bf_count_status(bf_fixture_t *f, const char *status)
{
    return bf_value(f, apr_psprintf(f->p, "SELECT COUNT(*) FROM ledger WHERE status = '%s'",
                                    status));
}

prov_reservation_t *bf_reserve(bf_fixture_t *f, const char *id, prov_micro_t hold,
                               apr_int64_t now, prov_error_t **err)
{
    prov_reservation_t *r = NULL;
    prov_error_t *e = NULL;
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &e, f->src, f->auth, f->m->id, "chat", id, hold,
                                         now, f->p), APR_SUCCESS);
    if (err)
        *err = e;
    return r;
}

void bf_reserve_op(prov_op_t *op, bf_fixture_t *f, const char *id, apr_int64_t now)
{
    memset(op, 0, sizeof(*op));
    op->kind = PROV_OP_RESERVE;
    op->p = f->p;
    op->now = now;
    op->auth = f->auth;
    op->model_id = f->m->id;
    op->transport = "chat";
    op->request_id = id;
    op->hold = C;
}

prov_slot_t *bf_granted(bf_fixture_t *f, prov_leases_t *L, prov_op_t ops[2])
{
    prov_slot_t *work;
    bf_reserve_op(&ops[0], f, "grant-1", T0);
    bf_reserve_op(&ops[1], f, "grant-2", T0);
    ops[0].next = &ops[1];
    work = prov_lease_handoff_take(L, ops);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f->s, ops, work, 0, 0, 3600, f->p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(ops[1].granted, 1024 * C);
    CU_ASSERT_PTR_NULL(prov_lease_handoff_done(L, work, ops, T0, APR_SUCCESS));
    return prov_slot_find(L, f->auth->key_id, f->m->id);
}

/* Leases are granted only where a writer thread serves the table, which a
 * keep_idle says. */
void bf_lease_table(prov_leases_t *L, apr_time_t keep_idle)
{
    memset(L, 0, sizeof(*L));
    L->keep_idle = keep_idle;
}

/* The slot of a returned lease is kept a moment (PROV_SLOT_KEEP): the
 * table stops first, so that the sweep lets go of the keys. */
void bf_free_slots(prov_leases_t *L)
{
    int i;
    L->stopping = 1;
    prov_lease_keys_sweep(L, apr_time_now());
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        CU_ASSERT_PTR_NULL(L->keys[i]);
        while (L->buckets[i]) {
            prov_slot_t *sl = L->buckets[i];
            CU_ASSERT_EQUAL(sl->state, PROV_LEASE_NONE);
            CU_ASSERT_EQUAL(sl->busy, 0);
            CU_ASSERT_PTR_NULL(sl->pending);
            L->buckets[i] = sl->next;
            free(sl->key_hash);
            free(sl);
        }
    }
}

void bf_drop_slots(prov_leases_t *L)
{
    int i;
    prov_lease_keys_forget(L);
    for (i = 0; i < PROV_LEASE_SLOTS; i++) {
        while (L->buckets[i]) {
            prov_slot_t *sl = L->buckets[i];
            while (sl->pending) {
                prov_entry_t *e = sl->pending;
                sl->pending = e->next;
                prov_entry_free(e);
            }
            L->buckets[i] = sl->next;
            free(sl->key_hash);
            free(sl);
        }
    }
}

/* One of bf_run_leasers' threads. */
typedef struct leaser_t {
    bf_fixture_t *f;
    apr_pool_t *p;
    int n;
    int ok, settled, leased;
} leaser_t;

static void *lease_race(void *arg)
{
    leaser_t *lc = arg;
    prov_tokens_t t = { 5, 5, 0, 0 };
    int i;
    for (i = 0; i < LEASE_ROUNDS; i++) {
        prov_reservation_t *r = NULL, *r2 = NULL;
        prov_error_t *e = NULL;
        apr_pool_t *p = NULL;
        apr_pool_create(&p, lc->p);
        if (prov_billing_reserve(&r, &e, lc->f->src, lc->f->auth, lc->f->m->id, "chat",
                                 apr_psprintf(p, "lease-%d-%d", lc->n, i), 3 * C, T0, p)
            != APR_SUCCESS || !r) {
            apr_pool_destroy(p);
            continue;
        }
        lc->ok++;
        lc->leased += r->leased;
        /* Every tenth round a second request overlaps the first. */
        if (i % 10 == 0 && prov_billing_reserve(&r2, &e, lc->f->src, lc->f->auth, lc->f->m->id,
                                                "chat", apr_psprintf(p, "lease-%d-%d-b", lc->n, i),
                                                3 * C, T0, p) == APR_SUCCESS && r2) {
            lc->ok++;
            lc->leased += r2->leased;
            if (prov_billing_settle(lc->f->src, r2, &t, 2000 + lc->n, PROV_STATUS_OK, T0 + 1, p)
                == APR_SUCCESS)
                lc->settled++;
        }
        if (prov_billing_settle(lc->f->src, r, &t, 1000 + lc->n, PROV_STATUS_OK, T0 + 1, p)
            == APR_SUCCESS)
            lc->settled++;
        apr_pool_destroy(p);
    }
    return NULL;
}

void bf_run_leasers(bf_fixture_t *f, bf_lease_run_t *out)
{
    pthread_t th[LEASE_THREADS];
    leaser_t lc[LEASE_THREADS];
    int i;
    for (i = 0; i < LEASE_THREADS; i++) {
        memset(&lc[i], 0, sizeof(lc[i]));
        lc[i].f = f;
        lc[i].n = i;
        apr_pool_create_unmanaged(&lc[i].p);
    }
    for (i = 0; i < LEASE_THREADS; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, lease_race, &lc[i]), 0);
    for (i = 0; i < LEASE_THREADS; i++) {
        pthread_join(th[i], NULL);
        out->ok += lc[i].ok;
        out->settled += lc[i].settled;
        out->leased += lc[i].leased;
        out->requests += LEASE_ROUNDS + LEASE_ROUNDS / 10;
        out->charged += (prov_micro_t)LEASE_ROUNDS * (1000 + i)
                        + (LEASE_ROUNDS / 10) * (2000 + i);
        apr_pool_destroy(lc[i].p);
    }
    CU_ASSERT_EQUAL(out->ok, (int)out->requests);
    CU_ASSERT_EQUAL(out->settled, out->ok);
}

void bf_check_lease_books(bf_fixture_t *f, apr_int64_t requests, prov_micro_t charged)
{
    CU_ASSERT_EQUAL(bf_count_status(f, "reserved"), 0);
    CU_ASSERT_EQUAL(bf_count_status(f, "ok"), requests);
    CU_ASSERT_EQUAL(bf_balance(f), 1000000 * C - charged);
    CU_ASSERT_EQUAL(bf_value(f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_value(f, "SELECT SUM(credits) FROM ledger"), charged);
    CU_ASSERT_EQUAL(bf_value(f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    charged);
    CU_ASSERT_EQUAL(bf_value(f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'user:m'"),
                    charged);
    CU_ASSERT_EQUAL(bf_value(f, "SELECT SUM(requests) FROM usage_buckets "
                                "WHERE scope = 'user:h'"), requests);
}
