/* providerctl_common.c: the plumbing every providerctl command shares (one of
 * the two shared files with providerctl_common_store.c, both declared in
 * providerctl.h): a command's synopsis, its options, the error messages with
 * their exit codes, reading credit amounts, ids and DATE/T arguments (no libc
 * time zone involved), and the output: times, credits, durations, JSON,
 * "label: value" lines and aligned tables.
 *
 * A command file (providerctl_<group>.c) calls only the two shared files, core/
 * and libraries, never another command file; providerctl.c keeps main() and the
 * dispatch. To check it after a build, list every symbol that an object of cli/
 * other than providerctl.c needs and a command object defines (no output: no
 * call between command files, none from a shared file up into one):
 *
 *   cd cli && for o in providerctl-providerctl_*.o; do nm -u $o | sed "s|.* |U $o |"
 *     case $o in *_common*) ;; *) nm -g --defined-only $o | sed "s|.* |D $o |";; esac
 *   done | awk '$1 == "D" { def[$3] = $2 } $1 == "U" { use[$3] = use[$3] " " $2 }
 *     END { for (s in use) if (s in def) { n = split(use[s], u, " ")
 *           for (i = 1; i <= n; i++) if (u[i] != def[s]) print u[i], "calls", s, "of", def[s] } }'
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <apr_lib.h>
#include <apr_time.h>
#include "providerctl.h"
#include "prov_rollup.h"

/* ---- arguments and errors ------------------------------------------------ */

const char *ctl_synopsis(const ctl_group_t *g, const ctl_cmd_t *c, apr_pool_t *p)
{
    const ctl_opt_t *o;
    char *s = apr_psprintf(p, "%s %s%s%s", g->name, c->verb, *c->args ? " " : "", c->args);
    for (o = c->opts; o && o->name; o++) {
        s = apr_psprintf(p, "%s %s--%s%s%s%s", s, o->required ? "" : "[", o->name,
                         o->arg ? " " : "", o->arg ? o->arg : "", o->required ? "" : "]");
    }
    return s;
}

const char *ctl_opt(ctl_t *ctl, const char *name)
{
    return apr_hash_get(ctl->opts, name, APR_HASH_KEY_STRING);
}

int ctl_flag(ctl_t *ctl, const char *name)
{
    return ctl_opt(ctl, name) != NULL;
}

int ctl_fail(ctl_t *ctl, const char *fmt, ...)
{
    va_list ap;
    (void)ctl;
    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CTL_FAIL;
}

int ctl_usage(ctl_t *ctl, const char *fmt, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (ctl->cmd)
        fprintf(stderr, "\nusage: " PROG " %s\n", ctl_synopsis(ctl->group, ctl->cmd, ctl->pool));
    else
        fputc('\n', stderr);
    return CTL_USAGE;
}

int ctl_db_fail(ctl_t *ctl, apr_status_t rv, const char *what)
{
    char eb[128];
    /* The driver's own message has been logged by the core already. */
    if (rv == APR_EGENERAL)
        return ctl_fail(ctl, "cannot %s: database error", what);
    return ctl_fail(ctl, "cannot %s: %s", what, apr_strerror(rv, eb, sizeof(eb)));
}

int ctl_parse_credits(ctl_t *ctl, prov_micro_t *out, const char *s, int allow_negative,
                      const char *what)
{
    prov_micro_t v = 0;
    apr_status_t rv = prov_money_parse(&v, s, 1);
    if (rv == APR_ERANGE)
        return ctl_usage(ctl, "'%s' is too large for %s", s, what);
    if (rv != APR_SUCCESS)
        return ctl_usage(ctl, "'%s' is not a credit amount (use a decimal like 12.5)", s);
    if (v < 0 && !allow_negative)
        return ctl_usage(ctl, "%s must not be negative ('%s')", what, s);
    *out = v;
    return CTL_OK;
}

int ctl_parse_id(ctl_t *ctl, apr_int64_t *out, const char *s, const char *what)
{
    apr_int64_t v = 0;
    if (prov_parse_i64(&v, s) != APR_SUCCESS || v <= 0)
        return ctl_usage(ctl, "'%s' is not a %s (a positive number)", s, what);
    *out = v;
    return CTL_OK;
}

/* ---- time ---------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil), so that no libc time zone is involved. */
static apr_int64_t days_from_civil(apr_int64_t y, unsigned m, unsigned d)
{
    apr_int64_t era;
    unsigned yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? (unsigned)-3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (apr_int64_t)doe - 719468;
}

static int month_days(int y, int m)
{
    static const int n[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return n[m - 1] + (m == 2 && leap);
}

/* n digits at s into *v; 0 when they are not all digits. */
static int digits(int *v, const char *s, int n)
{
    int i, x = 0;
    for (i = 0; i < n; i++) {
        if (!apr_isdigit(s[i]))
            return 0;
        x = x * 10 + (s[i] - '0');
    }
    *v = x;
    return 1;
}

int ctl_parse_retention(ctl_t *ctl, apr_int64_t *before, apr_int64_t now, const char *why)
{
    const char *arg = ctl_opt(ctl, "before");
    apr_int64_t limit = prov_retention_cut(now, PROV_RETENTION_MIN);
    int rc;
    *before = prov_retention_cut(now, PROV_RETENTION_DEFAULT);
    if (arg && (rc = ctl_parse_time(ctl, before, arg, "--before date")) != CTL_OK)
        return rc;
    if (*before > limit)
        return ctl_usage(ctl, "--before %s is within the last %d days: %s (at most %s)", arg,
                         PROV_RETENTION_MIN, why,
                         apr_pstrndup(ctl->pool, ctl_time(limit, 1, ctl->pool), 10));
    return CTL_OK;
}

int ctl_parse_time(ctl_t *ctl, apr_int64_t *out, const char *s, const char *what)
{
    int y, mo, d, h = 0, mi = 0, se = 0;
    apr_size_t len = strlen(s);
    apr_int64_t v;

    if (len > 0 && len <= 12 && strspn(s, "0123456789") == len) {
        if (prov_parse_i64(&v, s) != APR_SUCCESS || v <= 0)
            goto bad;
        *out = v;
        return CTL_OK;
    }
    if (len < 10 || !digits(&y, s, 4) || s[4] != '-' || !digits(&mo, s + 5, 2) || s[7] != '-'
        || !digits(&d, s + 8, 2))
        goto bad;
    if (len > 10) {
        /* THH:MMZ or THH:MM:SSZ */
        if ((len != 17 && len != 20) || s[10] != 'T' || !digits(&h, s + 11, 2) || s[13] != ':'
            || !digits(&mi, s + 14, 2) || s[len - 1] != 'Z')
            goto bad;
        if (len == 20 && (s[16] != ':' || !digits(&se, s + 17, 2)))
            goto bad;
    }
    if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) || h > 23 || mi > 59
        || se > 59)
        goto bad;
    v = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + se;
    if (v <= 0)
        goto bad;
    *out = v;
    return CTL_OK;

bad:
    return ctl_usage(ctl, "'%s' is not a valid %s (use YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z "
                     "in UTC, or seconds since the epoch)", s, what);
}

const char *ctl_duration(apr_int64_t secs, apr_pool_t *p)
{
    apr_int64_t d = secs / 86400, h = secs % 86400 / 3600, m = secs % 3600 / 60, s = secs % 60;
    char *out = "";
    if (secs <= 0)
        return "0s";
    if (d)
        out = apr_psprintf(p, "%" APR_INT64_T_FMT "d", d);
    if (h)
        out = apr_psprintf(p, "%s%s%" APR_INT64_T_FMT "h", out, *out ? " " : "", h);
    if (m)
        out = apr_psprintf(p, "%s%s%" APR_INT64_T_FMT "m", out, *out ? " " : "", m);
    if (s)
        out = apr_psprintf(p, "%s%s%" APR_INT64_T_FMT "s", out, *out ? " " : "", s);
    return out;
}

/* ---- output -------------------------------------------------------------- */

/* Writes t as "2025-01-02 03:04" or, with iso, "2025-01-02T03:04:05Z". */
static const char *fmt_time(char *buf, apr_size_t n, apr_int64_t t, int iso)
{
    apr_time_exp_t e;
    apr_time_exp_gmt(&e, apr_time_from_sec(t));
    if (iso)
        apr_snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02dZ", e.tm_year + 1900, e.tm_mon + 1,
                     e.tm_mday, e.tm_hour, e.tm_min, e.tm_sec);
    else
        apr_snprintf(buf, n, "%04d-%02d-%02d %02d:%02d", e.tm_year + 1900, e.tm_mon + 1,
                     e.tm_mday, e.tm_hour, e.tm_min);
    return buf;
}

const char *ctl_time(apr_int64_t t, int iso, apr_pool_t *p)
{
    char buf[32];
    if (t <= 0)
        return iso ? NULL : "-";
    return apr_pstrdup(p, fmt_time(buf, sizeof(buf), t, iso));
}

const char *ctl_credits(prov_micro_t v, apr_pool_t *p)
{
    return prov_money_format(v, p);
}

void ctl_json_print(json_object *obj)
{
    puts(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                        | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(obj);
}

json_object *ctl_json_str(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

json_object *ctl_json_time(apr_int64_t t)
{
    char buf[32];
    return t > 0 ? json_object_new_string(fmt_time(buf, sizeof(buf), t, 1)) : NULL;
}

void ctl_kv(const char *label, const char *value)
{
    printf("%-16s %s\n", label, value ? value : "-");
}

struct ctl_table_t {
    apr_pool_t *pool;
    int ncols;
    apr_array_header_t *rows;   /* const char ** of ncols each; row 0 = headers */
};

static void table_add(ctl_table_t *t, va_list ap)
{
    const char **row = apr_palloc(t->pool, sizeof(*row) * (apr_size_t)t->ncols);
    int i;
    for (i = 0; i < t->ncols; i++) {
        const char *v = va_arg(ap, const char *);
        row[i] = v ? v : "-";
    }
    APR_ARRAY_PUSH(t->rows, const char **) = row;
}

ctl_table_t *ctl_table_make(apr_pool_t *p, int ncols, ...)
{
    ctl_table_t *t = apr_pcalloc(p, sizeof(*t));
    va_list ap;
    t->pool = p;
    t->ncols = ncols;
    t->rows = apr_array_make(p, 16, sizeof(const char **));
    va_start(ap, ncols);
    table_add(t, ap);
    va_end(ap);
    return t;
}

void ctl_table_row(ctl_table_t *t, ...)
{
    va_list ap;
    va_start(ap, t);
    table_add(t, ap);
    va_end(ap);
}

void ctl_table_print(ctl_table_t *t, const char *empty_note)
{
    int *w = apr_pcalloc(t->pool, sizeof(int) * (apr_size_t)t->ncols);
    int r, c;
    if (t->rows->nelts == 1) {
        puts(empty_note);
        return;
    }
    for (r = 0; r < t->rows->nelts; r++) {
        const char **row = APR_ARRAY_IDX(t->rows, r, const char **);
        for (c = 0; c < t->ncols; c++) {
            int n = (int)strlen(row[c]);
            if (n > w[c])
                w[c] = n;
        }
    }
    for (r = 0; r < t->rows->nelts; r++) {
        const char **row = APR_ARRAY_IDX(t->rows, r, const char **);
        for (c = 0; c < t->ncols; c++) {
            if (c == t->ncols - 1)
                printf("%s\n", row[c]);
            else
                printf("%-*s  ", w[c], row[c]);
        }
    }
}

int ctl_list_print(ctl_t *ctl, const apr_array_header_t *recs, ctl_to_json_fn *to_json,
                   ctl_table_t *t, ctl_to_row_fn *to_row, const char *empty_note)
{
    int i;
    if (ctl->json) {
        json_object *a = json_object_new_array();
        for (i = 0; i < recs->nelts; i++)
            json_object_array_add(a, to_json(APR_ARRAY_IDX(recs, i, const void *)));
        ctl_json_print(a);
        return CTL_OK;
    }
    for (i = 0; i < recs->nelts; i++)
        to_row(t, APR_ARRAY_IDX(recs, i, const void *), ctl->pool);
    ctl_table_print(t, empty_note);
    return CTL_OK;
}
