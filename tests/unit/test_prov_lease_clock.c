/* test_prov_lease_clock.c: unit tests of the lease table's clocks
 * (core/billing/prov_lease.c, prov_lease_handoff.c): when the billing writer
 * next has work by time alone (prov_lease_next_due), so that it sleeps
 * until then instead of looking every 2 ms; and when a request drawing on a
 * lease first reads its key (prov_lease_lone) and how often a batch checks
 * the lease again, alone and beside the key's requests of another model. A
 * lease granted by a real batch (billing_fixture.c) on a table of the
 * test's own; each step asks with a wall clock of the test's choosing, or
 * sets the slot's clocks, so nothing depends on how fast the test runs. */
#include "billing_fixture.h"

#define KEEP apr_time_from_msec(100)
#define LO apr_time_from_msec(2)
#define HI apr_time_from_sec(10)

/* A running drawn request is due a second after its draw; a settled one
 * PROV_WRITER_WAIT after it; nothing sooner than lo or later than hi. */
static void test_clock_drawn(void)
{
    bf_fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2];
    prov_reservation_t *r = NULL;
    prov_tokens_t t = { 3, 4, 0, 0 };
    prov_slot_t *s;
    apr_time_t wall;
    bf_setup(&f, 10000 * C, 0, 0);
    bf_lease_table(&L, KEEP);
    s = bf_granted(&f, &L, ops);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    /* the two holds run: nothing by time */
    wall = apr_time_now();
    CU_ASSERT_EQUAL(prov_lease_next_due(&L, wall, LO, HI), wall + HI);
    CU_ASSERT_TRUE_FATAL(prov_lease_draw(&L, &r, f.auth, f.m->id, "chat", "clock-3", C, T0 + 1,
                                         f.p));
    wall = s->pending_oldest;
    CU_ASSERT_EQUAL(prov_lease_next_due(&L, wall, LO, HI), wall + apr_time_from_sec(1));
    CU_ASSERT_EQUAL(prov_lease_next_due(&L, wall, LO, apr_time_from_msec(20)),
                    wall + apr_time_from_msec(20));
    /* settled (the two holds still run): its row waits PROV_WRITER_WAIT */
    CU_ASSERT_EQUAL(prov_lease_settle(&L, r, &t, C / 2, PROV_STATUS_OK, T0 + 1),
                    PROV_LEASE_SETTLE_DRAWN);
    s->settled_since = s->last_draw + apr_time_from_msec(5);
    wall = s->last_draw;
    CU_ASSERT_EQUAL(prov_lease_next_due(&L, wall, LO, HI), wall + PROV_WRITER_WAIT);
    s->settled_since = s->last_draw - apr_time_from_msec(5);
    CU_ASSERT_EQUAL(prov_lease_next_due(&L, wall, LO, HI),
                    wall - apr_time_from_msec(5) + PROV_WRITER_WAIT);
    /* past: no sooner than lo */
    wall = s->last_draw + PROV_WRITER_WAIT;
    CU_ASSERT_EQUAL(prov_lease_next_due(&L, wall, LO, HI), wall + LO);
    bf_drop_slots(&L);
    apr_pool_destroy(f.p);
}

/* A lease whose requests have ended is due keep_idle after the last one,
 * or after its key's last request of another model; while the key has one
 * of another model in flight, only hi. */
static void test_clock_idle(void)
{
    bf_fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2];
    prov_slot_t *s, *other;
    apr_time_t wall;
    bf_setup(&f, 10000 * C, 0, 0);
    bf_lease_table(&L, KEEP);
    s = bf_granted(&f, &L, ops);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(prov_lease_settle(&L, ops[0].out, NULL, 0, PROV_STATUS_FAILED, T0), 0);
    CU_ASSERT_EQUAL(prov_lease_settle(&L, ops[1].out, NULL, 0, PROV_STATUS_FAILED, T0), 0);
    CU_ASSERT_EQUAL(s->busy, 0);
    wall = s->idle_since;
    CU_ASSERT_EQUAL(prov_lease_next_due(&L, wall, LO, HI), wall + KEEP);
    /* another model of the key starts: its end is not foreseen */
    other = prov_slot_get(&L, f.auth->key_id, f.m->id + 1000, f.auth->user_id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    prov_slot_busy(&L, other);
    CU_ASSERT_EQUAL(prov_lease_next_due(&L, wall, LO, HI), wall + HI);
    /* ... and ends: keep_idle after it */
    apr_sleep(apr_time_from_msec(3));
    prov_slot_unbusy(&L, other);
    CU_ASSERT(other->idle_since > s->idle_since);
    CU_ASSERT_EQUAL(prov_lease_next_due(&L, wall, LO, HI), other->idle_since + KEEP);
    bf_drop_slots(&L);
    apr_pool_destroy(f.p);
}

/* A request drawing on a lease that nothing else of its key and model has
 * used for PROV_LEASE_LONE_GAP first reads the key; beside the key's
 * request of another model in flight it does not while the key was seen
 * admitted (the lease's check, or such a read) less than
 * PROV_LEASE_CHECK_EVERY ago. */
static void test_clock_lone_beside(void)
{
    bf_fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2];
    prov_slot_t *s, *other;
    bf_setup(&f, 10000 * C, 0, 0);
    bf_lease_table(&L, KEEP);
    s = bf_granted(&f, &L, ops);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    /* in flight: a burst */
    CU_ASSERT_FALSE(prov_lease_lone(&L, f.auth, f.m->id));
    CU_ASSERT_EQUAL(prov_lease_settle(&L, ops[0].out, NULL, 0, PROV_STATUS_FAILED, T0), 0);
    CU_ASSERT_EQUAL(prov_lease_settle(&L, ops[1].out, NULL, 0, PROV_STATUS_FAILED, T0), 0);
    s->idle_since = apr_time_now() - 2 * PROV_LEASE_LONE_GAP;
    /* one after another, the lease checked just now: the key is read */
    CU_ASSERT_TRUE(prov_lease_lone(&L, f.auth, f.m->id));
    other = prov_slot_get(&L, f.auth->key_id, f.m->id + 1000, f.auth->user_id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    prov_slot_busy(&L, other);
    CU_ASSERT_FALSE(prov_lease_lone(&L, f.auth, f.m->id));
    s->admitted = apr_time_now() - PROV_LEASE_CHECK_EVERY;
    CU_ASSERT_TRUE(prov_lease_lone(&L, f.auth, f.m->id));
    prov_lease_admitted(&L, f.auth, f.m->id);
    CU_ASSERT_FALSE(prov_lease_lone(&L, f.auth, f.m->id));
    /* the other model's request ends: read again */
    prov_slot_unbusy(&L, other);
    CU_ASSERT_TRUE(prov_lease_lone(&L, f.auth, f.m->id));
    bf_drop_slots(&L);
    apr_pool_destroy(f.p);
}

/* Whether a batch taken now checks the lease again, its last check age
 * old, with (beside) or without a request of another model of its key in
 * flight. */
static int renews(int beside, apr_interval_time_t age)
{
    bf_fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2];
    prov_slot_t *s, *other, *work;
    int renew;
    bf_setup(&f, 10000 * C, 0, 0);
    bf_lease_table(&L, KEEP);
    s = bf_granted(&f, &L, ops);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    other = prov_slot_get(&L, f.auth->key_id, f.m->id + 1000, f.auth->user_id);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    if (beside)
        prov_slot_busy(&L, other);
    s->checked = apr_time_now() - age;
    work = prov_lease_handoff_take(&L, NULL);
    CU_ASSERT(work == NULL || work == s);
    renew = work == s && s->renew;
    prov_lease_handoff_done(&L, work, NULL, T0, APR_EGENERAL);
    bf_drop_slots(&L);
    apr_pool_destroy(f.p);
    return renew;
}

/* A batch checks a lease with nothing to write again once its last check
 * is PROV_LEASE_CHECK_EVERY old; beside the key's request of another model,
 * once it is PROV_LEASE_CHECK_BESIDE old. */
static void test_clock_check_beside(void)
{
    CU_ASSERT_FALSE(renews(0, PROV_LEASE_CHECK_BESIDE));
    CU_ASSERT_TRUE(renews(0, PROV_LEASE_CHECK_EVERY));
    CU_ASSERT_FALSE(renews(1, PROV_LEASE_CHECK_BESIDE / 2));
    CU_ASSERT_TRUE(renews(1, PROV_LEASE_CHECK_BESIDE));
}

void prov_test_suite_lease_clock(void)
{
    PROV_SUITE("lease_clock", PROV_TEST(test_clock_drawn), PROV_TEST(test_clock_idle),
               PROV_TEST(test_clock_lone_beside), PROV_TEST(test_clock_check_beside));
}
