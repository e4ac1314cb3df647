/* test_prov_lease_burst.c: unit tests of a burst after idle
 * (core/billing/prov_lease.c prov_lease_draw_queued, prov_queue.c): the
 * reservations queued while the batch that grants their key's lease runs
 * draw from it when that batch ends, instead of each being held in the
 * database by the next batch. On a table of the test's own, which queued
 * reservations may draw (not one asked again after a refusal, not one whose
 * key the database just did not admit, not one the lease has no room for)
 * and that a drawn one stays counted in flight once; and through the engine
 * with a writer thread, a batch held at its connection while two more
 * requests queue behind it, the books exact afterwards. The fixture is
 * billing_fixture.c. */
#include <pthread.h>
#include "billing_fixture.h"

#define KEEP apr_time_from_msec(100)

static void test_burst_draw_queued(void)
{
    static const char *const ids[] = { "queued-1", "queued-2", "queued-3", "queued-4" };
    bf_fixture_t f;
    prov_leases_t L;
    prov_op_t ops[2], q[4];
    prov_slot_t *s;
    int i, busy;
    bf_setup(&f, 10000 * C, 0, 0);
    bf_lease_table(&L, KEEP);
    s = bf_granted(&f, &L, ops);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    /* queued while the batch ran: counted in flight */
    for (i = 0; i < 4; i++) {
        bf_reserve_op(&q[i], &f, ids[i], T0);
        prov_lease_pending(&L, &q[i]);
        CU_ASSERT_PTR_EQUAL(q[i].slot, s);
    }
    busy = s->busy;
    CU_ASSERT_EQUAL(busy, 6);
    CU_ASSERT_TRUE_FATAL(prov_lease_draw_queued(&L, &q[0]));
    CU_ASSERT_PTR_NOT_NULL_FATAL(q[0].out);
    CU_ASSERT_TRUE(q[0].out->leased);
    CU_ASSERT_STRING_EQUAL(q[0].out->row.request_id, "queued-1");
    CU_ASSERT_PTR_NULL(q[0].slot);
    CU_ASSERT_EQUAL(s->busy, busy);
    CU_ASSERT_EQUAL(s->drawn, C);
    /* asked again after a refusal, or its key not admitted just now: the
     * database decides */
    q[1].retried = 1;
    q[2].no_draw = 1;
    CU_ASSERT_FALSE(prov_lease_draw_queued(&L, &q[1]));
    CU_ASSERT_FALSE(prov_lease_draw_queued(&L, &q[2]));
    /* more than the lease has left */
    q[3].hold = s->amount;
    CU_ASSERT_FALSE(prov_lease_draw_queued(&L, &q[3]));
    CU_ASSERT_TRUE(s->exhausted);
    for (i = 1; i < 4; i++) {
        CU_ASSERT_PTR_NULL(q[i].out);
        CU_ASSERT_PTR_EQUAL(q[i].slot, s);
    }
    CU_ASSERT_EQUAL(s->busy, busy);
    CU_ASSERT_EQUAL(s->drawn, C);
    bf_drop_slots(&L);
    apr_pool_destroy(f.p);
}

/* One request of test_burst_engine, reserving in a thread of its own. */
typedef struct burst_req_t {
    bf_fixture_t *f;
    const char *id;
    apr_pool_t *p;
    prov_reservation_t *r;
} burst_req_t;

static void *burst_reserve(void *arg)
{
    burst_req_t *b = arg;
    prov_error_t *e = NULL;
    if (prov_billing_reserve(&b->r, &e, b->f->src, b->f->auth, b->f->m->id, "chat", b->id, 3 * C,
                             T0, b->p) != APR_SUCCESS)
        b->r = NULL;
    return NULL;
}

/* Whether f's queue comes to have a leader and n operations queued behind
 * it within 5 s. */
static int queue_becomes(bf_fixture_t *f, int n)
{
    int polls, have = -1, leader = 0;
    for (polls = 0; polls < 1000; polls++) {
        prov_queue_t *q;
        prov_op_t *o;
        prov_queue_lock();
        q = prov_queue_of(f->src->channel);
        leader = q->leader;
        for (have = 0, o = q->head; o; o = o->next)
            have++;
        prov_queue_unlock();
        if (leader && have == n)
            return 1;
        apr_sleep(apr_time_from_msec(5));
    }
    return 0;
}

/* A key whose last request ended within keep_idle: the next one is
 * granted a lease with its reservation, and the two that come while that
 * batch runs draw from it as it ends. */
static void test_burst_engine(void)
{
    static const char *const ids[] = { "burst-1", "burst-2", "burst-3" };
    bf_fixture_t f;
    prov_writer_t *w = NULL;
    burst_req_t b[3];
    pthread_t th[3];
    prov_reservation_t *r;
    prov_micro_t charged = 100;
    int i;
    bf_setup(&f, 1000000 * C, 0, 0);
    CU_ASSERT_EQUAL_FATAL(prov_writer_start(&w, f.src, apr_time_from_sec(60)),
                          APR_SUCCESS);
    r = bf_reserve(&f, "burst-0", 3 * C, T0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_FALSE(r->leased);
    CU_ASSERT_EQUAL(prov_billing_settle(f.src, r, NULL, 100, PROV_STATUS_OK, T0 + 1, f.p),
                    APR_SUCCESS);
    /* the first request's batch waits for the connection the test holds */
    bf_hold_store(&f);
    for (i = 0; i < 3; i++) {
        b[i].f = &f;
        b[i].id = ids[i];
        b[i].r = NULL;
        apr_pool_create_unmanaged(&b[i].p);
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, burst_reserve, &b[i]), 0);
        CU_ASSERT_TRUE(queue_becomes(&f, i));
    }
    bf_release_store(&f);
    for (i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b[i].r);
        CU_ASSERT_EQUAL(b[i].r->leased, i > 0);
    }
    for (i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(prov_billing_settle(f.src, b[i].r, NULL, 200 + i, PROV_STATUS_OK, T0 + 1,
                                            f.p),
                        APR_SUCCESS);
        charged += 200 + i;
    }
    prov_writer_stop(w);
    for (i = 0; i < 3; i++)
        apr_pool_destroy(b[i].p);
    bf_check_lease_books(&f, 4, charged);
    apr_pool_destroy(f.p);
}

void prov_test_suite_lease_burst(void)
{
    PROV_SUITE("lease_burst", PROV_TEST(test_burst_draw_queued), PROV_TEST(test_burst_engine));
}
