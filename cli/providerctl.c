/* providerctl.c: the administrator's command line. Owns main(): the global
 * options (--db, --json, --verbose, --help) wherever they appear, the table of
 * command groups, finding the command and checking its arguments and options
 * against its table entry (usage errors exit 2), the logging sink (stderr)
 * and the help texts. The helpers the commands use for parsing, errors and
 * output, and opening the database, are in the shared files
 * providerctl_common.c and providerctl_common_store.c; the commands live in
 * cli/providerctl_<group>.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <apr_general.h>
#include <apr_lib.h>
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
    { "ledger",  "The ledger's daily rollups and retention", ctl_ledger_cmds },
    { "hold",    "Holds in flight (requests' reservations, processes' leases)", ctl_hold_cmds },
    { "oauth",   "OAuth clients of the MCP account endpoint, and the purge", ctl_oauth_cmds },
    { "alerts",  "Spend alerts: the webhook's outbox, delivered or pending", ctl_alert_cmds },
    { "audit",   "The audit trail: who changed what, sign-ins", ctl_audit_cmds },
    { NULL, NULL, NULL }
};

/* ---- help ---------------------------------------------------------------- */

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
        fprintf(f, "  " PROG " %s\n      %s\n", ctl_synopsis(g, c, p), c->summary);
}

static void help_command(FILE *f, const ctl_group_t *g, const ctl_cmd_t *c, apr_pool_t *p)
{
    const ctl_opt_t *o;
    fprintf(f, "usage: " PROG " %s [--json]\n\n%s.\n", ctl_synopsis(g, c, p), c->summary);
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

/* The command line as far as it has been read. */
typedef struct line_t {
    int argc, i;                /* argv[i] is the word being read */
    const char *const *argv;
    const char *gname, *verb;
    apr_array_header_t *pos;    /* the positional arguments after GROUP VERB */
    int help, rest;             /* rest: after "--", every word is an argument */
} line_t;

/* Not an exit code: the option was taken and reading goes on. */
#define TAKEN (-1)

/* A word that is not an option: "help", the group, the verb or an argument. */
static void take_word(ctl_t *ctl, line_t *l, const char *a)
{
    if (!l->gname && !l->help && !strcmp(a, "help") && !l->rest)
        l->help = 1;
    else if (!l->gname)
        l->gname = a;
    else if (!l->verb)
        l->verb = a;
    else
        APR_ARRAY_PUSH(l->pos, const char *) = a;
    if (l->gname && l->verb && !ctl->cmd && (ctl->group = find_group(l->gname)))
        ctl->cmd = find_cmd(ctl->group, l->verb);
}

/* "--NAME[=VALUE]" (len is NAME's length, eq the '=' or NULL), an option of
 * the command; its value may be the next word. TAKEN, or the exit code after
 * saying why not. */
static int take_cmd_option(ctl_t *ctl, line_t *l, const char *name, const char *eq,
                           apr_size_t len)
{
    const ctl_opt_t *o;
    const char *val = NULL;

    if (!ctl->cmd) {
        /* An unknown command is the better diagnosis than its options. */
        if (l->verb && !l->help)
            return resolve_error(ctl, l->gname, l->verb);
        if (!l->help) {
            fprintf(stderr, PROG ": unknown option '%s' (see '" PROG " --help')\n",
                    l->argv[l->i]);
            return CTL_USAGE;
        }
        return TAKEN;
    }
    o = opt_find(ctl->cmd->opts, name, len);
    if (!o) {
        if (l->help)
            return TAKEN;
        return ctl_usage(ctl, "unknown option '--%.*s'", (int)len, name);
    }
    if (o->arg) {
        if (!eq && l->i + 1 >= l->argc)
            return ctl_usage(ctl, "option --%s needs a value (%s)", o->name, o->arg);
        val = eq ? eq + 1 : l->argv[++l->i];
    }
    else if (eq) {
        return ctl_usage(ctl, "option --%s takes no value", o->name);
    }
    apr_hash_set(ctl->opts, o->name, APR_HASH_KEY_STRING, val ? val : "");
    return TAKEN;
}

/* The option argv[i]: a global one or the command's. TAKEN, or the exit code
 * after saying why not. */
static int take_option(ctl_t *ctl, line_t *l)
{
    const char *a = l->argv[l->i], *name, *eq;
    apr_size_t len;

    if (!strcmp(a, "--")) {
        l->rest = 1;
        return TAKEN;
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        l->help = 1;
        return TAKEN;
    }
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
        ctl->verbose = 1;
        return TAKEN;
    }
    if (!strcmp(a, "--json")) {
        ctl->json = 1;
        return TAKEN;
    }
    if (a[1] != '-') {
        fprintf(stderr, PROG ": unknown option '%s' (see '" PROG " --help')\n", a);
        return CTL_USAGE;
    }
    name = a + 2;
    eq = strchr(name, '=');
    len = eq ? (apr_size_t)(eq - name) : strlen(name);
    if (len == 2 && !strncmp(name, "db", 2)) {
        if (!eq && l->i + 1 >= l->argc) {
            fprintf(stderr, PROG ": option --db needs a value (DRIVER:PARAMS)\n");
            return CTL_USAGE;
        }
        ctl->db_spec = eq ? eq + 1 : l->argv[++l->i];
        return TAKEN;
    }
    return take_cmd_option(ctl, l, name, eq, len);
}

/* The whole line read: the help, or the command after checking its
 * arguments and options and opening the database it needs. */
static int run_command(ctl_t *ctl, line_t *l)
{
    const ctl_opt_t *o;
    int rc;

    if (l->help)
        return run_help(ctl, l->gname, l->verb);
    if (!l->gname) {
        help_program(stderr, ctl->pool);
        return CTL_USAGE;
    }
    if (!ctl->cmd)
        return resolve_error(ctl, l->gname, l->verb);
    ctl->argc = l->pos->nelts;
    ctl->argv = (const char **)l->pos->elts;
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
    ctl_audit_arm(ctl);
    rc = ctl_audit_settle(ctl, ctl->cmd->run(ctl));
    fflush(stdout);
    return rc;
}

static int dispatch(ctl_t *ctl, int argc, const char *const *argv)
{
    line_t l;
    int rc;

    memset(&l, 0, sizeof(l));
    l.argc = argc;
    l.argv = argv;
    l.pos = apr_array_make(ctl->pool, 8, sizeof(const char *));
    ctl->opts = apr_hash_make(ctl->pool);
    for (l.i = 1; l.i < argc; l.i++) {
        if (l.rest || !is_option(argv[l.i]))
            take_word(ctl, &l, argv[l.i]);
        else if ((rc = take_option(ctl, &l)) != TAKEN)
            return rc;
    }
    return run_command(ctl, &l);
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
