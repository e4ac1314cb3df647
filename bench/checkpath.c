/* checkpath.c: the billing check path's cost as the ledger grows (issue 3's
 * "flat as the ledger grows"). It makes a fresh database (SQLite by default,
 * or any DRIVER:PARAMS), an account with a plan, a balance and a key with a
 * weekly budget, fills the ledger with N settled rows spread over the last
 * seven days (and the usage buckets the engine keeps for them), then times
 * reservations and settlements through libprovider's engine, and the check
 * alone (the window reads a reservation makes). Prints one line per run.
 *
 *   bench/checkpath [--db DRIVER:PARAMS] [--rows N] [--iterations K] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_time.h>
#include "prov_account.h"
#include "prov_billing_int.h"
#include "prov_models.h"
#include "prov_plans.h"

static void die(const char *what)
{
    fprintf(stderr, "checkpath: %s failed\n", what);
    exit(1);
}

/* N ledger rows spread evenly over the last week (so that every bucket of
 * every window has usage, whatever N), then the buckets the engine derives. */
static void fill(prov_store_t *s, apr_int64_t user, apr_int64_t key, apr_int64_t model,
                 long rows, apr_int64_t now, apr_pool_t *p)
{
    const char *ins = apr_psprintf(p,
        "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens, "
        "output_tokens, reserved, credits, plan_credits, source, status, created_at, "
        "settled_at) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
        "WHERE x < %ld) SELECT 'fill-' || x, %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %"
        APR_INT64_T_FMT ", 'chat', 10, 20, 0, 1, 0, 'balance', 'ok', %" APR_INT64_T_FMT
        " - (CAST(x AS BIGINT) * 604000 / %ld), %" APR_INT64_T_FMT
        " - (CAST(x AS BIGINT) * 604000 / %ld) FROM c",
        rows, user, key, model, now, rows, now, rows);
    static const char *const buckets[] = {
        "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests) "
        "SELECT 'key:h', key_id, created_at - created_at % 3600, SUM(credits), "
        "SUM(plan_credits), COUNT(*) FROM ledger GROUP BY key_id, created_at - created_at % 3600",
        "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests) "
        "SELECT 'user:h', user_id, created_at - created_at % 3600, SUM(credits), "
        "SUM(plan_credits), COUNT(*) FROM ledger GROUP BY user_id, created_at - created_at % 3600",
        "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests) "
        "SELECT 'user:m', user_id, created_at - created_at % 300, SUM(credits), "
        "SUM(plan_credits), COUNT(*) FROM ledger GROUP BY user_id, created_at - created_at % 300",
        NULL
    };
    int i;
    if (rows <= 0)
        return;
    if (prov_store_begin(s, p) || prov_store_raw(s, ins, p))
        die("filling the ledger");
    for (i = 0; buckets[i]; i++) {
        if (prov_store_raw(s, buckets[i], p))
            die("filling the buckets");
    }
    if (prov_store_commit(s, p))
        die("committing the fill");
    /* A ledger grown one request at a time has had its WAL checkpointed all
     * along; one written in a single transaction has not. */
    if (s->dialect == PROV_DIALECT_SQLITE) {
        apr_dbd_results_t *res = NULL;
        apr_dbd_row_t *row = NULL;
        if (apr_dbd_select(s->driver, p, s->handle, &res, "PRAGMA wal_checkpoint(TRUNCATE)", 1))
            die("the checkpoint");
        while (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
            ;
    }
}

/* What the run is told: the database and the sizes. */
typedef struct {
    const char *spec;
    long rows, iterations;
} opts_t;

/* The account a run reserves for: a user with a balance, a plan and a key. */
typedef struct {
    prov_user_t *u;
    prov_key_t *k;
    prov_model_t *m;
    prov_auth_t *a;
} account_t;

static int parse_args(opts_t *o, int argc, const char *const *argv)
{
    int i;
    o->spec = "sqlite3:/tmp/checkpath.db";
    o->rows = 0;
    o->iterations = 2000;
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--db") && i + 1 < argc)
            o->spec = argv[++i];
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            o->rows = atol(argv[++i]);
        else if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
            o->iterations = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: checkpath [--db DRIVER:PARAMS] [--rows N] "
                    "[--iterations K]\n");
            return -1;
        }
    }
    return 0;
}

/* A fresh database with the schema, set up as the shipped configuration has it. */
static prov_store_t *open_db(const char *spec, apr_pool_t *p)
{
    prov_store_t *s;
    int applied;
    if (!strncmp(spec, "sqlite3:", 8)) {
        remove(spec + 8);
        remove(apr_pstrcat(p, spec + 8, "-wal", NULL));
        remove(apr_pstrcat(p, spec + 8, "-shm", NULL));
    }
    if (prov_store_open(&s, spec, 0, p) || prov_schema_migrate(&applied, s, p)
        || prov_store_prepare_all(s))
        die("opening the database (PostgreSQL wants an empty database)");
    if (s->dialect == PROV_DIALECT_SQLITE) {
        /* As the shipped httpd configuration has it; a larger page cache is
         * what an operator with a large ledger would add (DBDInitSQL). */
        prov_store_raw(s, "PRAGMA synchronous = NORMAL", p);
        if (getenv("CHECKPATH_CACHE_KB"))
            prov_store_raw(s, apr_psprintf(p, "PRAGMA cache_size = -%s",
                                           getenv("CHECKPATH_CACHE_KB")), p);
    }
    return s;
}

static void make_account(account_t *acc, prov_store_t *s, long rows, apr_int64_t now,
                         apr_pool_t *p)
{
    prov_plan_t *plan;
    prov_subscription_t *sub;
    const char *secret;
    if (prov_user_add(&acc->u, s, "bench@example.com", NULL, p)
        || prov_balance_add(NULL, s, acc->u->id,
                            APR_INT64_C(1000000000) * PROV_MICRO_PER_CREDIT, "bench", p)
        || prov_key_create(&acc->k, &secret, s, acc->u->id, "bench", 1,
                           APR_INT64_C(1000000000) * PROV_MICRO_PER_CREDIT, p)
        || prov_model_add(&acc->m, s, "bench-model", "bench-model", NULL, NULL, p)
        || prov_plan_add(&plan, s, "bench", APR_INT64_C(1000) * PROV_MICRO_PER_CREDIT,
                         APR_INT64_C(1000000000) * PROV_MICRO_PER_CREDIT, p)
        || prov_subscription_set(&sub, s, acc->u->id, plan->id, 0, now - 1, p))
        die("making the account");
    fill(s, acc->u->id, acc->k->id, acc->m->id, rows, now, p);
    if (prov_auth_lookup(&acc->a, s, secret, p))
        die("looking the key up");
}

/* Reservations and settlements through the engine: their total times. */
static void time_engine(apr_time_t *t_res, apr_time_t *t_set, prov_store_source_t *src,
                        const account_t *acc, long iterations, apr_int64_t now, apr_pool_t *p)
{
    long i;
    for (i = 0; i < iterations; i++) {
        prov_reservation_t *r = NULL;
        prov_error_t *e = NULL;
        prov_tokens_t t = { 10, 20, 0, 0 };
        apr_time_t t0, t1;
        apr_pool_t *it;
        apr_pool_create(&it, p);
        t0 = apr_time_now();
        if (prov_billing_reserve(&r, &e, src, acc->a, acc->m->id, "chat",
                                 apr_psprintf(it, "bench-%ld", i), 100, now, it) || !r)
            die("a reservation");
        t1 = apr_time_now();
        if (prov_billing_settle(src, r, &t, 30, PROV_STATUS_OK, now, it))
            die("a settlement");
        *t_res += t1 - t0;
        *t_set += apr_time_now() - t1;
        apr_pool_destroy(it);
    }
}

/* The check alone: the windows a reservation reads (the key's week, the
 * plan's 5 hours and 7 days, the balance), without the writes. */
static apr_time_t time_check(prov_store_t *s, const account_t *acc, long iterations,
                             apr_int64_t now, apr_pool_t *p)
{
    apr_time_t total = 0;
    long i;
    for (i = 0; i < iterations; i++) {
        prov_plan_windows_t pw;
        prov_window_t w5, w7, wk;
        apr_dbd_row_t *row = NULL;
        apr_time_t t0;
        apr_pool_t *it;
        apr_pool_create(&it, p);
        t0 = apr_time_now();
        if (prov_store_select_one(&row, s, "bill_account", PROV_ARGS(prov_i64(acc->u->id, it)),
                                  it)
            || prov_store_select_one(&row, s, "bill_key", PROV_ARGS(prov_i64(acc->k->id, it)),
                                     it)
            || prov_window_plan(&pw, &w5, &w7, s, acc->u->id, now, it)
            || prov_window_sum(&wk, s, "key:h", acc->k->id, PROV_BUCKET_HOUR, PROV_WINDOW_7D,
                               0, now, it))
            die("a check");
        total += apr_time_now() - t0;
        apr_pool_destroy(it);
    }
    return total;
}

int main(int argc, const char *const *argv)
{
    opts_t o;
    apr_pool_t *p;
    prov_store_t *s;
    account_t acc;
    apr_int64_t now;
    apr_time_t t_res = 0, t_set = 0, t_chk;

    if (parse_args(&o, argc, argv))
        return 2;
    apr_app_initialize(&argc, &argv, NULL);
    apr_pool_create(&p, NULL);
    s = open_db(o.spec, p);
    now = prov_now();
    make_account(&acc, s, o.rows, now, p);
    time_engine(&t_res, &t_set, prov_store_source_fixed(s, p), &acc, o.iterations, now, p);
    t_chk = time_check(s, &acc, o.iterations, now, p);
    printf("%-8s ledger rows %8ld: check %6.1f us, reservation %6.1f us, settlement "
           "%6.1f us (means of %ld)\n", s->dialect == PROV_DIALECT_SQLITE ? "sqlite3" : "pgsql",
           o.rows, t_chk / (double)o.iterations, t_res / (double)o.iterations,
           t_set / (double)o.iterations, o.iterations);
    return 0;
}
