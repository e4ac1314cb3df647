/* test_prov_plans.c: unit tests of plans and subscriptions on an in-memory
 * SQLite database: plan names and quotas (validation, duplicates, lookup by id
 * or name, listing by name, partial quota changes), and the life of a
 * subscription on a fixed clock: active from its start, replaced by a new
 * one (which ends the old in the same step), ended by its until date or by a
 * cancellation, and never two active at once. */
#include <string.h>
#include "unit_tests.h"
#include "prov_plans.h"
#include "prov_account.h"
#include "prov_money.h"

#define T0 APR_INT64_C(1800000000)
#define CR(x) ((prov_micro_t)(x) * PROV_MICRO_PER_CREDIT)

static apr_pool_t *tpool(void)
{
    apr_pool_t *p = NULL;
    apr_pool_create(&p, prov_test_pool());
    return p;
}

/* First column of the first row of a raw query, or -1. */
static apr_int64_t sql_i64(prov_store_t *s, const char *sql, apr_pool_t *p)
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

static apr_int64_t mkuser(prov_store_t *s, const char *email, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, email, NULL, p), APR_SUCCESS);
    return u->id;
}

static prov_plan_t *mkplan(prov_store_t *s, const char *name, int q5, int q7, apr_pool_t *p)
{
    prov_plan_t *pl = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_plan_add(&pl, s, name, CR(q5), CR(q7), p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pl);
    return pl;
}

static void test_plan_add_find(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_plan_t *pl, *f = NULL;

    prov_clock_set(T0);
    pl = mkplan(s, "pro", 10, 100, p);
    prov_clock_set(0);
    CU_ASSERT_TRUE(pl->id > 0);
    CU_ASSERT_STRING_EQUAL(pl->name, "pro");
    CU_ASSERT_EQUAL(pl->quota_5h, CR(10));
    CU_ASSERT_EQUAL(pl->quota_7d, CR(100));
    CU_ASSERT_EQUAL(pl->created_at, T0);

    CU_ASSERT_EQUAL(prov_plan_find(&f, s, "pro", p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->id, pl->id);
    CU_ASSERT_EQUAL(f->quota_5h, CR(10));
    CU_ASSERT_EQUAL(f->quota_7d, CR(100));
    CU_ASSERT_EQUAL(f->created_at, T0);
    f = NULL;
    CU_ASSERT_EQUAL(prov_plan_find(&f, s, prov_i64(pl->id, p), p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_STRING_EQUAL(f->name, "pro");

    f = NULL;
    CU_ASSERT_EQUAL(prov_plan_find(&f, s, "PRO", p), APR_NOTFOUND);   /* names are exact */
    CU_ASSERT_EQUAL(prov_plan_find(&f, s, "999", p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_plan_find(&f, s, "", p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_plan_find(&f, s, "no such", p), APR_NOTFOUND);
    CU_ASSERT_PTR_NULL(f);
    apr_pool_destroy(p);
}

static void test_plan_invalid_duplicate(void)
{
    static const char *const bad[] = { "", "has space", "ünï", "a/b", "123", NULL };
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_plan_t *pl = NULL;
    char longname[80];
    int i;

    for (i = 0; bad[i]; i++)
        CU_ASSERT_EQUAL(prov_plan_add(&pl, s, bad[i], CR(1), CR(2), p), APR_EINVAL);
    memset(longname, 'x', 65);
    longname[65] = '\0';
    CU_ASSERT_EQUAL(prov_plan_add(&pl, s, longname, CR(1), CR(2), p), APR_EINVAL);
    longname[64] = '\0';
    CU_ASSERT_EQUAL(prov_plan_add(NULL, s, longname, CR(1), CR(2), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_plan_add(&pl, s, "zero", 0, CR(2), p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_plan_add(&pl, s, "neg", CR(1), -1, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_plan_add(&pl, s, "huge", PROV_AMOUNT_MAX + 1, CR(1), p), APR_EINVAL);
    CU_ASSERT_PTR_NULL(pl);

    mkplan(s, "team.v2_x-1", 5, 50, p);
    CU_ASSERT_EQUAL(prov_plan_add(&pl, s, "team.v2_x-1", CR(6), CR(60), p), APR_EEXIST);
    CU_ASSERT_PTR_NULL(pl);
    /* Only the two good ones exist, and the refused duplicate changed nothing;
     * no transaction is left open (a later add works). */
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT COUNT(*) FROM plans", p), 2);
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT quota_5h FROM plans WHERE name = 'team.v2_x-1'", p),
                    CR(5));
    mkplan(s, "later", 1, 1, p);
    apr_pool_destroy(p);
}

static void test_plan_list_set(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    apr_array_header_t *all = NULL;
    prov_plan_t *b, *f = NULL;

    mkplan(s, "zeta", 1, 10, p);
    b = mkplan(s, "basic", 2, 20, p);
    mkplan(s, "max", 3, 30, p);
    CU_ASSERT_EQUAL(prov_plan_list(&all, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(all->nelts, 3);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(all, 0, prov_plan_t *)->name, "basic");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(all, 1, prov_plan_t *)->name, "max");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(all, 2, prov_plan_t *)->name, "zeta");
    CU_ASSERT_EQUAL(APR_ARRAY_IDX(all, 2, prov_plan_t *)->quota_7d, CR(10));

    /* Only the 5-hour quota changes; then only the 7-day one. */
    CU_ASSERT_EQUAL(prov_plan_set(s, b->id, CR(4) + 500000, -1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_plan_find(&f, s, "basic", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(f->quota_5h, CR(4) + 500000);
    CU_ASSERT_EQUAL(f->quota_7d, CR(20));
    CU_ASSERT_EQUAL(prov_plan_set(s, b->id, -1, CR(40), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_plan_find(&f, s, "basic", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(f->quota_5h, CR(4) + 500000);
    CU_ASSERT_EQUAL(f->quota_7d, CR(40));

    CU_ASSERT_EQUAL(prov_plan_set(s, b->id, 0, -1, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_plan_set(s, b->id, -1, -1, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_plan_set(s, 999, CR(1), CR(1), p), APR_NOTFOUND);
    /* The other plans are untouched. */
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT quota_5h FROM plans WHERE name = 'max'", p), CR(3));
    apr_pool_destroy(p);
}

static void test_subscription_life(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    apr_int64_t uid = mkuser(s, "sub@example.com", p), other = mkuser(s, "o@example.com", p);
    prov_plan_t *basic = mkplan(s, "basic", 1, 10, p), *pro = mkplan(s, "pro", 5, 50, p);
    prov_subscription_t *sub = NULL, *a = NULL;

    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, uid, T0, p), APR_NOTFOUND);
    CU_ASSERT_PTR_NULL(a);

    CU_ASSERT_EQUAL(prov_subscription_set(&sub, s, uid, basic->id, 0, T0, p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sub);
    CU_ASSERT_EQUAL(sub->starts_at, T0);
    CU_ASSERT_EQUAL(sub->until_at, 0);
    CU_ASSERT_STRING_EQUAL(sub->plan_name, "basic");

    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, uid, T0, p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->id, sub->id);
    CU_ASSERT_EQUAL(a->plan_id, basic->id);
    CU_ASSERT_EQUAL(a->quota_5h, CR(1));
    CU_ASSERT_EQUAL(a->quota_7d, CR(10));
    CU_ASSERT_EQUAL(a->cancelled_at, 0);
    /* Not before it starts, and not for another user. */
    a = NULL;
    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, uid, T0 - 1, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, other, T0, p), APR_NOTFOUND);

    /* A plan's changed quotas show through the active subscription at once. */
    CU_ASSERT_EQUAL(prov_plan_set(s, basic->id, CR(2), -1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, uid, T0 + 10, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(a->quota_5h, CR(2));

    /* A new plan ends the old one: exactly one active, the new. */
    CU_ASSERT_EQUAL(prov_subscription_set(&sub, s, uid, pro->id, T0 + 86400, T0 + 100, p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT COUNT(*) FROM subscriptions WHERE cancelled_at IS NULL",
                            p), 1);
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT cancelled_at FROM subscriptions ORDER BY id LIMIT 1", p),
                    T0 + 100);
    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, uid, T0 + 100, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(a->plan_name, "pro");
    CU_ASSERT_EQUAL(a->until_at, T0 + 86400);

    /* It ends at until_at (exclusive). */
    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, uid, T0 + 86399, p), APR_SUCCESS);
    a = NULL;
    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, uid, T0 + 86400, p), APR_NOTFOUND);
    CU_ASSERT_PTR_NULL(a);
    /* And an expired one cannot be cancelled. */
    CU_ASSERT_EQUAL(prov_subscription_cancel(s, uid, T0 + 90000, p), APR_NOTFOUND);
    apr_pool_destroy(p);
}

static void test_subscription_cancel_invalid(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    apr_int64_t uid = mkuser(s, "c@example.com", p);
    prov_plan_t *pl = mkplan(s, "basic", 1, 10, p);
    prov_subscription_t *sub = NULL, *a = NULL;

    CU_ASSERT_EQUAL(prov_subscription_cancel(s, uid, T0, p), APR_NOTFOUND);
    /* until in the past or now, an unknown plan or user: refused, nothing kept. */
    CU_ASSERT_EQUAL(prov_subscription_set(&sub, s, uid, pl->id, T0, T0, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_subscription_set(&sub, s, uid, pl->id, T0 - 5, T0, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_subscription_set(&sub, s, uid, 999, 0, T0, p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_subscription_set(&sub, s, 999, pl->id, 0, T0, p), APR_NOTFOUND);
    CU_ASSERT_PTR_NULL(sub);
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT COUNT(*) FROM subscriptions", p), 0);

    CU_ASSERT_EQUAL(prov_subscription_set(&sub, s, uid, pl->id, 0, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_subscription_cancel(s, uid, T0 + 60, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, uid, T0 + 60, p), APR_NOTFOUND);
    /* The row is kept, with the time of the cancellation. */
    CU_ASSERT_EQUAL(sql_i64(s, "SELECT cancelled_at FROM subscriptions", p), T0 + 60);
    CU_ASSERT_EQUAL(prov_subscription_cancel(s, uid, T0 + 61, p), APR_NOTFOUND);
    /* A fresh subscription after a cancellation works. */
    CU_ASSERT_EQUAL(prov_subscription_set(&sub, s, uid, pl->id, 0, T0 + 120, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_subscription_active(&a, s, uid, T0 + 120, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(a->id, sub->id);
    apr_pool_destroy(p);
}

void prov_test_suite_plans(void)
{
    PROV_SUITE("plans",
               PROV_TEST(test_plan_add_find),
               PROV_TEST(test_plan_invalid_duplicate),
               PROV_TEST(test_plan_list_set),
               PROV_TEST(test_subscription_life),
               PROV_TEST(test_subscription_cancel_invalid));
}
