/* test_prov_window.c: unit tests of the billing engine's rolling windows
 * (core/billing/prov_window.c): which bucket a time falls in (negative
 * times too), a window read as a sum and bucket by bucket, usage added in a
 * batch before it is written, and when capacity returns: a bucket counts
 * until the second its end leaves the window, not one second longer. */
#include "unit_tests.h"
#include "prov_account.h"
#include "prov_plans.h"
#include "prov_window.h"

#define H PROV_BUCKET_HOUR
#define M PROV_BUCKET_MINUTES
#define T0 APR_INT64_C(1700000000)   /* 1700000000 % 3600 = 800, % 300 = 200 */

static void put_bucket(prov_store_t *s, const char *scope, apr_int64_t id, apr_int64_t bucket,
                       prov_micro_t credits, prov_micro_t plan, apr_pool_t *p)
{
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s, apr_psprintf(p,
        "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests) "
        "VALUES ('%s', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %"
        APR_INT64_T_FMT ", 1)", scope, id, bucket, credits, plan), p), APR_SUCCESS);
}

static void test_bucket_of(void)
{
    CU_ASSERT_EQUAL(prov_bucket_of(T0, H), T0 - 800);
    CU_ASSERT_EQUAL(prov_bucket_of(T0, M), T0 - 200);
    CU_ASSERT_EQUAL(prov_bucket_of(T0 - 800, H), T0 - 800);        /* a bucket's first second */
    CU_ASSERT_EQUAL(prov_bucket_of(T0 - 801, H), T0 - 800 - H);    /* the previous one's last */
    CU_ASSERT_EQUAL(prov_bucket_of(0, H), 0);
    /* Before the epoch buckets still start at a multiple of their length. */
    CU_ASSERT_EQUAL(prov_bucket_of(-1, H), -H);
    CU_ASSERT_EQUAL(prov_bucket_of(-H, H), -H);
    CU_ASSERT_EQUAL(prov_bucket_of(-H - 1, H), -2 * H);
}

/* Buckets: one the window has left, one it half overlaps (it counts), two
 * inside, another scope and another id (neither counts). */
static void fill(prov_store_t *s, apr_int64_t first, apr_pool_t *p)
{
    put_bucket(s, "key:h", 7, first - H, 1000, 0, p);
    put_bucket(s, "key:h", 7, first, 100, 10, p);
    put_bucket(s, "key:h", 7, first + 5 * H, 20, 0, p);
    put_bucket(s, "key:h", 7, prov_bucket_of(T0, H), 3, 3, p);
    put_bucket(s, "user:h", 7, first, 50000, 0, p);
    put_bucket(s, "key:h", 8, first, 70000, 0, p);
}

static void test_load_and_sum(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_window_t w, l;
    apr_int64_t first = prov_bucket_of(T0 - PROV_WINDOW_7D, H);
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    fill(s, first, p);

    CU_ASSERT_EQUAL_FATAL(prov_window_sum(&w, s, "key:h", 7, H, PROV_WINDOW_7D, 0, T0, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(w.sum, 123);
    CU_ASSERT_EQUAL(w.oldest, first);
    CU_ASSERT_FALSE(w.listed);
    CU_ASSERT_EQUAL_FATAL(prov_window_load(&l, s, "key:h", 7, H, PROV_WINDOW_7D, 0, T0, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(l.sum, 123);
    CU_ASSERT_TRUE(l.listed);
    CU_ASSERT_EQUAL_FATAL(l.n, 3);
    CU_ASSERT_EQUAL(l.start[0], first);
    CU_ASSERT_EQUAL(l.amount[0], 100);
    CU_ASSERT_EQUAL(l.start[2], prov_bucket_of(T0, H));
    CU_ASSERT_EQUAL(l.amount[2], 3);
    /* The plan column: only the buckets with plan credits are its oldest. */
    CU_ASSERT_EQUAL_FATAL(prov_window_sum(&w, s, "key:h", 7, H, PROV_WINDOW_7D, 1, T0, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(w.sum, 13);
    CU_ASSERT_EQUAL(w.oldest, first);
    /* An empty window: no sum, no oldest bucket, nothing to wait for. */
    CU_ASSERT_EQUAL_FATAL(prov_window_sum(&w, s, "key:h", 9, H, PROV_WINDOW_7D, 0, T0, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(w.sum, 0);
    CU_ASSERT_EQUAL(w.oldest, 0);
    CU_ASSERT_EQUAL(prov_window_reset(&w, T0), 0);
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 5, 5, T0), 0);
    apr_pool_destroy(p);
}

/* The half-overlapped bucket leaves the window at its end + the span: one
 * second before, the window still holds it. */
static void test_window_edge(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_window_t w;
    apr_int64_t first = prov_bucket_of(T0 - PROV_WINDOW_7D, H), gone = first + H + PROV_WINDOW_7D;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    fill(s, first, p);
    CU_ASSERT_EQUAL_FATAL(prov_window_sum(&w, s, "key:h", 7, H, PROV_WINDOW_7D, 0, gone - 1, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(w.sum, 123);
    CU_ASSERT_EQUAL(prov_window_reset(&w, gone - 1), 1);
    CU_ASSERT_EQUAL_FATAL(prov_window_sum(&w, s, "key:h", 7, H, PROV_WINDOW_7D, 0, gone, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(w.sum, 23);
    CU_ASSERT_EQUAL(w.oldest, first + 5 * H);
    CU_ASSERT_EQUAL(prov_window_reset(&w, gone), 5 * H);
    apr_pool_destroy(p);
}

/* Retry-After: the first moment enough has left the window, on both sides
 * of the edge; -1 when the request alone is over the limit. */
static void test_retry_after(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_window_t w;
    apr_int64_t first = prov_bucket_of(T0 - PROV_WINDOW_7D, H), ra;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    fill(s, first, p);
    CU_ASSERT_EQUAL_FATAL(prov_window_load(&w, s, "key:h", 7, H, PROV_WINDOW_7D, 0, T0, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 77, 200, T0), 0);    /* 123 + 77 fits */
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 201, 200, T0), -1);
    /* 123 + 100 > 200: the oldest bucket (100) must leave. */
    ra = prov_window_retry_after(&w, 100, 200, T0);
    CU_ASSERT_EQUAL(ra, first + H + PROV_WINDOW_7D - T0);
    CU_ASSERT_EQUAL(ra, prov_window_reset(&w, T0));
    /* 123 + 180 > 200 even then: the second bucket must leave too. */
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 180, 200, T0),
                    first + 6 * H + PROV_WINDOW_7D - T0);
    /* Checked again at that moment, the window agrees. */
    CU_ASSERT_EQUAL_FATAL(prov_window_load(&w, s, "key:h", 7, H, PROV_WINDOW_7D, 0, T0 + ra, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(w.sum, 23);
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 100, 200, T0 + ra), 0);
    CU_ASSERT_EQUAL_FATAL(prov_window_load(&w, s, "key:h", 7, H, PROV_WINDOW_7D, 0,
                                           T0 + ra - 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(w.sum, 123);
    CU_ASSERT_EQUAL(prov_window_retry_after(&w, 100, 200, T0 + ra - 1), 1);
    apr_pool_destroy(p);
}

/* What a batch adds before it writes: a summed window counts it (and its
 * bucket as the oldest when it had none); listed later, the buckets from
 * the store and the addition are both there. */
static void test_add_then_list(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_window_t w;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    CU_ASSERT_EQUAL_FATAL(prov_window_sum(&w, s, "user:m", 3, M, PROV_WINDOW_5H, 1, T0, p),
                          APR_SUCCESS);
    prov_window_add(&w, T0, 40, p);
    prov_window_add(&w, T0 + 1, 2, p);
    CU_ASSERT_EQUAL(w.sum, 42);
    CU_ASSERT_EQUAL(w.oldest, prov_bucket_of(T0, M));
    CU_ASSERT_EQUAL(prov_window_reset(&w, T0), prov_bucket_of(T0, M) + M + PROV_WINDOW_5H - T0);
    put_bucket(s, "user:m", 3, prov_bucket_of(T0 - 3600, M), 9, 5, p);
    CU_ASSERT_EQUAL_FATAL(prov_window_list(&w, s, p), APR_SUCCESS);
    CU_ASSERT_TRUE(w.listed);
    CU_ASSERT_EQUAL(w.sum, 47);
    CU_ASSERT_EQUAL_FATAL(w.n, 2);
    CU_ASSERT_EQUAL(w.start[0], prov_bucket_of(T0 - 3600, M));
    CU_ASSERT_EQUAL(w.amount[0], 5);
    CU_ASSERT_EQUAL(w.start[1], prov_bucket_of(T0, M));
    CU_ASSERT_EQUAL(w.amount[1], 42);
    /* Listed: additions go to their bucket, a new one at the end. */
    prov_window_add(&w, T0 + M, 8, p);
    CU_ASSERT_EQUAL(w.n, 3);
    CU_ASSERT_EQUAL(w.sum, 55);
    prov_window_add(&w, T0 + M + 1, 1, p);
    CU_ASSERT_EQUAL(w.n, 3);
    CU_ASSERT_EQUAL(w.amount[2], 9);
    CU_ASSERT_EQUAL(w.sum, 56);
    /* Listing twice changes nothing. */
    CU_ASSERT_EQUAL_FATAL(prov_window_list(&w, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(w.sum, 56);
    CU_ASSERT_EQUAL(w.n, 3);
    apr_pool_destroy(p);
}

/* A window longer than the first array of buckets grows it. */
static void test_many_buckets(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_window_t w;
    int i;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    for (i = 0; i < 60; i++)
        put_bucket(s, "user:m", 4, prov_bucket_of(T0, M) - i * M, i + 1, 0, p);
    CU_ASSERT_EQUAL_FATAL(prov_window_load(&w, s, "user:m", 4, M, PROV_WINDOW_5H, 0, T0, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(w.n, 60);
    CU_ASSERT_EQUAL(w.sum, 60 * 61 / 2);
    CU_ASSERT_EQUAL(w.amount[0], 60);
    CU_ASSERT_EQUAL(w.amount[59], 1);
    apr_pool_destroy(p);
}

/* An account's plan windows: none without a subscription; with one, both
 * windows' plan credits and when each starts to return. */
static void test_plan_windows(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_user_t *u = NULL;
    prov_plan_t *plan = NULL;
    prov_subscription_t *sub = NULL;
    prov_plan_windows_t pw;
    prov_window_t w5, w7;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    CU_ASSERT_EQUAL_FATAL(prov_user_add(&u, s, "win@example.com", NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_window_plan(&pw, &w5, &w7, s, u->id, T0, p),
                          APR_SUCCESS);
    CU_ASSERT_FALSE(pw.has_plan);
    CU_ASSERT_EQUAL_FATAL(prov_plan_add(&plan, s, "win", 500, 5000, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_subscription_set(&sub, s, u->id, plan->id, 0, T0 - 100, p),
                          APR_SUCCESS);
    put_bucket(s, "user:m", u->id, prov_bucket_of(T0 - 600, M), 70, 60, p);
    put_bucket(s, "user:h", u->id, prov_bucket_of(T0 - 2 * H, H), 900, 800, p);
    CU_ASSERT_EQUAL_FATAL(prov_window_plan(&pw, &w5, &w7, s, u->id, T0, p),
                          APR_SUCCESS);
    CU_ASSERT_TRUE(pw.has_plan);
    CU_ASSERT_STRING_EQUAL(pw.plan_name, "win");
    CU_ASSERT_EQUAL(pw.quota_5h, 500);
    CU_ASSERT_EQUAL(pw.quota_7d, 5000);
    CU_ASSERT_EQUAL(pw.used_5h, 60);
    CU_ASSERT_EQUAL(pw.used_7d, 800);
    CU_ASSERT_EQUAL(pw.reset_5h, prov_bucket_of(T0 - 600, M) + M + PROV_WINDOW_5H - T0);
    CU_ASSERT_EQUAL(pw.reset_7d, prov_bucket_of(T0 - 2 * H, H) + H + PROV_WINDOW_7D - T0);
    CU_ASSERT_EQUAL(w5.sum, 60);
    CU_ASSERT_EQUAL(w7.sum, 800);
    apr_pool_destroy(p);
}

void prov_test_suite_window(void)
{
    PROV_SUITE("window",
               PROV_TEST(test_bucket_of),
               PROV_TEST(test_load_and_sum),
               PROV_TEST(test_window_edge),
               PROV_TEST(test_retry_after),
               PROV_TEST(test_add_then_list),
               PROV_TEST(test_many_buckets),
               PROV_TEST(test_plan_windows));
}
