/* prov_store_billing.c: the billing engine's statements that are built at
 * run time or differ by dialect (see prov_store_billing.h): the one upsert
 * of a batch's bucket changes, complete ledger rows many to a statement on
 * PostgreSQL, and the account row locks in id order. */
#include <stdlib.h>
#include "prov_store_billing.h"

apr_status_t prov_store_bill_buckets_add(prov_store_t *s, const prov_bucket_delta_t *d, int n,
                                         apr_pool_t *p)
{
    apr_array_header_t *rows;
    const char *sql;
    int i;
    if (!n)
        return APR_SUCCESS;
    if (s->dialect == PROV_DIALECT_SQLITE) {
        apr_status_t rv = APR_SUCCESS;
        for (i = 0; i < n && rv == APR_SUCCESS; i++) {
            const void *args[] = { d[i].scope, &d[i].id, &d[i].bucket, &d[i].credits,
                                   &d[i].plan, &d[i].requests };
            rv = prov_store_exec_bin(s, "bill_bucket_add", args, p);
        }
        return rv;
    }
    /* Every bucket in one statement (a round trip counts on PostgreSQL). */
    rows = apr_array_make(p, n, sizeof(const char *));
    for (i = 0; i < n; i++) {
        APR_ARRAY_PUSH(rows, const char *) = apr_psprintf(p,
            "%s('%s', %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %"
            APR_INT64_T_FMT ", %" APR_INT64_T_FMT ")", i ? ", " : "", d[i].scope,
            d[i].id, d[i].bucket, d[i].credits, d[i].plan, d[i].requests);
    }
    sql = apr_pstrcat(p,
        "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, "
        "requests) VALUES ", apr_array_pstrcat(p, rows, 0),
        " ON CONFLICT (scope, scope_id, bucket) DO UPDATE SET "
        "credits = usage_buckets.credits + excluded.credits, "
        "plan_credits = usage_buckets.plan_credits + excluded.plan_credits, "
        "requests = usage_buckets.requests + excluded.requests", NULL);
    return prov_store_raw(s, sql, p);
}

static const char *source_of(int from_plan)
{
    return from_plan ? "plan" : "balance";
}

/* A text value quoted for SQL. */
static const char *quoted(prov_store_t *s, const char *v, apr_pool_t *p)
{
    return apr_pstrcat(p, "'", apr_dbd_escape(s->driver, p, v, s->handle), "'", NULL);
}

static apr_status_t insert_one(prov_store_t *s, const prov_ledger_row_t *e, apr_pool_t *p)
{
    apr_int64_t plan = e->from_plan ? e->charge : 0;
    const void *args[] = { e->request_id, &e->user_id, &e->key_id, &e->model_id, e->transport,
                           &e->tokens.input, &e->tokens.output, &e->tokens.cache,
                           &e->tokens.reasoning, &e->hold, &e->charge, &plan,
                           source_of(e->from_plan), e->status, &e->created_at,
                           &e->settled_at };
    return prov_store_exec_bin(s, "bill_ledger_complete", args, p);
}

/* Up to PROV_STORE_ROWS_PER_INSERT rows from rows[0] in one statement. */
static apr_status_t insert_many(prov_store_t *s, const prov_ledger_row_t *rows, int n,
                                apr_pool_t *p)
{
    static const char head[] =
        "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens, "
        "output_tokens, cache_tokens, reasoning_tokens, reserved, credits, plan_credits, "
        "source, status, created_at, settled_at) VALUES ";
    apr_array_header_t *parts = apr_array_make(p, 2 * PROV_STORE_ROWS_PER_INSERT + 1,
                                               sizeof(char *));
    int i;
    APR_ARRAY_PUSH(parts, const char *) = head;
    for (i = 0; i < n && i < PROV_STORE_ROWS_PER_INSERT; i++) {
        const prov_ledger_row_t *e = &rows[i];
        if (i)
            APR_ARRAY_PUSH(parts, const char *) = ", ";
        APR_ARRAY_PUSH(parts, const char *) = apr_psprintf(p,
            "(%s, %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %s, %"
            APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT
            ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ", %s, %s, %"
            APR_INT64_T_FMT ", %" APR_INT64_T_FMT ")",
            quoted(s, e->request_id, p), e->user_id, e->key_id, e->model_id,
            quoted(s, e->transport, p), e->tokens.input, e->tokens.output, e->tokens.cache,
            e->tokens.reasoning, e->hold, e->charge, e->from_plan ? e->charge : 0,
            quoted(s, source_of(e->from_plan), p), quoted(s, e->status, p), e->created_at,
            e->settled_at);
    }
    return prov_store_raw(s, apr_array_pstrcat(p, parts, 0), p);
}

apr_status_t prov_store_bill_ledger_insert(prov_store_t *s, const prov_ledger_row_t *rows, int n,
                                           apr_pool_t *p)
{
    apr_status_t rv = APR_SUCCESS;
    int i;
    if (s->dialect == PROV_DIALECT_SQLITE) {
        for (i = 0; i < n && rv == APR_SUCCESS; i++)
            rv = insert_one(s, &rows[i], p);
        return rv;
    }
    for (i = 0; i < n && rv == APR_SUCCESS; i += PROV_STORE_ROWS_PER_INSERT)
        rv = insert_many(s, rows + i, n - i, p);
    return rv;
}

static int cmp_i64(const void *x, const void *y)
{
    apr_int64_t a = *(const apr_int64_t *)x, c = *(const apr_int64_t *)y;
    return a < c ? -1 : a > c;
}

apr_status_t prov_store_bill_lock_accounts(prov_store_t *s, apr_int64_t *ids, int n,
                                           apr_pool_t *p)
{
    int i;
    if (s->dialect != PROV_DIALECT_PGSQL)
        return APR_SUCCESS;
    qsort(ids, n, sizeof(*ids), cmp_i64);
    for (i = 0; i < n; i++) {
        apr_dbd_results_t *res = NULL;
        apr_dbd_row_t *row = NULL;
        apr_status_t rv;
        if (i && ids[i] == ids[i - 1])
            continue;
        rv = prov_store_select(s, &res, "bill_account", PROV_ARGS(prov_i64(ids[i], p)), p);
        if (rv != APR_SUCCESS)
            return rv;
        while (prov_store_row(s, res, &row, p) == APR_SUCCESS)
            ;
    }
    return APR_SUCCESS;
}
