/* providerctl.c: the administrator's command line. Owns main(): the global
 * options (--db, --json, --verbose, --help) wherever they appear, the table of
 * command groups, finding the command and checking its arguments and options
 * against its table entry (usage errors exit 2), locating the database (--db,
 * else $PROVIDER_DB, else the config file), opening it and checking the schema,
 * the logging sink (stderr), the help texts, and the helpers that every
 * command uses for parsing, errors and output. Commands themselves live in
 * cli/providerctl_<group>.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <apr_general.h>
#include <apr_lib.h>
#include <apr_time.h>
#include "providerctl.h"
#include "prov_log.h"

#define PROG "providerctl"
#define DEFAULT_CONF "/etc/mod_provider/providerctl.conf"

static const ctl_group_t groups[] = {
    { "db",      "The database schema",                   ctl_db_cmds },
    { "user",    "Users, by id or email",                 ctl_user_cmds },
    { "key",     "API keys, by key id (secrets are shown only when made)", ctl_key_cmds },
    { "balance", "Prepaid credit balances",               ctl_balance_cmds },
    { "model",   "The model catalog and its rate card",   ctl_model_cmds },
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
        "balances and the model catalog.\n\n"
        "Global options (allowed anywhere on the line):\n"
        "  --db DRIVER:PARAMS  the database, e.g. sqlite3:/var/lib/provider/provider.db or\n"
        "                      pgsql:'host=... dbname=...'; else $PROVIDER_DB, else a line\n"
        "                      'db = DRIVER:PARAMS' in " DEFAULT_CONF "\n"
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
               "USER is a user id or an email; KEY is a key id.\n"
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

/* ---- the database -------------------------------------------------------- */

static char *trim(char *s)
{
    char *e;
    while (apr_isspace(*s))
        s++;
    e = s + strlen(s);
    while (e > s && apr_isspace(e[-1]))
        *--e = '\0';
    return s;
}

/* Reads "db = DRIVER:PARAMS" from the config file. CTL_OK with *spec NULL when
 * the default file does not exist; CTL_USAGE when an explicitly named one
 * cannot be read or a line is malformed. */
static int conf_read(ctl_t *ctl, const char **spec)
{
    const char *env = getenv("PROVIDERCTL_CONF");
    const char *path = (env && *env) ? env : DEFAULT_CONF;
    char line[4096];
    int lineno = 0;
    FILE *f = fopen(path, "r");

    *spec = NULL;
    if (!f) {
        if (!env || !*env)
            return CTL_OK;
        fprintf(stderr, PROG ": cannot read the config file %s (named by PROVIDERCTL_CONF)\n",
                path);
        return CTL_USAGE;
    }
    while (fgets(line, sizeof(line), f)) {
        char *l = trim(line), *eq;
        lineno++;
        if (!*l || *l == '#')
            continue;
        eq = strchr(l, '=');
        if (!eq) {
            fclose(f);
            fprintf(stderr, PROG ": %s:%d: expected 'db = DRIVER:PARAMS'\n", path, lineno);
            return CTL_USAGE;
        }
        *eq = '\0';
        if (!strcmp(trim(l), "db"))
            *spec = apr_pstrdup(ctl->pool, trim(eq + 1));
        else
            fprintf(stderr, PROG ": %s:%d: unknown setting '%s' ignored\n", path, lineno,
                    trim(l));
    }
    fclose(f);
    return CTL_OK;
}

static int db_locate(ctl_t *ctl)
{
    const char *env = getenv("PROVIDER_DB");
    int rc;
    if (ctl->db_spec)
        return CTL_OK;
    if (env && *env) {
        ctl->db_spec = env;
        return CTL_OK;
    }
    if ((rc = conf_read(ctl, &ctl->db_spec)) != CTL_OK)
        return rc;
    if (!ctl->db_spec || !*ctl->db_spec) {
        fprintf(stderr, PROG ": no database given: use --db DRIVER:PARAMS (e.g. "
                "--db sqlite3:/var/lib/provider/provider.db), set PROVIDER_DB, or put "
                "'db = DRIVER:PARAMS' in " DEFAULT_CONF " (or the file named by "
                "PROVIDERCTL_CONF)\n");
        return CTL_USAGE;
    }
    return CTL_OK;
}

static int db_open(ctl_t *ctl)
{
    const char *spec, *colon;
    int rc, version = 0, expected = prov_schema_expected();
    apr_status_t rv;

    if ((rc = db_locate(ctl)) != CTL_OK)
        return rc;
    spec = ctl->db_spec;
    colon = strchr(spec, ':');
    if (!colon || colon == spec || !colon[1]) {
        fprintf(stderr, PROG ": '%s' is not a database (use DRIVER:PARAMS, e.g. "
                "sqlite3:/var/lib/provider/provider.db)\n", spec);
        return CTL_USAGE;
    }
    /* Only `db migrate` may create a SQLite file: anything else on a wrong
     * path would silently make an empty database there. */
    if (!strncmp(spec, "sqlite3:", 8) && strcmp(colon + 1, ":memory:")
        && strcmp(ctl->cmd->verb, "migrate") && access(colon + 1, F_OK) != 0)
        return ctl_fail(ctl, "the database file %s does not exist (create it with '"
                        PROG " db migrate')", colon + 1);
    rv = prov_store_open(&ctl->store, spec, 0, ctl->pool);
    if (rv == APR_ENOTIMPL) {
        fprintf(stderr, PROG ": unsupported database driver '%.*s' (use sqlite3 or pgsql)\n",
                (int)(colon - spec), spec);
        return CTL_USAGE;
    }
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "open the database");
    if (ctl->cmd->db == CTL_DB_RAW)
        return CTL_OK;
    if ((rv = prov_schema_current(&version, ctl->store, ctl->pool)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the schema version");
    if (version < expected)
        return ctl_fail(ctl, "the database schema is at version %d but this providerctl "
                        "needs %d: run '" PROG " db migrate'", version, expected);
    if (version > expected)
        return ctl_fail(ctl, "the database schema (version %d) is newer than this "
                        "providerctl (%d): use a newer providerctl", version, expected);
    if ((rv = prov_store_prepare_all(ctl->store)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "prepare the statements");
    return CTL_OK;
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
    const ctl_group_t *g;
    for (g = groups; g->name && strcmp(g->name, gname); g++)
        ;
    if (!g->name) {
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
    const ctl_group_t *g;
    if (!gname) {
        help_program(stdout, ctl->pool);
        return CTL_OK;
    }
    if (ctl->cmd) {
        help_command(stdout, ctl->group, ctl->cmd, ctl->pool);
        return CTL_OK;
    }
    for (g = groups; g->name && strcmp(g->name, gname); g++)
        ;
    if (g->name && !verb) {
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
            if (gname && verb && !ctl->cmd) {
                for (ctl->group = groups; ctl->group->name
                     && strcmp(ctl->group->name, gname); ctl->group++)
                    ;
                if (ctl->group->name) {
                    for (ctl->cmd = ctl->group->cmds; ctl->cmd->verb
                         && strcmp(ctl->cmd->verb, verb); ctl->cmd++)
                        ;
                    if (!ctl->cmd->verb)
                        ctl->cmd = NULL;
                }
            }
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
    if (ctl->cmd->db != CTL_DB_NONE && (rc = db_open(ctl)) != CTL_OK)
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

int ctl_find_user(ctl_t *ctl, prov_user_t **u, const char *ref)
{
    apr_status_t rv = prov_user_find(u, ctl->store, ref, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "unknown user '%s'", ref);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "look up the user");
    return CTL_OK;
}

int ctl_find_model(ctl_t *ctl, prov_model_t **m, const char *public_id)
{
    apr_status_t rv = prov_model_find(m, ctl->store, public_id, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "unknown model '%s'", public_id);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "look up the model");
    return CTL_OK;
}

/* ---- output -------------------------------------------------------------- */

const char *ctl_time(apr_int64_t t, int iso, apr_pool_t *p)
{
    apr_time_exp_t e;
    if (t <= 0)
        return iso ? NULL : "-";
    apr_time_exp_gmt(&e, apr_time_from_sec(t));
    if (iso)
        return apr_psprintf(p, "%04d-%02d-%02dT%02d:%02d:%02dZ", e.tm_year + 1900,
                            e.tm_mon + 1, e.tm_mday, e.tm_hour, e.tm_min, e.tm_sec);
    return apr_psprintf(p, "%04d-%02d-%02d %02d:%02d", e.tm_year + 1900, e.tm_mon + 1,
                        e.tm_mday, e.tm_hour, e.tm_min);
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
    apr_time_exp_t e;
    if (t <= 0)
        return NULL;
    apr_time_exp_gmt(&e, apr_time_from_sec(t));
    apr_snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", e.tm_year + 1900,
                 e.tm_mon + 1, e.tm_mday, e.tm_hour, e.tm_min, e.tm_sec);
    return json_object_new_string(buf);
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
