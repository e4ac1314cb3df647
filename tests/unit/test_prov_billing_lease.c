/* test_prov_billing_lease.c: unit tests of the billing engine's leases:
 * requests drawn in memory from a lease and written later by a writer
 * thread, the books exact under threads, at a budget's exact limit and when
 * the writer stops with drawn requests in flight; a lease sized by the room
 * of an account of modest means, whose limits stay exact; a lease granted to
 * requests one at a time within keep_idle and not further apart, kept
 * beside another model's long request, never drawn on by a key deleted,
 * reissued or blocked meanwhile, keeping a plan's name whole; the engine's
 * steps one by one on a lease table of a test's own (a settlement while its
 * hold is being written, more settled rows than a batch takes); and the
 * lease of a dead process released once, past the hold timeout. The
 * fixture is billing_fixture.c. */
#include <stdlib.h>
#include <string.h>
#include "billing_fixture.h"
#include "prov_plans.h"

/* Threads on a key with plenty of credit: most requests draw from a lease;
 * when they are done every row is written complete, the balance equals the
 * charges, the buckets hold exactly the charges and no lease is left. */
static void test_lease_threads(void)
{
    bf_fixture_t f;
    bf_lease_run_t lr = { 0, 0, 0, 0, 0 };
    prov_writer_t *w = NULL;
    bf_setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, 0), APR_SUCCESS);
    bf_run_leasers(&f, &lr);
    CU_ASSERT_TRUE(lr.leased > 0);
    prov_writer_stop(w);
    bf_check_lease_books(&f, lr.requests, lr.charged);
    apr_pool_destroy(f.p);
}

/* Whether f's writer thread leaves nothing to do (no lease, nothing
 * unwritten) within 5 s. */
static int writer_settles(bf_fixture_t *f)
{
    int polls;
    for (polls = 0; polls < 1000 && prov_queue_active(f->src); polls++)
        apr_sleep(apr_time_from_msec(5));
    return !prov_queue_active(f->src);
}

/* With a writer thread: the threads' settlements never run a batch, yet
 * everything is written. A lease outlives the gap after the last request
 * of its key (a request then still draws from it) and is returned by the
 * writer once the gap is longer than keep_idle, or when it stops. */
static void test_lease_writer(void)
{
    bf_fixture_t f;
    bf_lease_run_t lr = { 0, 0, 0, 0, 0 };
    prov_writer_t *w = NULL;
    prov_reservation_t *r, *r2, *r3;
    prov_error_t *err = NULL;
    prov_micro_t charged;
    apr_int64_t requests;
    bf_setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    bf_run_leasers(&f, &lr);
    CU_ASSERT_TRUE(lr.leased > lr.ok / 2);
    requests = lr.requests + 1;
    charged = lr.charged;
    /* Nothing in flight, the lease is kept: the next request draws. */
    CU_ASSERT_TRUE(prov_queue_active(f.src));
    r = bf_reserve(&f, "after-gap", 3 * C, T0 + 2, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_TRUE(r->leased);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, NULL, 777, PROV_STATUS_OK, T0 + 3, f.p),
                    APR_SUCCESS);
    charged += 777;
    prov_writer_stop(w);
    CU_ASSERT_FALSE(prov_queue_active(f.src));
    bf_check_lease_books(&f, requests, charged);

    /* A short keep_idle: the second of two requests at once gets a lease
     * with its reservation; both are settled the ordinary way, and the
     * writer returns the lease by itself. */
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_msec(20)),
                          APR_SUCCESS);
    /* (the key's last request older than keep_idle: not one right after) */
    apr_sleep(apr_time_from_msec(30));
    r = bf_reserve(&f, "one-1", 3 * C, T0 + 4, &err);
    r2 = bf_reserve(&f, "one-2", 3 * C, T0 + 4, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r2);
    CU_ASSERT_FALSE(r2->leased);
    CU_ASSERT_TRUE(prov_queue_active(f.src));
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, NULL, 50, PROV_STATUS_OK, T0 + 5, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r2, NULL, 60, PROV_STATUS_OK, T0 + 5, f.p),
                    APR_SUCCESS);
    charged += 110;
    CU_ASSERT_TRUE(writer_settles(&f));
    /* Again, and a third request draws from the lease. */
    r = bf_reserve(&f, "pair-1", 3 * C, T0 + 4, &err);
    r2 = bf_reserve(&f, "pair-2", 3 * C, T0 + 4, &err);
    r3 = bf_reserve(&f, "pair-3", 3 * C, T0 + 4, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r3);
    CU_ASSERT_TRUE(r3->leased);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, NULL, 100, PROV_STATUS_OK, T0 + 5, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r2, NULL, 200, PROV_STATUS_OK, T0 + 5, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r3, NULL, 300, PROV_STATUS_OK, T0 + 5, f.p),
                    APR_SUCCESS);
    charged += 600;
    CU_ASSERT_TRUE(writer_settles(&f));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM ledger"), charged);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'ok'"),
                    requests + 5);
    CU_ASSERT_EQUAL(bf_balance(&f), 1000000 * C - charged);
    prov_writer_stop(w);
    apr_pool_destroy(f.p);
}

/* One request at a time (a client waiting for each answer): the second,
 * reserved within keep_idle of the first's end, is granted a lease, and
 * the third draws from it; requests further apart than keep_idle, or a
 * key whose budget keeps no room for a lease, reserve each in the
 * database. The books are exact either way. */
static int seq_leased(bf_fixture_t *f, const char *id, prov_micro_t charge, prov_micro_t *charged)
{
    prov_reservation_t *r = bf_reserve(f, id, 3 * C, T0, NULL);
    int leased;
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    leased = r->leased;
    CU_ASSERT_EQUAL(prov_billing_settle(f->src, r, NULL, charge, PROV_STATUS_OK, T0 + 1, f->p),
                    APR_SUCCESS);
    *charged += charge;
    return leased;
}

static void test_lease_sequential(void)
{
    bf_fixture_t f, fb;
    prov_writer_t *w = NULL;
    prov_micro_t charged = 0, charged_b = 0;
    bf_setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    CU_ASSERT_FALSE(seq_leased(&f, "seq-1", 100, &charged));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_FALSE(seq_leased(&f, "seq-2", 200, &charged));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 1);
    CU_ASSERT_TRUE(seq_leased(&f, "seq-3", 300, &charged));
    CU_ASSERT_TRUE(seq_leased(&f, "seq-4", 400, &charged));
    prov_writer_stop(w);
    CU_ASSERT_FALSE(prov_queue_active(f.src));
    bf_check_lease_books(&f, 4, charged);

    /* Further apart than keep_idle: no lease. */
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_msec(5)),
                          APR_SUCCESS);
    apr_sleep(apr_time_from_msec(20));
    CU_ASSERT_FALSE(seq_leased(&f, "far-1", 100, &charged));
    apr_sleep(apr_time_from_msec(20));
    CU_ASSERT_FALSE(seq_leased(&f, "far-2", 100, &charged));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    prov_writer_stop(w);
    bf_check_lease_books(&f, 6, charged);
    apr_pool_destroy(f.p);

    /* A weekly budget of 100 credits: the lease is sized by its room, at
     * most half of it (16 holds of 3 credits), and the third request
     * draws from it. */
    bf_setup(&fb, 1000000 * C, 1, 100 * C);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, fb.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    CU_ASSERT_FALSE(seq_leased(&fb, "tight-1", C, &charged_b));
    CU_ASSERT_FALSE(seq_leased(&fb, "tight-2", C, &charged_b));
    CU_ASSERT_EQUAL(bf_value(&fb, "SELECT amount FROM billing_leases"), 48 * C);
    CU_ASSERT_TRUE(seq_leased(&fb, "tight-3", C, &charged_b));
    prov_writer_stop(w);
    bf_check_lease_books(&fb, 3, charged_b);
    apr_pool_destroy(fb.p);
}

/* Reserves hold (3 credits, the worst case of an uncapped turn on a modest
 * account) for requests in flight together on f, as ids prefix-0, -1...:
 * n of them, or until one is refused (*err); returns how many were drawn
 * from a lease. */
static int modest_run(bf_fixture_t *f, prov_reservation_t **rs, int n, const char *prefix,
                      const prov_hold_ask_t *ask, prov_error_t **err)
{
    int i, leased = 0;
    for (i = 0; i < n; i++) {
        rs[i] = NULL;
        *err = NULL;
        CU_ASSERT_EQUAL(prov_billing_reserve_ask(&rs[i], err, f->src, f->auth, f->m->id, "chat",
                                                 apr_psprintf(f->p, "%s-%d", prefix, i), ask,
                                                 T0, f->p), APR_SUCCESS);
        if (!rs[i])
            break;
        leased += rs[i]->leased;
    }
    return leased;
}

/* An account of modest means, whose room is far below the 1,024 holds a
 * lease aims for: the lease is halved until the room left keeps as much
 * again (a balance of 100 credits, two holds of 3 taken: 94 left, a lease of
 * 8 holds), its requests draw from it, the next goes to the database, and
 * the books are exact. With room for fewer than twice PROV_LEASE_HOLDS_MIN
 * holds (a balance of 20 credits) no lease is granted. */
static void test_lease_modest(void)
{
    static const prov_hold_ask_t ask = { 3 * C, 3 * C, 0 };
    bf_fixture_t f;
    prov_writer_t *w = NULL;
    prov_reservation_t *rs[11];
    prov_error_t *err = NULL;
    prov_micro_t charged = 0;
    int i;

    bf_setup(&f, 100 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(modest_run(&f, rs, 2, "m", &ask, &err), 0);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT amount FROM billing_leases"), 24 * C);
    CU_ASSERT_EQUAL(bf_balance(&f), 100 * C - 6 * C - 24 * C);
    CU_ASSERT_EQUAL(modest_run(&f, rs + 2, 8, "d", &ask, &err), 8);
    CU_ASSERT_EQUAL(modest_run(&f, rs + 10, 1, "e", &ask, &err), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rs[10]);
    for (i = 0; i < 11; i++) {
        CU_ASSERT_EQUAL(prov_billing_settle(f.src, rs[i], NULL, 1000 * (i + 1), PROV_STATUS_OK,
                                            T0 + 1,
                                            f.p), APR_SUCCESS);
        charged += 1000 * (i + 1);
    }
    prov_writer_stop(w);
    CU_ASSERT_FALSE(prov_queue_active(f.src));
    CU_ASSERT_EQUAL(bf_count_status(&f, "ok"), 11);
    CU_ASSERT_EQUAL(bf_count_status(&f, "reserved"), 0);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_balance(&f), 100 * C - charged);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    charged);
    apr_pool_destroy(f.p);

    bf_setup(&f, 20 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(modest_run(&f, rs, 5, "t", &ask, &err), 0);
    CU_ASSERT_PTR_NOT_NULL(rs[4]);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    for (i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(prov_billing_release(f.src, rs[i], PROV_STATUS_FAILED, T0 + 1, f.p),
                        APR_SUCCESS);
    prov_writer_stop(w);
    CU_ASSERT_EQUAL(bf_balance(&f), 20 * C);
    apr_pool_destroy(f.p);
}

/* Uncapped turns (a hold of 3 credits that may be lowered down to 1) in
 * flight together on a balance of 30 holds and a half: leases serve them,
 * yet exactly 30 are held whole, the 31st is lowered to the half hold
 * left (the unused part of the lease lowers nobody), the 32nd is refused
 * with INSUFFICIENT_CREDITS naming the least it needs, and no lease is
 * left; releasing them all gives everything back. */
static void test_lease_modest_exact(void)
{
    static const prov_hold_ask_t ask = { 3 * C, C, 0 };
    bf_fixture_t f;
    prov_writer_t *w = NULL;
    prov_reservation_t *rs[40];
    prov_error_t *err = NULL;
    int i, leased;

    bf_setup(&f, 91 * C + C / 2, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, 0), APR_SUCCESS);
    leased = modest_run(&f, rs, 40, "x", &ask, &err);
    CU_ASSERT_TRUE(leased >= 10);
    for (i = 0; i < 30; i++) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(rs[i]);
        CU_ASSERT_EQUAL(rs[i]->row.hold, 3 * C);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(rs[30]);
    CU_ASSERT_EQUAL(rs[30]->row.hold, C + C / 2);
    CU_ASSERT_PTR_NULL(rs[31]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INSUFFICIENT_CREDITS);
    CU_ASSERT_PTR_NOT_NULL(strstr(err->message, "needs at least 1"));
    CU_ASSERT_EQUAL(bf_balance(&f), 0);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_count_status(&f, "reserved"), 31);
    for (i = 0; i <= 30; i++)
        CU_ASSERT_EQUAL(prov_billing_release(f.src, rs[i], PROV_STATUS_FAILED, T0 + 20, f.p),
                        APR_SUCCESS);
    CU_ASSERT_EQUAL(bf_balance(&f), 91 * C + C / 2);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    0);
    prov_writer_stop(w);
    apr_pool_destroy(f.p);
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
        bf_fixture_t f;
        prov_writer_t *w = NULL;
        prov_micro_t charged = 0;
        prov_error_t *e = NULL;
        const char *fresh = NULL;
        int revoked = 0;
        bf_setup(&f, 1000000 * C, 0, 0);
        CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_sec(60)),
                              APR_SUCCESS);
        seq_leased(&f, "lone-1", 100, &charged);
        seq_leased(&f, "lone-2", 200, &charged);
        CU_ASSERT_TRUE(seq_leased(&f, "lone-3", 300, &charged));
        /* (the client's pause before its next request) */
        apr_sleep(2 * PROV_LEASE_LONE_GAP);
        bf_hold_store(&f);
        if (i == 0)
            CU_ASSERT_EQUAL(prov_key_delete(f.s, f.k->id, f.p), APR_SUCCESS);
        if (i == 1)
            CU_ASSERT_EQUAL(prov_key_reissue(&fresh, f.s, f.k->id, f.p), APR_SUCCESS);
        if (i == 2)
            CU_ASSERT_EQUAL(prov_user_set_blocked(&revoked, f.s, f.u->id, 1, f.p), APR_SUCCESS);
        bf_release_store(&f);
        CU_ASSERT_PTR_NULL(bf_reserve(&f, "lone-after", 3 * C, T0, &e));
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_EQUAL(e->code, want[i]);
        prov_writer_stop(w);
        bf_check_lease_books(&f, 3, charged);
        CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger "
                                     "WHERE request_id = 'lone-after'"), 0);
        apr_pool_destroy(f.p);
    }
}

/* Polls the lease count until it is want (2 s at most); returns the last. */
static apr_int64_t leases_become(bf_fixture_t *f, apr_int64_t want)
{
    apr_int64_t n = -1;
    int i;
    for (i = 0; i < 200 && (n = bf_value(f, "SELECT COUNT(*) FROM billing_leases")) != want;
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
    bf_fixture_t f;
    prov_writer_t *w = NULL;
    prov_model_t *m2 = NULL;
    prov_reservation_t *lng, *side = NULL;
    prov_error_t *e = NULL;
    prov_micro_t charged = 0;
    const char *ids[] = { "side-1", "side-2" };
    int i;
    bf_setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(&m2, f.s, "m2", "up-m2", NULL, NULL, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_msec(30)),
                          APR_SUCCESS);
    lng = bf_reserve(&f, "long", 3 * C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lng);
    CU_ASSERT_FALSE(lng->leased);
    for (i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(prov_billing_reserve(&side, &e, f.src, f.auth, m2->id, "chat", ids[i],
                                             C, T0, f.p), APR_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL_FATAL(side);
        CU_ASSERT_EQUAL(side->leased, i == 1);
        CU_ASSERT_EQUAL(prov_billing_settle(f.src, side, NULL, 10, PROV_STATUS_OK, T0 + 1, f.p),
                        APR_SUCCESS);
        charged += 10;
        /* three times keep_idle: kept while "long" is in flight */
        apr_sleep(apr_time_from_msec(90));
        CU_ASSERT_EQUAL(leases_become(&f, 1), 1);
    }
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, lng, NULL, 20, PROV_STATUS_OK, T0 + 2, f.p),
                    APR_SUCCESS);
    charged += 20;
    CU_ASSERT_EQUAL(leases_become(&f, 0), 0);
    prov_writer_stop(w);
    bf_check_lease_books(&f, 3, charged);
    apr_pool_destroy(f.p);
}

/* A writer that stops while requests drawn from its lease are in flight
 * leaves the lease (PROV00057): nobody draws from it any more, the
 * requests that settle write their own rows, and the last one returns it;
 * the books are exact. */
static void test_writer_stops_in_flight(void)
{
    bf_fixture_t f;
    prov_writer_t *w = NULL;
    prov_reservation_t *r[4];
    int i;
    bf_setup(&f, 10000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, 0), APR_SUCCESS);
    for (i = 0; i < 3; i++) {
        r[i] = bf_reserve(&f, apr_psprintf(f.p, "st-%d", i), C, T0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r[i]);
    }
    CU_ASSERT_TRUE(r[2]->leased);
    prov_writer_stop(w);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 1);
    r[3] = bf_reserve(&f, "st-3", C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r[3]);
    CU_ASSERT_FALSE(r[3]->leased);
    for (i = 3; i >= 0; i--)
        CU_ASSERT_EQUAL(prov_billing_settle(f.src, r[i], NULL, 10 * (i + 1), PROV_STATUS_OK, T0 + 1,
                                            f.p),
                        APR_SUCCESS);
    CU_ASSERT_FALSE(prov_queue_active(f.src));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_count_status(&f, "ok"), 4);
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - 100);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    100);
    apr_pool_destroy(f.p);
}

/* Requests held in flight together on a budget of exactly 1000 holds:
 * leases serve most of them, yet exactly 1000 pass, the next is refused
 * with the budget's code and an exact Retry-After, and every hold is a
 * ledger row by then. Releasing them all gives everything back. */
static void test_lease_exact_limit(void)
{
    bf_fixture_t f;
    prov_reservation_t *rs[1001];
    prov_error_t *err = NULL;
    prov_writer_t *w = NULL;
    int i, n = 0, leased = 0;
    bf_setup(&f, 100000 * C, 1, 1000 * C);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, 0), APR_SUCCESS);
    for (i = 0; i < 1001; i++) {
        err = NULL;
        rs[i] = bf_reserve(&f, apr_psprintf(f.p, "x-%d", i), C, T0 + 10, &err);
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
    CU_ASSERT_EQUAL(bf_count_status(&f, "reserved"), 1000);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_balance(&f), 99000 * C);
    for (i = 0; i < n; i++)
        CU_ASSERT_EQUAL(prov_billing_release(f.src, rs[i], PROV_STATUS_FAILED, T0 + 20, f.p),
                        APR_SUCCESS);
    CU_ASSERT_EQUAL(bf_count_status(&f, "failed"), 1000);
    CU_ASSERT_EQUAL(bf_balance(&f), 100000 * C);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    0);
    prov_writer_stop(w);
    apr_pool_destroy(f.p);
}

/* A plan name of the longest kind providerctl takes (64 characters) comes
 * back whole from a reservation drawn on a lease (the lease keeps a copy). */
static void test_lease_plan_name(void)
{
    bf_fixture_t f;
    prov_writer_t *w = NULL;
    prov_plan_t *plan = NULL;
    prov_subscription_t *sub = NULL;
    prov_reservation_t *rs[50];
    char name[65];
    int i, leased = 0;
    memset(name, 'p', 64);
    name[64] = '\0';
    bf_setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_plan_add(&plan, f.s, name, 100000 * C, 500000 * C, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_subscription_set(&sub, f.s, f.u->id, plan->id, 0, T0 - 10, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    /* requests at once (none settled yet): the later ones draw on a lease */
    for (i = 0; i < 50; i++) {
        rs[i] = bf_reserve(&f, apr_psprintf(f.p, "pn-%d", i), C, T0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rs[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rs[i]->windows.plan_name);
        CU_ASSERT_STRING_EQUAL(rs[i]->windows.plan_name, name);
        leased += rs[i]->leased;
    }
    CU_ASSERT_TRUE(leased > 0);
    for (i = 0; i < 50; i++)
        CU_ASSERT_EQUAL(prov_billing_settle(f.src, rs[i], NULL, 10, PROV_STATUS_OK, T0 + 1, f.p),
                        APR_SUCCESS);
    prov_writer_stop(w);
    apr_pool_destroy(f.p);
}

/* The keep_idle of the lease tables of the tests' own below: a lease is
 * returned a millisecond after its key's last request ends. */
#define TEST_KEEP_IDLE apr_time_from_msec(1)

/* The two holds of ops (the reservations that got a lease) end at now, on
 * the lease table and in the database, and keep_idle passes. */
static void end_holds(bf_fixture_t *f, prov_leases_t *L, prov_op_t *ops, apr_int64_t now)
{
    CU_ASSERT_EQUAL(prov_lease_settle(L, ops[0].out, NULL, 0, PROV_STATUS_FAILED, now), 0);
    CU_ASSERT_EQUAL(prov_lease_settle(L, ops[1].out, NULL, 0, PROV_STATUS_FAILED, now), 0);
    CU_ASSERT_EQUAL(prov_billing_release(f->src, ops[0].out, PROV_STATUS_FAILED, now, f->p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_release(f->src, ops[1].out, PROV_STATUS_FAILED, now, f->p),
                    APR_SUCCESS);
    apr_sleep(2 * TEST_KEEP_IDLE);
}

/* Two seconds later for r's entry, drawn and still running (the slot's
 * bound on its entries' age moves too): its hold is due to be written. */
static void age_entry(prov_reservation_t *r)
{
    ((prov_entry_t *)r->entry)->drawn_at -= apr_time_from_sec(2);
    ((prov_slot_t *)r->slot)->pending_oldest -= apr_time_from_sec(2);
}

/* The engine's steps one by one, on a lease table of the test's own: two
 * reservations at once get a lease; a third request draws from it; it is
 * still running when a batch writes its hold (it is a second old), and it
 * is settled while that batch runs: the settlement comes back as an
 * ordinary one for the row just written, and runs once. */
static void test_lease_settled_while_written(void)
{
    bf_fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2], *again, *o;
    prov_slot_t *work;
    prov_reservation_t *r = NULL;
    prov_tokens_t t = { 3, 4, 0, 0 };
    const char *sql;
    bf_setup(&f, 10000 * C, 0, 0);
    bf_lease_table(&L, TEST_KEEP_IDLE);
    bf_reserve_op(&ops[0], &f, "w-1", T0);
    bf_reserve_op(&ops[1], &f, "w-2", T0);
    ops[0].next = &ops[1];
    work = prov_lease_handoff_take(&L, ops);
    CU_ASSERT_PTR_NULL(work);
    CU_ASSERT_EQUAL(ops[0].lease_unit, 0);
    CU_ASSERT_EQUAL(ops[1].lease_unit, 1024 * C);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, ops, work, 0, 0, 3600, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(ops[1].granted, 1024 * C);
    CU_ASSERT_PTR_NULL(prov_lease_handoff_done(&L, work, ops, T0, APR_SUCCESS));
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - 2 * C - 1024 * C);

    CU_ASSERT_TRUE_FATAL(prov_lease_draw(&L, &r, f.auth, f.m->id, "chat", "w-3", C, T0 + 1,
                                         f.p));
    CU_ASSERT_TRUE(r->leased);
    CU_ASSERT_FALSE(prov_lease_due(&L));
    age_entry(r);
    CU_ASSERT_TRUE(prov_lease_due(&L));
    work = prov_lease_handoff_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL(prov_lease_settle(&L, r, &t, C / 2, PROV_STATUS_OK, T0 + 2), 1);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, NULL, work, T0 + 2, 0, 3600, f.p),
                          APR_SUCCESS);
    again = prov_lease_handoff_done(&L, work, NULL, T0 + 2, APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(again);
    CU_ASSERT_PTR_NULL(again->next);
    CU_ASSERT_EQUAL(bf_count_status(&f, "reserved"), 3);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, again, NULL, 0, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(again->rv, APR_SUCCESS);
    /* Once: the same settlement again finds the row settled. */
    again->next = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, again, NULL, 0, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(again->rv, APR_EINCOMPLETE);
    for (o = again; o; o = again) {
        again = o->next;
        free(o);
    }
    sql = "SELECT credits FROM ledger WHERE request_id = 'w-3' AND status = 'ok'";
    CU_ASSERT_EQUAL(bf_value(&f, sql), C / 2);
    /* Out of the balance: the two holds, the lease less w-3's hold, and
     * w-3's charge. */
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - 2 * C - 1023 * C - C / 2);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT amount FROM billing_leases"), 1023 * C);
    /* The two holds end: once nothing of the key has been in flight for
     * keep_idle, the next batch returns the lease and everything is back
     * but w-3's charge. */
    end_holds(&f, &L, ops, T0 + 3);
    CU_ASSERT_TRUE(prov_lease_due(&L));
    work = prov_lease_handoff_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, NULL, work, T0 + 3, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_lease_handoff_done(&L, work, NULL, T0 + 3, APR_SUCCESS));
    CU_ASSERT_FALSE(prov_lease_due(&L));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - C / 2);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    C / 2);
    bf_free_slots(&L);
    apr_pool_destroy(f.p);
}

/* A drawn request that runs long: its hold is written as a row, the sweep
 * expires that row (the lease, renewed, stays), and the request's
 * settlement then completes it and charges it in full, once. */
static void test_lease_written_expired(void)
{
    bf_fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2];
    prov_slot_t *work;
    prov_reservation_t *r = NULL;
    prov_tokens_t t = { 3, 4, 0, 0 };
    const apr_int64_t later = T0 + 400;   /* another 5-minute bucket */
    bf_setup(&f, 10000 * C, 0, 0);
    bf_lease_table(&L, TEST_KEEP_IDLE);
    bf_granted(&f, &L, ops);
    CU_ASSERT_TRUE_FATAL(prov_lease_draw(&L, &r, f.auth, f.m->id, "chat", "x-3", C, T0 + 1,
                                         f.p));
    age_entry(r);
    CU_ASSERT_TRUE_FATAL(prov_lease_due(&L));
    work = prov_lease_handoff_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, NULL, work, later, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_lease_handoff_done(&L, work, NULL, later, APR_SUCCESS));
    CU_ASSERT_EQUAL(bf_count_status(&f, "reserved"), 3);
    /* A sweep with a 300-second timeout: the three holds are stale, the
     * lease (moved to this bucket by the last batch) is not. */
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, NULL, NULL, later + 10, 1, 300, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(bf_count_status(&f, "expired"), 3);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT amount FROM billing_leases"), 1023 * C);
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - 1023 * C);
    /* x-3 ends: an ordinary settlement of its row, which lands late. */
    CU_ASSERT_EQUAL(prov_lease_settle(&L, r, &t, C / 2, PROV_STATUS_OK, later + 20),
                    PROV_LEASE_SETTLE_QUEUE);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, &t, C / 2, PROV_STATUS_OK, later + 20, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT credits FROM ledger WHERE request_id = 'x-3' "
                                 "AND status = 'ok'"), C / 2);
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - 1023 * C - C / 2);
    r->settled = 0;
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, &t, C / 2, PROV_STATUS_OK, later + 21, f.p),
                    APR_EINCOMPLETE);
    /* The two holds end without a charge; the lease goes back. */
    end_holds(&f, &L, ops, later + 30);
    CU_ASSERT_EQUAL(bf_count_status(&f, "failed"), 2);
    work = prov_lease_handoff_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, NULL, work, later + 30, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_lease_handoff_done(&L, work, NULL, later + 30, APR_SUCCESS));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - C / 2);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    C / 2);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'user:m'"),
                    C / 2);
    bf_free_slots(&L);
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
    bf_fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2];
    prov_slot_t *work;
    prov_tokens_t t = { 3, 4, 0, 0 };
    const int n = PROV_BATCH_ROWS_MAX + 88;
    int i;
    bf_setup(&f, 100000 * C, 0, 0);
    bf_lease_table(&L, TEST_KEEP_IDLE);
    bf_reserve_op(&ops[0], &f, "cap-a", T0);
    bf_reserve_op(&ops[1], &f, "cap-b", T0);
    ops[0].next = &ops[1];
    work = prov_lease_handoff_take(&L, ops);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, ops, work, 0, 0, 3600, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(ops[1].granted, 1024 * C);
    prov_lease_handoff_done(&L, work, ops, T0, APR_SUCCESS);
    for (i = 0; i < n; i++) {
        prov_reservation_t *r = NULL;
        CU_ASSERT_TRUE_FATAL(prov_lease_draw(&L, &r, f.auth, f.m->id, "chat",
                                             apr_psprintf(f.p, "cap-%d", i), C / 4, T0 + 1, f.p));
        CU_ASSERT_EQUAL(prov_lease_settle(&L, r, &t, C / 8, PROV_STATUS_OK, T0 + 1), 1);
    }
    CU_ASSERT_TRUE(prov_lease_due(&L));
    work = prov_lease_handoff_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL(entries(work->taken), PROV_BATCH_ROWS_MAX);
    CU_ASSERT_EQUAL(entries(work->pending), n - PROV_BATCH_ROWS_MAX);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, NULL, work, T0 + 1, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_lease_handoff_done(&L, work, NULL, T0 + 1, APR_SUCCESS));
    CU_ASSERT_EQUAL(bf_count_status(&f, "ok"), PROV_BATCH_ROWS_MAX);
    /* The rest is due at once. */
    CU_ASSERT_TRUE(prov_lease_due(&L));
    work = prov_lease_handoff_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL(entries(work->taken), n - PROV_BATCH_ROWS_MAX);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, NULL, work, T0 + 1, 0, 3600, f.p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_lease_handoff_done(&L, work, NULL, T0 + 1, APR_SUCCESS));
    CU_ASSERT_EQUAL(bf_count_status(&f, "ok"), n);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM ledger WHERE status = 'ok'"),
                    (prov_micro_t)n * (C / 8));
    /* The two holds end, the lease is returned (keep_idle later): only the
     * charges are gone. */
    end_holds(&f, &L, ops, T0 + 2);
    work = prov_lease_handoff_take(&L, NULL);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, NULL, work, T0 + 2, 0, 3600, f.p),
                          APR_SUCCESS);
    prov_lease_handoff_done(&L, work, NULL, T0 + 2, APR_SUCCESS);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_balance(&f), 100000 * C - (prov_micro_t)n * (C / 8));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM usage_buckets WHERE scope = 'key:h'"),
                    (prov_micro_t)n * (C / 8));
    bf_free_slots(&L);
    apr_pool_destroy(f.p);
}

/* The lease of a process that stopped (its row, and what it held of the
 * balance and the buckets) is released once it is older than the hold
 * timeout, exactly once. */
static void test_lease_expire(void)
{
    bf_fixture_t f;
    int n = -1;
    apr_int64_t hb = prov_bucket_of(T0, 3600), mb = prov_bucket_of(T0, 300);
    const char *sql;
    bf_setup(&f, 10 * C, 0, 0);
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
    CU_ASSERT_EQUAL(bf_balance(&f), 6 * C);
    CU_ASSERT_EQUAL(prov_queue_expire(&n, f.src, T0 + 60, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 1);
    CU_ASSERT_EQUAL(prov_queue_expire(&n, f.src, T0 + PROV_HOLD_TIMEOUT_DEFAULT + 1, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_balance(&f), 10 * C);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM usage_buckets"), 0);
    CU_ASSERT_EQUAL(prov_queue_expire(&n, f.src, T0 + PROV_HOLD_TIMEOUT_DEFAULT + 100, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(bf_balance(&f), 10 * C);
    apr_pool_destroy(f.p);
}

void prov_test_suite_billing_lease(void)
{
    PROV_SUITE("billing_lease", PROV_TEST(test_lease_threads), PROV_TEST(test_lease_writer),
               PROV_TEST(test_lease_sequential), PROV_TEST(test_lease_sequential_refused),
               PROV_TEST(test_lease_beside_other_model), PROV_TEST(test_writer_stops_in_flight),
               PROV_TEST(test_lease_exact_limit), PROV_TEST(test_lease_modest),
               PROV_TEST(test_lease_modest_exact), PROV_TEST(test_lease_plan_name),
               PROV_TEST(test_lease_settled_while_written),
               PROV_TEST(test_lease_written_expired), PROV_TEST(test_lease_batch_cap),
               PROV_TEST(test_lease_expire));
}
