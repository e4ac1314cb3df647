/* test_prov_billing.c: unit tests of reserve / settle / release: holds taken
 * from the balance, the key's rolling weekly budget, refusals that leave
 * nothing behind, exact settlement, no double settlement, windows that roll
 * with the settable clock. */
#include "unit_tests.h"
#include "prov_account.h"
#include "prov_billing.h"
#include "prov_models.h"

typedef struct fixture_t {
    apr_pool_t *p;
    prov_store_t *s;
    prov_user_t *u;
    prov_apikey_t *k;
    prov_model_t *m;
    prov_auth_t *auth;
    const char *secret;
} fixture_t;

static void setup(fixture_t *f, prov_micro_t balance, int has_budget, prov_micro_t budget)
{
    apr_pool_create(&f->p, prov_test_pool());
    f->s = prov_test_store(f->p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&f->u, f->s, "bill@example.com", NULL, f->p),
                          APR_SUCCESS);
    if (balance)
        CU_ASSERT_EQUAL_FATAL(prov_balance_add(NULL, f->s, f->u->id, balance, "test", f->p),
                              APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_apikey_create(&f->k, &f->secret, f->s, f->u->id, "k",
                                             has_budget, budget, f->p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_model_add(&f->m, f->s, "m1", "up-m1", NULL, NULL, f->p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_auth_lookup(&f->auth, f->s, f->secret, f->p), APR_SUCCESS);
}

static prov_micro_t balance_of(fixture_t *f)
{
    prov_user_t *u = NULL;
    CU_ASSERT_EQUAL_FATAL(prov_user_find(&u, f->s, "bill@example.com", f->p), APR_SUCCESS);
    return u->balance;
}

static void refresh_auth(fixture_t *f)
{
    CU_ASSERT_EQUAL_FATAL(prov_auth_lookup(&f->auth, f->s, f->secret, f->p), APR_SUCCESS);
}

static void test_estimate(void)
{
    prov_rates_t eff = { 1000000, 2000000, 500000, 2000000 };
    CU_ASSERT_EQUAL(prov_billing_estimate(&eff, 1000, 100), 1000 + 200);
    CU_ASSERT_TRUE(prov_billing_input_estimate(300, 1) >= 100);
    CU_ASSERT_TRUE(prov_billing_input_estimate(0, 0) > 0);
}

static void test_reserve_settle(void)
{
    fixture_t f;
    prov_reservation_t *r = NULL;
    prov_error_t *err = NULL;
    prov_tokens_t t = { 10, 20, 0, 0 };
    setup(&f, 10 * PROV_MICRO_PER_CREDIT, 0, 0);
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &err, f.s, f.auth, f.m->id, "chat", "req-1",
                                         3000000, 1000000, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_PTR_NULL(err);
    CU_ASSERT_EQUAL(balance_of(&f), 7 * PROV_MICRO_PER_CREDIT);
    CU_ASSERT_EQUAL(prov_billing_settle(f.s, r, &t, 1234, "ok", 1000001, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(balance_of(&f), 10 * PROV_MICRO_PER_CREDIT - 1234);
    /* Never twice. */
    r->settled = 0;
    CU_ASSERT_EQUAL(prov_billing_settle(f.s, r, &t, 1234, "ok", 1000002, f.p), APR_EINCOMPLETE);
    CU_ASSERT_EQUAL(balance_of(&f), 10 * PROV_MICRO_PER_CREDIT - 1234);
    apr_pool_destroy(f.p);
}

static void test_release(void)
{
    fixture_t f;
    prov_reservation_t *r = NULL;
    prov_error_t *err = NULL;
    setup(&f, 5 * PROV_MICRO_PER_CREDIT, 0, 0);
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &err, f.s, f.auth, f.m->id, "chat", "req-2",
                                         PROV_MICRO_PER_CREDIT, 1000000, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(prov_billing_release(f.s, r, "failed", 1000001, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(balance_of(&f), 5 * PROV_MICRO_PER_CREDIT);
    CU_ASSERT_EQUAL(prov_billing_release(f.s, r, "failed", 1000001, f.p), APR_EINCOMPLETE);
    apr_pool_destroy(f.p);
}

static void test_insufficient(void)
{
    fixture_t f;
    prov_reservation_t *r = NULL;
    prov_error_t *err = NULL;
    setup(&f, 1000, 0, 0);
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &err, f.s, f.auth, f.m->id, "chat", "req-3",
                                         1001, 1000000, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INSUFFICIENT_CREDITS);
    CU_ASSERT_EQUAL(balance_of(&f), 1000);
    /* The refused request left no ledger row: the same id can be reserved now. */
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &err, f.s, f.auth, f.m->id, "chat", "req-3",
                                         1000, 1000000, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(r);
    CU_ASSERT_EQUAL(balance_of(&f), 0);
    apr_pool_destroy(f.p);
}

static void test_key_budget_rolls(void)
{
    fixture_t f;
    prov_reservation_t *r = NULL;
    prov_error_t *err = NULL;
    prov_tokens_t t = { 1, 1, 0, 0 };
    apr_int64_t t0 = 1700000000;
    setup(&f, 100 * PROV_MICRO_PER_CREDIT, 1, 2 * PROV_MICRO_PER_CREDIT);
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &err, f.s, f.auth, f.m->id, "chat", "b-1",
                                         PROV_MICRO_PER_CREDIT, t0, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(prov_billing_settle(f.s, r, &t, 2 * PROV_MICRO_PER_CREDIT, "ok", t0, f.p),
                    APR_SUCCESS);
    refresh_auth(&f);
    /* The week is full: refused, with the key budget code. */
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &err, f.s, f.auth, f.m->id, "chat", "b-2",
                                         1, t0 + 3600, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_KEY_BUDGET_EXCEEDED);
    /* Eight days later the spend has left the window. */
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &err, f.s, f.auth, f.m->id, "chat", "b-3",
                                         1, t0 + 8 * 24 * 3600, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(r);
    apr_pool_destroy(f.p);
}

static void test_blocked_between(void)
{
    fixture_t f;
    prov_reservation_t *r = NULL;
    prov_error_t *err = NULL;
    setup(&f, 10 * PROV_MICRO_PER_CREDIT, 0, 0);
    /* Blocked after the key was looked up: the hold refuses inside the transaction. */
    CU_ASSERT_EQUAL(prov_user_set_blocked(f.s, f.u->id, 1, f.p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_billing_reserve(&r, &err, f.s, f.auth, f.m->id, "chat", "x-1", 5,
                                         1000000, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(r);
    CU_ASSERT_PTR_NOT_NULL(err);
    CU_ASSERT_EQUAL(balance_of(&f), 10 * PROV_MICRO_PER_CREDIT);
    apr_pool_destroy(f.p);
}

void prov_test_suite_billing(void)
{
    PROV_SUITE("billing", PROV_TEST(test_estimate), PROV_TEST(test_reserve_settle),
               PROV_TEST(test_release), PROV_TEST(test_insufficient),
               PROV_TEST(test_key_budget_rolls), PROV_TEST(test_blocked_between));
}
