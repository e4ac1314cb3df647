/* test_prov_billing_progress.c: unit tests of what a killed child's
 * requests in flight cost (docs/internals/broken-streams.md, "A killed
 * child"), on SQLite and, with PROV_UNIT_PGSQL, on PostgreSQL. A hold
 * records the journal of the process that took it and its floor (the
 * charge of its input estimate), from a batch and from a lease's entry
 * written as a hold. The replay of a dead process's journal settles a
 * request with progress and no settlement 'estimated' at its latest
 * progress (a reserved row, an expired one completed late, a drawn one
 * without a row inserted), a settlement after a progress wins, the holds
 * of that process that no record named are charged their floor (at most
 * the hold), a drawn request with only its floor in the journal is charged
 * that floor, holds of other processes and expired holds without a record
 * are left alone; the same journal replayed twice charges once. A writer
 * with a journal appends progress records that keep no segment alive. The
 * fixture is billing_fixture.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <apr_file_info.h>
#include <apr_file_io.h>
#include "billing_fixture.h"

/* The floor of the test's holds (micro-credits). */
#define FLOOR 1000

static void setup(bf_fixture_t *f, prov_micro_t balance)
{
    bf_setup(f, balance, 0, 0);
    bf_journal_dir(f);
}

static void teardown(bf_fixture_t *f)
{
    bf_remove_dir(f->dir);
    apr_pool_destroy(f->p);
}

/* A hold of C taken in a batch at now by the process whose journal is
 * owner (NULL: none), with floor. */
static prov_reservation_t *hold(bf_fixture_t *f, const char *id, const char *owner,
                                prov_micro_t floor, apr_int64_t now)
{
    prov_op_t op;
    bf_reserve_op(&op, f, id, now);
    op.hold_owner = owner;
    op.floor = floor;
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f->s, &op, NULL, 0, 0, 3600, f->p),
                          APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(op.out);
    return op.out;
}

/* A record of r in j: a progress (never outstanding) or a settlement. */
static void note(prov_journal_t *j, const prov_reservation_t *r, int progress,
                 prov_micro_t charge, prov_status_e status)
{
    bf_journal(j, r, charge, status, progress, T0 + 5);
}

/* A drawn request's floor, as prov_billing_reserve_ask journals it: a
 * progress record without tokens, kept until its settlement is journaled. */
static void floor_rec(prov_journal_t *j, const prov_reservation_t *r, prov_micro_t floor)
{
    prov_journal_rec_t rec;
    int ticket = 0;
    memset(&rec, 0, sizeof(rec));
    rec.row.request_id = r->row.request_id;
    rec.row.transport = "messages";
    rec.row.status = PROV_JOURNAL_PROGRESS_STATUS;
    rec.row.user_id = r->row.user_id;
    rec.row.key_id = r->row.key_id;
    rec.row.model_id = r->row.model_id;
    rec.row.created_at = rec.row.settled_at = r->row.created_at;
    rec.row.hold = r->row.hold;
    rec.row.charge = floor;
    rec.drawn = 1;
    rec.progress = rec.keep = 1;
    CU_ASSERT_EQUAL(prov_journal_append(j, &rec, &ticket), APR_SUCCESS);
    CU_ASSERT_TRUE(ticket > 0);
}

/* The floors f's writer's journal keeps. */
static int journal_kept(bf_fixture_t *f)
{
    prov_queue_t *q;
    prov_journal_t *j;
    prov_queue_lock();
    q = prov_queue_of(f->src->channel);
    j = q ? q->leases.journal : NULL;
    prov_queue_unlock();
    return j ? prov_journal_kept(j) : -1;
}

static apr_int64_t row_of(bf_fixture_t *f, const char *id, const char *status)
{
    return bf_value(f, apr_psprintf(f->p, "SELECT credits FROM ledger WHERE request_id = '%s' "
                                          "AND status = '%s'", id, status));
}

/* Copies every file of dir into dir2 (made when missing). */
static void copy_files(const char *dir, const char *dir2, apr_pool_t *p)
{
    apr_dir_t *d = NULL;
    apr_finfo_t fi;
    apr_dir_make(dir2, APR_FPROT_OS_DEFAULT, p);
    CU_ASSERT_EQUAL_FATAL(apr_dir_open(&d, dir, p), APR_SUCCESS);
    while (apr_dir_read(&fi, APR_FINFO_NAME | APR_FINFO_TYPE, d) == APR_SUCCESS) {
        if (fi.filetype == APR_REG)
            CU_ASSERT_EQUAL(apr_file_copy(apr_pstrcat(p, dir, "/", fi.name, NULL),
                                          apr_pstrcat(p, dir2, "/", fi.name, NULL),
                                          APR_FPROT_FILE_SOURCE_PERMS, p), APR_SUCCESS);
    }
    apr_dir_close(d);
}

/* A process dies with requests in flight in every state; its journal is
 * replayed, then replayed again from a copy. */
static void test_progress_replay(void)
{
    bf_fixture_t f;
    prov_journal_t *j = NULL;
    prov_reservation_t *r, drawn;
    const char *id = NULL, *owner, *copy;
    prov_micro_t charged;
    int journals = -1, n = 0;

    setup(&f, 1000 * C);
    CU_ASSERT_EQUAL_FATAL(prov_replay_database_id(&id, f.src, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, f.dir, id, 0, f.p), APR_SUCCESS);
    owner = apr_pstrdup(f.p, prov_journal_owner(j));
    r = hold(&f, "p-prog", owner, FLOOR, T0);
    note(j, r, 1, 100, PROV_STATUS_ESTIMATED);
    note(j, r, 1, 300, PROV_STATUS_ESTIMATED);          /* the latest counts */
    r = hold(&f, "p-settled", owner, FLOOR, T0);
    note(j, r, 1, 200, PROV_STATUS_ESTIMATED);
    note(j, r, 0, 250, PROV_STATUS_OK);                 /* the settlement wins */
    hold(&f, "p-floor", owner, FLOOR, T0);
    hold(&f, "p-cap", owner, 2 * C, T0);         /* a floor above the hold */
    r = hold(&f, "p-late", owner, FLOOR, T0 - 4000);
    note(j, r, 1, 500, PROV_STATUS_ESTIMATED);
    hold(&f, "p-gone", owner, FLOOR, T0 - 4000);
    hold(&f, "p-other", "another-process", FLOOR, T0);
    hold(&f, "p-none", NULL, FLOOR, T0);
    memset(&drawn, 0, sizeof(drawn));            /* drawn from a lease, no row */
    drawn.row.request_id = "p-drawn";
    drawn.row.user_id = f.u->id;
    drawn.row.key_id = f.k->id;
    drawn.row.model_id = f.m->id;
    drawn.row.hold = C;
    drawn.row.created_at = T0;
    drawn.entry = &drawn;                        /* drawn */
    floor_rec(j, &drawn, FLOOR);                 /* its floor, then its progress */
    note(j, &drawn, 1, 400, PROV_STATUS_ESTIMATED);
    drawn.row.request_id = "p-drawn-floor";          /* died before any progress */
    floor_rec(j, &drawn, FLOOR);
    drawn.row.request_id = "p-drawn-ok";             /* its settlement wins */
    floor_rec(j, &drawn, FLOOR);
    note(j, &drawn, 0, 600, PROV_STATUS_OK);
    CU_ASSERT_EQUAL(bf_value(&f, apr_psprintf(f.p, "SELECT COUNT(*) FROM ledger WHERE owner = "
                                                   "'%s' AND floor_credits = %d", owner, FLOOR)),
                    5);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE owner IS NULL"), 1);
    /* Two holds outlive the hold timeout before the replay comes. */
    CU_ASSERT_EQUAL(prov_queue_expire(&n, f.src, T0 + 100, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 2);
    bf_check_books(&f, 1000 * C);
    CU_ASSERT_EQUAL(prov_journal_outstanding(j), 2);   /* progress is not outstanding */
    CU_ASSERT_EQUAL(prov_journal_kept(j), 3);          /* but the drawn ones' floors */
    prov_journal_close(j);                       /* it dies */
    copy = apr_pstrcat(f.p, f.dir, "-copy", NULL);
    copy_files(f.dir, copy, f.p);

    CU_ASSERT_EQUAL(prov_replay_journals(&journals, f.src, f.dir, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(journals, 1);
    CU_ASSERT_EQUAL(bf_files_in(f.dir), 0);
    CU_ASSERT_EQUAL(row_of(&f, "p-prog", "estimated"), 300);
    CU_ASSERT_EQUAL(row_of(&f, "p-settled", "ok"), 250);
    CU_ASSERT_EQUAL(row_of(&f, "p-floor", "estimated"), FLOOR);
    CU_ASSERT_EQUAL(row_of(&f, "p-cap", "estimated"), C);
    CU_ASSERT_EQUAL(row_of(&f, "p-late", "estimated"), 500);
    CU_ASSERT_EQUAL(row_of(&f, "p-gone", "expired"), 0);
    CU_ASSERT_EQUAL(row_of(&f, "p-drawn", "estimated"), 400);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT reserved FROM ledger WHERE request_id = 'p-drawn'"), C);
    CU_ASSERT_EQUAL(row_of(&f, "p-drawn-floor", "estimated"), FLOOR);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT input_tokens + output_tokens FROM ledger "
                                 "WHERE request_id = 'p-drawn-floor'"), 0);
    CU_ASSERT_EQUAL(row_of(&f, "p-drawn-ok", "ok"), 600);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'reserved' AND "
                                 "request_id IN ('p-other', 'p-none')"), 2);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger"), 11);
    charged = 300 + 250 + FLOOR + C + 500 + 400 + FLOOR + 600;
    CU_ASSERT_EQUAL(bf_balance(&f), 1000 * C - charged - 2 * C);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT SUM(requests) FROM usage_buckets "
                                 "WHERE scope = 'user:h'"), 11);
    bf_check_books(&f, 1000 * C);

    /* The same journal again (a copy): nothing moves. */
    copy_files(copy, f.dir, f.p);
    bf_remove_dir(copy);
    CU_ASSERT_EQUAL(prov_replay_journals(&journals, f.src, f.dir, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(journals, 1);
    CU_ASSERT_EQUAL(bf_balance(&f), 1000 * C - charged - 2 * C);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COALESCE(SUM(credits), 0) FROM ledger"), charged);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger"), 11);
    bf_check_books(&f, 1000 * C);
    teardown(&f);
}

/* A writer with a journal: holds record its journal and floor (a batch's,
 * and a drawn entry written as a hold); a drawn request's floor goes into
 * the journal at its draw; progress goes into the journal, not once its
 * request is settled, and keeps nothing, nor do the floors once their
 * requests are settled: the journal goes when the writer stops. */
static void test_progress_from_writer(void)
{
    static const prov_tokens_t t = { 10, 20, 0, 0 };
    prov_hold_ask_t ask = { C, C, FLOOR };
    bf_fixture_t f;
    prov_writer_t *w = NULL;
    prov_reservation_t *r[3];
    prov_error_t *err = NULL;
    int i, polls, leased = 0;

    setup(&f, 10000 * C);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_writer_upkeep(w, f.dir), APR_SUCCESS);
    for (polls = 0; polls < 500 && bf_files_in(f.dir) < 2; polls++)
        apr_sleep(apr_time_from_msec(10));
    apr_sleep(apr_time_from_msec(50));          /* the journal open, leases granted */
    for (i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(prov_billing_reserve_ask(&r[i], &err, f.src, f.auth, f.m->id,
                                                 "messages", apr_psprintf(f.p, "pw-%d", i),
                                                 &ask, T0, f.p), APR_SUCCESS);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r[i]);
        CU_ASSERT_EQUAL(r[i]->row.floor, FLOOR);
        leased += r[i]->leased;
    }
    CU_ASSERT_TRUE_FATAL(r[2]->leased);
    /* A drawn request's floor is in the journal from its draw (no tokens,
     * its floor): a held one's is in its row. */
    for (i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(bf_dir_has(f.dir, apr_psprintf(f.p, "P\tpw-%d\t%" APR_INT64_T_FMT "\t%"
                                                             APR_INT64_T_FMT "\t%" APR_INT64_T_FMT
                                                             "\tmessages\t0\t0\t0\t0\t%d\t%d"
                                                             "\t0\t1\testimated\t", i,
                                                             f.u->id, f.k->id, f.m->id, (int)C,
                                                             FLOOR)),
                        r[i]->leased);
    /* The batch's holds, then the drawn one once its hold is written
     * (after a second in flight). */
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'reserved' AND "
                                 "owner IS NOT NULL AND floor_credits = 1000"), 3 - leased);
    for (polls = 0; polls < 400; polls++) {
        if (bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE request_id = 'pw-2' AND owner IS "
                         "NOT NULL AND floor_credits = 1000 AND status = 'reserved'") == 1)
            break;
        apr_sleep(apr_time_from_msec(10));
    }
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE request_id = 'pw-2' AND "
                                 "owner IS NOT NULL AND floor_credits = 1000"), 1);
    prov_billing_progress(r[0], &t, 77, T0 + 1);
    prov_billing_progress(r[2], &t, 88, T0 + 1);
    CU_ASSERT_TRUE(bf_dir_has(f.dir, "P\tpw-0\t"));
    CU_ASSERT_TRUE(bf_dir_has(f.dir, "\t88\t"));
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r[1], &t, 100, PROV_STATUS_OK, T0 + 2, f.p),
                    APR_SUCCESS);
    prov_billing_progress(r[1], &t, 99, T0 + 3);
    CU_ASSERT_FALSE(bf_dir_has(f.dir, "\t99\t"));
    CU_ASSERT_EQUAL(journal_kept(&f), leased - !!r[1]->leased);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r[0], &t, 100, PROV_STATUS_OK, T0 + 2, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r[2], &t, 100, PROV_STATUS_OK, T0 + 2, f.p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(journal_kept(&f), 0);        /* each floor done with its settlement */
    prov_writer_stop(w);
    CU_ASSERT_EQUAL(bf_files_in(f.dir), 0);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM ledger WHERE status = 'ok'"), 3);
    CU_ASSERT_EQUAL(bf_balance(&f), 10000 * C - 300);
    bf_check_books(&f, 10000 * C);
    teardown(&f);
}

void prov_test_suite_billing_progress(void)
{
    PROV_SUITE("billing_progress", PROV_TEST(test_progress_replay),
               PROV_TEST(test_progress_from_writer));
}
