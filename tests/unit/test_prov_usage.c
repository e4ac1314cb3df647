/* test_prov_usage.c: unit tests of the usage reports on an in-memory SQLite
 * database. The ledger rows are written with raw SQL (a test-only helper), so
 * that the expected sums are known exactly: totals, each filter (user, key,
 * model, the half-open time range), the three groupings with their labels and
 * order, that reservations in flight are left out and released requests count
 * with zero credits, and the per-key summary of today and the last seven days
 * at day boundaries on a fixed clock. */
#include <string.h>
#include "unit_tests.h"
#include "prov_usage.h"
#include "prov_models.h"

/* 2030-01-15 00:00:00 UTC: the start of a day. */
#define DAY0 APR_INT64_C(1894665600)
#define DAY  APR_INT64_C(86400)

static apr_pool_t *tpool(void)
{
    apr_pool_t *p = NULL;
    apr_pool_create(&p, prov_test_pool());
    return p;
}

/* Inserts one ledger row (test-only: the billing engine writes them in real
 * life). Tokens are in, out, cache, reasoning; credits in micro-credits. */
static void ledger(prov_store_t *s, apr_int64_t user, apr_int64_t key, apr_int64_t model,
                   apr_int64_t at, const char *status, apr_int64_t in, apr_int64_t out,
                   apr_int64_t cache, apr_int64_t reasoning, apr_int64_t credits,
                   apr_pool_t *p)
{
    static int seq;
    const char *sql = apr_psprintf(p,
        "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens, "
        "output_tokens, cache_tokens, reasoning_tokens, reserved, credits, status, created_at) "
        "VALUES ('req-%d', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT
        ", 'chat', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %"
        APR_INT64_T_FMT ", 0, %" APR_INT64_T_FMT ", '%s', %" APR_INT64_T_FMT ")",
        ++seq, user, key, model, in, out, cache, reasoning, credits, status, at);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s, sql, p), APR_SUCCESS);
}

/* Two models (ids 1 "alpha", 2 "beta"); users 1 and 2; keys 10, 11 of user 1
 * and 20 of user 2. Rows on DAY0 and the next day, plus one reservation in
 * flight and one released request. */
static prov_store_t *fixture(apr_pool_t *p)
{
    prov_store_t *s = prov_test_store(p);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(NULL, s, "beta", "up/beta", NULL, NULL, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(NULL, s, "alpha", "up/alpha", NULL, NULL, p),
                          APR_SUCCESS);
    /* model 1 = beta, 2 = alpha (ids in insertion order; names sort the other way) */
    ledger(s, 1, 10, 1, DAY0 + 10,       "ok", 100, 20, 5, 1, 1500, p);
    ledger(s, 1, 10, 2, DAY0 + 3600,     "ok", 200, 30, 0, 2, 2500, p);
    ledger(s, 1, 11, 1, DAY0 + DAY - 1,  "ok", 300, 40, 7, 0, 3000, p);
    ledger(s, 1, 11, 1, DAY0 + DAY,      "cut", 400, 50, 0, 3, 4000, p);
    ledger(s, 2, 20, 2, DAY0 + DAY + 60, "ok", 1000, 100, 10, 10, 100000, p);
    ledger(s, 1, 10, 1, DAY0 + DAY + 90, "failed", 0, 0, 0, 0, 0, p);
    ledger(s, 1, 10, 1, DAY0 + DAY + 99, "reserved", 0, 0, 0, 0, 0, p);
    return s;
}

static prov_usage_row_t *report1(prov_store_t *s, prov_usage_filter_t *f, apr_pool_t *p)
{
    apr_array_header_t *rows = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_usage_report(&rows, s, f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(rows->nelts, 1);
    return APR_ARRAY_IDX(rows, 0, prov_usage_row_t *);
}

static void test_usage_total(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = fixture(p);
    prov_usage_filter_t f;
    prov_usage_row_t *r;

    memset(&f, 0, sizeof(f));
    r = report1(s, &f, p);
    CU_ASSERT_STRING_EQUAL(r->group, "total");
    /* 6 settled rows (the reservation in flight is not usage) */
    CU_ASSERT_EQUAL(r->requests, 6);
    CU_ASSERT_EQUAL(r->tokens.input, 2000);
    CU_ASSERT_EQUAL(r->tokens.output, 240);
    CU_ASSERT_EQUAL(r->tokens.cache, 22);
    CU_ASSERT_EQUAL(r->tokens.reasoning, 16);
    CU_ASSERT_EQUAL(r->credits, 111000);

    /* An empty ledger (or filter) still has its total row, all zeros. */
    f.user_id = 77;
    r = report1(s, &f, p);
    CU_ASSERT_STRING_EQUAL(r->group, "total");
    CU_ASSERT_EQUAL(r->requests, 0);
    CU_ASSERT_EQUAL(r->tokens.input, 0);
    CU_ASSERT_EQUAL(r->credits, 0);
    apr_pool_destroy(p);
}

static void test_usage_filters(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = fixture(p);
    prov_usage_filter_t f;
    prov_usage_row_t *r;

    memset(&f, 0, sizeof(f));
    f.user_id = 1;
    r = report1(s, &f, p);
    CU_ASSERT_EQUAL(r->requests, 5);
    CU_ASSERT_EQUAL(r->tokens.input, 1000);
    CU_ASSERT_EQUAL(r->credits, 11000);

    f.key_id = 11;
    r = report1(s, &f, p);
    CU_ASSERT_EQUAL(r->requests, 2);
    CU_ASSERT_EQUAL(r->tokens.output, 90);
    CU_ASSERT_EQUAL(r->tokens.cache, 7);
    CU_ASSERT_EQUAL(r->credits, 7000);

    /* key 20 belongs to user 2: with user 1 as well, nothing */
    f.key_id = 20;
    r = report1(s, &f, p);
    CU_ASSERT_EQUAL(r->requests, 0);

    memset(&f, 0, sizeof(f));
    f.model_id = 2;   /* alpha */
    r = report1(s, &f, p);
    CU_ASSERT_EQUAL(r->requests, 2);
    CU_ASSERT_EQUAL(r->tokens.input, 1200);
    CU_ASSERT_EQUAL(r->tokens.reasoning, 12);
    CU_ASSERT_EQUAL(r->credits, 102500);

    /* [DAY0 + 3600, DAY0 + DAY): since is inclusive, until exclusive */
    memset(&f, 0, sizeof(f));
    f.since = DAY0 + 3600;
    f.until = DAY0 + DAY;
    r = report1(s, &f, p);
    CU_ASSERT_EQUAL(r->requests, 2);
    CU_ASSERT_EQUAL(r->credits, 5500);
    f.until = DAY0 + DAY + 1;
    r = report1(s, &f, p);
    CU_ASSERT_EQUAL(r->requests, 3);
    CU_ASSERT_EQUAL(r->credits, 9500);
    /* only since */
    f.until = 0;
    f.since = DAY0 + DAY;
    r = report1(s, &f, p);
    CU_ASSERT_EQUAL(r->requests, 3);
    CU_ASSERT_EQUAL(r->credits, 104000);

    /* until before since, negative ids, an unknown grouping: refused */
    f.since = DAY0 + 10;
    f.until = DAY0;
    CU_ASSERT_EQUAL(prov_usage_report(NULL, s, &f, p), APR_EINVAL);
    memset(&f, 0, sizeof(f));
    f.key_id = -1;
    CU_ASSERT_EQUAL(prov_usage_report(NULL, s, &f, p), APR_EINVAL);
    f.key_id = 0;
    f.by = (prov_usage_by_e)9;
    CU_ASSERT_EQUAL(prov_usage_report(NULL, s, &f, p), APR_EINVAL);
    apr_pool_destroy(p);
}

static void test_usage_grouping(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = fixture(p);
    apr_array_header_t *rows = NULL;
    prov_usage_filter_t f;
    prov_usage_row_t *r;

    memset(&f, 0, sizeof(f));
    f.by = PROV_USAGE_BY_DAY;
    CU_ASSERT_EQUAL_FATAL(prov_usage_report(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(rows->nelts, 2);
    r = APR_ARRAY_IDX(rows, 0, prov_usage_row_t *);
    CU_ASSERT_STRING_EQUAL(r->group, "2030-01-15");
    CU_ASSERT_EQUAL(r->requests, 3);
    CU_ASSERT_EQUAL(r->tokens.input, 600);
    CU_ASSERT_EQUAL(r->credits, 7000);
    r = APR_ARRAY_IDX(rows, 1, prov_usage_row_t *);
    CU_ASSERT_STRING_EQUAL(r->group, "2030-01-16");
    CU_ASSERT_EQUAL(r->requests, 3);
    CU_ASSERT_EQUAL(r->tokens.input, 1400);
    CU_ASSERT_EQUAL(r->credits, 104000);

    f.by = PROV_USAGE_BY_KEY;
    CU_ASSERT_EQUAL_FATAL(prov_usage_report(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(rows->nelts, 3);
    r = APR_ARRAY_IDX(rows, 0, prov_usage_row_t *);
    CU_ASSERT_STRING_EQUAL(r->group, "10");
    CU_ASSERT_EQUAL(r->requests, 3);    /* the released one counts, at 0 credits */
    CU_ASSERT_EQUAL(r->credits, 4000);
    r = APR_ARRAY_IDX(rows, 1, prov_usage_row_t *);
    CU_ASSERT_STRING_EQUAL(r->group, "11");
    CU_ASSERT_EQUAL(r->tokens.reasoning, 3);
    r = APR_ARRAY_IDX(rows, 2, prov_usage_row_t *);
    CU_ASSERT_STRING_EQUAL(r->group, "20");
    CU_ASSERT_EQUAL(r->credits, 100000);

    f.by = PROV_USAGE_BY_MODEL;
    f.user_id = 1;
    CU_ASSERT_EQUAL_FATAL(prov_usage_report(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(rows->nelts, 2);
    r = APR_ARRAY_IDX(rows, 0, prov_usage_row_t *);
    CU_ASSERT_STRING_EQUAL(r->group, "alpha");
    CU_ASSERT_EQUAL(r->requests, 1);
    CU_ASSERT_EQUAL(r->credits, 2500);
    r = APR_ARRAY_IDX(rows, 1, prov_usage_row_t *);
    CU_ASSERT_STRING_EQUAL(r->group, "beta");
    CU_ASSERT_EQUAL(r->requests, 4);
    CU_ASSERT_EQUAL(r->tokens.input, 800);
    CU_ASSERT_EQUAL(r->tokens.cache, 12);
    CU_ASSERT_EQUAL(r->credits, 8500);

    /* A grouped report of nothing has no rows. */
    f.user_id = 77;
    CU_ASSERT_EQUAL_FATAL(prov_usage_report(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(rows->nelts, 0);
    apr_pool_destroy(p);
}

/* The sum of a grouped report equals the total, whatever the grouping. */
static void test_usage_groups_sum_to_total(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = fixture(p);
    prov_usage_filter_t f;
    prov_usage_row_t *total;
    int by, i;

    memset(&f, 0, sizeof(f));
    total = report1(s, &f, p);
    for (by = PROV_USAGE_BY_DAY; by <= PROV_USAGE_BY_MODEL; by++) {
        apr_array_header_t *rows = NULL;
        apr_int64_t req = 0, in = 0, out = 0, cr = 0;
        f.by = (prov_usage_by_e)by;
        CU_ASSERT_EQUAL_FATAL(prov_usage_report(&rows, s, &f, p), APR_SUCCESS);
        for (i = 0; i < rows->nelts; i++) {
            prov_usage_row_t *r = APR_ARRAY_IDX(rows, i, prov_usage_row_t *);
            req += r->requests;
            in += r->tokens.input;
            out += r->tokens.output;
            cr += r->credits;
        }
        CU_ASSERT_EQUAL(req, total->requests);
        CU_ASSERT_EQUAL(in, total->tokens.input);
        CU_ASSERT_EQUAL(out, total->tokens.output);
        CU_ASSERT_EQUAL(cr, total->credits);
    }
    apr_pool_destroy(p);
}

static void test_usage_key_summary(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_usage_key_t k;

    ledger(s, 1, 5, 1, DAY0 - 7 * DAY,     "ok", 1, 1, 0, 0, 1, p);     /* out of the week */
    ledger(s, 1, 5, 1, DAY0 - 7 * DAY + 3600, "ok", 10, 1, 0, 0, 10, p);
    ledger(s, 1, 5, 1, DAY0 - 1,           "ok", 100, 1, 0, 0, 100, p);  /* yesterday */
    ledger(s, 1, 5, 1, DAY0,               "ok", 1000, 1, 0, 0, 1000, p);
    ledger(s, 1, 5, 1, DAY0 + 7200,        "ok", 10000, 1, 0, 0, 10000, p);
    ledger(s, 1, 6, 1, DAY0 + 60,          "ok", 5, 5, 5, 5, 99999, p);  /* another key */
    ledger(s, 1, 5, 1, DAY0 + 3600,        "reserved", 0, 0, 0, 0, 0, p);
    ledger(s, 1, 5, 1, DAY0 + 9000,        "ok", 7, 7, 7, 7, 7, p);      /* after now */

    CU_ASSERT_EQUAL_FATAL(prov_usage_key_summary(&k, s, 5, DAY0 + 7200, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(k.today.group, "today");
    CU_ASSERT_EQUAL(k.today.requests, 2);
    CU_ASSERT_EQUAL(k.today.tokens.input, 11000);
    CU_ASSERT_EQUAL(k.today.credits, 11000);
    /* the week starts at now - 7 days = DAY0 - 7 * DAY + 7200 */
    CU_ASSERT_STRING_EQUAL(k.week.group, "7d");
    CU_ASSERT_EQUAL(k.week.requests, 3);
    CU_ASSERT_EQUAL(k.week.credits, 11100);

    /* One second before midnight, "today" is the day before. */
    CU_ASSERT_EQUAL_FATAL(prov_usage_key_summary(&k, s, 5, DAY0 - 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(k.today.requests, 1);
    CU_ASSERT_EQUAL(k.today.credits, 100);
    CU_ASSERT_EQUAL(k.week.requests, 3);   /* from DAY0 - 7 * DAY - 1 */
    CU_ASSERT_EQUAL(k.week.credits, 111);

    /* A key without usage: zeros. A bad key id: refused. */
    CU_ASSERT_EQUAL_FATAL(prov_usage_key_summary(&k, s, 99, DAY0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(k.week.requests, 0);
    CU_ASSERT_EQUAL(k.today.credits, 0);
    CU_ASSERT_EQUAL(prov_usage_key_summary(&k, s, 0, DAY0, p), APR_EINVAL);
    apr_pool_destroy(p);
}

void prov_test_suite_usage(void)
{
    PROV_SUITE("usage",
               PROV_TEST(test_usage_total),
               PROV_TEST(test_usage_filters),
               PROV_TEST(test_usage_grouping),
               PROV_TEST(test_usage_groups_sum_to_total),
               PROV_TEST(test_usage_key_summary));
}
