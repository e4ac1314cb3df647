/* providerctl.h: what the parts of providerctl share: the command table entry
 * (group, verb, positional synopsis, options, summary, run function), the
 * context a run function gets (parsed arguments, the open store, --json), and
 * the helpers every command uses to parse credits, ids and times, find users
 * and models, report errors with the right exit code, and print tables,
 * key/value lines, JSON and an account's balance and windows. The helpers live
 * in the two shared files, providerctl_common.c (arguments, errors, output) and
 * providerctl_common_store.c (opening the database, lookups, the account).
 * Each group (db, user, key, balance, model, plan, subscription, usage, hold,
 * oauth) lives in cli/providerctl_<group>.c (subscription with plan) and exports its table
 * of commands; a group's file calls the shared files, never another group's.
 * providerctl.c has main() and the dispatch. */
#ifndef PROVIDERCTL_H
#define PROVIDERCTL_H

#include <json-c/json.h>
#include "prov_common.h"
#include "prov_store.h"
#include "prov_money.h"
#include "prov_json.h"
#include "prov_account.h"
#include "prov_models.h"
#include "prov_usage.h"
#include "prov_plans.h"

#define PROG "providerctl"
/* The config file read when neither --db nor PROVIDER_DB is given;
 * $PROVIDERCTL_CONF names another. */
#define CTL_DEFAULT_CONF "/etc/mod_provider/providerctl.conf"

/* Exit codes (CONVENTIONS: 0 ok, 1 failure, 2 usage). */
#define CTL_OK    0
#define CTL_FAIL  1
#define CTL_USAGE 2

typedef struct ctl_opt_t {
    const char *name;      /* long name without "--" */
    const char *arg;       /* value placeholder ("NAME"), NULL for a flag */
    int required;
    const char *help;
} ctl_opt_t;

/* What a command needs from the database before it runs. */
typedef enum {
    CTL_DB_NONE = 0,       /* nothing */
    CTL_DB_RAW,            /* an open connection, any schema version (db group) */
    CTL_DB_READY           /* the expected schema, statements prepared */
} ctl_db_need_e;

typedef struct ctl_t ctl_t;
typedef int ctl_run_fn(ctl_t *ctl);

typedef struct ctl_cmd_t {
    const char *verb;      /* NULL ends a table */
    const char *args;      /* positional synopsis, e.g. "USER CREDITS" ("" for none) */
    int min_args, max_args;
    const ctl_opt_t *opts; /* command options, ended by a NULL name; may be NULL */
    ctl_db_need_e db;
    ctl_run_fn *run;
    const char *summary;   /* one line for the lists */
    const char *help;      /* a paragraph for "--help" on the command; may be NULL */
} ctl_cmd_t;

typedef struct ctl_group_t {
    const char *name;
    const char *summary;
    const ctl_cmd_t *cmds;
} ctl_group_t;

struct ctl_t {
    apr_pool_t *pool;
    const ctl_group_t *group;
    const ctl_cmd_t *cmd;
    int json;
    int verbose;
    const char *db_spec;
    prov_store_t *store;
    int argc;              /* positional arguments after GROUP VERB */
    const char **argv;
    apr_hash_t *opts;      /* option name -> value ("" for a flag) */
};

extern const ctl_cmd_t ctl_db_cmds[];
extern const ctl_cmd_t ctl_user_cmds[];
extern const ctl_cmd_t ctl_key_cmds[];
/* `key set` (providerctl_keyset.c): its run function and options, and the
 * lines `key show` prints of a key's controls. */
int ctl_key_set(ctl_t *ctl);
extern const ctl_opt_t ctl_key_set_opts[];
void ctl_key_controls_print(const prov_key_controls_t *c, apr_pool_t *p);
extern const ctl_cmd_t ctl_balance_cmds[];
extern const ctl_cmd_t ctl_model_cmds[];
extern const ctl_cmd_t ctl_plan_cmds[];
extern const ctl_cmd_t ctl_subscription_cmds[];
extern const ctl_cmd_t ctl_usage_cmds[];
/* `usage report --by session` (providerctl_usage_session.c): format is
 * table, csv or json; f is the report's filter; head the JSON report's
 * object with its filter (ctl_usage_json: given with json, which it prints
 * and frees). */
struct prov_usage_filter_t;
int ctl_usage_sessions(ctl_t *ctl, const struct prov_usage_filter_t *f, json_object *head,
                       const char *format);
/* A usage report's JSON object with its filter and grouping (by), without
 * its rows (providerctl_usage.c). */
json_object *ctl_usage_json(const struct prov_usage_filter_t *f, const char *model);
extern const ctl_cmd_t ctl_hold_cmds[];
extern const ctl_cmd_t ctl_oauth_cmds[];
extern const ctl_cmd_t ctl_ledger_cmds[];
extern const ctl_cmd_t ctl_alert_cmds[];
extern const ctl_cmd_t ctl_audit_cmds[];

/* ---- the audit rows of changes (providerctl_audit_log.c) ---- */
/* Before a command runs: arms its audit row when it is a change. */
void ctl_audit_arm(ctl_t *ctl);
/* After it ran with rc: writes the row if no commit did (rc CTL_OK) or
 * drops it; rc, or CTL_FAIL when the row could not be written. */
int ctl_audit_settle(ctl_t *ctl, int rc);

/* ---- arguments (providerctl_common.c) ---- */
/* "GROUP VERB ARGS [--opt VALUE]...": the command's synopsis for the help. */
const char *ctl_synopsis(const ctl_group_t *g, const ctl_cmd_t *c, apr_pool_t *p);
/* The value of a command option, or NULL when it was not given. */
const char *ctl_opt(ctl_t *ctl, const char *name);
/* Non-zero when a flag (or an option) was given. */
int ctl_flag(ctl_t *ctl, const char *name);
/* Parses a credit amount into *out; returns CTL_OK or CTL_USAGE after saying
 * what was wrong (what names the value: "amount", "budget", "--input"). */
int ctl_parse_credits(ctl_t *ctl, prov_micro_t *out, const char *s, int allow_negative,
                      const char *what);
/* Parses a positive numeric id (what: "key id"); CTL_OK or CTL_USAGE. */
int ctl_parse_id(ctl_t *ctl, apr_int64_t *out, const char *s, const char *what);
/* Parses a DATE/T argument: YYYY-MM-DD (00:00 UTC), YYYY-MM-DDTHH:MM[:SS]Z or
 * epoch seconds; CTL_OK or CTL_USAGE after naming what ("--until date"). */
int ctl_parse_time(ctl_t *ctl, apr_int64_t *out, const char *s, const char *what);
/* The --before DATE of a retention command (ledger compact, alerts purge):
 * by default PROV_RETENTION_DEFAULT days before now; a date within the last
 * PROV_RETENTION_MIN days is a usage error that says why (what reads them). */
int ctl_parse_retention(ctl_t *ctl, apr_int64_t *before, apr_int64_t now, const char *why);

/* ---- errors (each prints "providerctl: ..." on stderr) ---- */
int ctl_fail(ctl_t *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error: the message and a pointer to the command's --help. */
int ctl_usage(ctl_t *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failed core call: "cannot <what>: <reason>"; CTL_FAIL. */
int ctl_db_fail(ctl_t *ctl, apr_status_t rv, const char *what);

/* ---- output ---- */
/* "2025-01-02 03:04" (table) or "2025-01-02T03:04:05Z" (iso); "-" / NULL for 0. */
const char *ctl_time(apr_int64_t t, int iso, apr_pool_t *p);
const char *ctl_credits(prov_micro_t v, apr_pool_t *p);
/* Prints obj (pretty) on stdout and releases it. */
void ctl_json_print(json_object *obj);
json_object *ctl_json_str(const char *s);       /* null for NULL */
json_object *ctl_json_time(apr_int64_t t);      /* ISO string, null for 0 */
/* Seconds as "1d 2h 3m 4s" (zero units left out; "0s" for none). */
const char *ctl_duration(apr_int64_t secs, apr_pool_t *p);
/* A "label: value" line of the show commands. */
void ctl_kv(const char *label, const char *value);

typedef struct ctl_table_t ctl_table_t;
ctl_table_t *ctl_table_make(apr_pool_t *p, int ncols, ...);
/* Adds a row of ncols strings (NULL prints as "-"). */
void ctl_table_row(ctl_table_t *t, ...);
/* Prints the table with aligned columns, or empty_note when it has no rows. */
void ctl_table_print(ctl_table_t *t, const char *empty_note);

/* The JSON of one record (a user, a plan...). */
typedef json_object *ctl_to_json_fn(const void *rec);
/* Adds the table row of one record. */
typedef void ctl_to_row_fn(ctl_table_t *t, const void *rec, apr_pool_t *p);
/* What the list commands print: recs (an array of pointers to records) as a
 * JSON array of to_json(rec) with --json, else as table t (its headers made)
 * with a to_row(rec) row each, or empty_note when there are none. CTL_OK. */
int ctl_list_print(ctl_t *ctl, const apr_array_header_t *recs, ctl_to_json_fn *to_json,
                   ctl_table_t *t, ctl_to_row_fn *to_row, const char *empty_note);

/* ---- the store (providerctl_common_store.c) ---- */
/* Finds the database (--db, $PROVIDER_DB, the config file), opens it into
 * ctl->store and, for CTL_DB_READY commands, checks the schema version and
 * prepares the statements. CTL_OK, or the exit code after saying why not. */
int ctl_db_open(ctl_t *ctl);
/* Finds USER (id or email); CTL_OK, or CTL_FAIL after "unknown user 'x'". */
int ctl_find_user(ctl_t *ctl, prov_user_t **u, const char *ref);
/* A catalog model as `model show --json` prints it (providerctl_model.c). */
json_object *ctl_model_json(const void *rec);
/* Finds a model; CTL_OK, or CTL_FAIL after "unknown model 'x'". */
int ctl_find_model(ctl_t *ctl, prov_model_t **m, const char *public_id);
/* id, user_id, plan (name), plan_id, both quotas, starts/until/cancelled_at */
json_object *ctl_subscription_json(const prov_subscription_t *sub);

/* ---- the account's balance, plan and windows (balance/subscription show) ---- */
/* Prints (or, with --json, prints as one object) the balance, the held
 * amount, the active plan and both windows' use and when capacity returns;
 * CTL_OK or CTL_FAIL. */
int ctl_account_print(ctl_t *ctl, const prov_user_t *u);

#endif
