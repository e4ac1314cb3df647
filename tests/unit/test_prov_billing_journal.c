/* test_prov_billing_journal.c: unit tests of what the billing engine does
 * with the journal and its upkeep. A process that dies with a lease out and
 * rows settled but not written: the replay of its journal writes exactly
 * the missing rows, settles the hold it had queued, leaves the one still in
 * flight to expire, and returns its lease, all exactly once, so that the
 * balance and the buckets equal the ledger; replaying the same records again
 * changes nothing. A replay racing live traffic (another connection, as
 * another process would) and a second replayer keeps the books exact. A
 * writer with upkeep journals a drawn settlement before prov_billing_settle
 * returns and leaves no file when it stops; it expires a stale hold by the
 * engine's clock without any request; and holds can be listed and given
 * back by hand, exactly as an expiry does. The fixture is
 * billing_fixture.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "billing_fixture.h"

/* A database (SQLite, in memory, or the file path), a user with balance
 * (billing_fixture.c), and an empty journal directory. */
static void setup(bf_fixture_t *f, const char *file, prov_micro_t balance)
{
    apr_pool_t *p = NULL;
    prov_store_t *s = NULL;
    int applied = 0;
    apr_pool_create(&p, prov_test_pool());
    if (file) {
        CU_ASSERT_EQUAL_FATAL(prov_store_open(&s, apr_pstrcat(p, "sqlite3:", file, NULL), 0, p),
                              APR_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(prov_schema_migrate(&applied, s, p), APR_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(prov_store_prepare_all(s), APR_SUCCESS);
    }
    else {
        s = prov_test_store(p);
    }
    bf_fill(f, p, s, "j@example.com", balance, 0, 0);
    bf_journal_dir(f);
}

static void teardown(bf_fixture_t *f)
{
    bf_remove_dir(f->dir);
    apr_pool_destroy(f->p);
}

/* The journal record of a settlement, as finish() writes it. */
static void journal(prov_journal_t *j, const prov_reservation_t *r, prov_micro_t charge)
{
    bf_journal(j, r, charge, PROV_STATUS_OK, 0, T0 + 1);
}

/* A process (its own lease table) takes a lease in the name of journal j,
 * draws n requests of charge C/4 each and journals their settlements;
 * the first `written` of them reach the database, the rest die with it.
 * Its two ordinary holds: one settled (charge C/2) and journaled, not
 * written; the other in flight. Then the process is gone. Returns the
 * charges the replay must add. */
static prov_micro_t dead_process(bf_fixture_t *f, prov_journal_t *j, const char *tag, int n,
                                 int written)
{
    static const prov_tokens_t t = { 4, 5, 0, 0 };
    prov_leases_t L;
    prov_op_t ops[2];
    prov_slot_t *work;
    int i;
    bf_lease_table(&L, PROV_LEASE_IDLE_DEFAULT);   /* served by a writer: leases granted */
    apr_cpystrn(L.owner, prov_journal_owner(j), sizeof(L.owner));
    bf_reserve_op(&ops[0], f, apr_psprintf(f->p, "%s-hold-a", tag), T0);
    bf_reserve_op(&ops[1], f, apr_psprintf(f->p, "%s-hold-b", tag), T0);
    ops[0].next = &ops[1];
    work = prov_lease_handoff_take(&L, ops);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f->s, ops, work, 0, 0, 3600, f->p),
                          APR_SUCCESS);
    CU_ASSERT_TRUE_FATAL(ops[1].granted > 0);
    prov_lease_handoff_done(&L, work, ops, T0, APR_SUCCESS);
    CU_ASSERT_EQUAL(bf_value(f, apr_psprintf(f->p, "SELECT COUNT(*) FROM billing_leases "
                                              "WHERE owner = '%s'", L.owner)), 1);
    for (i = 0; i < n; i++) {
        prov_reservation_t *r = NULL;
        CU_ASSERT_TRUE_FATAL(prov_lease_draw(&L, &r, f->auth, f->m->id, "chat",
                                             apr_psprintf(f->p, "%s-%d", tag, i), C, T0, f->p));
        journal(j, r, C / 4);
        CU_ASSERT_TRUE(prov_lease_settle(&L, r, &t, C / 4, PROV_STATUS_OK, T0 + 1) > 0);
        if (i == written - 1) {
            work = prov_lease_handoff_take(&L, NULL);
            CU_ASSERT_EQUAL_FATAL(prov_batch_run(f->s, NULL, work, T0 + 1, 0, 3600,
                                                 f->p), APR_SUCCESS);
            prov_lease_handoff_done(&L, work, NULL, T0 + 1, APR_SUCCESS);
        }
    }
    /* hold-a was settled and journaled, its batch never ran */
    journal(j, ops[0].out, C / 2);
    bf_drop_slots(&L);
    return (prov_micro_t)(n - written) * (C / 4) + C / 2;
}

static void test_replay_dead_process(void)
{
    bf_fixture_t f;
    prov_journal_t *j = NULL, *j2 = NULL;
    const char *id = NULL;
    prov_micro_t before, expect;
    int journals = -1, n = 0;

    setup(&f, NULL, 10000 * C);
    CU_ASSERT_EQUAL_FATAL(prov_replay_database_id(&id, f.src, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, f.dir, id, 0, f.p), APR_SUCCESS);
    expect = dead_process(&f, j, "d", 40, 25);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'ok'"), 25);
    bf_check_books(&f, 10000 * C);
    before = bf_balance(&f);
    /* While it lives, nothing is replayed. */
    CU_ASSERT_EQUAL(prov_replay_journals(&journals, f.src, f.dir, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(journals, 0);
    prov_journal_close(j);           /* it dies: its records are outstanding */
    CU_ASSERT_EQUAL(prov_replay_journals(&journals, f.src, f.dir, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(journals, 1);
    CU_ASSERT_EQUAL(bf_files_in(f.dir), 0);
    /* Every drawn request once, the queued settlement done, the lease back;
     * the hold still in flight stays until it expires. */
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'ok'"), 41);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(DISTINCT request_id) FROM ledger"), 42);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT credits FROM ledger WHERE request_id = 'd-hold-a'"),
                    C / 2);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'reserved'"), 1);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(requests) FROM usage_buckets "
                                 "WHERE scope = 'user:h'"), 42);
    bf_check_books(&f, 10000 * C);
    CU_ASSERT_EQUAL(bf_balance(&f) + C /* hold-b */,
                    10000 * C - 40 * (C / 4) - C / 2);
    CU_ASSERT_TRUE(bf_balance(&f) > before - expect);   /* the lease came back */

    /* The same records again (another copy of the journal): nothing moves. */
    before = bf_balance(&f);
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j2, f.dir, id, 0, f.p), APR_SUCCESS);
    {
        prov_reservation_t r;
        int i;
        memset(&r, 0, sizeof(r));
        r.row.user_id = f.u->id;
        r.row.key_id = f.k->id;
        r.row.model_id = f.m->id;
        r.row.transport = "chat";
        r.row.hold = C;
        r.row.created_at = T0;
        r.entry = &r;                /* drawn */
        for (i = 0; i < 40; i++) {
            r.row.request_id = apr_psprintf(f.p, "d-%d", i);
            journal(j2, &r, C / 4);
        }
        r.entry = NULL;
        r.row.request_id = "d-hold-a";
        journal(j2, &r, C / 2);
    }
    prov_journal_close(j2);
    CU_ASSERT_EQUAL(prov_replay_journals(&journals, f.src, f.dir, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(journals, 1);
    CU_ASSERT_EQUAL(bf_balance(&f), before);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger"), 42);
    bf_check_books(&f, 10000 * C);
    /* The hold in flight expires; then everything but the charges is back. */
    CU_ASSERT_EQUAL(prov_queue_expire(&n, f.src, T0 + 3601, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - 40 * (C / 4) - C / 2);
    bf_check_books(&f, 10000 * C);
    teardown(&f);
}

/* Live traffic on one connection (a process with leases) while two others
 * (two survivors) replay the journals of dead processes: every replayed
 * row once, the books exact. */
#define RACE_LIVE 300

typedef struct racer_t {
    bf_fixture_t *f;
    prov_store_source_t *src;
    int journals;
    int ok;
    prov_micro_t charged;
} racer_t;

static void *live_traffic(void *arg)
{
    racer_t *x = arg;
    prov_tokens_t t = { 1, 1, 0, 0 };
    int i;
    for (i = 0; i < RACE_LIVE; i++) {
        prov_reservation_t *r = NULL, *r2 = NULL;
        prov_error_t *e = NULL;
        apr_pool_t *p = NULL;
        apr_pool_create_unmanaged(&p);
        if (prov_billing_reserve(&r, &e, x->src, x->f->auth, x->f->m->id, "chat",
                                 apr_psprintf(p, "live-%d", i), C, T0, p) == APR_SUCCESS && r
            && prov_billing_reserve(&r2, &e, x->src, x->f->auth, x->f->m->id, "chat",
                                    apr_psprintf(p, "live-%d-b", i), C, T0, p) == APR_SUCCESS
            && r2) {
            if (prov_billing_settle(x->src, r2, &t, 300, PROV_STATUS_OK, T0 + 1, p) == APR_SUCCESS)
                x->ok++, x->charged += 300;
            if (prov_billing_settle(x->src, r, &t, 200, PROV_STATUS_OK, T0 + 1, p) == APR_SUCCESS)
                x->ok++, x->charged += 200;
        }
        apr_pool_destroy(p);
    }
    return NULL;
}

static void *replayer(void *arg)
{
    racer_t *x = arg;
    apr_pool_t *p = NULL;
    int i, n = 0;
    apr_pool_create_unmanaged(&p);
    for (i = 0; i < 20; i++) {
        CU_ASSERT_EQUAL(prov_replay_journals(&n, x->src, x->f->dir, p), APR_SUCCESS);
        x->journals += n;
        apr_sleep(apr_time_from_msec(2));
    }
    apr_pool_destroy(p);
    return NULL;
}

static void test_replay_races_live_batches(void)
{
    bf_fixture_t f;
    char file[80];
    prov_store_t *s2 = NULL, *s3 = NULL;
    prov_journal_t *j = NULL;
    racer_t live, rep1, rep2;
    prov_writer_t *w = NULL;
    pthread_t th[3];
    const char *id = NULL;
    prov_micro_t replayed = 0;
    int i;

    snprintf(file, sizeof(file), "/tmp/prov-unit-bj-race-%ld.db", (long)getpid());
    unlink(file);
    setup(&f, file, 100000 * C);
    CU_ASSERT_EQUAL_FATAL(prov_replay_database_id(&id, f.src, f.p), APR_SUCCESS);
    /* Three dead processes, each with 60 requests, 20 of them written. */
    for (i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, f.dir, id, 0, f.p), APR_SUCCESS);
        replayed += dead_process(&f, j, apr_psprintf(f.p, "dead%d", i), 60, 20);
        prov_journal_close(j);
    }
    bf_check_books(&f, 100000 * C);
    CU_ASSERT_EQUAL_FATAL(prov_store_open(&s2, apr_pstrcat(f.p, "sqlite3:", file, NULL), 1, f.p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_store_open(&s3, apr_pstrcat(f.p, "sqlite3:", file, NULL), 1, f.p),
                          APR_SUCCESS);
    memset(&live, 0, sizeof(live));
    memset(&rep1, 0, sizeof(rep1));
    memset(&rep2, 0, sizeof(rep2));
    live.f = rep1.f = rep2.f = &f;
    live.src = f.src;
    rep1.src = prov_store_source_fixed(s2, f.p);
    rep2.src = prov_store_source_fixed(s3, f.p);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, 0), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th[0], NULL, live_traffic, &live), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th[1], NULL, replayer, &rep1), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th[2], NULL, replayer, &rep2), 0);
    for (i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(rep1.journals + rep2.journals, 3);
    CU_ASSERT_EQUAL(bf_files_in(f.dir), 0);
    CU_ASSERT_EQUAL(live.ok, 2 * RACE_LIVE);
    /* Live rows and leases end when the live process's writer stops. */
    prov_writer_stop(w);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE request_id LIKE 'live-%' "
                                 "AND status = 'ok'"), 2 * RACE_LIVE);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE request_id LIKE 'dead%' "
                                 "AND status = 'ok'"), 3 * 61);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'reserved'"), 3);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(credits) FROM ledger WHERE status = 'ok'"),
                    live.charged + 3 * (60 * (C / 4) + C / 2));
    bf_check_books(&f, 100000 * C);
    (void)replayed;
    teardown(&f);
    unlink(file);
    unlink(apr_pstrcat(prov_test_pool(), file, "-wal", NULL));
    unlink(apr_pstrcat(prov_test_pool(), file, "-shm", NULL));
}

/* A writer with upkeep and a journal: a drawn request's settlement is in
 * the journal when prov_billing_settle returns; the lease is recorded in
 * the journal's name; stopping leaves nothing in the directory. */
static void test_upkeep_journal(void)
{
    bf_fixture_t f;
    prov_writer_t *w = NULL;
    prov_reservation_t *r[3];
    prov_error_t *err = NULL;
    int i, polls;

    setup(&f, NULL, 10000 * C);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_writer_upkeep(w, f.dir), APR_SUCCESS);
    for (polls = 0; polls < 500 && bf_files_in(f.dir) < 2; polls++)
        apr_sleep(apr_time_from_msec(10));
    CU_ASSERT_EQUAL_FATAL(bf_files_in(f.dir), 2);  /* its lock and first segment */
    apr_sleep(apr_time_from_msec(50));          /* ... and leases granted again */
    for (i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(prov_billing_reserve(&r[i], &err, f.src, f.auth, f.m->id, "chat",
                                             apr_psprintf(f.p, "up-%d", i), C, T0, f.p),
                        APR_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r[i]);
    }
    CU_ASSERT_TRUE(r[2]->leased);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases WHERE owner IS NOT NULL"),
                    1);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r[2], NULL, 123, PROV_STATUS_OK, T0 + 1, f.p),
                    APR_SUCCESS);
    CU_ASSERT_TRUE(bf_dir_has(f.dir, "up-2\t"));
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r[0], NULL, 100, PROV_STATUS_OK, T0 + 1, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r[1], NULL, 100, PROV_STATUS_OK, T0 + 1, f.p),
                    APR_SUCCESS);
    prov_writer_stop(w);
    CU_ASSERT_EQUAL(bf_files_in(f.dir), 0);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'ok'"), 3);
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - 323);
    bf_check_books(&f, 10000 * C);
    teardown(&f);
}

/* The writer's upkeep expires a stale hold when the engine's clock says so,
 * with no request at all. */
static void test_upkeep_expires(void)
{
    bf_fixture_t f;
    prov_writer_t *w = NULL;
    prov_reservation_t *r = NULL;
    prov_error_t *err = NULL;
    int polls;

    setup(&f, NULL, 10 * C);
    prov_clock_set(T0);
    prov_queue_configure(8);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, 0), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &err, f.src, f.auth, f.m->id, "chat", "old", 3 * C,
                                         T0, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL_FATAL(prov_writer_upkeep(w, NULL), APR_SUCCESS);
    apr_sleep(apr_time_from_msec(1200));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'reserved'"), 1);
    prov_clock_set(T0 + 9);
    for (polls = 0; polls < 300; polls++) {
        if (bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'expired'") == 1)
            break;
        apr_sleep(apr_time_from_msec(10));
    }
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'expired'"), 1);
    CU_ASSERT_EQUAL(bf_balance(&f), 10 * C);
    prov_writer_stop(w);
    prov_queue_configure(0);
    prov_clock_set(0);
    teardown(&f);
}

/* Holds listed, and given back one by one exactly as an expiry would. */
static void test_holds_by_hand(void)
{
    bf_fixture_t f;
    apr_array_header_t *holds = NULL;
    prov_leases_t L;
    prov_op_t ops[2], hand[2];
    prov_slot_t *work;
    const prov_hold_t *h;
    const char *lease = NULL;
    int i, found = -1;

    setup(&f, NULL, 1000 * C);
    /* two ordinary holds of 2 credits, and a lease (with two holds of its
     * own) as another process (its writer thread running) would hold them */
    for (i = 0; i < 2; i++) {
        bf_reserve_op(&hand[i], &f, apr_psprintf(f.p, "hand-%d", i), T0);
        hand[i].hold = 2 * C;
        hand[i].now = T0 + i;
        CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, &hand[i], NULL, 0, 0, 3600, f.p),
                              APR_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL_FATAL(hand[i].out);
    }
    bf_lease_table(&L, PROV_LEASE_IDLE_DEFAULT);
    bf_reserve_op(&ops[0], &f, "hand-a", T0);
    bf_reserve_op(&ops[1], &f, "hand-b", T0);
    ops[0].next = &ops[1];
    work = prov_lease_handoff_take(&L, ops);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, ops, work, 0, 0, 3600, f.p), APR_SUCCESS);
    CU_ASSERT_TRUE_FATAL(ops[1].granted > 0);
    prov_lease_handoff_done(&L, work, ops, T0, APR_SUCCESS);
    bf_drop_slots(&L);
    CU_ASSERT_EQUAL_FATAL(prov_hold_list(&holds, f.s, f.u->id, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(holds->nelts, 5);
    for (i = 0; i < holds->nelts; i++) {
        h = &APR_ARRAY_IDX(holds, i, prov_hold_t);
        CU_ASSERT_STRING_EQUAL(h->email, "j@example.com");
        CU_ASSERT_STRING_EQUAL(h->model, "m1");
        CU_ASSERT_EQUAL(h->key_id, f.k->id);
        CU_ASSERT_EQUAL(h->amount, h->lease ? ops[1].granted : !strncmp(h->id, "hand-", 5)
                                   && h->id[5] <= '9' ? 2 * C : C);
        if (h->lease)
            lease = h->id;
    }
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(holds, 0, prov_hold_t).id, "hand-0");   /* oldest */
    CU_ASSERT_PTR_NOT_NULL_FATAL(lease);
    CU_ASSERT_EQUAL_FATAL(prov_hold_list(&holds, f.s, f.u->id + 1, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(holds->nelts, 0);
    bf_check_books(&f, 1000 * C);

    CU_ASSERT_EQUAL(prov_hold_release(&found, f.src, "hand-0", PROV_STATUS_RELEASED, T0 + 5,
                                      f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(found, 1);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'released' "
                                 "AND credits = 0 AND settled_at = 1700000005"), 1);
    CU_ASSERT_EQUAL(prov_hold_release(&found, f.src, "hand-0", PROV_STATUS_RELEASED, T0 + 5,
                                      f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(found, 0);
    CU_ASSERT_EQUAL(prov_hold_release(&found, f.src, lease, PROV_STATUS_RELEASED, T0 + 5,
                                      f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(found, 1);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(prov_hold_release(&found, f.src, "nope", PROV_STATUS_RELEASED, T0 + 5,
                                      f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(found, 0);
    bf_check_books(&f, 1000 * C);
    CU_ASSERT_EQUAL(bf_balance(&f), 1000 * C - 2 * C - 2 * C);   /* hand-1, hand-a, hand-b */
    /* The request whose hold was given back ends: nothing is charged. */
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, hand[0].out, NULL, C, PROV_STATUS_OK, T0 + 6, f.p),
                    APR_EINCOMPLETE);
    CU_ASSERT_EQUAL(bf_balance(&f), 1000 * C - 2 * C - 2 * C);
    teardown(&f);
}

void prov_test_suite_billing_journal(void)
{
    PROV_SUITE("billing_journal", PROV_TEST(test_replay_dead_process),
               PROV_TEST(test_replay_races_live_batches), PROV_TEST(test_upkeep_journal),
               PROV_TEST(test_upkeep_expires), PROV_TEST(test_holds_by_hand));
}
