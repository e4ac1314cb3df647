/* prov_usage_session.c: usage by agent session (prov_usage.h;
 * docs/internals/billing.md, "Agent sessions"), read from the ledger's
 * rows, which carry the session a coding agent named (ledger.agent_session
 * and agent_client, written with the row). Not from any rollup: a session
 * spans minutes to days, and its rows are kept as long as the ledger's.
 * One statement (usage_by_session): the sums, the first and last request
 * and the models as one comma-separated text, split and sorted here. */
#include <stdlib.h>
#include <string.h>
#include "prov_usage.h"

static int by_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The models' comma-separated text as a sorted array. */
static apr_array_header_t *model_list(const char *text, apr_pool_t *p)
{
    apr_array_header_t *a = apr_array_make(p, 2, sizeof(const char *));
    char *copy = apr_pstrdup(p, text ? text : ""), *last = NULL, *m;
    for (m = apr_strtok(copy, ",", &last); m; m = apr_strtok(NULL, ",", &last))
        APR_ARRAY_PUSH(a, const char *) = m;
    qsort(a->elts, (size_t)a->nelts, sizeof(const char *), by_text);
    return a;
}

static prov_usage_session_t *session_from_row(prov_store_t *s, apr_dbd_row_t *row,
                                              apr_pool_t *p)
{
    prov_usage_session_t *u = apr_pcalloc(p, sizeof(*u));
    const char *v;
    u->sums.group = apr_pstrdup(p, (v = prov_store_get(s, row, 0)) ? v : "");
    u->client = apr_pstrdup(p, (v = prov_store_get(s, row, 1)) ? v : "other");
    u->user_id = prov_store_get_i64(s, row, 2, 0);
    u->key_id = prov_store_get_i64(s, row, 3, 0);
    u->first_at = prov_store_get_i64(s, row, 4, 0);
    u->last_at = prov_store_get_i64(s, row, 5, 0);
    u->sums.requests = prov_store_get_i64(s, row, 6, 0);
    u->sums.tokens.input = prov_store_get_i64(s, row, 7, 0);
    u->sums.tokens.output = prov_store_get_i64(s, row, 8, 0);
    u->sums.tokens.cache = prov_store_get_i64(s, row, 9, 0);
    u->sums.tokens.reasoning = prov_store_get_i64(s, row, 10, 0);
    u->sums.credits = prov_store_get_i64(s, row, 11, 0);
    u->models = model_list(prov_store_get(s, row, 12), p);
    return u;
}

apr_status_t prov_usage_sessions(apr_array_header_t **rows, prov_store_t *s,
                                 const prov_usage_filter_t *f, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *arr;
    apr_status_t rv = prov_usage_select(&res, s, "usage_by_session", f, p);

    if (rv != APR_SUCCESS)
        return rv;
    arr = apr_array_make(p, 8, sizeof(prov_usage_session_t *));
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        if (arr->nelts < PROV_USAGE_SESSIONS_MAX)
            APR_ARRAY_PUSH(arr, prov_usage_session_t *) = session_from_row(s, row, p);
    }
    if (rv != APR_EOF)
        return rv;
    *rows = arr;
    return APR_SUCCESS;
}

json_object *prov_usage_session_fields(json_object *o, const prov_usage_session_t *u)
{
    json_object *models = json_object_new_array();
    int i;
    for (i = 0; i < u->models->nelts; i++)
        json_object_array_add(models,
                              json_object_new_string(APR_ARRAY_IDX(u->models, i, const char *)));
    json_object_object_add(o, "session", json_object_new_string(u->sums.group));
    json_object_object_add(o, "client", json_object_new_string(u->client));
    json_object_object_add(o, "models", models);
    return prov_usage_fields(o, &u->sums);
}
