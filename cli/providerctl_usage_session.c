/* providerctl_usage_session.c: `usage report --by session`: the ledger's
 * rows grouped by the agent session that a coding agent named (Claude
 * Code's x-claude-code-session-id, Codex's session-id; see
 * docs/internals/billing.md, "Agent sessions"): the session, the client
 * that sent it, its user and key, the models it used, its first and last
 * request, and the sums, the latest session first (at most
 * PROV_USAGE_SESSIONS_MAX), then the total of the rows listed; as a table,
 * CSV or JSON, like the other groupings (providerctl_usage.c). */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"
#include "prov_usage.h"

static const char *models_text(const prov_usage_session_t *u, apr_pool_t *p)
{
    return u->models->nelts ? apr_array_pstrcat(p, u->models, ' ') : "-";
}

/* The row's cells: session, client, user, key, models, first, last, then
 * requests, the four token kinds and credits (CSV: times in ISO). */
static const char **cells(const prov_usage_session_t *u, int iso, apr_pool_t *p)
{
    const char **c = apr_palloc(p, 13 * sizeof(*c));
    c[0] = u->sums.group;
    c[1] = u->client;
    c[2] = prov_i64(u->user_id, p);
    c[3] = prov_i64(u->key_id, p);
    c[4] = models_text(u, p);
    c[5] = ctl_time(u->first_at, iso, p);
    c[6] = ctl_time(u->last_at, iso, p);
    c[7] = prov_i64(u->sums.requests, p);
    c[8] = prov_i64(u->sums.tokens.input, p);
    c[9] = prov_i64(u->sums.tokens.output, p);
    c[10] = prov_i64(u->sums.tokens.cache, p);
    c[11] = prov_i64(u->sums.tokens.reasoning, p);
    c[12] = prov_money_format(u->sums.credits, p);
    return c;
}

static void total_add(prov_usage_session_t *t, const prov_usage_session_t *u)
{
    t->sums.requests = prov_i64_add_sat(t->sums.requests, u->sums.requests);
    t->sums.tokens.input = prov_i64_add_sat(t->sums.tokens.input, u->sums.tokens.input);
    t->sums.tokens.output = prov_i64_add_sat(t->sums.tokens.output, u->sums.tokens.output);
    t->sums.tokens.cache = prov_i64_add_sat(t->sums.tokens.cache, u->sums.tokens.cache);
    t->sums.tokens.reasoning = prov_i64_add_sat(t->sums.tokens.reasoning,
                                                u->sums.tokens.reasoning);
    t->sums.credits = prov_i64_add_sat(t->sums.credits, u->sums.credits);
}

static void print_json(json_object *o, apr_array_header_t *rows,
                       const prov_usage_session_t *total)
{
    json_object *arr = json_object_new_array();
    int i;
    for (i = 0; i < rows->nelts; i++) {
        const prov_usage_session_t *u = APR_ARRAY_IDX(rows, i, prov_usage_session_t *);
        json_object *x = json_object_new_object();
        json_object_object_add(x, "user_id", json_object_new_int64(u->user_id));
        json_object_object_add(x, "key_id", json_object_new_int64(u->key_id));
        json_object_object_add(x, "first_request_at", ctl_json_time(u->first_at));
        json_object_object_add(x, "last_request_at", ctl_json_time(u->last_at));
        json_object_array_add(arr, prov_usage_session_fields(x, u));
    }
    json_object_object_add(o, "rows", arr);
    json_object_object_add(o, "total", prov_usage_fields(json_object_new_object(), &total->sums));
    ctl_json_print(o);
}

int ctl_usage_sessions(ctl_t *ctl, const prov_usage_filter_t *f, json_object *head,
                       const char *format)
{
    apr_array_header_t *rows = NULL;
    prov_usage_session_t total;
    ctl_table_t *t;
    apr_status_t rv = prov_usage_sessions(&rows, ctl->store, f, ctl->pool);
    int i, j, csv = !strcmp(format, "csv");

    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the usage");
    memset(&total, 0, sizeof(total));
    total.sums.group = "total";
    for (i = 0; i < rows->nelts; i++)
        total_add(&total, APR_ARRAY_IDX(rows, i, prov_usage_session_t *));
    if (!strcmp(format, "json")) {
        print_json(head, rows, &total);
        return CTL_OK;
    }
    t = ctl_table_make(ctl->pool, 13, "SESSION", "CLIENT", "USER", "KEY", "MODELS", "FIRST",
                       "LAST", "REQUESTS", "INPUT", "OUTPUT", "CACHE", "REASONING", "CREDITS");
    if (csv)
        printf("session,client,user_id,key_id,models,first_request_at,last_request_at,"
               "requests,input_tokens,output_tokens,cache_tokens,reasoning_tokens,credits\n");
    for (i = 0; i < rows->nelts; i++) {
        /* Session ids are token characters (no comma or quote), models
         * public ids joined by spaces: no quoting. */
        const char **c = cells(APR_ARRAY_IDX(rows, i, prov_usage_session_t *), csv, ctl->pool);
        for (j = 0; csv && j < 13; j++)
            printf("%s%s", c[j], j < 12 ? "," : "\n");
        if (!csv)
            ctl_table_row(t, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9],
                          c[10], c[11], c[12]);
    }
    if (csv) {
        printf("total,,,,,,,%s,%s,%s,%s,%s,%s\n", prov_i64(total.sums.requests, ctl->pool),
               prov_i64(total.sums.tokens.input, ctl->pool),
               prov_i64(total.sums.tokens.output, ctl->pool),
               prov_i64(total.sums.tokens.cache, ctl->pool),
               prov_i64(total.sums.tokens.reasoning, ctl->pool),
               prov_money_format(total.sums.credits, ctl->pool));
        return CTL_OK;
    }
    if (rows->nelts)
        ctl_table_row(t, "total", NULL, NULL, NULL, NULL, NULL, NULL,
                      prov_i64(total.sums.requests, ctl->pool),
                      prov_i64(total.sums.tokens.input, ctl->pool),
                      prov_i64(total.sums.tokens.output, ctl->pool),
                      prov_i64(total.sums.tokens.cache, ctl->pool),
                      prov_i64(total.sums.tokens.reasoning, ctl->pool),
                      prov_money_format(total.sums.credits, ctl->pool));
    ctl_table_print(t, "no agent sessions");
    return CTL_OK;
}
