/* test_prov_refusal.c: unit tests of the bounded record of refusals
 * (core/store/prov_refusal.c): folding per server, key, code and second;
 * the cap and the count of what it drops; a take keeping the rows of the
 * second not over yet for one more take; the batch write and the purge on
 * the in-memory SQLite store; the retention's cut. The glue's thread and
 * the flood run in tests/integration/refusals.test.js. */
#include <string.h>
#include "unit_tests.h"
#include "prov_refusal.h"

static const int server_a = 1, server_b = 2;

static prov_refusal_t make(const void *where, apr_int64_t at, apr_int64_t key, const char *code)
{
    prov_refusal_t r;
    prov_refusal_make(&r, where, at, 7, key, 429, "chat", code, "some-model", "req_1");
    return r;
}

static void test_refusal_fold(void)
{
    apr_pool_t *p = NULL;
    prov_refusals_t *q = NULL;
    prov_refusal_t out[PROV_REFUSALS_CAP], r;
    apr_int64_t dropped = -1;
    int i;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(prov_refusals_create(&q, 0, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_refusals_create(&q, PROV_REFUSALS_CAP + 1, p), APR_EINVAL);
    CU_ASSERT_EQUAL_FATAL(prov_refusals_create(&q, 8, p), APR_SUCCESS);
    r = make(&server_a, 100, 1, "API_KEY_RATE_LIMITED");
    CU_ASSERT_EQUAL(prov_refusals_add(q, &r), 2);
    for (i = 0; i < 999; i++)
        CU_ASSERT_EQUAL(prov_refusals_add(q, &r), 1);
    r = make(&server_a, 100, 1, "MODEL_NOT_ALLOWED");      /* another code */
    CU_ASSERT_EQUAL(prov_refusals_add(q, &r), 2);
    r = make(&server_a, 100, 2, "API_KEY_RATE_LIMITED");   /* another key */
    CU_ASSERT_EQUAL(prov_refusals_add(q, &r), 2);
    r = make(&server_a, 101, 1, "API_KEY_RATE_LIMITED");   /* another second */
    CU_ASSERT_EQUAL(prov_refusals_add(q, &r), 2);
    r = make(&server_b, 100, 1, "API_KEY_RATE_LIMITED");   /* another database */
    CU_ASSERT_EQUAL(prov_refusals_add(q, &r), 2);
    CU_ASSERT_EQUAL_FATAL(prov_refusals_take(q, out, 200, &dropped), 5);
    CU_ASSERT_EQUAL(dropped, 0);
    CU_ASSERT_EQUAL(out[0].count, 1000);
    CU_ASSERT_STRING_EQUAL(out[0].request_id, "req_1");
    CU_ASSERT_STRING_EQUAL(out[0].model, "some-model");
    for (i = 1; i < 5; i++)
        CU_ASSERT_EQUAL(out[i].count, 1);
    CU_ASSERT_EQUAL(prov_refusals_take(q, out, 200, &dropped), 0);
    apr_pool_destroy(p);
}

static void test_refusal_cap(void)
{
    apr_pool_t *p = NULL;
    prov_refusals_t *q = NULL;
    prov_refusal_t out[PROV_REFUSALS_CAP], r;
    apr_int64_t dropped = 0, total = 0;
    int i, n;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_refusals_create(&q, 4, p), APR_SUCCESS);
    for (i = 0; i < 10; i++) {           /* ten keys, one row each: four fit */
        r = make(&server_a, 100, i + 1, "INSUFFICIENT_CREDITS");
        CU_ASSERT_EQUAL(prov_refusals_add(q, &r), i < 4 ? 2 : 0);
    }
    r = make(&server_a, 100, 1, "INSUFFICIENT_CREDITS");   /* still folds when full */
    CU_ASSERT_EQUAL(prov_refusals_add(q, &r), 1);
    n = prov_refusals_take(q, out, 200, &dropped);
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_EQUAL(dropped, 6);
    for (i = 0; i < n; i++)
        total += out[i].count;
    CU_ASSERT_EQUAL(total, 5);
    CU_ASSERT_EQUAL(prov_refusals_take(q, out, 200, &dropped), 0);
    CU_ASSERT_EQUAL(dropped, 0);         /* said once */
    apr_pool_destroy(p);
}

static void test_refusal_second(void)
{
    apr_pool_t *p = NULL;
    prov_refusals_t *q = NULL;
    prov_refusal_t out[PROV_REFUSALS_CAP], r;
    apr_int64_t dropped = 0;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_refusals_create(&q, 8, p), APR_SUCCESS);
    r = make(&server_a, 99, 1, "API_KEY_EXPIRED");
    prov_refusals_add(q, &r);
    r = make(&server_a, 100, 1, "API_KEY_EXPIRED");
    prov_refusals_add(q, &r);
    /* at 100: the row of 99 goes, the row of 100 stays */
    CU_ASSERT_EQUAL_FATAL(prov_refusals_take(q, out, 100, &dropped), 1);
    CU_ASSERT_EQUAL(out[0].created_at, 99);
    prov_refusals_add(q, &r);            /* folds into the kept row */
    /* a clock standing still: the kept row goes at the next take */
    CU_ASSERT_EQUAL_FATAL(prov_refusals_take(q, out, 100, &dropped), 1);
    CU_ASSERT_EQUAL(out[0].created_at, 100);
    CU_ASSERT_EQUAL(out[0].count, 2);
    apr_pool_destroy(p);
}

static void test_refusal_make_cuts(void)
{
    prov_refusal_t r;
    char longer[300];
    memset(longer, 'm', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    prov_refusal_make(&r, NULL, 1, 2, 3, 404, NULL, "MODEL_NOT_FOUND", longer, NULL);
    CU_ASSERT_EQUAL(strlen(r.model), sizeof(r.model) - 1);
    CU_ASSERT_STRING_EQUAL(r.transport, "");
    CU_ASSERT_STRING_EQUAL(r.request_id, "");
    CU_ASSERT_EQUAL(r.count, 1);
}

/* SELECT of one number on the store (-1 when it fails). */
static apr_int64_t one(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t v = -1;
    if (apr_dbd_select(s->driver, p, s->handle, &res, sql, 1) != 0)
        return -1;
    if (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        v = prov_store_get_i64(s, row, 0, -1);
    while (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        ;
    return v;
}

static void test_refusal_write_purge(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_refusal_t rows[3];
    int removed = -1;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    rows[0] = make(NULL, 1000, 1, "API_KEY_RATE_LIMITED");
    rows[0].count = 40;
    rows[1] = make(NULL, 5000, 1, "MODEL_NOT_ALLOWED");
    prov_refusal_make(&rows[2], NULL, 6000, 7, 2, 404, "messages", "MODEL_NOT_FOUND", "",
                      "req_2");
    CU_ASSERT_EQUAL_FATAL(prov_refusals_write(s, rows, 3, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_refusals_write(s, rows, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(one(s, "SELECT COUNT(*) FROM refusals", p), 3);
    CU_ASSERT_EQUAL(one(s, "SELECT SUM(count) FROM refusals", p), 42);
    CU_ASSERT_EQUAL(one(s, "SELECT COUNT(*) FROM refusals WHERE model IS NULL "
                           "AND http_status = 404 AND transport = 'messages'", p), 1);
    CU_ASSERT_EQUAL_FATAL(prov_refusals_purge(&removed, s, 5000, 100, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(removed, 1);         /* only the one before 5000 */
    CU_ASSERT_EQUAL_FATAL(prov_refusals_purge(&removed, s, 7000, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(removed, 1);         /* a batch of one */
    CU_ASSERT_EQUAL(one(s, "SELECT COUNT(*) FROM refusals", p), 1);
    apr_pool_destroy(p);
}

static void test_refusal_cut(void)
{
    apr_int64_t now = 100 * 86400;
    CU_ASSERT_EQUAL(prov_refusals_cut(now, 0), now - 30 * 86400);
    CU_ASSERT_EQUAL(prov_refusals_cut(now, 400), now - 30 * 86400);
    CU_ASSERT_EQUAL(prov_refusals_cut(now, 7), now - 7 * 86400);
}

void prov_test_suite_refusal(void)
{
    PROV_SUITE("refusal",
               PROV_TEST(test_refusal_fold),
               PROV_TEST(test_refusal_cap),
               PROV_TEST(test_refusal_second),
               PROV_TEST(test_refusal_make_cuts),
               PROV_TEST(test_refusal_write_purge),
               PROV_TEST(test_refusal_cut));
}
