/* providerctl_usage.c: the `usage` group (`usage report`: requests, the four
 * token kinds and credits from the ledger, filtered by user, key, model and a
 * time range, grouped by day, key or model, as an aligned table, CSV or JSON,
 * with a total; by agent session in providerctl_usage_session.c). T in --since and --until is YYYY-MM-DD at 00:00 UTC,
 * YYYY-MM-DDTHH:MM[:SS]Z or epoch seconds (ctl_parse_time). */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"
#include "prov_usage.h"

/* ---- usage report -------------------------------------------------------- */

static const char *const by_names[] = { "none", "day", "key", "model", "session" };
static const char *const table_heads[] = { "", "DAY (UTC)", "KEY", "MODEL" };

static void add_row(prov_usage_row_t *total, const prov_usage_row_t *r)
{
    total->requests = prov_i64_add_sat(total->requests, r->requests);
    total->tokens.input = prov_i64_add_sat(total->tokens.input, r->tokens.input);
    total->tokens.output = prov_i64_add_sat(total->tokens.output, r->tokens.output);
    total->tokens.cache = prov_i64_add_sat(total->tokens.cache, r->tokens.cache);
    total->tokens.reasoning = prov_i64_add_sat(total->tokens.reasoning, r->tokens.reasoning);
    total->credits = prov_i64_add_sat(total->credits, r->credits);
}

static const char *const *cells(const prov_usage_row_t *r, apr_pool_t *p)
{
    const char **c = apr_palloc(p, 7 * sizeof(*c));
    c[0] = r->group;
    c[1] = prov_i64(r->requests, p);
    c[2] = prov_i64(r->tokens.input, p);
    c[3] = prov_i64(r->tokens.output, p);
    c[4] = prov_i64(r->tokens.cache, p);
    c[5] = prov_i64(r->tokens.reasoning, p);
    c[6] = prov_money_format(r->credits, p);
    return c;
}

static void print_csv(const char *head, apr_array_header_t *rows, const prov_usage_row_t *total,
                      apr_pool_t *p)
{
    int i, j;
    printf("%s,requests,input_tokens,output_tokens,cache_tokens,reasoning_tokens,credits\n",
           head);
    for (i = 0; i <= rows->nelts; i++) {
        const prov_usage_row_t *r = i < rows->nelts ? APR_ARRAY_IDX(rows, i, prov_usage_row_t *)
                                                    : total;
        const char *const *c = cells(r, p);
        /* Groups are dates, key ids or model ids ([A-Za-z0-9._:/-]): no quoting. */
        for (j = 0; j < 7; j++)
            printf("%s%s", c[j], j < 6 ? "," : "\n");
    }
}

static void print_table(const char *head, apr_array_header_t *rows,
                        const prov_usage_row_t *total, apr_pool_t *p)
{
    ctl_table_t *t = ctl_table_make(p, 7, head, "REQUESTS", "INPUT", "OUTPUT", "CACHE",
                                    "REASONING", "CREDITS");
    int i;
    for (i = 0; i <= rows->nelts; i++) {
        const prov_usage_row_t *r = i < rows->nelts ? APR_ARRAY_IDX(rows, i, prov_usage_row_t *)
                                                    : total;
        const char *const *c = cells(r, p);
        ctl_table_row(t, c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
    }
    ctl_table_print(t, "no usage");
}

json_object *ctl_usage_json(const struct prov_usage_filter_t *f, const char *model)
{
    json_object *o = json_object_new_object(), *flt = json_object_new_object();
    json_object_object_add(flt, "user_id", f->user_id ? json_object_new_int64(f->user_id) : NULL);
    json_object_object_add(flt, "key_id", f->key_id ? json_object_new_int64(f->key_id) : NULL);
    json_object_object_add(flt, "model", ctl_json_str(model));
    json_object_object_add(flt, "since", ctl_json_time(f->since));
    json_object_object_add(flt, "until", ctl_json_time(f->until));
    json_object_object_add(o, "filter", flt);
    json_object_object_add(o, "by", json_object_new_string(by_names[f->by]));
    return o;
}

static void print_json(ctl_t *ctl, const prov_usage_filter_t *f, const char *model,
                       apr_array_header_t *rows, const prov_usage_row_t *total)
{
    json_object *o = ctl_usage_json(f, model);
    json_object *arr = json_object_new_array();
    int i;

    for (i = 0; f->by != PROV_USAGE_BY_NONE && i < rows->nelts; i++) {
        const prov_usage_row_t *r = APR_ARRAY_IDX(rows, i, prov_usage_row_t *);
        json_object *x = prov_usage_fields(json_object_new_object(), r);
        apr_int64_t id = 0;
        if (f->by == PROV_USAGE_BY_KEY && prov_parse_i64(&id, r->group) == APR_SUCCESS)
            json_object_object_add(x, "key_id", json_object_new_int64(id));
        else
            json_object_object_add(x, by_names[f->by], json_object_new_string(r->group));
        json_object_array_add(arr, x);
    }
    json_object_object_add(o, "rows", arr);
    json_object_object_add(o, "total", prov_usage_fields(json_object_new_object(), total));
    (void)ctl;
    ctl_json_print(o);
}

static int usage_report(ctl_t *ctl)
{
    const char *uref = ctl_opt(ctl, "user"), *kref = ctl_opt(ctl, "key");
    const char *mref = ctl_opt(ctl, "model"), *since = ctl_opt(ctl, "since");
    const char *until = ctl_opt(ctl, "until"), *by = ctl_opt(ctl, "by");
    const char *format = ctl_opt(ctl, "format");
    prov_usage_filter_t f;
    prov_usage_row_t total;
    apr_array_header_t *rows = NULL;
    prov_user_t *u = NULL;
    prov_model_t *m = NULL;
    prov_key_t *k = NULL;
    apr_status_t rv;
    int i, rc;

    memset(&f, 0, sizeof(f));
    memset(&total, 0, sizeof(total));
    total.group = "total";
    if (by) {
        for (i = 1; i < 5 && strcmp(by, by_names[i]); i++)
            ;
        if (i == 5)
            return ctl_usage(ctl, "--by must be day, key, model or session (not '%s')", by);
        f.by = (prov_usage_by_e)i;
    }
    if (!format)
        format = ctl->json ? "json" : "table";
    if (strcmp(format, "table") && strcmp(format, "csv") && strcmp(format, "json"))
        return ctl_usage(ctl, "--format must be table, csv or json (not '%s')", format);
    if (ctl->json && strcmp(format, "json"))
        return ctl_usage(ctl, "--json and --format %s contradict each other", format);
    if (since && (rc = ctl_parse_time(ctl, &f.since, since, "--since time")) != CTL_OK)
        return rc;
    if (until && (rc = ctl_parse_time(ctl, &f.until, until, "--until time")) != CTL_OK)
        return rc;
    if (f.since && f.until && f.until <= f.since)
        return ctl_usage(ctl, "--until (%s) must be after --since (%s)", until, since);
    if (kref && (rc = ctl_parse_id(ctl, &f.key_id, kref, "key id")) != CTL_OK)
        return rc;
    if (uref) {
        if ((rc = ctl_find_user(ctl, &u, uref)) != CTL_OK)
            return rc;
        f.user_id = u->id;
    }
    if (mref) {
        if ((rc = ctl_find_model(ctl, &m, mref)) != CTL_OK)
            return rc;
        f.model_id = m->id;
    }
    if (f.key_id) {
        rv = prov_key_get(&k, ctl->store, f.key_id, ctl->pool);
        if (rv == APR_NOTFOUND)
            return ctl_fail(ctl, "unknown key %s", kref);
        if (rv != APR_SUCCESS)
            return ctl_db_fail(ctl, rv, "look up the key");
    }
    if (f.by == PROV_USAGE_BY_SESSION)
        return ctl_usage_sessions(ctl, &f, !strcmp(format, "json")
                                  ? ctl_usage_json(&f, m ? m->public_id : NULL) : NULL, format);
    rv = prov_usage_report(&rows, ctl->store, &f, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the usage");
    if (f.by == PROV_USAGE_BY_NONE) {
        total = *APR_ARRAY_IDX(rows, 0, prov_usage_row_t *);
        rows->nelts = 0;
    }
    else {
        for (i = 0; i < rows->nelts; i++)
            add_row(&total, APR_ARRAY_IDX(rows, i, prov_usage_row_t *));
    }
    total.group = "total";
    if (!strcmp(format, "json"))
        print_json(ctl, &f, m ? m->public_id : NULL, rows, &total);
    else if (!strcmp(format, "csv"))
        print_csv(f.by ? by_names[f.by] : "group", rows, &total, ctl->pool);
    else
        print_table(table_heads[f.by], rows, &total, ctl->pool);
    return CTL_OK;
}

#define REPORT_HELP \
    "Counts every settled request in the ledger (requests still in flight are\n" \
    "left out; failed ones count as requests with 0 credits): the requests, the\n" \
    "input, output, cache and reasoning tokens and the credits charged, with a\n" \
    "total row. T is YYYY-MM-DD (00:00 UTC), YYYY-MM-DDTHH:MM[:SS]Z or seconds\n" \
    "since the epoch. CSV has a header line and the total as its last line;\n" \
    "JSON has the filter, the rows and the total, credits as decimals.\n" \
    "--by session groups the requests that carry an agent session (Claude\n" \
    "Code's x-claude-code-session-id, Codex's session-id): one row per session,\n" \
    "with its client, user, key, models and first and last request, the latest\n" \
    "first, at most 50; requests without a session are left out."

static const ctl_opt_t report_opts[] = {
    { "user", "USER", 0, "only this user's requests (id or email)" },
    { "key", "KEY", 0, "only this key's requests (key id)" },
    { "model", "MODEL", 0, "only requests to this model (public id)" },
    { "since", "T", 0, "from T on (inclusive)" },
    { "until", "T", 0, "before T (exclusive)" },
    { "by", "day|key|model|session", 0,
      "one row per UTC day, key, model or agent session, then the total" },
    { "format", "table|csv|json", 0, "the output format (default table; --json = json)" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_usage_cmds[] = {
    { "report", "", 0, 0, report_opts, CTL_DB_READY, usage_report,
      "requests, tokens and credits from the ledger, filtered and grouped", REPORT_HELP },
    { NULL }
};
