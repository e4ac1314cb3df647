/* test_prov_store.c: unit tests of the database seam: migrations (version,
 * idempotence, a number missing below the highest applied: applied
 * later), labelled statements with NULL arguments, NULL-aware reads,
 * and transactions that roll back. */
#include "unit_tests.h"
#include "prov_store.h"

static void test_migrate(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s = NULL;
    int version = -1, applied = -1;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_store_open(&s, "sqlite3::memory:", 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_schema_current(&version, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(version, 0);
    CU_ASSERT_EQUAL(prov_schema_migrate(&applied, s, p), APR_SUCCESS);
    CU_ASSERT_TRUE(applied >= 1 && applied <= prov_schema_expected());
    CU_ASSERT_TRUE(prov_schema_expected() >= 1);
    CU_ASSERT_EQUAL(prov_schema_current(&version, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(version, prov_schema_expected());
    CU_ASSERT_EQUAL(prov_schema_migrate(&applied, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(applied, 0);
    /* A migration whose number is below the highest applied, missing (it
     * landed later): the schema counts as older until it is applied. */
    /* (10 changes 5's table: both go) */
    CU_ASSERT_EQUAL(prov_store_raw(s, "DELETE FROM schema_version WHERE version IN (5, 10)", p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_raw(s, "DROP TABLE signin_states", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_raw(s, "DROP INDEX sessions_refresh_expires; "
                                   "DROP INDEX oauth_tokens_expires; "
                                   "DROP INDEX oauth_clients_created; "
                                   "DROP INDEX oauth_grants_client; "
                                   "DROP INDEX oauth_codes_client", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_schema_current(&version, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(version, 4);
    CU_ASSERT_EQUAL(prov_schema_migrate(&applied, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(applied, 2);
    CU_ASSERT_EQUAL(prov_schema_current(&version, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(version, prov_schema_expected());
    CU_ASSERT_EQUAL(prov_store_prepare_all(s), APR_SUCCESS);
    apr_pool_destroy(p);
}

static void test_statements(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    int n = 0;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    CU_ASSERT_EQUAL(prov_store_select(s, &res, "user_add", PROV_ARGS("a@b.example", NULL, "100"),
                                      p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_store_row(s, res, &row, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_get_i64(s, row, 0, -1), 1);
    CU_ASSERT_EQUAL(prov_store_row(s, res, &row, p), APR_EOF);
    CU_ASSERT_EQUAL(prov_store_select(s, &res, "user_by_id", PROV_ARGS("1"), p), APR_SUCCESS);
    row = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_store_row(s, res, &row, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_store_get(s, row, 1), "a@b.example");
    CU_ASSERT_PTR_NULL(prov_store_get(s, row, 2));          /* name is NULL */
    CU_ASSERT_EQUAL(prov_store_get_i64(s, row, 2, 77), 77);
    CU_ASSERT_EQUAL(prov_store_get_i64(s, row, 5, 0), 100);
    while (prov_store_row(s, res, &row, p) == APR_SUCCESS)
        ;
    CU_ASSERT_EQUAL(prov_store_exec(s, &n, "user_set_blocked", PROV_ARGS("1", "1"), p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(prov_store_exec(s, &n, "user_set_blocked", PROV_ARGS("1", "999"), p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(prov_store_exec(s, &n, "no_such_label", PROV_NOARGS, p), APR_ENOENT);
    apr_pool_destroy(p);
}

static void test_rollback(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    int found = 0;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    CU_ASSERT_EQUAL_FATAL(prov_store_begin(s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_select(s, &res, "user_add", PROV_ARGS("x@y.example", "X", "1"),
                                      p), APR_SUCCESS);
    while (prov_store_row(s, res, &row, p) == APR_SUCCESS)
        ;
    prov_store_rollback(s, p);
    CU_ASSERT_EQUAL(prov_store_select(s, &res, "user_by_email", PROV_ARGS("x@y.example"), p),
                    APR_SUCCESS);
    row = NULL;
    while (prov_store_row(s, res, &row, p) == APR_SUCCESS)
        found++;
    CU_ASSERT_EQUAL(found, 0);
    apr_pool_destroy(p);
}

static void test_open_errors(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s = NULL;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(prov_store_open(&s, "nocolon", 0, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_store_open(&s, "mysql:x", 0, p), APR_ENOTIMPL);
    CU_ASSERT_NOT_EQUAL(prov_store_open(&s, "sqlite3:/nonexistent-dir/x/y.db", 0, p),
                        APR_SUCCESS);
    CU_ASSERT_PTR_NULL(s);
    apr_pool_destroy(p);
}

void prov_test_suite_store(void)
{
    PROV_SUITE("store", PROV_TEST(test_migrate), PROV_TEST(test_statements),
               PROV_TEST(test_rollback), PROV_TEST(test_open_errors));
}
