/* test_prov_alert.c: unit tests of spend alerts (core/alert/): the crossing
 * arithmetic (a percent of a limit reached exactly, at any size; the window
 * a crossing belongs to; the retry backoff), the signature against a vector
 * computed elsewhere (Python's hmac), and, on an in-memory SQLite database
 * (or PostgreSQL: prov_test_store_any, identity-pgsql.test.js),
 * the scan and the outbox: a key's budget crossed once per window, what
 * holds and leases take left out, a plan window at 90 %, a balance alert
 * armed above its threshold and fired once below, the scan's turn, a
 * user's own threshold, and a delivery to a closed port kept pending with
 * its error and its next attempt after the backoff. */
#include <string.h>
#include "unit_tests.h"
#include "prov_alert.h"
#include "prov_money.h"

#define T0 APR_INT64_C(1799843696)   /* Wednesday 2027-01-13 12:34:56 UTC */
#define MONDAY APR_INT64_C(1799625600) /* 2027-01-11 00:00 UTC */
#define CR(x) ((prov_micro_t)(x) * PROV_MICRO_PER_CREDIT)

static apr_pool_t *tpool(void)
{
    apr_pool_t *p = NULL;
    apr_pool_create(&p, prov_test_pool());
    return p;
}

/* The first column of a query's first row as a number (-1: none). */
static apr_int64_t count(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    const char *rows = prov_test_dump(s, sql, p);
    return rows && *rows ? apr_atoi64(rows) : -1;
}

static void test_reached(void)
{
    CU_ASSERT_FALSE(prov_alert_reached(CR(8) - 1, CR(10), 80));
    CU_ASSERT_TRUE(prov_alert_reached(CR(8), CR(10), 80));
    CU_ASSERT_TRUE(prov_alert_reached(CR(10), CR(10), 100));
    CU_ASSERT_FALSE(prov_alert_reached(CR(10) - 1, CR(10), 100));
    /* 80 % of 3 micro-credits is 2.4: reached at 3, not at 2 */
    CU_ASSERT_FALSE(prov_alert_reached(2, 3, 80));
    CU_ASSERT_TRUE(prov_alert_reached(3, 3, 80));
    /* 90 % of 101 is 90.9 */
    CU_ASSERT_FALSE(prov_alert_reached(90, 101, 90));
    CU_ASSERT_TRUE(prov_alert_reached(91, 101, 90));
    /* the largest amounts: no product overflows */
    CU_ASSERT_TRUE(prov_alert_reached(PROV_AMOUNT_MAX, PROV_AMOUNT_MAX, 100));
    CU_ASSERT_FALSE(prov_alert_reached(PROV_AMOUNT_MAX / 10 * 9 - 1, PROV_AMOUNT_MAX, 90));
    CU_ASSERT_TRUE(prov_alert_reached(PROV_AMOUNT_MAX / 10 * 9, PROV_AMOUNT_MAX, 90));
    CU_ASSERT_TRUE(prov_alert_reached(APR_INT64_MAX, PROV_AMOUNT_MAX, 80));
    /* no limit, no percent: never */
    CU_ASSERT_FALSE(prov_alert_reached(CR(5), 0, 80));
    CU_ASSERT_FALSE(prov_alert_reached(CR(5), CR(1), 0));
    CU_ASSERT_FALSE(prov_alert_reached(-1, CR(1), 80));
}

static void test_window_start(void)
{
    /* a week from Monday 00:00 UTC */
    CU_ASSERT_EQUAL(prov_alert_window_start(PROV_ALERT_BUDGET_80, T0), MONDAY);
    CU_ASSERT_EQUAL(prov_alert_window_start(PROV_ALERT_BUDGET_100, MONDAY), MONDAY);
    CU_ASSERT_EQUAL(prov_alert_window_start(PROV_ALERT_PLAN_7D_90, MONDAY - 1),
                    MONDAY - 7 * 86400);
    CU_ASSERT_EQUAL(prov_alert_window_start(PROV_ALERT_BUDGET_80, MONDAY + 7 * 86400 - 1), MONDAY);
    /* five-hour periods from 00:00 UTC: 12:34:56 is in 10:00-15:00 */
    CU_ASSERT_EQUAL(prov_alert_window_start(PROV_ALERT_PLAN_5H_90, T0),
                    MONDAY + 2 * 86400 + 10 * 3600);
    /* the day's last period is 20:00-24:00 */
    CU_ASSERT_EQUAL(prov_alert_window_start(PROV_ALERT_PLAN_5H_90, MONDAY + 86400 - 1),
                    MONDAY + 20 * 3600);
    CU_ASSERT_EQUAL(prov_alert_window_start(PROV_ALERT_PLAN_5H_90, MONDAY + 86400), MONDAY + 86400);
    /* an event is its own window */
    CU_ASSERT_EQUAL(prov_alert_window_start(PROV_ALERT_USER_BLOCKED, T0), T0);
}

static void test_backoff(void)
{
    CU_ASSERT_EQUAL(prov_alert_backoff(0), 0);
    CU_ASSERT_EQUAL(prov_alert_backoff(1), 1);
    CU_ASSERT_EQUAL(prov_alert_backoff(2), 2);
    CU_ASSERT_EQUAL(prov_alert_backoff(5), 16);
    CU_ASSERT_EQUAL(prov_alert_backoff(9), 256);
    CU_ASSERT_EQUAL(prov_alert_backoff(10), PROV_ALERT_BACKOFF_MAX);
    CU_ASSERT_EQUAL(prov_alert_backoff(1000000), PROV_ALERT_BACKOFF_MAX);
}

static void test_sign(void)
{
    apr_pool_t *p = tpool();
    const char *secret = "whsec_0123456789abcdef";
    const char *body = "{\"id\":\"alrt_x\",\"type\":\"budget_80\"}";
    const char *v = NULL;
    CU_ASSERT_EQUAL(prov_alert_sign(&v, secret, strlen(secret), APR_INT64_C(1800000000), body,
                                    strlen(body), p), APR_SUCCESS);
    /* python3: hmac.new(secret, b"1800000000." + body, sha256).hexdigest() */
    CU_ASSERT_STRING_EQUAL(v, "t=1800000000,v1=f1da317cf74c7a5e5a6234a505dae9af207b5c4dc8e66e"
                              "3a66e1ff7615e9b5a4");
    CU_ASSERT_EQUAL(prov_alert_sign(&v, secret, strlen(secret), APR_INT64_C(1800000001), body,
                                    strlen(body), p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(strstr(v, "f1da317c"));   /* another time, another signature */
    CU_ASSERT_PTR_NULL(strstr(v, secret));
    CU_ASSERT_EQUAL(prov_alert_sign(&v, "", 0, 1, body, strlen(body), p), APR_EINVAL);
    apr_pool_destroy(p);
}

/* A user (balance in credits) and a key with a weekly budget (credits). */
static void seed(prov_store_t *s, apr_int64_t balance, apr_int64_t budget, apr_pool_t *p)
{
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s, apr_psprintf(p,
        "INSERT INTO users (id, email, balance, created_at) VALUES (1, 'u@example.com', "
        "%" APR_INT64_T_FMT ", 1); INSERT INTO api_keys (id, user_id, name, hash, display, "
        "weekly_budget, created_at) VALUES (7, 1, 'ci', 'h', 'sk-abc...', %" APR_INT64_T_FMT
        ", 1)", CR(balance), CR(budget)), p), APR_SUCCESS);
}

/* Spend (credits, of which plan from the plan) in the key's and the user's
 * buckets of time t. */
static void bucket(prov_store_t *s, apr_int64_t t, apr_int64_t credits, apr_int64_t plan,
                   apr_pool_t *p)
{
    static const struct { const char *scope; int id, len; } b[] = {
        { "key:h", 7, 3600 }, { "user:h", 1, 3600 }, { "user:m", 1, 300 }
    };
    int i;
    for (i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(prov_store_raw(s, apr_psprintf(p,
            "INSERT INTO usage_buckets VALUES ('%s', %d, %" APR_INT64_T_FMT ", %"
            APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", 1) ON CONFLICT (scope, scope_id, bucket) "
            "DO UPDATE SET credits = usage_buckets.credits + excluded.credits, "
            "plan_credits = usage_buckets.plan_credits + excluded.plan_credits",
            b[i].scope, b[i].id, t - t % b[i].len, CR(credits), CR(plan)), p), APR_SUCCESS);
}

static int scan(prov_store_t *s, apr_int64_t now, prov_micro_t below, apr_pool_t *p)
{
    int ran = 0, raised = -1;
    CU_ASSERT_EQUAL(prov_alert_scan(&ran, &raised, s, now, 1, below, p), APR_SUCCESS);
    CU_ASSERT_TRUE(ran);
    return raised;
}

static void test_scan_budget(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store_any(p);
    int ran = 1, raised = -1;
    seed(s, 100, 10, p);
    bucket(s, T0 - 3 * 86400, 5, 0, p);     /* earlier in the rolling week */
    bucket(s, T0, 2, 0, p);                 /* 7 of 10 */
    CU_ASSERT_EQUAL(scan(s, T0, 0, p), 0);
    /* a lease of 3 credits counts in the buckets, but is not spent */
    bucket(s, T0, 3, 0, p);
    CU_ASSERT_EQUAL(prov_store_raw(s, "INSERT INTO billing_leases (id, user_id, key_id, "
                                      "model_id, source, amount, at) VALUES ('L1', 1, 7, 1, "
                                      "'balance', 3000000, 1)", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(scan(s, T0 + 1, 0, p), 0);
    /* the same second again: another node had the turn */
    CU_ASSERT_EQUAL(prov_alert_scan(&ran, &raised, s, T0 + 1, 1, 0, p), APR_SUCCESS);
    CU_ASSERT_FALSE(ran);
    CU_ASSERT_EQUAL(raised, 0);
    /* the lease settled as 1 credit spent: 8 of 10 */
    CU_ASSERT_EQUAL(prov_store_raw(s, "DELETE FROM billing_leases", p), APR_SUCCESS);
    bucket(s, T0, -2, 0, p);
    CU_ASSERT_EQUAL(scan(s, T0 + 2, 0, p), 1);
    CU_ASSERT_EQUAL(count(s, "SELECT COUNT(*) FROM alerts WHERE subject = 'key:7' AND kind = "
                             "'budget_80' AND window_start = 1799625600 "
                             "AND sent_at IS NULL", p), 1);
    /* seen again: the same crossing, no second row */
    CU_ASSERT_EQUAL(scan(s, T0 + 3, 0, p), 0);
    bucket(s, T0, 2, 0, p);
    CU_ASSERT_EQUAL(scan(s, T0 + 4, 0, p), 1);    /* 100 % */
    CU_ASSERT_EQUAL(count(s, "SELECT COUNT(*) FROM alerts", p), 2);
    CU_ASSERT_EQUAL(count(s, "SELECT COUNT(*) FROM alerts WHERE body LIKE '%\"type\":\"budget_100\""
                             "%' AND body LIKE '%\"used\":10,%' AND body LIKE '%\"limit\":10%' "
                             "AND body LIKE '%\"display\":\"sk-abc...\"%'", p), 1);
    apr_pool_destroy(p);
}

static void test_scan_plan(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store_any(p);
    seed(s, 0, 0, p);
    CU_ASSERT_EQUAL(prov_store_raw(s, "INSERT INTO plans (id, name, quota_5h, quota_7d, "
                                      "created_at) VALUES (1, 'pro', 10000000, 100000000, 1); "
                                      "INSERT INTO subscriptions (user_id, plan_id, starts_at) "
                                      "VALUES (1, 1, 1)", p), APR_SUCCESS);
    /* spend before the 5-hour window counts in the 7-day one only */
    bucket(s, T0 - 6 * 3600, 5, 5, p);
    bucket(s, T0, 9, 8, p);     /* 8 of the 5-hour 10 */
    CU_ASSERT_EQUAL(scan(s, T0, 0, p), 0);
    bucket(s, T0, 1, 1, p);
    CU_ASSERT_EQUAL(scan(s, T0 + 1, 0, p), 1);
    CU_ASSERT_EQUAL(count(s, "SELECT COUNT(*) FROM alerts WHERE subject = 'user:1' AND kind = "
                             "'plan_5h_90' AND window_start = 1799834400", p), 1);
    CU_ASSERT_EQUAL(count(s, "SELECT COUNT(*) FROM alerts WHERE body LIKE '%\"used\":9,%'", p), 1);
    CU_ASSERT_EQUAL(count(s, "SELECT COUNT(*) FROM alerts WHERE kind = 'plan_7d_90'", p), 0);
    apr_pool_destroy(p);
}

static void test_scan_balance(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store_any(p);
    int set = -1;
    prov_micro_t below = -1;
    seed(s, 4, 0, p);
    /* below the threshold but never seen above it: not armed, no alert */
    CU_ASSERT_EQUAL(scan(s, T0, CR(5), p), 0);
    CU_ASSERT_EQUAL(prov_store_raw(s, "UPDATE users SET balance = 6000000", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(scan(s, T0 + 1, CR(5), p), 0);
    CU_ASSERT_EQUAL(count(s, "SELECT armed_at FROM alert_settings WHERE user_id = 1", p), T0 + 1);
    /* a hold takes it below; settled it would not be: no alert */
    CU_ASSERT_EQUAL(prov_store_raw(s, "UPDATE users SET balance = 4000000; INSERT INTO ledger "
                                      "(request_id, user_id, key_id, model_id, transport, "
                                      "reserved, status, created_at) VALUES ('r1', 1, 7, 1, "
                                      "'chat', 2000000, 'reserved', 1)", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(scan(s, T0 + 2, CR(5), p), 0);
    /* settled at 1.5: 4.5, below 5 */
    CU_ASSERT_EQUAL(prov_store_raw(s, "UPDATE ledger SET status = 'ok', credits = 1500000; "
                                      "UPDATE users SET balance = 4500000", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(scan(s, T0 + 3, CR(5), p), 1);
    CU_ASSERT_EQUAL(count(s, "SELECT COUNT(*) FROM alerts WHERE kind = 'balance_below' AND "
                             "window_start = 1799843697 AND body LIKE '%\"balance\":4.5,%'", p), 1);
    CU_ASSERT_EQUAL(count(s, "SELECT COUNT(*) FROM alert_settings WHERE armed_at IS NULL", p), 1);
    CU_ASSERT_EQUAL(scan(s, T0 + 4, CR(5), p), 0);     /* once */
    /* the user's own threshold, 0: none for them, whatever the default */
    CU_ASSERT_EQUAL(prov_alert_setting_put(s, 1, 1, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_alert_setting_get(&set, &below, s, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(set, 1);
    CU_ASSERT_EQUAL(below, 0);
    CU_ASSERT_EQUAL(scan(s, T0 + 5, CR(5), p), 0);
    /* their own 4, above: armed; then 3.9 */
    CU_ASSERT_EQUAL(prov_alert_setting_put(s, 1, 1, CR(4), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(scan(s, T0 + 6, CR(5), p), 0);
    CU_ASSERT_EQUAL(prov_store_raw(s, "UPDATE users SET balance = 3900000", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(scan(s, T0 + 7, CR(5), p), 1);
    CU_ASSERT_EQUAL(count(s, "SELECT COUNT(*) FROM alerts WHERE kind = 'balance_below'", p), 2);
    CU_ASSERT_EQUAL(prov_alert_setting_put(s, 1, 0, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_alert_setting_get(&set, &below, s, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(set, 0);
    apr_pool_destroy(p);
}

static void test_setting_parse(void)
{
    apr_pool_t *p = tpool();
    prov_error_t *err = NULL;
    prov_micro_t below = 0;
    int set = -1;
    static const char *const bad[] = { "", "[]", "{}", "{\"balance_below\":-1}",
                                       "{\"balance_below\":\"5\"}", "{\"x\":1}",
                                       "{\"balance_below\":1.0000001}",
                                       "{\"balance_below\":1e300}" };
    size_t i;
#define PARSE(b) prov_alert_setting_parse(&set, &below, &err, b, strlen(b), p)
    CU_ASSERT_EQUAL(PARSE("{\"balance_below\": 2.5}"), APR_SUCCESS);
    CU_ASSERT_EQUAL(set, 1);
    CU_ASSERT_EQUAL(below, 2500000);
    CU_ASSERT_EQUAL(PARSE("{\"balance_below\": null}"), APR_SUCCESS);
    CU_ASSERT_EQUAL(set, 0);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err = NULL;
        CU_ASSERT_EQUAL(PARSE(bad[i]), APR_EINVAL);
        CU_ASSERT_PTR_NOT_NULL(err);
    }
#undef PARSE
    apr_pool_destroy(p);
}

static void test_deliver_down(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store_any(p);
    /* port 1 on loopback: nothing listens */
    prov_alert_hook_t hook = { "http://127.0.0.1:1/hook", "0123456789abcdef", 16, 2 };
    apr_array_header_t *rows = NULL;
    apr_int64_t pending = -1, sent = -1;
    int ok = -1, failed = -1;
    prov_clock_set(T0);
    seed(s, 1, 0, p);
    CU_ASSERT_EQUAL(prov_alert_user_blocked(s, 1, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_alert_deliver(&ok, &failed, s, &hook, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(ok, 0);
    CU_ASSERT_EQUAL(failed, 1);
    CU_ASSERT_EQUAL(prov_alert_list(&rows, s, 1, 10, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(rows->nelts, 1);
    {
        const prov_alert_row_t *r = APR_ARRAY_IDX(rows, 0, prov_alert_row_t *);
        CU_ASSERT_STRING_EQUAL(r->kind, "user_blocked");
        CU_ASSERT_EQUAL(r->attempts, 1);
        CU_ASSERT_EQUAL(r->next_at, T0 + 1);
        CU_ASSERT_EQUAL(r->sent_at, 0);
        CU_ASSERT_PTR_NOT_NULL(r->last_error);
    }
    /* not due again within its backoff */
    CU_ASSERT_EQUAL(prov_alert_deliver(&ok, &failed, s, &hook, T0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(failed, 0);
    CU_ASSERT_EQUAL(prov_alert_counts(&pending, &sent, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(pending, 1);
    CU_ASSERT_EQUAL(sent, 0);
    prov_clock_set(0);
    apr_pool_destroy(p);
}

void prov_test_suite_alert(void)
{
    PROV_SUITE("alert",
               PROV_TEST(test_reached),
               PROV_TEST(test_window_start),
               PROV_TEST(test_backoff),
               PROV_TEST(test_sign),
               PROV_TEST(test_scan_budget),
               PROV_TEST(test_scan_plan),
               PROV_TEST(test_scan_balance),
               PROV_TEST(test_setting_parse),
               PROV_TEST(test_deliver_down));
}
