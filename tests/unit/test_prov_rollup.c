/* test_prov_rollup.c: unit tests of the ledger's daily rollups and retention
 * (core/store/prov_rollup.c) and of the reports that read them
 * (core/account/prov_usage.c), on SQLite and, with PROV_UNIT_PGSQL, on
 * PostgreSQL. A dataset of ten days of rows (statuses among them refused,
 * failed, cut and reservations in flight) is kept in memory too, and every
 * report (each grouping, filters by user, key and model, ranges that start
 * and end at midnight or not) is compared with the sums computed here from
 * that copy: before any rollup, after a step stopped by a reservation,
 * after late rows and settlements, and after compaction. The rollup rows'
 * own figures (credits by source, refused and failed counts), where a step
 * stops, and the retention's bounds are checked directly. */
#include <string.h>
#include "unit_tests.h"
#include "prov_rollup.h"
#include "prov_usage.h"

#define DAY  APR_INT64_C(86400)
#define DAY0 APR_INT64_C(1894665600)          /* 2030-01-15 00:00 UTC */
#define NOW  (DAY0 + 9 * DAY + 50000)         /* day 9 is today */
#define MAXROWS 600

typedef struct trow_t {
    apr_int64_t id, user, key, model, at, in, out, cache, reas, credits, plan;
    const char *status;
} trow_t;

static trow_t rows[MAXROWS];
static int nrows;

static apr_pool_t *tpool(void)
{
    apr_pool_t *p = NULL;
    apr_pool_create(&p, prov_test_pool());
    return p;
}

static apr_int64_t one(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    return apr_atoi64(prov_test_dump(s, sql, p));
}

static void add_row(prov_store_t *s, apr_int64_t user, apr_int64_t key, apr_int64_t model,
                    apr_int64_t at, const char *status, apr_int64_t seed, apr_pool_t *p)
{
    trow_t *r = &rows[nrows];
    CU_ASSERT_FATAL(nrows < MAXROWS);
    r->user = user; r->key = key; r->model = model; r->at = at; r->status = status;
    r->in = 100 + seed % 900; r->out = seed % 300; r->cache = seed % 7 * 10;
    r->reas = seed % 5; r->credits = !strcmp(status, "refused") ? 0 : 1000 + seed % 5000;
    r->plan = seed % 3 == 0 ? r->credits : 0;
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s, apr_psprintf(p,
        "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens, "
        "output_tokens, cache_tokens, reasoning_tokens, reserved, credits, plan_credits, "
        "source, status, created_at) VALUES ('r%d', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT
        ", %" APR_INT64_T_FMT ", '%s', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %"
        APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", 0, %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT
        ", '%s', '%s', %" APR_INT64_T_FMT ")", nrows, user, key, model,
        seed % 2 ? "chat" : "messages", r->in, r->out, r->cache, r->reas, r->credits, r->plan,
        r->plan ? "plan" : "balance", status, at), p), APR_SUCCESS);
    r->id = one(s, apr_psprintf(p, "SELECT id FROM ledger WHERE request_id = 'r%d'", nrows), p);
    nrows++;
}

/* Ten days of rows for users 1-3 (keys 10*user and 10*user + 1, models
 * 1-3), ~40 a day at pseudo-random times, every 11th refused, every 13th
 * failed, every 17th cut; one reservation in flight on day 3. */
static prov_store_t *fixture(apr_pool_t *p)
{
    prov_store_t *s = prov_test_store_any(p);
    apr_uint32_t x = 12345;
    int i;
    nrows = 0;
    for (i = 0; i < 400; i++) {
        apr_int64_t user, at;
        const char *st = i % 11 == 0 ? "refused" : i % 13 == 0 ? "failed"
                       : i % 17 == 0 ? "cut" : "ok";
        x = x * 1103515245u + 12345u;
        user = x % 3 + 1;
        at = DAY0 + (apr_int64_t)i * 10 * DAY / 400 + (x >> 8) % 600;
        if (at >= NOW)
            at = NOW - 1;
        if (i == 130)
            st = "reserved";
        add_row(s, user, user * 10 + (x >> 4) % 2, (x >> 6) % 3 + 1, at, st, x >> 3, p);
    }
    return s;
}

/* The report of f as text ("group:requests/in/out/cache/reasoning/credits;"). */
static const char *got(prov_store_t *s, const prov_usage_filter_t *f, apr_pool_t *p)
{
    apr_array_header_t *a = NULL;
    const char *t = "";
    int i;
    CU_ASSERT_EQUAL_FATAL(prov_usage_report(&a, s, f, p), APR_SUCCESS);
    for (i = 0; i < a->nelts; i++) {
        const prov_usage_row_t *u = APR_ARRAY_IDX(a, i, prov_usage_row_t *);
        t = apr_psprintf(p, "%s%s:%" APR_INT64_T_FMT "/%" APR_INT64_T_FMT "/%" APR_INT64_T_FMT
                         "/%" APR_INT64_T_FMT "/%" APR_INT64_T_FMT "/%" APR_INT64_T_FMT ";", t,
                         u->group, u->requests, u->tokens.input, u->tokens.output,
                         u->tokens.cache, u->tokens.reasoning, u->credits);
    }
    return t;
}

/* The group of a row under f->by, as a sortable number (-1: f leaves it out). */
static apr_int64_t group_of(const trow_t *r, const prov_usage_filter_t *f)
{
    if (!strcmp(r->status, "reserved") || (f->user_id && r->user != f->user_id)
        || (f->key_id && r->key != f->key_id) || (f->model_id && r->model != f->model_id)
        || r->at < f->since || (f->until && r->at >= f->until))
        return -1;
    switch (f->by) {
    case PROV_USAGE_BY_DAY:   return r->at - r->at % DAY;
    case PROV_USAGE_BY_KEY:   return r->key;
    case PROV_USAGE_BY_MODEL: return r->model;
    default:                  return 0;
    }
}

/* The same text computed from the rows kept here. */
static const char *want(const prov_usage_filter_t *f, apr_pool_t *p)
{
    apr_int64_t last = -1;
    const char *t = "";
    for (;;) {
        apr_int64_t g = -1, sum[6] = { 0 };
        const char *label;
        int i;
        for (i = 0; i < nrows; i++) {        /* the next group after last */
            apr_int64_t k = group_of(&rows[i], f);
            if (k > last && (g < 0 || k < g))
                g = k;
        }
        if (g < 0 && (f->by != PROV_USAGE_BY_NONE || last >= 0))
            return t;
        for (i = 0; i < nrows; i++)
            if (group_of(&rows[i], f) == g) {
                sum[0]++; sum[1] += rows[i].in; sum[2] += rows[i].out;
                sum[3] += rows[i].cache; sum[4] += rows[i].reas; sum[5] += rows[i].credits;
            }
        if (f->by == PROV_USAGE_BY_DAY) {
            apr_time_exp_t e;
            apr_time_exp_gmt(&e, apr_time_from_sec(g));
            label = apr_psprintf(p, "%04d-%02d-%02d", e.tm_year + 1900, e.tm_mon + 1, e.tm_mday);
        }
        else
            label = f->by == PROV_USAGE_BY_NONE ? "total" : prov_i64(g, p);
        t = apr_psprintf(p, "%s%s:%" APR_INT64_T_FMT "/%" APR_INT64_T_FMT "/%" APR_INT64_T_FMT
                         "/%" APR_INT64_T_FMT "/%" APR_INT64_T_FMT "/%" APR_INT64_T_FMT ";", t,
                         label, sum[0], sum[1], sum[2], sum[3], sum[4], sum[5]);
        if (f->by == PROV_USAGE_BY_NONE)
            return t;
        last = g;
    }
}

/* Every grouping of every filter and range below: from since_day on (the
 * days before it may have been compacted). */
static void check_all(prov_store_t *s, int since_day, apr_pool_t *p)
{
    static const apr_int64_t who[][3] = { { 0, 0, 0 }, { 1, 0, 0 }, { 2, 0, 3 }, { 0, 31, 0 },
                                          { 3, 30, 2 }, { 0, 0, 2 } };
    const apr_int64_t from = DAY0 + since_day * DAY;
    const apr_int64_t span[][2] = {
        { since_day ? from : 0, 0 }, { from, DAY0 + 7 * DAY }, { from + DAY + 333, DAY0 + 7 * DAY + 999 },
        { from + 4 * DAY + 5000, 0 }, { from + DAY + 100, from + DAY + 80000 },
        { NOW - 7 * DAY, NOW + 1 }, { DAY0 + 9 * DAY, 0 } };
    unsigned w, r;
    int by;
    for (w = 0; w < sizeof(who) / sizeof(who[0]); w++)
        for (r = 0; r < sizeof(span) / sizeof(span[0]); r++)
            for (by = PROV_USAGE_BY_NONE; by <= PROV_USAGE_BY_MODEL; by++) {
                prov_usage_filter_t f = { who[w][0], who[w][1], who[w][2], span[r][0],
                                          span[r][1], (prov_usage_by_e)by };
                const char *g = got(s, &f, p), *x = want(&f, p);
                CU_ASSERT_STRING_EQUAL(g, x);
                if (strcmp(g, x))
                    fprintf(stderr, "\nfilter %u range %u by %d:\n got %s\nwant %s\n", w, r, by,
                            g, x);
            }
}

static apr_int64_t last_id(prov_store_t *s, apr_pool_t *p)
{
    return one(s, "SELECT last_id FROM ledger_rollup_state", p);
}

static void test_rollup_exact(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = fixture(p);
    apr_int64_t n = 0, reserved_id = rows[130].id;
    int i;

    check_all(s, 0, p);                          /* raw rows only */
    CU_ASSERT_EQUAL(prov_rollup_run(&n, s, NOW, 100, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, reserved_id - 1);          /* stopped by the reservation */
    CU_ASSERT_EQUAL(last_id(s, p), reserved_id - 1);
    check_all(s, 0, p);

    /* the reservation settles; two rows come late with an old time */
    CU_ASSERT_EQUAL(prov_store_raw(s, apr_psprintf(p, "UPDATE ledger SET status = 'ok', "
                    "credits = 777 WHERE id = %" APR_INT64_T_FMT, reserved_id), p), APR_SUCCESS);
    rows[130].status = "ok";
    rows[130].credits = 777;
    add_row(s, 1, 10, 1, DAY0 + 2 * DAY + 7, "ok", 4242, p);
    add_row(s, 2, 21, 3, DAY0 + 5 * DAY + 9, "refused", 99, p);
    check_all(s, 0, p);                          /* read raw until rolled up */
    CU_ASSERT_EQUAL(prov_rollup_run(&n, s, NOW, 100, p), APR_SUCCESS);
    /* today's rows (day 9) are not rolled up: the first of them stops it */
    for (i = 0; i < nrows && rows[i].at < DAY0 + 9 * DAY; i++)
        ;
    CU_ASSERT_EQUAL(last_id(s, p), rows[i].id - 1);
    check_all(s, 0, p);
    CU_ASSERT_EQUAL(prov_rollup_run(&n, s, NOW, 100, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 0);                       /* nothing left until tomorrow */
    /* tomorrow, the late rows (after today's) are rolled up too */
    CU_ASSERT_EQUAL(prov_rollup_run(&n, s, NOW + DAY, 100, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(last_id(s, p), rows[nrows - 1].id);
    CU_ASSERT_EQUAL(one(s, "SELECT SUM(requests) FROM ledger_rollup", p), nrows);
    check_all(s, 0, p);
}

static void test_rollup_figures(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = fixture(p);
    apr_int64_t n = 0, plan = 0, credits = 0, refused = 0, failed = 0, req = 0;
    int i;
    CU_ASSERT_EQUAL(prov_store_raw(s, "UPDATE ledger SET status = 'ok' WHERE status = 'reserved'",
                                   p), APR_SUCCESS);
    rows[130].status = "ok";
    CU_ASSERT_EQUAL(prov_rollup_run(&n, s, NOW + DAY, 100, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, rows[nrows - 1].id);
    for (i = 0; i < nrows; i++)
        if (rows[i].user == 2 && rows[i].at >= DAY0 + 4 * DAY && rows[i].at < DAY0 + 5 * DAY) {
            req++; credits += rows[i].credits; plan += rows[i].plan;
            refused += !strcmp(rows[i].status, "refused");
            failed += !strcmp(rows[i].status, "failed");
        }
    CU_ASSERT(req > 5 && refused > 0 && plan > 0);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, apr_psprintf(p, "SELECT SUM(requests), "
        "SUM(credits), SUM(plan_credits), SUM(refused), SUM(failed) FROM ledger_rollup "
        "WHERE user_id = 2 AND day = %" APR_INT64_T_FMT, DAY0 + 4 * DAY), p),
        apr_psprintf(p, "%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT "|%" APR_INT64_T_FMT "|%"
                     APR_INT64_T_FMT "|%" APR_INT64_T_FMT "|\n", req, credits, plan, refused,
                     failed));
}

static void test_rollup_retention(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = fixture(p);
    apr_int64_t n = 0, now = DAY0 + 10 * DAY + 600, before = DAY0 + 2 * DAY;
    apr_int64_t old = one(s, apr_psprintf(p, "SELECT COUNT(*) FROM ledger WHERE created_at < %"
                                          APR_INT64_T_FMT, before), p);
    apr_int64_t all = one(s, "SELECT COUNT(*) FROM ledger", p);
    int removed = 0, total = 0, batches = 0;

    CU_ASSERT_EQUAL(prov_retention_cut(now, 0), 0);
    CU_ASSERT_EQUAL(prov_retention_cut(now, 8), DAY0 + 2 * DAY);
    /* SQLite's writers wait for a removal: small batches; not PostgreSQL's */
    {
        prov_store_t other = *s;
        other.dialect = PROV_DIALECT_SQLITE;
        CU_ASSERT_EQUAL(prov_compact_batch(&other), PROV_COMPACT_BATCH);
        other.dialect = PROV_DIALECT_PGSQL;
        CU_ASSERT_EQUAL(prov_compact_batch(&other), PROV_COMPACT_BATCH_PGSQL);
        CU_ASSERT(PROV_COMPACT_BATCH < PROV_COMPACT_BATCH_PGSQL);
    }
    /* a date within the last eight days is refused; so is a batch of 0 */
    CU_ASSERT_EQUAL(prov_rollup_compact(&removed, s, before + 1, now, 10, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_rollup_compact(&removed, s, before, now, 0, p), APR_EINVAL);
    /* nothing rolled up yet: nothing removed */
    CU_ASSERT_EQUAL(prov_rollup_compact(&removed, s, before, now, 10, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(removed, 0);
    CU_ASSERT_EQUAL(prov_rollup_run(&n, s, now, 100, p), APR_SUCCESS);
    CU_ASSERT(old > 20);
    do {
        CU_ASSERT_EQUAL_FATAL(prov_rollup_compact(&removed, s, before, now, 10, p), APR_SUCCESS);
        CU_ASSERT(removed <= 10);
        total += removed;
        batches++;
    } while (removed > 0);
    CU_ASSERT_EQUAL(total, old);
    CU_ASSERT(batches >= old / 10);
    CU_ASSERT_EQUAL(one(s, "SELECT COUNT(*) FROM ledger", p), all - old);
    /* the reservation (day 3) stops the rollups: the rows after it stay */
    CU_ASSERT_EQUAL(one(s, "SELECT COUNT(*) FROM ledger WHERE status = 'reserved'", p), 1);
    check_all(s, 2, p);                          /* the reports have not moved */
    /* the days compacted are still reported, from the rollups */
    {
        prov_usage_filter_t f = { 0, 0, 0, DAY0, DAY0 + 2 * DAY, PROV_USAGE_BY_DAY };
        CU_ASSERT_STRING_EQUAL(got(s, &f, p), want(&f, p));
    }
}

static void test_ledger_status(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = fixture(p);
    prov_ledger_status_t st;
    apr_int64_t n = 0;
    CU_ASSERT_EQUAL(prov_ledger_status(&st, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(st.rows, 400);
    CU_ASSERT_EQUAL(st.oldest, rows[0].at);
    CU_ASSERT_EQUAL(st.last_id, 0);
    CU_ASSERT_EQUAL(st.pending, 400);
    CU_ASSERT_EQUAL(st.first_day, -1);
    CU_ASSERT(st.db_bytes > 0);
    CU_ASSERT_EQUAL(prov_rollup_run(&n, s, NOW, 100, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_ledger_status(&st, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(st.last_id, rows[129].id);
    CU_ASSERT_EQUAL(st.pending, 400 - 130);
    CU_ASSERT_EQUAL(st.first_day, DAY0);
    CU_ASSERT_EQUAL(st.last_day, rows[129].at - rows[129].at % DAY);
    CU_ASSERT(st.rollup_rows > 0);
}

void prov_test_suite_rollup(void)
{
    CU_pSuite s = CU_add_suite("rollup", NULL, NULL);
    CU_add_test(s, "reports equal the raw rows at every stage", test_rollup_exact);
    CU_add_test(s, "a rollup row's figures", test_rollup_figures);
    CU_add_test(s, "retention: bounds, batches, reports unchanged", test_rollup_retention);
    CU_add_test(s, "ledger status", test_ledger_status);
}
