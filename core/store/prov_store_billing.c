/* prov_store_billing.c: the billing engine's statements that are built at
 * run time or differ by dialect (see prov_store_billing.h). On PostgreSQL a
 * batch's writes whose outcome it does not read are deferred
 * (prov_store_defer) and travel in one string with the next statement:
 * the transaction's BEGIN with the account row locks (one SELECT in id
 * order), the complete ledger rows (one INSERT from arrays), and at the
 * end every bucket (one upsert) and balance (one UPDATE) with the COMMIT.
 * SQLite runs prepared statements: a row's numbers bound as integers, the
 * ledger's rows up to 64 to a statement. */
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
    return prov_store_defer(s, sql, p);
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

/* The ledger's columns written whole, in the order of the statements'
 * values (bill_ledger_complete*) and of the arrays below. */
#define LEDGER_COLUMNS 18

/* Rows [0, k) of e in one statement of k rows (SQLite): k is one of the
 * sizes of bill_ledger_complete*. */
static apr_status_t insert_rows(prov_store_t *s, const prov_ledger_row_t *e, int k,
                                const char *label, apr_pool_t *p)
{
    const void **args = apr_palloc(p, sizeof(*args) * LEDGER_COLUMNS * (apr_size_t)k);
    apr_int64_t *plan = apr_palloc(p, sizeof(*plan) * (apr_size_t)k);
    int i;
    for (i = 0; i < k; i++, e++) {
        const void **a = args + LEDGER_COLUMNS * i;
        plan[i] = e->from_plan ? e->charge : 0;
        a[0] = e->request_id;
        a[1] = &e->user_id;
        a[2] = &e->key_id;
        a[3] = &e->model_id;
        a[4] = e->transport;
        a[5] = &e->tokens.input;
        a[6] = &e->tokens.output;
        a[7] = &e->tokens.cache;
        a[8] = &e->tokens.reasoning;
        a[9] = &e->hold;
        a[10] = &e->charge;
        a[11] = &plan[i];
        a[12] = source_of(e->from_plan);
        a[13] = prov_ledger_status_name(e->status);
        a[14] = &e->created_at;
        a[15] = &e->settled_at;
        a[16] = e->session;         /* NULL: SQL NULL */
        a[17] = prov_ledger_client_name(e->session ? e->client : PROV_CLIENT_NONE);
    }
    return prov_store_exec_bin(s, label, args, p);
}

/* SQLite: the rows in order, as many as fit into the biggest statement
 * first (64, 16, 4, then one at a time). */
static apr_status_t insert_sqlite(prov_store_t *s, const prov_ledger_row_t *rows, int n,
                                  apr_pool_t *p)
{
    static const struct { int k; const char *label; } sizes[] = {
        { 64, "bill_ledger_complete64" }, { 16, "bill_ledger_complete16" },
        { 4, "bill_ledger_complete4" }, { 1, "bill_ledger_complete" } };
    apr_status_t rv = APR_SUCCESS;
    int i = 0, z = 0;
    while (i < n && rv == APR_SUCCESS) {
        while (n - i < sizes[z].k)
            z++;
        rv = insert_rows(s, rows + i, sizes[z].k, sizes[z].label, p);
        i += sizes[z].k;
    }
    return rv;
}

/* A text value as an element of an array literal: double-quoted, with
 * backslash before '"' and '\' (the literal is then quoted for SQL); NULL
 * is the array's NULL. */
static const char *array_text(const char *v, apr_pool_t *p)
{
    apr_size_t n = 0;
    const char *c;
    char *out, *o;
    if (!v)
        return "NULL";
    for (c = v; *c; c++)
        n += (*c == '"' || *c == '\\') ? 2 : 1;
    o = out = apr_palloc(p, n + 3);
    *o++ = '"';
    for (c = v; *c; c++) {
        if (*c == '"' || *c == '\\')
            *o++ = '\\';
        *o++ = *c;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

/* Column c of a ledger row as an array element. */
static const char *ledger_value(const prov_ledger_row_t *e, int c, apr_pool_t *p)
{
    const apr_int64_t v[LEDGER_COLUMNS] = {
        0, e->user_id, e->key_id, e->model_id, 0, e->tokens.input, e->tokens.output,
        e->tokens.cache, e->tokens.reasoning, e->hold, e->charge,
        e->from_plan ? e->charge : 0, 0, 0, e->created_at, e->settled_at, 0, 0 };
    switch (c) {
    case 0: return array_text(e->request_id, p);
    case 4: return array_text(e->transport, p);
    case 12: return array_text(source_of(e->from_plan), p);
    case 13: return array_text(prov_ledger_status_name(e->status), p);
    case 16: return array_text(e->session, p);
    case 17: return array_text(prov_ledger_client_name(e->session ? e->client
                                                                  : PROV_CLIENT_NONE), p);
    default: return apr_psprintf(p, "%" APR_INT64_T_FMT, v[c]);
    }
}

/* All n rows in one INSERT: one array a column, unnested in order (an
 * array literal is parsed faster than as many SQL constants). */
static const char *insert_unnest(prov_store_t *s, const prov_ledger_row_t *rows, int n,
                                 apr_pool_t *p)
{
    static const char *const types[LEDGER_COLUMNS] = {
        "text", "bigint", "bigint", "bigint", "text", "bigint", "bigint", "bigint", "bigint",
        "bigint", "bigint", "bigint", "text", "text", "bigint", "bigint", "text", "text" };
    apr_array_header_t *parts = apr_array_make(p, 4 * LEDGER_COLUMNS + 2, sizeof(char *));
    apr_array_header_t *elts = apr_array_make(p, 2 * n, sizeof(char *));
    int c, i;
    APR_ARRAY_PUSH(parts, const char *) =
        "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens, "
        "output_tokens, cache_tokens, reasoning_tokens, reserved, credits, plan_credits, "
        "source, status, created_at, settled_at, agent_session, agent_client) "
        "SELECT * FROM unnest(";
    for (c = 0; c < LEDGER_COLUMNS; c++) {
        elts->nelts = 0;
        for (i = 0; i < n; i++) {
            APR_ARRAY_PUSH(elts, const char *) = i ? "," : "{";
            APR_ARRAY_PUSH(elts, const char *) = ledger_value(&rows[i], c, p);
        }
        APR_ARRAY_PUSH(elts, const char *) = "}";
        APR_ARRAY_PUSH(parts, const char *) = c ? ", " : "";
        APR_ARRAY_PUSH(parts, const char *) = quoted(s, apr_array_pstrcat(p, elts, 0), p);
        APR_ARRAY_PUSH(parts, const char *) = "::";
        APR_ARRAY_PUSH(parts, const char *) = types[c];
        APR_ARRAY_PUSH(parts, const char *) = "[]";
    }
    APR_ARRAY_PUSH(parts, const char *) = ")";
    return apr_array_pstrcat(p, parts, 0);
}

apr_status_t prov_store_bill_ledger_insert(prov_store_t *s, const prov_ledger_row_t *rows, int n,
                                           apr_pool_t *p)
{
    if (s->dialect == PROV_DIALECT_SQLITE)
        return insert_sqlite(s, rows, n, p);
    return n ? prov_store_defer(s, insert_unnest(s, rows, n, p), p) : APR_SUCCESS;
}

apr_status_t prov_store_bill_balances_add(prov_store_t *s, const apr_int64_t *ids,
                                          const prov_micro_t *amounts, int n, apr_pool_t *p)
{
    apr_array_header_t *rows;
    apr_status_t rv = APR_SUCCESS;
    int i;
    if (s->dialect == PROV_DIALECT_SQLITE) {
        for (i = 0; i < n && rv == APR_SUCCESS; i++)
            rv = prov_store_exec(s, NULL, "bill_balance_add",
                                 PROV_ARGS(prov_i64(amounts[i], p), prov_i64(ids[i], p)), p);
        return rv;
    }
    if (!n)
        return APR_SUCCESS;
    rows = apr_array_make(p, n, sizeof(const char *));
    for (i = 0; i < n; i++)
        APR_ARRAY_PUSH(rows, const char *) = apr_psprintf(p,
            i ? ", (%" APR_INT64_T_FMT ", %" APR_INT64_T_FMT ")"
              : "(%" APR_INT64_T_FMT "::bigint, %" APR_INT64_T_FMT "::bigint)",
            ids[i], amounts[i]);
    return prov_store_defer(s, apr_pstrcat(p,
        "UPDATE users SET balance = users.balance + v.d FROM (VALUES ",
        apr_array_pstrcat(p, rows, 0), ") AS v(id, d) WHERE users.id = v.id", NULL), p);
}

static int cmp_i64(const void *x, const void *y)
{
    apr_int64_t a = *(const apr_int64_t *)x, c = *(const apr_int64_t *)y;
    return a < c ? -1 : a > c;
}

apr_status_t prov_store_bill_begin(prov_store_t *s, apr_int64_t *ids, int n, apr_pool_t *p)
{
    apr_array_header_t *list;
    int i;
    if (s->dialect != PROV_DIALECT_PGSQL || !n)
        return prov_store_begin(s, p);
    qsort(ids, n, sizeof(*ids), cmp_i64);
    list = apr_array_make(p, n, sizeof(const char *));
    for (i = 0; i < n; i++) {
        if (!i || ids[i] != ids[i - 1])
            APR_ARRAY_PUSH(list, const char *) = apr_psprintf(p, "%s%" APR_INT64_T_FMT,
                                                              i ? ", " : "", ids[i]);
    }
    /* Locked as the sorted rows come out: in id order. */
    return prov_store_begin_with(s, apr_pstrcat(p, "SELECT id FROM users WHERE id IN (",
                                                apr_array_pstrcat(p, list, 0),
                                                ") ORDER BY id FOR UPDATE", NULL), p);
}
