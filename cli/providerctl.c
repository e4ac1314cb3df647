/* providerctl.c: the administrator's command line. Owns main(): the global
 * options (--db, --json, --verbose, --help) wherever they appear, the table of
 * command groups, finding the command and checking its arguments and options
 * against its table entry (usage errors exit 2), the logging sink (stderr),
 * the help texts, and the helpers that every command uses for parsing, errors
 * and output. Opening the database is in providerctl_db.c; the commands live
 * in cli/providerctl_<group>.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_lib.h>
#include <apr_time.h>
#include "providerctl.h"
#include "prov_log.h"


static const ctl_group_t groups[] = {
    { "db",      "The database schema",                   ctl_db_cmds },
    { "user",    "Users, by id or email",                 ctl_user_cmds },
    { "key",     "API keys, by key id (secrets are shown only when made)", ctl_key_cmds },
    { "balance", "Prepaid credit balances",               ctl_balance_cmds },
    { "model",   "The model catalog and its rate card",   ctl_model_cmds },
    { "plan",    "Plans: credit quotas per rolling 5-hour and 7-day window", ctl_plan_cmds },
    { "subscription", "Which plan a user has, and its windows' use", ctl_subscription_cmds },
    { "usage",   "Usage reports from the ledger",         ctl_usage_cmds },
    { "hold",    "Holds in flight (requests' reservations, processes' leases)", ctl_hold_cmds },
    { NULL, NULL, NULL }
};

/* ---- help ---------------------------------------------------------------- */

static const char *synopsis(const ctl_group_t *g, const ctl_cmd_t *c, apr_pool_t *p)
{
    const ctl_opt_t *o;
    char *s = apr_psprintf(p, "%s %s%s%s", g->name, c->verb, *c->args ? " " : "", c->args);
    for (o = c->opts; o && o->name; o++) {
        s = apr_psprintf(p, "%s %s--%s%s%s%s", s, o->required ? "" : "[", o->name,
                         o->arg ? " " : "", o->arg ? o->arg : "", o->required ? "" : "]");
    }
    return s;
}

static void help_program(FILE *f, apr_pool_t *p)
{
    const ctl_group_t *g;
    const ctl_cmd_t *c;
    fprintf(f,
        "usage: " PROG " [--db DRIVER:PARAMS] GROUP VERB [ARGS] [--json]\n\n"
        "The administrator's tool for mod_provider: schema, users, API keys,\n"
        "balances, the model catalog, plans and subscriptions, usage reports.\n\n"
        "Global options (allowed anywhere on the line):\n"
        "  --db DRIVER:PARAMS  the database, e.g. sqlite3:/var/lib/provider/provider.db or\n"
        "                      pgsql:'host=... dbname=...'; else $PROVIDER_DB, else a line\n"
        "                      'db = DRIVER:PARAMS' in " CTL_DEFAULT_CONF "\n"
        "                      ($PROVIDERCTL_CONF names another file)\n"
        "  --json              machine-readable output\n"
        "  -v, --verbose       also print what the core logs\n"
        "  -h, --help          help; also '" PROG " GROUP --help', '" PROG " GROUP VERB --help'\n\n"
        "Commands:\n");
    for (g = groups; g->name; g++) {
        for (c = g->cmds; c->verb; c++)
            fprintf(f, "  %-30s %s\n", apr_psprintf(p, "%s %s %s", g->name, c->verb, c->args),
                    c->summary);
    }
    fprintf(f, "\nAmounts are credits as decimals (12.5); rates are credits per 1M tokens.\n"
               "USER is a user id or an email; KEY is a key id; PLAN is a name or an id.\n"
               "DATE and T are YYYY-MM-DD (00:00 UTC), YYYY-MM-DDTHH:MM[:SS]Z or epoch seconds.\n"
               "Exit status: 0 ok, 1 failure, 2 usage error.\n");
}

static void help_group(FILE *f, const ctl_group_t *g, apr_pool_t *p)
{
    const ctl_cmd_t *c;
    fprintf(f, "usage: " PROG " %s VERB [ARGS] [--json]\n\n%s.\n\nCommands:\n", g->name,
            g->summary);
    for (c = g->cmds; c->verb; c++)
        fprintf(f, "  " PROG " %s\n      %s\n", synopsis(g, c, p), c->summary);
}

static void help_command(FILE *f, const ctl_group_t *g, const ctl_cmd_t *c, apr_pool_t *p)
{
    const ctl_opt_t *o;
    fprintf(f, "usage: " PROG " %s [--json]\n\n%s.\n", synopsis(g, c, p), c->summary);
    if (c->help)
        fprintf(f, "\n%s\n", c->help);
    if (c->opts && c->opts->name) {
        fprintf(f, "\nOptions:\n");
        for (o = c->opts; o->name; o++) {
            const char *head = apr_psprintf(p, "--%s%s%s", o->name, o->arg ? " " : "",
                                            o->arg ? o->arg : "");
            fprintf(f, "  %-22s %s\n", head, o->help);
        }
    }
}

/* ---- logging ------------------------------------------------------------- */

static void log_stderr(void *baton, prov_log_level_e level, apr_status_t rv, const char *msg)
{
    static const char *const names[] = { "error", "warning", "info", "debug" };
    char eb[128];
    (void)baton;
    /* APR_EGENERAL says nothing the message does not. */
    if (rv != APR_SUCCESS && rv != APR_EGENERAL)
        fprintf(stderr, PROG ": [%s] %s (%s)\n", names[level], msg,
                apr_strerror(rv, eb, sizeof(eb)));
    else
        fprintf(stderr, PROG ": [%s] %s\n", names[level], msg);
}

/* ---- the command line ---------------------------------------------------- */

static const ctl_opt_t *opt_find(const ctl_opt_t *opts, const char *name, apr_size_t len)
{
    for (; opts && opts->name; opts++) {
        if (strlen(opts->name) == len && !strncmp(opts->name, name, len))
            return opts;
    }
    return NULL;
}

/* "-5" and "-.5" are arguments (negative amounts), not options. */
static int is_option(const char *a)
{
    return a[0] == '-' && a[1] && !apr_isdigit(a[1]) && a[1] != '.';
}

static const ctl_group_t *find_group(const char *name)
{
    const ctl_group_t *g;
    for (g = groups; g->name; g++) {
        if (!strcmp(g->name, name))
            return g;
    }
    return NULL;
}

static const ctl_cmd_t *find_cmd(const ctl_group_t *g, const char *verb)
{
    const ctl_cmd_t *c;
    for (c = g->cmds; c->verb; c++) {
        if (!strcmp(c->verb, verb))
            return c;
    }
    return NULL;
}

/* The n-th word of a positional synopsis ("USER CREDITS", 1 -> "CREDITS"). */
static const char *arg_name(const char *args, int n, apr_pool_t *p)
{
    char *last, *w = apr_strtok(apr_pstrdup(p, args), " ", &last);
    while (w && n-- > 0)
        w = apr_strtok(NULL, " ", &last);
    return w ? w : "argument";
}

/* Says why GROUP [VERB] names no command; CTL_USAGE. */
static int resolve_error(ctl_t *ctl, const char *gname, const char *verb)
{
    const ctl_group_t *g = find_group(gname);
    if (!g) {
        fprintf(stderr, PROG ": unknown command group '%s' (see '" PROG " --help')\n", gname);
    }
    else if (!verb) {
        fprintf(stderr, PROG ": missing command after '%s'\n\n", gname);
        help_group(stderr, g, ctl->pool);
    }
    else {
        fprintf(stderr, PROG ": unknown command '%s %s' (see '" PROG " %s --help')\n",
                gname, verb, gname);
    }
    return CTL_USAGE;
}

static int run_help(ctl_t *ctl, const char *gname, const char *verb)
{
    const ctl_group_t *g = gname ? find_group(gname) : NULL;
    if (!gname) {
        help_program(stdout, ctl->pool);
        return CTL_OK;
    }
    if (ctl->cmd) {
        help_command(stdout, ctl->group, ctl->cmd, ctl->pool);
        return CTL_OK;
    }
    if (g && !verb) {
        help_group(stdout, g, ctl->pool);
        return CTL_OK;
    }
    return resolve_error(ctl, gname, verb);
}

static int dispatch(ctl_t *ctl, int argc, const char *const *argv)
{
    apr_array_header_t *pos = apr_array_make(ctl->pool, 8, sizeof(const char *));
    const char *gname = NULL, *verb = NULL;
    int i, help = 0, rest = 0, rc;
    const ctl_opt_t *o;

    ctl->opts = apr_hash_make(ctl->pool);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *name, *eq, *val = NULL;
        apr_size_t len;
        if (rest || !is_option(a)) {
            if (!gname && !help && !strcmp(a, "help") && !rest)
                help = 1;
            else if (!gname)
                gname = a;
            else if (!verb)
                verb = a;
            else
                APR_ARRAY_PUSH(pos, const char *) = a;
            if (gname && verb && !ctl->cmd && (ctl->group = find_group(gname)))
                ctl->cmd = find_cmd(ctl->group, verb);
            continue;
        }
        if (!strcmp(a, "--")) {
            rest = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help = 1;
            continue;
        }
        if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
            ctl->verbose = 1;
            continue;
        }
        if (!strcmp(a, "--json")) {
            ctl->json = 1;
            continue;
        }
        if (a[1] != '-') {
            fprintf(stderr, PROG ": unknown option '%s' (see '" PROG " --help')\n", a);
            return CTL_USAGE;
        }
        name = a + 2;
        eq = strchr(name, '=');
        len = eq ? (apr_size_t)(eq - name) : strlen(name);
        if (len == 2 && !strncmp(name, "db", 2)) {
            if (!eq && i + 1 >= argc) {
                fprintf(stderr, PROG ": option --db needs a value (DRIVER:PARAMS)\n");
                return CTL_USAGE;
            }
            ctl->db_spec = eq ? eq + 1 : argv[++i];
            continue;
        }
        if (!ctl->cmd) {
            /* An unknown command is the better diagnosis than its options. */
            if (verb && !help)
                return resolve_error(ctl, gname, verb);
            if (!help) {
                fprintf(stderr, PROG ": unknown option '%s' (see '" PROG " --help')\n", a);
                return CTL_USAGE;
            }
            continue;
        }
        o = opt_find(ctl->cmd->opts, name, len);
        if (!o) {
            if (help)
                continue;
            return ctl_usage(ctl, "unknown option '--%.*s'", (int)len, name);
        }
        if (o->arg) {
            if (!eq && i + 1 >= argc)
                return ctl_usage(ctl, "option --%s needs a value (%s)", o->name, o->arg);
            val = eq ? eq + 1 : argv[++i];
        }
        else if (eq) {
            return ctl_usage(ctl, "option --%s takes no value", o->name);
        }
        apr_hash_set(ctl->opts, o->name, APR_HASH_KEY_STRING, val ? val : "");
    }

    if (help)
        return run_help(ctl, gname, verb);
    if (!gname) {
        help_program(stderr, ctl->pool);
        return CTL_USAGE;
    }
    if (!ctl->cmd)
        return resolve_error(ctl, gname, verb);
    ctl->argc = pos->nelts;
    ctl->argv = (const char **)pos->elts;
    if (ctl->argc < ctl->cmd->min_args)
        return ctl_usage(ctl, "missing %s", arg_name(ctl->cmd->args, ctl->argc, ctl->pool));
    if (ctl->argc > ctl->cmd->max_args)
        return ctl_usage(ctl, "unexpected argument '%s'", ctl->argv[ctl->cmd->max_args]);
    for (o = ctl->cmd->opts; o && o->name; o++) {
        if (o->required && !ctl_opt(ctl, o->name))
            return ctl_usage(ctl, "missing --%s %s", o->name, o->arg ? o->arg : "");
    }
    prov_log_set(log_stderr, NULL, ctl->verbose ? PROV_LOG_DEBUG : PROV_LOG_WARN);
    if (ctl->cmd->db != CTL_DB_NONE && (rc = ctl_db_open(ctl)) != CTL_OK)
        return rc;
    rc = ctl->cmd->run(ctl);
    fflush(stdout);
    return rc;
}

int main(int argc, const char *const *argv)
{
    ctl_t ctl;
    int rc;

    if (apr_app_initialize(&argc, &argv, NULL) != APR_SUCCESS) {
        fprintf(stderr, PROG ": cannot initialise APR\n");
        return CTL_FAIL;
    }
    memset(&ctl, 0, sizeof(ctl));
    apr_pool_create(&ctl.pool, NULL);
    prov_log_set(log_stderr, NULL, PROV_LOG_WARN);
    /* Tests fix "now" (windows, "today") as the module's ProviderClockFile does:
     * the file holds epoch seconds, and real time is used while it is absent. */
    if (getenv("PROVIDERCTL_CLOCK_FILE") && *getenv("PROVIDERCTL_CLOCK_FILE"))
        prov_clock_set_file(getenv("PROVIDERCTL_CLOCK_FILE"));
    rc = dispatch(&ctl, argc, argv);
    if (ferror(stdout) || fflush(stdout) != 0) {
        fprintf(stderr, PROG ": cannot write the output\n");
        rc = CTL_FAIL;
    }
    apr_pool_destroy(ctl.pool);
    apr_terminate();
    return rc;
}

/* ---- helpers for the commands -------------------------------------------- */

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
        fprintf(stderr, "\nusage: " PROG " %s\n", synopsis(ctl->group, ctl->cmd, ctl->pool));
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
