/* test_prov_store.c: unit tests of the database seam: migrations (version,
 * idempotence, a number missing below the highest applied: applied
 * later), labelled statements with NULL arguments, NULL-aware reads,
 * transactions that roll back, and ledger.status constrained to the
 * status table (migration 011, whose two lists are the table's). */
#include <string.h>
#include "unit_tests.h"
#include "prov_store.h"
#include "prov_ledger.h"
#include "prov_schema_data.h"

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

/* The table's names as PostgreSQL's CHECK of migration 011 lists them:
 * 'a', 'b', ... in the table's order. */
static const char *status_list(apr_pool_t *p)
{
    const char *list = "";
    int i;
    for (i = 0; i < PROV_STATUS__COUNT; i++)
        list = apr_pstrcat(p, list, i ? ", '" : "'",
                           prov_ledger_status_name((prov_status_e)i), "'", NULL);
    return list;
}

/* How often needle stands in hay. */
static int occurrences(const char *hay, const char *needle)
{
    int n = 0;
    while ((hay = strstr(hay, needle)) != NULL) {
        n++;
        hay++;
    }
    return n;
}

static apr_status_t ledger_row(prov_store_t *s, const char *id, const char *status,
                               apr_pool_t *p)
{
    return prov_store_raw(s, apr_psprintf(p, "INSERT INTO ledger (request_id, user_id, key_id, "
                                          "model_id, transport, status, created_at) VALUES "
                                          "('%s', 1, 1, 1, 'chat', '%s', 1700000000)", id,
                                          status), p);
}

static void test_ledger_status(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    const char *in;
    int i, j, found = 0;
    apr_pool_create(&p, prov_test_pool());
    in = apr_pstrcat(p, "CHECK (status IN (", status_list(p), "))", NULL);
    for (i = 0; prov_migrations[i].version >= 0; i++) {
        if (prov_migrations[i].version != 11)
            continue;
        found = 1;
        /* both CHECKs name exactly the table: each name once, no other */
        CU_ASSERT_PTR_NOT_NULL(strstr(prov_migrations[i].pgsql_sql, in));
        CU_ASSERT_EQUAL(occurrences(prov_migrations[i].sqlite_sql, "CHECK ("), 1);
        CU_ASSERT_EQUAL(occurrences(prov_migrations[i].sqlite_sql, "status = '"),
                        PROV_STATUS__COUNT);
        for (j = 0; j < PROV_STATUS__COUNT; j++)
            CU_ASSERT_EQUAL(occurrences(prov_migrations[i].sqlite_sql,
                                        apr_pstrcat(p, "status = '", prov_ledger_status_name(
                                                    (prov_status_e)j), "'", NULL)), 1);
    }
    CU_ASSERT_TRUE(found);
    s = prov_test_store_any(p);
    for (i = 0; i < PROV_STATUS__COUNT; i++)
        CU_ASSERT_EQUAL(ledger_row(s, apr_psprintf(p, "st-%d", i),
                                   prov_ledger_status_name((prov_status_e)i), p), APR_SUCCESS);
    CU_ASSERT_NOT_EQUAL(ledger_row(s, "st-bad", "bogus", p), APR_SUCCESS);
    CU_ASSERT_NOT_EQUAL(ledger_row(s, "st-case", "OK", p), APR_SUCCESS);
    CU_ASSERT_NOT_EQUAL(prov_store_raw(s, "UPDATE ledger SET status = 'settled' "
                                       "WHERE request_id = 'st-1'", p), APR_SUCCESS);
    /* a change of another column of a row is not checked again, nor refused */
    CU_ASSERT_EQUAL(prov_store_raw(s, "UPDATE ledger SET credits = 5 WHERE request_id = 'st-1'",
                                   p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_raw(s, "UPDATE ledger SET status = 'expired' "
                                   "WHERE request_id = 'st-0'", p), APR_SUCCESS);
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
               PROV_TEST(test_ledger_status),
               PROV_TEST(test_rollback), PROV_TEST(test_open_errors));
}
