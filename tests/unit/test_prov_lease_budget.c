/* test_prov_lease_budget.c: a key's budget changed while its lease is open
 * (core/billing/prov_lease.c): a request that sees the new budget (the
 * lookup cache's copy of the key, within ProviderLookupCacheTTL) draws no
 * more from the lease, which is drained and returned by the next batch, so
 * the request is reserved in the database under the new budget: lowering a
 * budget never leaves a lease spending under the old one. */
#include "billing_fixture.h"

static void test_budget_lowered_drains(void)
{
    bf_fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2];
    prov_reservation_t *r = NULL;
    prov_slot_t *s, *work;
    prov_micro_t budget;
    prov_tokens_t t = { 3, 4, 0, 0 };
    bf_setup(&f, 10000 * C, 1, 5000 * C);
    bf_lease_table(&L, apr_time_from_msec(100));
    s = bf_granted(&f, &L, ops);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL_FATAL(s->state, PROV_LEASE_OPEN);
    budget = f.auth->weekly_budget;
    CU_ASSERT_EQUAL(s->key_budget, budget);
    CU_ASSERT_TRUE(s->key_has_budget);
    /* the same budget: drawn from the lease */
    CU_ASSERT_TRUE_FATAL(bf_draw(&L, &r, f.auth, f.m->id, "chat", "b-1", NULL, C, T0 + 1,
                                         f.p));
    CU_ASSERT_EQUAL(prov_lease_settle(&L, r, &t, C / 2, PROV_STATUS_OK, T0 + 1),
                    PROV_LEASE_SETTLE_DRAWN);
    /* the owner lowers it to 0: no draw, the lease drains and is due */
    f.auth->weekly_budget = 0;
    CU_ASSERT_FALSE(bf_draw(&L, &r, f.auth, f.m->id, "chat", "b-2", NULL, C, T0 + 2, f.p));
    CU_ASSERT_EQUAL(s->state, PROV_LEASE_DRAINING);
    CU_ASSERT_TRUE(prov_lease_due(&L));
    /* seen the old budget again (another child's stale copy): still none */
    f.auth->weekly_budget = budget;
    CU_ASSERT_FALSE(bf_draw(&L, &r, f.auth, f.m->id, "chat", "b-3", NULL, C, T0 + 2, f.p));
    /* removing the budget is a change too */
    f.auth->has_budget = 0;
    CU_ASSERT_FALSE(bf_draw(&L, &r, f.auth, f.m->id, "chat", "b-4", NULL, C, T0 + 2, f.p));
    /* the next batch writes b-1 and returns the lease */
    work = prov_lease_handoff_take(&L, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(work);
    CU_ASSERT_EQUAL_FATAL(prov_batch_run(f.s, NULL, work, T0 + 2, 0, 3600, f.p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(prov_lease_handoff_done(&L, work, NULL, T0 + 2, APR_SUCCESS));
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT COUNT(*) FROM billing_leases"), 0);
    CU_ASSERT_EQUAL(bf_value(&f, "SELECT credits FROM ledger WHERE request_id = 'b-1'"), C / 2);
    bf_drop_slots(&L);
    apr_pool_destroy(f.p);
}

void prov_test_suite_lease_budget(void)
{
    PROV_SUITE("lease_budget", PROV_TEST(test_budget_lowered_drains));
}
