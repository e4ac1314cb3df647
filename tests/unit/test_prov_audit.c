/* test_prov_audit.c: unit tests of the audit trail's rows
 * (core/store/prov_audit.c) on an in-memory SQLite database: a row armed
 * before a change that commits a transaction is written in it (and not
 * again by the settle), one armed before a rolled-back change is not, one
 * armed before a single statement is written by the settle, a failed change
 * writes none; a user named by email is resolved when the row is written
 * (a user added by the change itself), a key target gives its user; the
 * detail is JSON without NULL members; the list filters; UPDATE is refused
 * (append-only); the purge removes only rows older than its time, in
 * batches. */
#include <string.h>
#include "unit_tests.h"
#include "prov_audit.h"
#include "prov_account.h"

#define T0 APR_INT64_C(1800000000)

static apr_int64_t count(prov_store_t *s, const char *where, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t v = -1;
    const char *sql = apr_pstrcat(p, "SELECT COUNT(*) FROM audit ", where, NULL);
    if (apr_dbd_select(s->driver, p, s->handle, &res, sql, 1) != 0)
        return -1;
    if (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        v = prov_store_get_i64(s, row, 0, -1);
    while (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        ;
    return v;
}

static prov_audit_t row_of(const char *action, const char *user_ref)
{
    prov_audit_t a;
    memset(&a, 0, sizeof(a));
    a.actor = PROV_AUDIT_ADMIN;
    a.actor_id = "ops";
    a.action = action;
    a.target_kind = "user";
    a.user_ref = user_ref;
    return a;
}

static void test_audit_arm_settle(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_user_t *u = NULL;
    prov_audit_t a;
    int revoked = 0, n = -1;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    prov_clock_set(T0);
    /* one statement: the settle writes it, the user found by email */
    a = row_of("user.add", "new@example.com");
    prov_audit_arm(s, &a, p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, "new@example.com", NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_audit_settle(s, APR_SUCCESS, p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(s->audit_armed);
    CU_ASSERT_EQUAL(count(s, apr_psprintf(p, "WHERE action = 'user.add' AND user_id = %"
                                          APR_INT64_T_FMT " AND target_id = '%" APR_INT64_T_FMT
                                          "' AND at = %" APR_INT64_T_FMT, u->id, u->id, T0), p),
                    1);
    /* one statement that changed nothing (its caller says so): nothing,
     * though on SQLite the statement ran in a transaction of its own */
    a = row_of("found.nothing", NULL);
    prov_audit_arm(s, &a, p);
    CU_ASSERT_EQUAL(prov_store_exec(s, &n, "ledger_compact", PROV_ARGS("10", "1"), p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_PTR_NOT_NULL(s->audit_armed);
    CU_ASSERT_EQUAL(prov_audit_settle(s, APR_NOTFOUND, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(count(s, "WHERE action = 'found.nothing'", p), 0);
    /* a transaction: the commit writes it, the settle does not again */
    a = row_of("user.block", prov_i64(u->id, p));
    prov_audit_arm(s, &a, p);
    CU_ASSERT_EQUAL(prov_user_set_blocked(&revoked, s, u->id, 1, p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(s->audit_armed);
    CU_ASSERT_EQUAL(prov_audit_settle(s, APR_SUCCESS, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(count(s, "WHERE action = 'user.block'", p), 1);
    /* rolled back: nothing; then a failed change: nothing */
    a = row_of("rolled.back", NULL);
    prov_audit_arm(s, &a, p);
    CU_ASSERT_EQUAL_FATAL(prov_store_begin(s, p), APR_SUCCESS);
    prov_store_rollback(s, p);
    CU_ASSERT_EQUAL(prov_audit_settle(s, APR_EGENERAL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(count(s, "WHERE action = 'rolled.back'", p), 0);
    /* append-only */
    CU_ASSERT_NOT_EQUAL(prov_store_raw(s, "UPDATE audit SET action = 'x'", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(count(s, "WHERE action = 'x'", p), 0);
    apr_pool_destroy(p);
}

static void test_audit_key_detail_list(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_user_t *u = NULL;
    prov_key_t *k = NULL;
    const char *secret = NULL;
    apr_array_header_t *rows = NULL;
    prov_audit_filter_t f = { 0 };
    prov_audit_t a;
    const prov_audit_row_t *r;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    prov_clock_set(T0);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, "k@example.com", NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_key_create(&k, &secret, s, u->id, "n", 0, 0, p), APR_SUCCESS);
    memset(&a, 0, sizeof(a));
    a.actor = PROV_AUDIT_USER;
    a.action = "key.reissue";
    a.target_kind = "key";
    a.target_id = prov_i64(k->id, p);
    a.address = "192.0.2.7";
    a.detail = prov_audit_detail(p, "name", "it's", "none", NULL, NULL);
    CU_ASSERT_STRING_EQUAL(a.detail, "{\"name\":\"it's\"}");
    CU_ASSERT_PTR_NULL(prov_audit_detail(p, "none", NULL, NULL));
    CU_ASSERT_EQUAL(prov_audit_write(s, &a, p), APR_SUCCESS);
    a.action = "signin";
    a.at = T0 + 10;
    CU_ASSERT_EQUAL(prov_audit_write(s, &a, p), APR_SUCCESS);
    f.user_id = u->id;
    f.limit = 10;
    CU_ASSERT_EQUAL_FATAL(prov_audit_list(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(rows->nelts, 2);
    r = APR_ARRAY_IDX(rows, 0, prov_audit_row_t *);
    CU_ASSERT_STRING_EQUAL(r->action, "signin");
    r = APR_ARRAY_IDX(rows, 1, prov_audit_row_t *);
    CU_ASSERT_EQUAL(r->user_id, u->id);
    CU_ASSERT_STRING_EQUAL(r->actor_kind, "user");
    CU_ASSERT_STRING_EQUAL(r->address, "192.0.2.7");
    CU_ASSERT_STRING_EQUAL(r->detail, "{\"name\":\"it's\"}");
    f.action = "key.";
    CU_ASSERT_EQUAL_FATAL(prov_audit_list(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(rows->nelts, 1);
    f.action = NULL;
    f.since = T0 + 5;
    CU_ASSERT_EQUAL_FATAL(prov_audit_list(&rows, s, &f, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(rows->nelts, 1);
    apr_pool_destroy(p);
}

static void test_audit_purge(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_audit_t a = row_of("old", NULL);
    int i, n = -1;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    for (i = 0; i < 5; i++) {
        a.at = T0 + i;
        CU_ASSERT_EQUAL(prov_audit_write(s, &a, p), APR_SUCCESS);
    }
    CU_ASSERT_EQUAL(prov_audit_purge_before(&n, s, T0 + 3, 2, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_EQUAL(prov_audit_purge_before(&n, s, T0 + 3, 2, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(prov_audit_purge_before(&n, s, T0 + 3, 2, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(count(s, apr_psprintf(p, "WHERE at >= %" APR_INT64_T_FMT, T0 + 3), p), 2);
    CU_ASSERT_EQUAL(count(s, "", p), 2);
    apr_pool_destroy(p);
}

void prov_test_suite_audit(void)
{
    PROV_SUITE("audit",
               PROV_TEST(test_audit_arm_settle),
               PROV_TEST(test_audit_key_detail_list),
               PROV_TEST(test_audit_purge));
}
