/* prov_usage.c: usage reports, equal to the ledger's rows, which are the
 * truth (the usage buckets serve the hot-path checks, not reports: a report
 * must equal the ledger even for a filter the buckets do not have, such as a
 * model). A report reads the daily rollups (core/store/prov_rollup.h) for
 * the whole UTC days of its range, and the settled raw rows for the rest
 * (the range's partial first and last days, and the rows not rolled up yet:
 * today's), in one statement so that a rollup step or a compaction between
 * two reads cannot count a row twice or lose it. One
 * labelled statement per grouping and shape of filter (prov_sql.c); rows
 * still "reserved" are requests in flight and are left out. Days are UTC days, labelled
 * YYYY-MM-DD. The per-key summary (today since 00:00 UTC, and the last seven
 * days) is two total reports and is what providerctl and the cabinet show. */
#include <apr_time.h>
#include "prov_usage.h"

#define DAY_SECONDS 86400

/* "2026-11-22" for the UTC day that starts at t. */
static const char *day_label(apr_int64_t t, apr_pool_t *p)
{
    apr_time_exp_t e;
    apr_time_exp_gmt(&e, apr_time_from_sec(t));
    return apr_psprintf(p, "%04d-%02d-%02d", e.tm_year + 1900, e.tm_mon + 1, e.tm_mday);
}

/* The sums start at column first: requests, input, output, cache, reasoning,
 * credits. */
static void sums_from_row(prov_usage_row_t *u, prov_store_t *s, apr_dbd_row_t *row, int first)
{
    u->requests = prov_store_get_i64(s, row, first, 0);
    u->tokens.input = prov_store_get_i64(s, row, first + 1, 0);
    u->tokens.output = prov_store_get_i64(s, row, first + 2, 0);
    u->tokens.cache = prov_store_get_i64(s, row, first + 3, 0);
    u->tokens.reasoning = prov_store_get_i64(s, row, first + 4, 0);
    u->credits = prov_store_get_i64(s, row, first + 5, 0);
}

static const char *group_name(prov_usage_by_e by)
{
    switch (by) {
    case PROV_USAGE_BY_DAY:   return "usage_by_day";
    case PROV_USAGE_BY_KEY:   return "usage_by_key";
    case PROV_USAGE_BY_MODEL: return "usage_by_model";
    default:                  return "usage_total";
    }
}

/* Appends a part's filter and its two bounds to a. */
static int part_args(const char **a, int n, const char *const *flt, int nf, apr_int64_t lo,
                     apr_int64_t hi, apr_pool_t *p)
{
    int i;
    for (i = 0; i < nf; i++)
        a[n++] = flt[i];
    a[n++] = prov_i64(lo, p);
    a[n++] = prov_i64(hi, p);
    return n;
}

/* A filter's statement and arguments (prov_sql.c, "The usage reports"): the
 * shape its driving filter gives, then each part's filter and bounds: the
 * rollups' days, the partial days' rolled-up rows (a range that does not
 * start and end at midnight), the rows not rolled up. */
static const char *report_args(const char ***argv, int *argc, const prov_usage_filter_t *f,
                               apr_pool_t *p)
{
    const char *u = prov_i64(f->user_id, p), *k = prov_i64(f->key_id, p);
    const char *m = prov_i64(f->model_id, p), *shape;
    const char *fk[] = { k, u, u, m, m }, *fu[] = { u, m, m }, *fa[] = { m, m };
    const char *const *flt;
    const char **a;
    int nf, n = 0, edges;
    prov_usage_span_t sp;

    prov_usage_span(&sp, f->since, f->until);
    edges = sp.since % DAY_SECONDS || (f->until && sp.until % DAY_SECONDS);
    if (f->key_id)       { shape = "key";  flt = fk; nf = 5; }
    else if (f->user_id) { shape = "user"; flt = fu; nf = 3; }
    else                 { shape = "any";  flt = fa; nf = 2; }
    a = apr_palloc(p, 4 * (nf + 2) * sizeof(*a));
    n = part_args(a, n, flt, nf, sp.first_day, sp.end_day, p);
    if (edges) {
        n = part_args(a, n, flt, nf, sp.since, sp.until < sp.first_day ? sp.until : sp.first_day,
                      p);
        n = part_args(a, n, flt, nf, sp.end_day > sp.first_day ? sp.end_day : sp.first_day,
                      sp.until, p);
    }
    n = part_args(a, n, flt, nf, sp.since, sp.until, p);
    *argv = a;
    *argc = n;
    return apr_pstrcat(p, group_name(f->by), "_", shape, edges ? "_e" : "", NULL);
}

void prov_usage_span(prov_usage_span_t *sp, apr_int64_t since, apr_int64_t until)
{
    sp->since = since;
    sp->until = until ? until : PROV_USAGE_END;
    sp->first_day = (since + DAY_SECONDS - 1) / DAY_SECONDS * DAY_SECONDS;
    sp->end_day = sp->until / DAY_SECONDS * DAY_SECONDS;
}

apr_status_t prov_usage_report(apr_array_header_t **rows, prov_store_t *s,
                               const prov_usage_filter_t *f, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *arr;
    const char **argv = NULL, *label;
    int argc = 0;
    apr_status_t rv;

    if (!f || f->user_id < 0 || f->key_id < 0 || f->model_id < 0 || f->since < 0
        || f->until < 0 || (f->until && f->since && f->until < f->since)
        || f->since >= PROV_USAGE_END || f->until >= PROV_USAGE_END
        || f->by < PROV_USAGE_BY_NONE || f->by > PROV_USAGE_BY_MODEL)
        return APR_EINVAL;
    label = report_args(&argv, &argc, f, p);
    rv = prov_store_select(s, &res, label, argc, argv, p);
    if (rv != APR_SUCCESS)
        return rv;
    arr = apr_array_make(p, 8, sizeof(prov_usage_row_t *));
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        prov_usage_row_t *u = apr_pcalloc(p, sizeof(*u));
        const char *g;
        if (f->by == PROV_USAGE_BY_NONE) {
            u->group = "total";
            sums_from_row(u, s, row, 0);
        }
        else {
            sums_from_row(u, s, row, 1);
            if (f->by == PROV_USAGE_BY_DAY)
                u->group = day_label(prov_store_get_i64(s, row, 0, 0), p);
            else
                u->group = apr_pstrdup(p, (g = prov_store_get(s, row, 0)) ? g : "");
        }
        APR_ARRAY_PUSH(arr, prov_usage_row_t *) = u;
    }
    if (rv != APR_EOF)
        return rv;
    /* An aggregate without GROUP BY always has its one row; keep that true
     * whatever a driver does with an empty input. */
    if (f->by == PROV_USAGE_BY_NONE && arr->nelts == 0) {
        prov_usage_row_t *u = apr_pcalloc(p, sizeof(*u));
        u->group = "total";
        APR_ARRAY_PUSH(arr, prov_usage_row_t *) = u;
    }
    *rows = arr;
    return APR_SUCCESS;
}

/* The key's total over [since, now]: now is included, and a clock that a test
 * has set back does not see later rows. */
static apr_status_t key_total(prov_usage_row_t *out, prov_store_t *s, apr_int64_t key_id,
                              apr_int64_t since, apr_int64_t now, const char *group,
                              apr_pool_t *p)
{
    prov_usage_filter_t f = { 0, 0, 0, 0, 0, PROV_USAGE_BY_NONE };
    apr_array_header_t *rows = NULL;
    apr_status_t rv;

    f.key_id = key_id;
    f.since = since;
    f.until = now + 1;
    rv = prov_usage_report(&rows, s, &f, p);
    if (rv != APR_SUCCESS)
        return rv;
    *out = *APR_ARRAY_IDX(rows, 0, prov_usage_row_t *);
    out->group = group;
    return APR_SUCCESS;
}

apr_status_t prov_usage_key_summary(prov_usage_key_t *out, prov_store_t *s, apr_int64_t key_id,
                                    apr_int64_t now, apr_pool_t *p)
{
    prov_usage_key_t k;
    apr_int64_t day0 = now - now % DAY_SECONDS, week0 = now - 7 * DAY_SECONDS;
    apr_status_t rv;

    if (key_id <= 0 || now <= 7 * DAY_SECONDS)
        return APR_EINVAL;
    rv = key_total(&k.today, s, key_id, day0, now, "today", p);
    if (rv == APR_SUCCESS)
        rv = key_total(&k.week, s, key_id, week0, now, "7d", p);
    if (rv != APR_SUCCESS)
        return rv;
    *out = k;
    return APR_SUCCESS;
}

json_object *prov_usage_fields(json_object *o, const prov_usage_row_t *u)
{
    json_object_object_add(o, "requests", json_object_new_int64(u->requests));
    json_object_object_add(o, "input_tokens", json_object_new_int64(u->tokens.input));
    json_object_object_add(o, "output_tokens", json_object_new_int64(u->tokens.output));
    json_object_object_add(o, "cache_tokens", json_object_new_int64(u->tokens.cache));
    json_object_object_add(o, "reasoning_tokens", json_object_new_int64(u->tokens.reasoning));
    json_object_object_add(o, "credits", prov_json_credits(u->credits));
    return o;
}
