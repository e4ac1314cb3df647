/* test_prov_billing.c: unit tests of the spend engine: holds taken from the
 * balance, the key's rolling weekly budget with an exact Retry-After, plan
 * windows used before the balance and rolling back as usage leaves them,
 * refusals that leave nothing behind, exact settlement that happens once,
 * expired holds released once, a batch of many operations as strict as
 * one at a time, threads whose settlements queue behind a running batch,
 * leases (requests drawn in memory, written later by a writer thread,
 * exact at a limit, released when their process is gone; none granted
 * without a writer) and the account status. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "unit_tests.h"
#include "prov_account.h"
#include "prov_billing_int.h"
#include "prov_lease_int.h"
#include "prov_models.h"
#include "prov_plans.h"

typedef struct fixture_t {
    apr_pool_t *p;
    prov_store_t *s;
    prov_store_source_t *src;
    prov_user_t *u;
    prov_apikey_t *k;
    prov_model_t *m;
    prov_auth_t *auth;
    const char *secret;
} fixture_t;

#define C PROV_MICRO_PER_CREDIT
#define T0 APR_INT64_C(1700000000)   /* a multiple of 3600 plus 800 s */

static char channels[256];
static int next_channel;

static void setup(fixture_t *f, prov_micro_t balance, int has_budget, prov_micro_t budget)
{
    apr_pool_create(&f->p, prov_test_pool());
    f->s = prov_test_store_any(f->p);
    f->src = prov_store_source_fixed(f->s, f->p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&f->u, f->s, "bill@example.com", NULL, f->p),
                          APR_SUCCESS);
    if (balance)
        CU_ASSERT_EQUAL_FATAL(prov_balance_add(NULL, f->s, f->u->id, balance, "test", f->p),
                              APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_apikey_create(&f->k, &f->secret, f->s, f->u->id, "k",
                                             has_budget, budget, f->p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(&f->m, f->s, "m1", "up-m1", NULL, NULL, f->p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_auth_lookup(&f->auth, f->s, f->secret, f->p), APR_SUCCESS);
    /* The engine keeps per-database state (queues, leases) for the life of
     * the process: every test gets a database of its own. */
    f->src->channel = &channels[next_channel++ % (int)sizeof(channels)];
}

static void with_plan(fixture_t *f, prov_micro_t q5, prov_micro_t q7, apr_int64_t now)
{
    prov_plan_t *plan = NULL;
    prov_subscription_t *sub = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_plan_add(&plan, f->s, "pro", q5, q7, f->p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_subscription_set(&sub, f->s, f->u->id, plan->id, 0, now, f->p),
                          APR_SUCCESS);
}

/* The fixture's one connection, held from the writer thread (whose
 * batches take it through f->src, prov_store_source_fixed): PostgreSQL's
 * client library takes one thread at a time on a connection. */
static void hold_store(fixture_t *f)
{
    prov_store_t *s = NULL;
    f->src->open(&s, f->src->baton, f->p);
}

static void release_store(fixture_t *f)
{
    f->src->close(f->s, f->src->baton);
}

static prov_micro_t balance_of(fixture_t *f)
{
    prov_user_t *u = NULL;
    apr_status_t rv;
    hold_store(f);
    rv = prov_user_find(&u, f->s, "bill@example.com", f->p);
    release_store(f);
    CU_ASSERT_EQUAL_FATAL(rv, APR_SUCCESS);
    return u->balance;
}

static prov_reservation_t *reserve(fixture_t *f, const char *id, prov_micro_t hold,
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

static apr_int64_t one_value(fixture_t *f, const char *sql);

static apr_int64_t count_status(fixture_t *f, const char *status)
{
    return one_value(f, apr_psprintf(f->p, "SELECT COUNT(*) FROM ledger WHERE status = '%s'",
                                     status));
}

/* A fixed source's connection goes to one thread at a time: another
 * thread's open waits for the close (the same thread may open it again). */
typedef struct opener_t {
    prov_store_source_t *src;
    volatile int opened;
} opener_t;

static void *open_close(void *arg)
{
    opener_t *o = arg;
    prov_store_t *s = NULL;
    o->src->open(&s, o->src->baton, NULL);
    o->opened = 1;
    o->src->close(s, o->src->baton);
    return NULL;
}

static void test_fixed_source_one_thread(void)
{
    fixture_t f;
    opener_t o;
    prov_store_t *s1 = NULL, *s2 = NULL;
    pthread_t t;
    setup(&f, 0, 0, 0);
    o.src = f.src;
    o.opened = 0;
    CU_ASSERT_EQUAL(f.src->open(&s1, f.src->baton, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(f.src->open(&s2, f.src->baton, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_EQUAL(s1, f.s);
    CU_ASSERT_PTR_EQUAL(s2, f.s);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, open_close, &o), 0);
    f.src->close(s2, f.src->baton);
    apr_sleep(apr_time_from_msec(30));
    CU_ASSERT_EQUAL(o.opened, 0);    /* still open once here */
    f.src->close(s1, f.src->baton);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(o.opened, 1);
    apr_pool_destroy(f.p);
}

static void test_estimate(void)
{
    prov_rates_t eff = { 1000000, 2000000, 500000, 2000000 };
    CU_ASSERT_EQUAL(prov_billing_estimate(&eff, 1000, 100), 1000 + 200);
    CU_ASSERT_EQUAL(prov_billing_input_estimate(300, 1), 100 + 8 + 16);
    CU_ASSERT_EQUAL(prov_billing_input_estimate(0, 0), 16);
}

static void test_reserve_settle(void)
{
    fixture_t f;
    prov_reservation_t *r;
    prov_tokens_t t = { 10, 20, 0, 0 };
    setup(&f, 10 * C, 0, 0);
    r = reserve(&f, "req-1", 3 * C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_FALSE(r->from_plan);
    CU_ASSERT_EQUAL(balance_of(&f), 7 * C);
    CU_ASSERT_EQUAL(count_status(&f, "reserved"), 1);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, &t, 1234, "ok", T0 + 1, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(balance_of(&f), 10 * C - 1234);
    CU_ASSERT_EQUAL(count_status(&f, "ok"), 1);
    /* Never twice. */
    r->settled = 0;
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, &t, 1234, "ok", T0 + 2, f.p), APR_EINCOMPLETE);
    CU_ASSERT_EQUAL(balance_of(&f), 10 * C - 1234);
    apr_pool_destroy(f.p);
}

static void test_release(void)
{
    fixture_t f;
    prov_reservation_t *r;
    setup(&f, 5 * C, 0, 0);
    r = reserve(&f, "req-2", C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(prov_billing_release(f.src, r, "failed", T0 + 1, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(balance_of(&f), 5 * C);
    CU_ASSERT_EQUAL(prov_billing_release(f.src, r, "failed", T0 + 1, f.p), APR_EINCOMPLETE);
    apr_pool_destroy(f.p);
}

static void test_insufficient(void)
{
    fixture_t f;
    prov_error_t *err = NULL;
    setup(&f, 1000, 0, 0);
    CU_ASSERT_PTR_NULL(reserve(&f, "req-3", 1001, T0, &err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INSUFFICIENT_CREDITS);
    CU_ASSERT_EQUAL(balance_of(&f), 1000);
    CU_ASSERT_EQUAL(count_status(&f, "reserved"), 0);
    /* The refused request left no ledger row: the same id can be reserved now. */
    CU_ASSERT_PTR_NOT_NULL(reserve(&f, "req-3", 1000, T0, NULL));
    CU_ASSERT_EQUAL(balance_of(&f), 0);
    apr_pool_destroy(f.p);
}

static void test_key_budget_retry_after(void)
{
    fixture_t f;
    prov_reservation_t *r;
    prov_error_t *err = NULL;
    prov_tokens_t t = { 1, 1, 0, 0 };
    apr_int64_t ra;
    setup(&f, 100 * C, 1, 2 * C);
    r = reserve(&f, "b-1", C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, &t, 2 * C, "ok", T0, f.p), APR_SUCCESS);
    /* The week is full: refused with the key budget code and Retry-After =
     * when T0's hour bucket leaves the 7-day window. */
    CU_ASSERT_PTR_NULL(reserve(&f, "b-2", 1, T0 + 3600, &err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_KEY_BUDGET_EXCEEDED);
    ra = prov_bucket_of(T0, 3600) + 3600 + PROV_WINDOW_7D - (T0 + 3600);
    CU_ASSERT_EQUAL(err->retry_after, ra);
    /* One second early: still refused; on time: it passes. */
    CU_ASSERT_PTR_NULL(reserve(&f, "b-3", 1, T0 + 3600 + ra - 1, &err));
    CU_ASSERT_PTR_NOT_NULL(reserve(&f, "b-4", 1, T0 + 3600 + ra, NULL));
    apr_pool_destroy(f.p);
}

static void test_plan_then_balance(void)
{
    fixture_t f;
    prov_reservation_t *r;
    prov_error_t *err = NULL;
    prov_tokens_t t = { 1, 1, 0, 0 };
    apr_int64_t ra;
    setup(&f, 0, 0, 0);
    with_plan(&f, 3 * C, 100 * C, T0 - 10);
    r = reserve(&f, "p-1", 2 * C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_TRUE(r->from_plan);
    CU_ASSERT_TRUE(r->windows.has_plan);
    CU_ASSERT_EQUAL(r->windows.used_5h, 2 * C);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, &t, 2 * C, "ok", T0, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(balance_of(&f), 0);
    /* 2 of 3 used: a 2-credit hold does not fit, and there is no balance. */
    CU_ASSERT_PTR_NULL(reserve(&f, "p-2", 2 * C, T0 + 60, &err));
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_QUOTA_EXCEEDED);
    ra = prov_bucket_of(T0, 300) + 300 + PROV_WINDOW_5H - (T0 + 60);
    CU_ASSERT_EQUAL(err->retry_after, ra);
    CU_ASSERT_PTR_NULL(reserve(&f, "p-3", 2 * C, T0 + 60 + ra - 1, &err));
    CU_ASSERT_PTR_NOT_NULL(reserve(&f, "p-4", 2 * C, T0 + 60 + ra, NULL));
    /* With a balance, the overflow is paid from it. */
    CU_ASSERT_EQUAL(prov_balance_add(NULL, f.s, f.u->id, 5 * C, "top up", f.p), APR_SUCCESS);
    r = reserve(&f, "p-5", 2 * C, T0 + 60 + ra, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_FALSE(r->from_plan);
    CU_ASSERT_EQUAL(balance_of(&f), 3 * C);
    apr_pool_destroy(f.p);
}

static void test_expire(void)
{
    fixture_t f;
    prov_reservation_t *r;
    prov_tokens_t t = { 1, 1, 0, 0 };
    int n = -1;
    setup(&f, 10 * C, 0, 0);
    r = reserve(&f, "e-1", 4 * C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(prov_billing_expire(&n, f.src, T0 + 10, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(balance_of(&f), 6 * C);
    CU_ASSERT_EQUAL(prov_billing_expire(&n, f.src, T0 + PROV_HOLD_TIMEOUT_DEFAULT + 1, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(balance_of(&f), 10 * C);
    CU_ASSERT_EQUAL(count_status(&f, "expired"), 1);
    /* The late worker's settlement finds the row gone: nothing moves twice. */
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, &t, C, "ok", T0 + 7200, f.p),
                    APR_EINCOMPLETE);
    CU_ASSERT_EQUAL(balance_of(&f), 10 * C);
    apr_pool_destroy(f.p);
}

/* Many operations in one batch are checked one after the other. */
static void test_batch_exact(void)
{
    fixture_t f;
    prov_op_t ops[12];
    int i, ok = 0;
    setup(&f, 100 * C, 1, 10 * C);
    memset(ops, 0, sizeof(ops));
    for (i = 0; i < 12; i++) {
        ops[i].kind = PROV_OP_RESERVE;
        ops[i].p = f.p;
        ops[i].now = T0;
        ops[i].auth = f.auth;
        ops[i].model_id = f.m->id;
        ops[i].transport = "chat";
        ops[i].request_id = apr_psprintf(f.p, "batch-%d", i);
        ops[i].hold = C;
        ops[i].next = i < 11 ? &ops[i + 1] : NULL;
    }
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, ops, NULL, 0, 0, 3600, f.p), APR_SUCCESS);
    for (i = 0; i < 12; i++) {
        if (ops[i].out)
            ok++;
        else
            CU_ASSERT_EQUAL(ops[i].err ? (int)ops[i].err->code : -1, (int)PROV_E_KEY_BUDGET_EXCEEDED);
    }
    CU_ASSERT_EQUAL(ok, 10);
    CU_ASSERT_EQUAL(balance_of(&f), 90 * C);
    CU_ASSERT_EQUAL(count_status(&f, "reserved"), 10);
    apr_pool_destroy(f.p);
}

/* Threads that reserve and settle at once: settlements queued behind a
 * running batch are committed by its leader, none is lost or run twice. */
#define RACE_THREADS 8
#define RACE_ROUNDS 40

typedef struct racer_t {
    fixture_t *f;
    apr_pool_t *p;
    int n;
    int ok, settled;
} racer_t;

static void *race(void *arg)
{
    racer_t *rc = arg;
    prov_tokens_t t = { 5, 5, 0, 0 };
    int i;
    for (i = 0; i < RACE_ROUNDS; i++) {
        prov_reservation_t *r = NULL;
        prov_error_t *e = NULL;
        const char *id = apr_psprintf(rc->p, "race-%d-%d", rc->n, i);
        if (prov_billing_reserve(&r, &e, rc->f->src, rc->f->auth, rc->f->m->id, "chat", id,
                                 3 * C, T0, rc->p) != APR_SUCCESS || !r)
            continue;
        rc->ok++;
        if (prov_billing_settle(rc->f->src, r, &t, 1000 + rc->n, "ok", T0 + 1, rc->p)
            == APR_SUCCESS)
            rc->settled++;
    }
    return NULL;
}

static void test_threads_settle(void)
{
    fixture_t f;
    pthread_t th[RACE_THREADS];
    racer_t rc[RACE_THREADS];
    prov_micro_t charged = 0;
    int i, ok = 0, settled = 0;
    setup(&f, 100 * C, 0, 0);
    for (i = 0; i < RACE_THREADS; i++) {
        memset(&rc[i], 0, sizeof(rc[i]));
        rc[i].f = &f;
        rc[i].n = i;
        apr_pool_create(&rc[i].p, f.p);
    }
    for (i = 0; i < RACE_THREADS; i++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, race, &rc[i]), 0);
    for (i = 0; i < RACE_THREADS; i++) {
        pthread_join(th[i], NULL);
        ok += rc[i].ok;
        settled += rc[i].settled;
        charged += (prov_micro_t)rc[i].settled * (1000 + i);
    }
    CU_ASSERT_EQUAL(ok, RACE_THREADS * RACE_ROUNDS);
    CU_ASSERT_EQUAL(settled, ok);
    CU_ASSERT_EQUAL(count_status(&f, "reserved"), 0);
    CU_ASSERT_EQUAL(count_status(&f, "ok"), ok);
    CU_ASSERT_EQUAL(balance_of(&f), 100 * C - charged);
    apr_pool_destroy(f.p);
}

static apr_int64_t one_value(fixture_t *f, const char *sql)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t n = -1;
    int rc;
    hold_store(f);
    rc = apr_dbd_select(f->s->driver, f->p, f->s->handle, &res, sql, 1);
    CU_ASSERT_EQUAL(rc, 0);
    while (rc == 0 && apr_dbd_get_row(f->s->driver, f->p, res, &row, -1) == 0)
        n = prov_store_get_i64(f->s, row, 0, 0);
    release_store(f);
    return n;
}

/* Threads on a key with plenty of credit: most requests draw from a lease;
 * when they are done every row is written complete, the balance equals the
 * charges, the buckets hold exactly the charges and no lease is left. */
#define LEASE_THREADS 6
#define LEASE_ROUNDS 150

typedef struct leaser_t {
    fixture_t *f;
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
            if (prov_billing_settle(lc->f->src, r2, &t, 2000 + lc->n, "ok", T0 + 1, p)
                == APR_SUCCESS)
                lc->settled++;
        }
        if (prov_billing_settle(lc->f->src, r, &t, 1000 + lc->n, "ok", T0 + 1, p)
            == APR_SUCCESS)
            lc->settled++;
        apr_pool_destroy(p);
    }
    return NULL;
}

/* Runs LEASE_THREADS lease_race threads on f and adds up what they did:
 * requests made, reservations granted, settled and drawn, and the charges. */
typedef struct lease_run_t {
    int ok, settled, leased;
    apr_int64_t requests;
    prov_micro_t charged;
} lease_run_t;

static void run_leasers(fixture_t *f, lease_run_t *out)
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

/* After lease_race threads (f's balance was 1000000 C): every row written
 * complete, no lease left, the balance and the buckets equal the charges. */
static void check_lease_books(fixture_t *f, apr_int64_t requests, prov_micro_t charged)
{
    CU_ASSERT_EQUAL(count_status(f, "reserved"), 0);
    CU_ASSERT_EQUAL(count_status(f, "ok"), requests);
    CU_ASSERT_EQUAL(balance_of(f), 1000000 * C - charged);
    CU_ASSERT_EQUAL(one_value(f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(one_value(f, "SELECT SUM(credits) FROM ledger"), charged);
    CU_ASSERT_EQUAL(one_value(f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    charged);
    CU_ASSERT_EQUAL(one_value(f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'user:m'"),
                    charged);
    CU_ASSERT_EQUAL(one_value(f, "SELECT SUM(requests) FROM usage_buckets "
                                 "WHERE scope = 'user:h'"), requests);
}

static void test_lease_threads(void)
{
    fixture_t f;
    lease_run_t lr = { 0, 0, 0, 0, 0 };
    prov_billing_writer_t *w = NULL;
    setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, 0), APR_SUCCESS);
    run_leasers(&f, &lr);
    CU_ASSERT_TRUE(lr.leased > 0);
    prov_billing_writer_stop(w);
    check_lease_books(&f, lr.requests, lr.charged);
    apr_pool_destroy(f.p);
}

/* Without a writer thread (providerctl, or a child whose thread could not
 * start: PROV00008) no lease is granted: requests in flight together are
 * each reserved in the database, and threads' reservations and
 * settlements all go through the batches, exact to the ledger, the
 * balance and the windows' buckets. */
static void test_no_writer_no_lease(void)
{
    fixture_t f;
    lease_run_t lr = { 0, 0, 0, 0, 0 };
    prov_reservation_t *r[3];
    int i;
    setup(&f, 1000000 * C, 0, 0);
    for (i = 0; i < 3; i++) {
        r[i] = reserve(&f, apr_psprintf(f.p, "nw-%d", i), 3 * C, T0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r[i]);
        CU_ASSERT_FALSE(r[i]->leased);
    }
    CU_ASSERT_EQUAL(count_status(&f, "reserved"), 3);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(balance_of(&f), 1000000 * C - 9 * C);
    for (i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(prov_billing_settle(f.src, r[i], NULL, 100 * (i + 1), "ok", T0 + 1, f.p),
                        APR_SUCCESS);
    CU_ASSERT_FALSE(prov_billing_active(f.src));
    run_leasers(&f, &lr);
    CU_ASSERT_EQUAL(lr.leased, 0);
    CU_ASSERT_FALSE(prov_billing_active(f.src));
    check_lease_books(&f, lr.requests + 3, lr.charged + 600);
    apr_pool_destroy(f.p);
}

/* Whether f's writer thread leaves nothing to do (no lease, nothing
 * unwritten) within 5 s. */
static int writer_settles(fixture_t *f)
{
    int polls;
    for (polls = 0; polls < 1000 && prov_billing_active(f->src); polls++)
        apr_sleep(apr_time_from_msec(5));
    return !prov_billing_active(f->src);
}

/* With a writer thread: the threads' settlements never run a batch, yet
 * everything is written. A lease outlives the gap after the last request
 * of its key (a request then still draws from it) and is returned by the
 * writer once the gap is longer than keep_idle, or when it stops. */
static void test_lease_writer(void)
{
    fixture_t f;
    lease_run_t lr = { 0, 0, 0, 0, 0 };
    prov_billing_writer_t *w = NULL;
    prov_reservation_t *r, *r2, *r3;
    prov_error_t *err = NULL;
    prov_micro_t charged;
    apr_int64_t requests;
    setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    run_leasers(&f, &lr);
    CU_ASSERT_TRUE(lr.leased > lr.ok / 2);
    requests = lr.requests + 1;
    charged = lr.charged;
    /* Nothing in flight, the lease is kept: the next request draws. */
    CU_ASSERT_TRUE(prov_billing_active(f.src));
    r = reserve(&f, "after-gap", 3 * C, T0 + 2, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_TRUE(r->leased);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, NULL, 777, "ok", T0 + 3, f.p), APR_SUCCESS);
    charged += 777;
    prov_billing_writer_stop(w);
    CU_ASSERT_FALSE(prov_billing_active(f.src));
    check_lease_books(&f, requests, charged);

    /* A short keep_idle: the second of two requests at once gets a lease
     * with its reservation; both are settled the ordinary way, and the
     * writer returns the lease by itself. */
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, apr_time_from_msec(20)),
                          APR_SUCCESS);
    /* (the key's last request older than keep_idle: not one right after) */
    apr_sleep(apr_time_from_msec(30));
    r = reserve(&f, "one-1", 3 * C, T0 + 4, &err);
    r2 = reserve(&f, "one-2", 3 * C, T0 + 4, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r2);
    CU_ASSERT_FALSE(r2->leased);
    CU_ASSERT_TRUE(prov_billing_active(f.src));
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, NULL, 50, "ok", T0 + 5, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r2, NULL, 60, "ok", T0 + 5, f.p), APR_SUCCESS);
    charged += 110;
    CU_ASSERT_TRUE(writer_settles(&f));
    /* Again, and a third request draws from the lease. */
    r = reserve(&f, "pair-1", 3 * C, T0 + 4, &err);
    r2 = reserve(&f, "pair-2", 3 * C, T0 + 4, &err);
    r3 = reserve(&f, "pair-3", 3 * C, T0 + 4, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r3);
    CU_ASSERT_TRUE(r3->leased);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, NULL, 100, "ok", T0 + 5, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r2, NULL, 200, "ok", T0 + 5, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r3, NULL, 300, "ok", T0 + 5, f.p), APR_SUCCESS);
    charged += 600;
    CU_ASSERT_TRUE(writer_settles(&f));
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT SUM(credits) FROM ledger"), charged);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'ok'"),
                    requests + 5);
    CU_ASSERT_EQUAL(balance_of(&f), 1000000 * C - charged);
    prov_billing_writer_stop(w);
    apr_pool_destroy(f.p);
}

/* One request at a time (a client waiting for each answer): the second,
 * reserved within keep_idle of the first's end, is granted a lease, and
 * the third draws from it; requests further apart than keep_idle, or a
 * key whose budget keeps no room for a lease, reserve each in the
 * database. The books are exact either way. */
static int seq_leased(fixture_t *f, const char *id, prov_micro_t charge, prov_micro_t *charged)
{
    prov_reservation_t *r = reserve(f, id, 3 * C, T0, NULL);
    int leased;
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    leased = r->leased;
    CU_ASSERT_EQUAL(prov_billing_settle(f->src, r, NULL, charge, "ok", T0 + 1, f->p),
                    APR_SUCCESS);
    *charged += charge;
    return leased;
}

static void test_lease_sequential(void)
{
    fixture_t f, fb;
    prov_billing_writer_t *w = NULL;
    prov_micro_t charged = 0, charged_b = 0;
    setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    CU_ASSERT_FALSE(seq_leased(&f, "seq-1", 100, &charged));
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_FALSE(seq_leased(&f, "seq-2", 200, &charged));
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 1);
    CU_ASSERT_TRUE(seq_leased(&f, "seq-3", 300, &charged));
    CU_ASSERT_TRUE(seq_leased(&f, "seq-4", 400, &charged));
    prov_billing_writer_stop(w);
    CU_ASSERT_FALSE(prov_billing_active(f.src));
    check_lease_books(&f, 4, charged);

    /* Further apart than keep_idle: no lease. */
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, apr_time_from_msec(5)),
                          APR_SUCCESS);
    apr_sleep(apr_time_from_msec(20));
    CU_ASSERT_FALSE(seq_leased(&f, "far-1", 100, &charged));
    apr_sleep(apr_time_from_msec(20));
    CU_ASSERT_FALSE(seq_leased(&f, "far-2", 100, &charged));
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    prov_billing_writer_stop(w);
    check_lease_books(&f, 6, charged);
    apr_pool_destroy(f.p);

    /* A weekly budget of 100 credits keeps no room for twice a lease of
     * 256 holds of 3 credits: every request is checked in the database. */
    setup(&fb, 1000000 * C, 1, 100 * C);
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, fb.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    CU_ASSERT_FALSE(seq_leased(&fb, "tight-1", C, &charged_b));
    CU_ASSERT_FALSE(seq_leased(&fb, "tight-2", C, &charged_b));
    CU_ASSERT_FALSE(seq_leased(&fb, "tight-3", C, &charged_b));
    CU_ASSERT_EQUAL(one_value(&fb, "SELECT COUNT(*) FROM billing_leases"), 0);
    prov_billing_writer_stop(w);
    check_lease_books(&fb, 3, charged_b);
    apr_pool_destroy(fb.p);
}

/* A request after others of its key, with a lease open that nothing else
 * uses, draws from it only once the database still admits the key: the
 * key deleted, reissued (the old secret) or its account blocked, the next
 * request is refused at once, with no row, as without a lease. */
static void test_lease_sequential_refused(void)
{
    static const prov_errcode_e want[] = { PROV_E_INVALID_API_KEY, PROV_E_INVALID_API_KEY,
                                           PROV_E_USER_BLOCKED };
    int i;
    for (i = 0; i < 3; i++) {
        fixture_t f;
        prov_billing_writer_t *w = NULL;
        prov_micro_t charged = 0;
        prov_error_t *e = NULL;
        const char *fresh = NULL;
        int revoked = 0;
        setup(&f, 1000000 * C, 0, 0);
        CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, apr_time_from_sec(60)),
                              APR_SUCCESS);
        seq_leased(&f, "lone-1", 100, &charged);
        seq_leased(&f, "lone-2", 200, &charged);
        CU_ASSERT_TRUE(seq_leased(&f, "lone-3", 300, &charged));
        /* (the client's pause before its next request) */
        apr_sleep(2 * PROV_LEASE_LONE_GAP);
        hold_store(&f);
        if (i == 0)
            CU_ASSERT_EQUAL(prov_apikey_delete(f.s, f.k->id, f.p), APR_SUCCESS);
        if (i == 1)
            CU_ASSERT_EQUAL(prov_apikey_reissue(&fresh, f.s, f.k->id, f.p), APR_SUCCESS);
        if (i == 2)
            CU_ASSERT_EQUAL(prov_user_set_blocked(&revoked, f.s, f.u->id, 1, f.p), APR_SUCCESS);
        release_store(&f);
        CU_ASSERT_PTR_NULL(reserve(&f, "lone-after", 3 * C, T0, &e));
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_EQUAL(e->code, want[i]);
        prov_billing_writer_stop(w);
        check_lease_books(&f, 3, charged);
        CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM ledger "
                                      "WHERE request_id = 'lone-after'"), 0);
        apr_pool_destroy(f.p);
    }
}

/* Polls the lease count until it is want (2 s at most); returns the last. */
static apr_int64_t leases_become(fixture_t *f, apr_int64_t want)
{
    apr_int64_t n = -1;
    int i;
    for (i = 0; i < 200 && (n = one_value(f, "SELECT COUNT(*) FROM billing_leases")) != want;
         i++)
        apr_sleep(apr_time_from_msec(10));
    return n;
}

/* A key's requests of a second model beside a long one of the first (an
 * agent's small requests beside its stream): the first of them is granted
 * a lease although it comes alone, the lease stays past keep_idle while
 * the long request is in flight and the next one draws from it; it is
 * returned keep_idle after the key has nothing in flight. */
static void test_lease_beside_other_model(void)
{
    fixture_t f;
    prov_billing_writer_t *w = NULL;
    prov_model_t *m2 = NULL;
    prov_reservation_t *lng, *side = NULL;
    prov_error_t *e = NULL;
    prov_micro_t charged = 0;
    const char *ids[] = { "side-1", "side-2" };
    int i;
    setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(&m2, f.s, "m2", "up-m2", NULL, NULL, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, apr_time_from_msec(30)),
                          APR_SUCCESS);
    lng = reserve(&f, "long", 3 * C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lng);
    CU_ASSERT_FALSE(lng->leased);
    for (i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(prov_billing_reserve(&side, &e, f.src, f.auth, m2->id, "chat", ids[i],
                                             C, T0, f.p), APR_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL_FATAL(side);
        CU_ASSERT_EQUAL(side->leased, i == 1);
        CU_ASSERT_EQUAL(prov_billing_settle(f.src, side, NULL, 10, "ok", T0 + 1, f.p),
                        APR_SUCCESS);
        charged += 10;
        /* three times keep_idle: kept while "long" is in flight */
        apr_sleep(apr_time_from_msec(90));
        CU_ASSERT_EQUAL(leases_become(&f, 1), 1);
    }
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, lng, NULL, 20, "ok", T0 + 2, f.p), APR_SUCCESS);
    charged += 20;
    CU_ASSERT_EQUAL(leases_become(&f, 0), 0);
    prov_billing_writer_stop(w);
    check_lease_books(&f, 3, charged);
    apr_pool_destroy(f.p);
}

/* A writer that stops while requests drawn from its lease are in flight
 * leaves the lease (PROV00057): nobody draws from it any more, the
 * requests that settle write their own rows, and the last one returns it;
 * the books are exact. */
static void test_writer_stops_in_flight(void)
{
    fixture_t f;
    prov_billing_writer_t *w = NULL;
    prov_reservation_t *r[4];
    int i;
    setup(&f, 10000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, 0), APR_SUCCESS);
    for (i = 0; i < 3; i++) {
        r[i] = reserve(&f, apr_psprintf(f.p, "st-%d", i), C, T0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r[i]);
    }
    CU_ASSERT_TRUE(r[2]->leased);
    prov_billing_writer_stop(w);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 1);
    r[3] = reserve(&f, "st-3", C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r[3]);
    CU_ASSERT_FALSE(r[3]->leased);
    for (i = 3; i >= 0; i--)
        CU_ASSERT_EQUAL(prov_billing_settle(f.src, r[i], NULL, 10 * (i + 1), "ok", T0 + 1, f.p),
                        APR_SUCCESS);
    CU_ASSERT_FALSE(prov_billing_active(f.src));
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(count_status(&f, "ok"), 4);
    CU_ASSERT_EQUAL(balance_of(&f), 10000 * C - 100);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    100);
    apr_pool_destroy(f.p);
}

/* Requests held in flight together on a budget of exactly 1000 holds:
 * leases serve most of them, yet exactly 1000 pass, the next is refused
 * with the budget's code and an exact Retry-After, and every hold is a
 * ledger row by then. Releasing them all gives everything back. */
static void test_lease_exact_limit(void)
{
    fixture_t f;
    prov_reservation_t *rs[1001];
    prov_error_t *err = NULL;
    prov_billing_writer_t *w = NULL;
    int i, n = 0, leased = 0;
    setup(&f, 100000 * C, 1, 1000 * C);
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, 0), APR_SUCCESS);
    for (i = 0; i < 1001; i++) {
        err = NULL;
        rs[i] = reserve(&f, apr_psprintf(f.p, "x-%d", i), C, T0 + 10, &err);
        if (!rs[i])
            break;
        n++;
        leased += rs[i]->leased;
    }
    CU_ASSERT_EQUAL(n, 1000);
    CU_ASSERT_TRUE(leased > 900);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_KEY_BUDGET_EXCEEDED);
    CU_ASSERT_EQUAL(err->retry_after, prov_bucket_of(T0 + 10, 3600) + 3600 + PROV_WINDOW_7D
                                      - (T0 + 10));
    CU_ASSERT_EQUAL(count_status(&f, "reserved"), 1000);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(balance_of(&f), 99000 * C);
    for (i = 0; i < n; i++)
        CU_ASSERT_EQUAL(prov_billing_release(f.src, rs[i], "failed", T0 + 20, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(count_status(&f, "failed"), 1000);
    CU_ASSERT_EQUAL(balance_of(&f), 100000 * C);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    0);
    prov_billing_writer_stop(w);
    apr_pool_destroy(f.p);
}

/* A plan name of the longest kind providerctl takes (64 characters) comes
 * back whole from a reservation drawn on a lease (the lease keeps a copy). */
static void test_lease_plan_name(void)
{
    fixture_t f;
    prov_billing_writer_t *w = NULL;
    prov_plan_t *plan = NULL;
    prov_subscription_t *sub = NULL;
    prov_reservation_t *rs[50];
    char name[65];
    int i, leased = 0;
    memset(name, 'p', 64);
    name[64] = '\0';
    setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_plan_add(&plan, f.s, name, 100000 * C, 500000 * C, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_subscription_set(&sub, f.s, f.u->id, plan->id, 0, T0 - 10, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_billing_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    /* requests at once (none settled yet): the later ones draw on a lease */
    for (i = 0; i < 50; i++) {
        rs[i] = reserve(&f, apr_psprintf(f.p, "pn-%d", i), C, T0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rs[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rs[i]->windows.plan_name);
        CU_ASSERT_STRING_EQUAL(rs[i]->windows.plan_name, name);
        leased += rs[i]->leased;
    }
    CU_ASSERT_TRUE(leased > 0);
    for (i = 0; i < 50; i++)
        CU_ASSERT_EQUAL(prov_billing_settle(f.src, rs[i], NULL, 10, "ok", T0 + 1, f.p),
                        APR_SUCCESS);
    prov_billing_writer_stop(w);
    apr_pool_destroy(f.p);
}

/* Builds a reserve op of f's key for the lease steps below. */
static void lease_op(prov_op_t *op, fixture_t *f, const char *id, apr_int64_t now)
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

/* A lease table of a test's own, as a writer thread serves it (leases
 * are granted only then), keeping a lease TEST_KEEP_IDLE after its key's
 * last request ends. */
#define TEST_KEEP_IDLE apr_time_from_msec(1)

static void writer_table(prov_leases_t *L)
{
    memset(L, 0, sizeof(*L));
    L->keep_idle = TEST_KEEP_IDLE;
}

/* Frees the slots and keys of a lease table of a test's own, each with no
 * lease, nothing in flight and nothing unwritten left (the slot of a
 * returned lease is kept a moment, PROV_SLOT_KEEP). */
static void free_slots(prov_leases_t *L)
{
    int i;
    L->stopping = 1;
    prov_keys_sweep(L, apr_time_now());
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

/* The engine's steps one by one, on a lease table of the test's own: two
 * reservations at once get a lease; a third request draws from it; it is
 * still running when a batch writes its hold (it is a second old), and it
 * is settled while that batch runs: the settlement comes back as an
 * ordinary one for the row just written, and runs once. */
static void test_lease_settled_while_written(void)
{
    fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2], *again, *o;
    prov_slot_t *work;
    prov_reservation_t *r = NULL;
    prov_tokens_t t = { 3, 4, 0, 0 };
    const char *sql;
    setup(&f, 10000 * C, 0, 0);
    writer_table(&L);
    lease_op(&ops[0], &f, "w-1", T0);
    lease_op(&ops[1], &f, "w-2", T0);
    ops[0].next = &ops[1];
    work = prov_lease_take(&L, ops);
    CU_ASSERT_PTR_NULL(work);
    CU_ASSERT_EQUAL(ops[0].lease_unit, 0);
    CU_ASSERT_EQUAL(ops[1].lease_unit, 1024 * C);
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, ops, work, 0, 0, 3600, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(ops[1].granted, 1024 * C);
    CU_ASSERT_PTR_NULL(prov_lease_done(&L, work, ops, T0, APR_SUCCESS));
    CU_ASSERT_EQUAL(balance_of(&f), 10000 * C - 2 * C - 1024 * C);

    CU_ASSERT_TRUE_FATAL(prov_lease_draw(&L, &r, f.auth, f.m->id, "chat", "w-3", C, T0 + 1,
                                         f.p));
    CU_ASSERT_TRUE(r->leased);
    CU_ASSERT_FALSE(prov_lease_due(&L));
    /* two seconds later (the slot's bound on its entries' age moves too) */
    ((prov_entry_t *)r->entry)->drawn_at -= apr_time_from_sec(2);
    ((prov_slot_t *)r->slot)->pending_oldest -= apr_time_from_sec(2);
    CU_ASSERT_TRUE(prov_lease_due(&L));
    work = prov_lease_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL(prov_lease_settle(&L, r, &t, C / 2, "ok", T0 + 2), 1);
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, NULL, work, T0 + 2, 0, 3600, f.p),
                          APR_SUCCESS);
    again = prov_lease_done(&L, work, NULL, T0 + 2, APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(again);
    CU_ASSERT_PTR_NULL(again->next);
    CU_ASSERT_EQUAL(count_status(&f, "reserved"), 3);
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, again, NULL, 0, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(again->rv, APR_SUCCESS);
    /* Once: the same settlement again finds the row settled. */
    again->next = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, again, NULL, 0, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(again->rv, APR_EINCOMPLETE);
    for (o = again; o; o = again) {
        again = o->next;
        free(o);
    }
    sql = "SELECT credits FROM ledger WHERE request_id = 'w-3' AND status = 'ok'";
    CU_ASSERT_EQUAL(one_value(&f, sql), C / 2);
    /* Out of the balance: the two holds, the lease less w-3's hold, and
     * w-3's charge. */
    CU_ASSERT_EQUAL(balance_of(&f), 10000 * C - 2 * C - 1023 * C - C / 2);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT amount FROM billing_leases"), 1023 * C);
    /* The two holds end: once nothing of the key has been in flight for
     * keep_idle, the next batch returns the lease and everything is back
     * but w-3's charge. */
    CU_ASSERT_EQUAL(prov_lease_settle(&L, ops[0].out, NULL, 0, "failed", T0 + 3), 0);
    CU_ASSERT_EQUAL(prov_lease_settle(&L, ops[1].out, NULL, 0, "failed", T0 + 3), 0);
    CU_ASSERT_EQUAL(prov_billing_release(f.src, ops[0].out, "failed", T0 + 3, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_release(f.src, ops[1].out, "failed", T0 + 3, f.p), APR_SUCCESS);
    apr_sleep(2 * TEST_KEEP_IDLE);
    CU_ASSERT_TRUE(prov_lease_due(&L));
    work = prov_lease_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, NULL, work, T0 + 3, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_lease_done(&L, work, NULL, T0 + 3, APR_SUCCESS));
    CU_ASSERT_FALSE(prov_lease_due(&L));
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(balance_of(&f), 10000 * C - C / 2);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    C / 2);
    free_slots(&L);
    apr_pool_destroy(f.p);
}

/* Counts the entries of a list. */
static int entries(const prov_entry_t *e)
{
    int n = 0;
    for (; e; e = e->next)
        n++;
    return n;
}

/* More settled rows than a batch takes: the first batch writes
 * PROV_BATCH_ROWS_MAX of them, the rest stays due and the next batch
 * writes it; every row is written once and the books are exact. */
static void test_lease_batch_cap(void)
{
    fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2];
    prov_slot_t *work;
    prov_tokens_t t = { 3, 4, 0, 0 };
    const int n = PROV_BATCH_ROWS_MAX + 88;
    int i;
    setup(&f, 100000 * C, 0, 0);
    writer_table(&L);
    lease_op(&ops[0], &f, "cap-a", T0);
    lease_op(&ops[1], &f, "cap-b", T0);
    ops[0].next = &ops[1];
    work = prov_lease_take(&L, ops);
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, ops, work, 0, 0, 3600, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(ops[1].granted, 1024 * C);
    prov_lease_done(&L, work, ops, T0, APR_SUCCESS);
    for (i = 0; i < n; i++) {
        prov_reservation_t *r = NULL;
        CU_ASSERT_TRUE_FATAL(prov_lease_draw(&L, &r, f.auth, f.m->id, "chat",
                                             apr_psprintf(f.p, "cap-%d", i), C / 4, T0 + 1, f.p));
        CU_ASSERT_EQUAL(prov_lease_settle(&L, r, &t, C / 8, "ok", T0 + 1), 1);
    }
    CU_ASSERT_TRUE(prov_lease_due(&L));
    work = prov_lease_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL(entries(work->taken), PROV_BATCH_ROWS_MAX);
    CU_ASSERT_EQUAL(entries(work->pending), n - PROV_BATCH_ROWS_MAX);
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, NULL, work, T0 + 1, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_lease_done(&L, work, NULL, T0 + 1, APR_SUCCESS));
    CU_ASSERT_EQUAL(count_status(&f, "ok"), PROV_BATCH_ROWS_MAX);
    /* The rest is due at once. */
    CU_ASSERT_TRUE(prov_lease_due(&L));
    work = prov_lease_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL(entries(work->taken), n - PROV_BATCH_ROWS_MAX);
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, NULL, work, T0 + 1, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_lease_done(&L, work, NULL, T0 + 1, APR_SUCCESS));
    CU_ASSERT_EQUAL(count_status(&f, "ok"), n);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT SUM(credits) FROM ledger WHERE status = 'ok'"),
                    (prov_micro_t)n * (C / 8));
    /* The two holds end, the lease is returned (keep_idle later): only the
     * charges are gone. */
    CU_ASSERT_EQUAL(prov_lease_settle(&L, ops[0].out, NULL, 0, "failed", T0 + 2), 0);
    CU_ASSERT_EQUAL(prov_lease_settle(&L, ops[1].out, NULL, 0, "failed", T0 + 2), 0);
    CU_ASSERT_EQUAL(prov_billing_release(f.src, ops[0].out, "failed", T0 + 2, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_release(f.src, ops[1].out, "failed", T0 + 2, f.p), APR_SUCCESS);
    apr_sleep(2 * TEST_KEEP_IDLE);
    work = prov_lease_take(&L, NULL);
    CU_ASSERT_EQUAL_FATAL(prov_billing_run_batch(f.s, NULL, work, T0 + 2, 0, 3600, f.p),
                          APR_SUCCESS);
    prov_lease_done(&L, work, NULL, T0 + 2, APR_SUCCESS);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(balance_of(&f), 100000 * C - (prov_micro_t)n * (C / 8));
    CU_ASSERT_EQUAL(one_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    (prov_micro_t)n * (C / 8));
    free_slots(&L);
    apr_pool_destroy(f.p);
}

/* The lease of a process that stopped (its row, and what it held of the
 * balance and the buckets) is released once it is older than the hold
 * timeout, exactly once. */
static void test_lease_expire(void)
{
    fixture_t f;
    int n = -1;
    apr_int64_t hb = prov_bucket_of(T0, 3600), mb = prov_bucket_of(T0, 300);
    const char *sql;
    setup(&f, 10 * C, 0, 0);
    sql = apr_psprintf(f.p,
        "INSERT INTO billing_leases (id, user_id, key_id, model_id, source, amount, at) "
        "VALUES ('lease_dead', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT
        ", 'balance', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ")",
        f.u->id, f.k->id, f.m->id, 4 * C, T0);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(f.s, sql, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(f.s, apr_psprintf(f.p, "UPDATE users SET balance = "
                          "balance - %" APR_INT64_T_FMT, 4 * C), f.p), APR_SUCCESS);
    sql = apr_psprintf(f.p,
        "INSERT INTO usage_buckets (scope, scope_id, bucket, credits) VALUES "
        "('key:h', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT "), "
        "('user:h', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT "), "
        "('user:m', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ")",
        f.k->id, hb, 4 * C, f.u->id, hb, 4 * C, f.u->id, mb, 4 * C);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(f.s, sql, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(balance_of(&f), 6 * C);
    CU_ASSERT_EQUAL(prov_billing_expire(&n, f.src, T0 + 60, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 1);
    CU_ASSERT_EQUAL(prov_billing_expire(&n, f.src, T0 + PROV_HOLD_TIMEOUT_DEFAULT + 1, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(balance_of(&f), 10 * C);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT SUM(credits) FROM usage_buckets"), 0);
    CU_ASSERT_EQUAL(prov_billing_expire(&n, f.src, T0 + PROV_HOLD_TIMEOUT_DEFAULT + 100, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(balance_of(&f), 10 * C);
    apr_pool_destroy(f.p);
}

static void test_status(void)
{
    fixture_t f;
    prov_account_status_t st;
    prov_micro_t spent = -1;
    apr_int64_t reset = -1;
    prov_reservation_t *r;
    setup(&f, 10 * C, 0, 0);
    with_plan(&f, 5 * C, 50 * C, T0 - 10);
    r = reserve(&f, "s-1", 2 * C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(prov_billing_account_status(&st, f.s, f.u->id, T0 + 30, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(st.balance, 10 * C);
    CU_ASSERT_EQUAL(st.held, 0);
    CU_ASSERT_TRUE(st.windows.has_plan);
    CU_ASSERT_STRING_EQUAL(st.windows.plan_name, "pro");
    CU_ASSERT_EQUAL(st.windows.used_5h, 2 * C);
    CU_ASSERT_EQUAL(st.windows.quota_7d, 50 * C);
    CU_ASSERT_EQUAL(st.windows.reset_5h,
                    prov_bucket_of(T0, 300) + 300 + PROV_WINDOW_5H - (T0 + 30));
    CU_ASSERT_EQUAL(prov_billing_key_status(&spent, &reset, f.s, f.k->id, T0 + 30, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(spent, 2 * C);
    CU_ASSERT_EQUAL(reset, prov_bucket_of(T0, 3600) + 3600 + PROV_WINDOW_7D - (T0 + 30));
    apr_pool_destroy(f.p);
}

static void test_window_math(void)
{
    prov_window_t w;
    apr_pool_t *p = prov_test_pool();
    memset(&w, 0, sizeof(w));
    w.len = 300;
    w.span = PROV_WINDOW_5H;
    w.listed = 1;
    prov_window_add(&w, 1000, 5, p);
    prov_window_add(&w, 1100, 5, p);    /* same bucket (900) */
    prov_window_add(&w, 1300, 7, p);    /* bucket 1200 */
    CU_ASSERT_EQUAL(w.n, 2);
    CU_ASSERT_EQUAL(w.sum, 17);
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 3, 20, 2000), 0);
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 4, 20, 2000), 900 + 300 + PROV_WINDOW_5H - 2000);
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 15, 20, 2000), 1200 + 300 + PROV_WINDOW_5H - 2000);
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 21, 20, 2000), -1);
    CU_ASSERT_EQUAL(prov_window_reset(&w, 2000), 900 + 300 + PROV_WINDOW_5H - 2000);
    CU_ASSERT_EQUAL(prov_bucket_of(-1, 300), -300);
    /* A window read as a sum keeps the sum and the oldest bucket only. */
    memset(&w, 0, sizeof(w));
    w.len = 300;
    w.span = PROV_WINDOW_5H;
    CU_ASSERT_EQUAL(prov_window_reset(&w, 2000), 0);
    prov_window_add(&w, 1000, 5, p);
    prov_window_add(&w, 1300, 7, p);
    CU_ASSERT_EQUAL(w.sum, 12);
    CU_ASSERT_EQUAL(w.n, 0);
    CU_ASSERT_EQUAL(prov_window_reset(&w, 2000), 900 + 300 + PROV_WINDOW_5H - 2000);
}

/* Holds so large that a lease of 256 of them passes int64 (issue 11):
 * two in flight on one key ask for a lease, which must saturate (and be
 * refused for want of room), never wrap into a negative size. An absurd
 * hold (a saturated estimate) is refused, never treated as 0. */
static void test_huge_holds(void)
{
    fixture_t f;
    prov_reservation_t *r1, *r2, *r3;
    prov_error_t *err = NULL;
    const prov_micro_t huge = APR_INT64_MAX / 200;
    setup(&f, PROV_AMOUNT_MAX / 10, 0, 0);
    r1 = reserve(&f, "huge-1", huge, T0, &err);
    r2 = reserve(&f, "huge-2", huge, T0, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r2);
    CU_ASSERT_FALSE(r2->leased);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(balance_of(&f), PROV_AMOUNT_MAX / 10 - 2 * huge);
    r3 = reserve(&f, "huge-3", APR_INT64_MAX, T0, &err);
    CU_ASSERT_PTR_NULL(r3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INSUFFICIENT_CREDITS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r1, NULL, 5, "ok", T0 + 1, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r2, NULL, 7, "ok", T0 + 1, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(balance_of(&f), PROV_AMOUNT_MAX / 10 - 12);
    CU_ASSERT_EQUAL(one_value(&f, "SELECT SUM(credits) FROM ledger"), 12);
    apr_pool_destroy(f.p);
}

void prov_test_suite_billing(void)
{
    PROV_SUITE("billing", PROV_TEST(test_estimate), PROV_TEST(test_fixed_source_one_thread), PROV_TEST(test_reserve_settle),
               PROV_TEST(test_release), PROV_TEST(test_insufficient),
               PROV_TEST(test_key_budget_retry_after), PROV_TEST(test_plan_then_balance),
               PROV_TEST(test_expire), PROV_TEST(test_batch_exact), PROV_TEST(test_threads_settle),
               PROV_TEST(test_lease_threads), PROV_TEST(test_no_writer_no_lease),
               PROV_TEST(test_lease_writer), PROV_TEST(test_lease_sequential),
               PROV_TEST(test_lease_sequential_refused), PROV_TEST(test_lease_beside_other_model),
               PROV_TEST(test_writer_stops_in_flight),
               PROV_TEST(test_lease_exact_limit),
               PROV_TEST(test_lease_plan_name),
               PROV_TEST(test_lease_settled_while_written), PROV_TEST(test_lease_batch_cap),
               PROV_TEST(test_lease_expire), PROV_TEST(test_status),
               PROV_TEST(test_window_math), PROV_TEST(test_huge_holds));
}
