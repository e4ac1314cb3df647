/* test_prov_store_billing.c: unit tests of the billing engine's statements
 * built at run time (core/store/prov_store_billing.c) and of deferred
 * writes (prov_store_defer). The same tests run on SQLite and, with
 * PROV_UNIT_PGSQL, on PostgreSQL, against the same expected rows: the
 * PostgreSQL strings (arrays unnested, one UPDATE for the balances, the
 * row locks sent with BEGIN) must write what SQLite's prepared statements
 * write. On PostgreSQL the round trips are counted too. */
#include "unit_tests.h"
#include <string.h>
#include "prov_store_billing.h"

static int is_pg(const prov_store_t *s)
{
    return s->dialect == PROV_DIALECT_PGSQL;
}

/* Two users (ids 1 and 2) with balances 100 and 200. */
static prov_store_t *store_with_users(apr_pool_t *p)
{
    prov_store_t *s = prov_test_store_any(p);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s, "INSERT INTO users (id, email, balance, created_at) "
                                            "VALUES (1, 'a@example.com', 100, 1), "
                                            "(2, 'b@example.com', 200, 1)", p), APR_SUCCESS);
    return s;
}

static prov_ledger_row_t row_of(const char *id, apr_int64_t user, int from_plan, apr_int64_t n)
{
    prov_ledger_row_t r;
    memset(&r, 0, sizeof(r));
    r.request_id = id;
    r.transport = "messages";
    r.status = PROV_STATUS_OK;
    r.user_id = user;
    r.key_id = 10 + user;
    r.model_id = 7;
    r.tokens.input = n;
    r.tokens.output = 2 * n;
    r.tokens.cache = 3;
    r.tokens.reasoning = 4;
    r.hold = 1000 + n;
    r.charge = 500 + n;
    r.from_plan = from_plan;
    r.created_at = 1700000000 + n;
    r.settled_at = 1700000100 + n;
    return r;
}

/* Rows whose text needs quoting (array and SQL both), in order. */
static void test_ledger_insert(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_ledger_row_t rows[4];
    apr_uint64_t trips;
    apr_pool_create(&p, prov_test_pool());
    s = store_with_users(p);
    rows[0] = row_of("req_plain", 1, 0, 1);
    rows[1] = row_of("req_'quote\"dq\\bs", 2, 1, 2);
    rows[2] = row_of("req_{brace},comma NULL", 1, 0, 3);
    rows[3] = row_of("NULL", 2, 0, 4);
    CU_ASSERT_EQUAL_FATAL(prov_store_begin(s, p), APR_SUCCESS);
    trips = s->round_trips;
    CU_ASSERT_EQUAL(prov_store_bill_ledger_insert(s, rows, 4, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_bill_ledger_insert(s, rows, 0, p), APR_SUCCESS);
    if (is_pg(s))
        CU_ASSERT_EQUAL(s->round_trips, trips);      /* deferred */
    CU_ASSERT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    if (is_pg(s))
        CU_ASSERT_EQUAL(s->round_trips, trips + 1);  /* with the COMMIT */
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s,
        "SELECT request_id, user_id, key_id, model_id, transport, input_tokens, output_tokens, "
        "cache_tokens, reasoning_tokens, reserved, credits, plan_credits, source, status, "
        "created_at, settled_at FROM ledger ORDER BY id", p),
        "req_plain|1|11|7|messages|1|2|3|4|1001|501|0|balance|ok|1700000001|1700000101|\n"
        "req_'quote\"dq\\bs|2|12|7|messages|2|4|3|4|1002|502|502|plan|ok|1700000002|1700000102|\n"
        "req_{brace},comma NULL|1|11|7|messages|3|6|3|4|1003|503|0|balance|ok|1700000003|"
        "1700000103|\n"
        "NULL|2|12|7|messages|4|8|3|4|1004|504|0|balance|ok|1700000004|1700000104|\n");
    apr_pool_destroy(p);
}

/* Many rows: on SQLite 93 = 64 + 16 + 4 + 4 + 4 + 1, six statements; every
 * row written once, in order, with its own values; a duplicate request id
 * inside a statement of 64 fails it. */
static void test_ledger_insert_many(void)
{
    enum { N = 93 };
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_ledger_row_t rows[N];
    apr_uint64_t trips;
    char *want = "";
    int i;
    apr_pool_create(&p, prov_test_pool());
    s = store_with_users(p);
    for (i = 0; i < N; i++) {
        rows[i] = row_of(apr_psprintf(p, "req_%03d", i), 1 + i % 2, i % 3 == 0, i);
        want = apr_psprintf(p, "%sreq_%03d|%d|%d|%d|%s|\n", want, i, 1 + i % 2, 2 * i, 500 + i,
                            i % 3 == 0 ? "plan" : "balance");
    }
    CU_ASSERT_EQUAL_FATAL(prov_store_begin(s, p), APR_SUCCESS);
    trips = s->round_trips;
    CU_ASSERT_EQUAL(prov_store_bill_ledger_insert(s, rows, N, p), APR_SUCCESS);
    if (!is_pg(s))
        CU_ASSERT_EQUAL(s->round_trips, trips + 6);
    CU_ASSERT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT request_id, user_id, output_tokens, credits, "
                                             "source FROM ledger ORDER BY id", p), want);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT SUM(plan_credits) FROM ledger", p),
                           apr_psprintf(p, "%d|\n", 31 * 500 + 3 * (30 * 31 / 2)));

    for (i = 0; i < 64; i++)
        rows[i].request_id = apr_psprintf(p, "dup_%d", i == 40 ? 3 : i);
    CU_ASSERT_EQUAL_FATAL(prov_store_begin(s, p), APR_SUCCESS);
    if (is_pg(s)) {
        CU_ASSERT_EQUAL(prov_store_bill_ledger_insert(s, rows, 64, p), APR_SUCCESS);
        CU_ASSERT_NOT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    }
    else {
        CU_ASSERT_NOT_EQUAL(prov_store_bill_ledger_insert(s, rows, 64, p), APR_SUCCESS);
        prov_store_rollback(s, p);
    }
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT COUNT(*) FROM ledger", p),
                           apr_psprintf(p, "%d|\n", N));
    apr_pool_destroy(p);
}

/* Buckets upserted (new and existing) and balances, each once. */
static void test_buckets_balances(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_bucket_delta_t d[2] = { { "user:h", 1, 3600, 50, 0, 1 },
                                 { "key:h", 11, 3600, 7, 7, 2 } };
    apr_int64_t ids[2] = { 2, 1 };
    prov_micro_t amounts[2] = { -25, 40 };
    apr_uint64_t trips;
    apr_pool_create(&p, prov_test_pool());
    s = store_with_users(p);
    CU_ASSERT_EQUAL(prov_store_bill_buckets_add(s, d, 2, p), APR_SUCCESS);   /* no txn */
    CU_ASSERT_EQUAL_FATAL(prov_store_begin(s, p), APR_SUCCESS);
    trips = s->round_trips;
    CU_ASSERT_EQUAL(prov_store_bill_buckets_add(s, d, 2, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_bill_balances_add(s, ids, amounts, 2, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_bill_balances_add(s, ids, amounts, 0, p), APR_SUCCESS);
    if (is_pg(s))
        CU_ASSERT_EQUAL(s->round_trips, trips);
    /* A labelled statement sends the deferred writes first: it sees them. */
    {
        apr_dbd_row_t *row = NULL;
        CU_ASSERT_EQUAL(prov_store_select_one(&row, s, "bill_account", PROV_ARGS("2"), p),
                        APR_SUCCESS);
        CU_ASSERT_EQUAL(row ? prov_store_get_i64(s, row, 0, -1) : -1, 175);
        if (is_pg(s))
            CU_ASSERT_EQUAL(s->round_trips, trips + 1);  /* the writes with the select */
    }
    CU_ASSERT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT scope, scope_id, bucket, credits, "
                                             "plan_credits, requests FROM usage_buckets "
                                             "ORDER BY scope", p),
                           "key:h|11|3600|14|14|4|\nuser:h|1|3600|100|0|2|\n");
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT id, balance FROM users ORDER BY id", p),
                           "1|140|\n2|175|\n");
    apr_pool_destroy(p);
}

/* The billing transaction's start: the accounts (repeated, unsorted)
 * locked with BEGIN in one round trip on PostgreSQL; a batch with none
 * still begins. */
static void test_begin(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    apr_int64_t ids[4] = { 2, 1, 2, 99 };
    apr_uint64_t trips;
    apr_pool_create(&p, prov_test_pool());
    s = store_with_users(p);
    trips = s->round_trips;
    CU_ASSERT_EQUAL_FATAL(prov_store_bill_begin(s, ids, 4, p), APR_SUCCESS);
    CU_ASSERT_TRUE(s->in_txn);
    if (is_pg(s)) {
        CU_ASSERT_TRUE(ids[0] <= ids[1] && ids[1] <= ids[2] && ids[2] <= ids[3]);
        CU_ASSERT_EQUAL(s->round_trips, trips + 1);
        CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT COUNT(*) FROM pg_locks WHERE "
                                                 "locktype = 'transactionid' AND "
                                                 "pid = pg_backend_pid() AND granted", p),
                               "1|\n");
    }
    CU_ASSERT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    CU_ASSERT_FALSE(s->in_txn);
    CU_ASSERT_EQUAL_FATAL(prov_store_bill_begin(s, ids, 0, p), APR_SUCCESS);
    CU_ASSERT_TRUE(s->in_txn);
    prov_store_rollback(s, p);
    CU_ASSERT_FALSE(s->in_txn);
    apr_pool_destroy(p);
}

/* Deferred writes are dropped by a rollback, and a failing one fails the
 * statement it travels with (here the COMMIT, which then rolls back). */
static void test_defer_rollback_and_failure(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_ledger_row_t rows[2];
    apr_int64_t ids[1] = { 1 };
    prov_micro_t amounts[1] = { 5 };
    apr_pool_create(&p, prov_test_pool());
    s = store_with_users(p);
    rows[0] = row_of("req_a", 1, 0, 1);
    rows[1] = row_of("req_a", 1, 0, 2);     /* the same request id twice */
    CU_ASSERT_EQUAL_FATAL(prov_store_begin(s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_bill_ledger_insert(s, rows, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_bill_balances_add(s, ids, amounts, 1, p), APR_SUCCESS);
    prov_store_rollback(s, p);
    CU_ASSERT_PTR_NULL(s->pending);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT COUNT(*) FROM ledger", p), "0|\n");
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT balance FROM users WHERE id = 1", p),
                           "100|\n");

    CU_ASSERT_EQUAL_FATAL(prov_store_begin(s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_bill_balances_add(s, ids, amounts, 1, p), APR_SUCCESS);
    if (is_pg(s)) {
        CU_ASSERT_EQUAL(prov_store_bill_ledger_insert(s, rows, 2, p), APR_SUCCESS);
        CU_ASSERT_NOT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    }
    else {
        CU_ASSERT_NOT_EQUAL(prov_store_bill_ledger_insert(s, rows, 2, p), APR_SUCCESS);
        prov_store_rollback(s, p);
    }
    CU_ASSERT_FALSE(s->in_txn);
    CU_ASSERT_PTR_NULL(s->pending);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT COUNT(*) FROM ledger", p), "0|\n");
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT balance FROM users WHERE id = 1", p),
                           "100|\n");
    /* The connection is usable afterwards. */
    CU_ASSERT_EQUAL(prov_store_bill_begin(s, ids, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_bill_balances_add(s, ids, amounts, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT balance FROM users WHERE id = 1", p),
                           "105|\n");
    apr_pool_destroy(p);
}

/* A labelled write after deferred ones: on PostgreSQL in their string (by
 * EXECUTE, its arguments quoted), with its own row count. */
static void test_exec_after_deferred(void)
{
    apr_pool_t *p = NULL;
    prov_store_t *s;
    apr_int64_t ids[1] = { 1 };
    prov_micro_t amounts[1] = { -30 };
    apr_uint64_t trips;
    int n = -1;
    apr_pool_create(&p, prov_test_pool());
    s = store_with_users(p);
    CU_ASSERT_EQUAL_FATAL(prov_store_begin(s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_exec(s, NULL, "bill_ledger_reserve",
                                    PROV_ARGS("r'1\\", "1", "11", "7", "chat", "30", "balance",
                                              "1700000000", NULL, "5", "sess-1", "claude-code"),
                                    p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_bill_balances_add(s, ids, amounts, 1, p), APR_SUCCESS);
    trips = s->round_trips;
    CU_ASSERT_EQUAL(prov_store_exec(s, &n, "bill_ledger_settle",
                                    PROV_ARGS("1", "2", "0", "0", "20", "20", "ok", "1700000005",
                                              "r'1\\"), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 1);
    n = -1;
    CU_ASSERT_EQUAL(prov_store_exec(s, &n, "bill_ledger_settle",
                                    PROV_ARGS("1", "2", "0", "0", "20", "20", "ok", "1700000005",
                                              "r'1\\"), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 0);                           /* settled already */
    if (is_pg(s))
        CU_ASSERT_EQUAL(s->round_trips, trips + 2);
    CU_ASSERT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT request_id, credits, status, settled_at, "
                                             "floor_credits, owner IS NULL FROM ledger", p),
                           is_pg(s) ? "r'1\\|20|ok|1700000005|5|t|\n"
                                    : "r'1\\|20|ok|1700000005|5|1|\n");
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT agent_session, agent_client FROM ledger", p),
                           "sess-1|claude-code|\n");
    CU_ASSERT_STRING_EQUAL(prov_test_dump(s, "SELECT balance FROM users WHERE id = 1", p),
                           "70|\n");
    apr_pool_destroy(p);
}

void prov_test_suite_store_billing(void)
{
    CU_pSuite s = CU_add_suite("store_billing", NULL, NULL);
    CU_add_test(s, "complete ledger rows, quoted, in order", test_ledger_insert);
    CU_add_test(s, "many complete rows, several to a statement", test_ledger_insert_many);
    CU_add_test(s, "buckets and balances", test_buckets_balances);
    CU_add_test(s, "begin with the account locks", test_begin);
    CU_add_test(s, "deferred writes: rollback and failure", test_defer_rollback_and_failure);
    CU_add_test(s, "a labelled write after deferred ones", test_exec_after_deferred);
}
