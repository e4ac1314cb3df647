/* providerctl_common_store.c: what providerctl commands share that reads the
 * store (the other shared file is providerctl_common.c; both are declared in
 * providerctl.h). Where the database comes from (--db, else $PROVIDER_DB,
 * else "db = DRIVER:PARAMS" in the config file), opening it and checking that
 * its schema is the one this build expects before any command touches it
 * (the db group opens it without that check: it is how an old or empty one is
 * brought up to date); finding a user or a model named on the command line;
 * the JSON of a usage row and of a subscription; and what `balance show` and
 * `subscription show` both print about an account: the balance, what requests
 * in flight hold, the active plan and each window's use, percentage and when
 * capacity returns (as a duration and a UTC time), from the spend engine's
 * account status. "Now" is prov_now(), the clock that tests can set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <apr_lib.h>
#include "providerctl.h"
#include "prov_plans.h"
#include "prov_billing.h"

/* ---- finding and opening the database ---------------------------------- */

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
    const char *path = (env && *env) ? env : CTL_DEFAULT_CONF;
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
                "'db = DRIVER:PARAMS' in " CTL_DEFAULT_CONF " (or the file named by "
                "PROVIDERCTL_CONF)\n");
        return CTL_USAGE;
    }
    return CTL_OK;
}

int ctl_db_open(ctl_t *ctl)
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

/* ---- users and models ---------------------------------------------------- */

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

/* ---- usage and the account ------------------------------------------------ */

json_object *ctl_subscription_json(const prov_subscription_t *sub)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(sub->id));
    json_object_object_add(o, "user_id", json_object_new_int64(sub->user_id));
    json_object_object_add(o, "plan", json_object_new_string(sub->plan_name));
    json_object_object_add(o, "plan_id", json_object_new_int64(sub->plan_id));
    json_object_object_add(o, "quota_5h", prov_json_credits(sub->quota_5h));
    json_object_object_add(o, "quota_7d", prov_json_credits(sub->quota_7d));
    json_object_object_add(o, "starts_at", ctl_json_time(sub->starts_at));
    json_object_object_add(o, "until_at", ctl_json_time(sub->until_at));
    json_object_object_add(o, "cancelled_at", ctl_json_time(sub->cancelled_at));
    return o;
}

/* used / quota in tenths of a percent, without overflow or floating point. */
static apr_int64_t permille(prov_micro_t used, prov_micro_t quota)
{
    if (quota <= 0 || used <= 0)
        return 0;
    while (quota > APR_INT64_MAX / 1000 || used > APR_INT64_MAX / 1000) {
        used /= 1000;
        quota /= 1000;
        if (quota == 0)
            return 0;
    }
    return used * 1000 / quota;
}

static const char *percent_text(apr_int64_t pm, apr_pool_t *p)
{
    if (pm % 10)
        return apr_psprintf(p, "%" APR_INT64_T_FMT ".%d", pm / 10, (int)(pm % 10));
    return prov_i64(pm / 10, p);
}

static json_object *window_json(prov_micro_t quota, prov_micro_t used, apr_int64_t reset,
                                apr_int64_t now, apr_pool_t *p)
{
    json_object *o = json_object_new_object();
    apr_int64_t pm = permille(used, quota);
    json_object_object_add(o, "quota", prov_json_credits(quota));
    json_object_object_add(o, "used", prov_json_credits(used));
    json_object_object_add(o, "percent",
                           json_object_new_double_s((double)pm / 10.0, percent_text(pm, p)));
    json_object_object_add(o, "reset_seconds", json_object_new_int64(used > 0 ? reset : 0));
    json_object_object_add(o, "reset_at", used > 0 ? ctl_json_time(now + reset) : NULL);
    return o;
}

static const char *window_text(prov_micro_t quota, prov_micro_t used, apr_int64_t reset,
                               apr_int64_t now, apr_pool_t *p)
{
    const char *head = apr_psprintf(p, "%s / %s credits (%s%%)", prov_money_format(used, p),
                                    prov_money_format(quota, p),
                                    percent_text(permille(used, quota), p));
    if (used <= 0)
        return apr_pstrcat(p, head, "; nothing used", NULL);
    return apr_psprintf(p, "%s; capacity returns in %s (%s UTC)", head, ctl_duration(reset, p),
                        ctl_time(now + reset, 0, p));
}

static const char *sub_text(const prov_subscription_t *sub, apr_pool_t *p)
{
    return apr_psprintf(p, "%s (since %s, %s)", sub->plan_name, ctl_time(sub->starts_at, 0, p),
                        sub->until_at ? apr_pstrcat(p, "until ", ctl_time(sub->until_at, 0, p),
                                                    " UTC", NULL)
                                      : "open-ended");
}

int ctl_account_print(ctl_t *ctl, const prov_user_t *u)
{
    apr_int64_t now = prov_now();
    prov_account_status_t st;
    prov_subscription_t *sub = NULL;
    const prov_plan_windows_t *w = &st.windows;
    apr_pool_t *p = ctl->pool;
    apr_status_t rv;

    rv = prov_billing_account_status(&st, ctl->store, u->id, now, p);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the account's status");
    rv = prov_subscription_active(&sub, ctl->store, u->id, now, p);
    if (rv != APR_SUCCESS && rv != APR_NOTFOUND)
        return ctl_db_fail(ctl, rv, "read the subscription");
    if (ctl->json) {
        json_object *o = json_object_new_object(), *wo = NULL;
        json_object_object_add(o, "user_id", json_object_new_int64(u->id));
        json_object_object_add(o, "email", json_object_new_string(u->email));
        json_object_object_add(o, "balance", prov_json_credits(st.balance));
        json_object_object_add(o, "held", prov_json_credits(st.held));
        json_object_object_add(o, "subscription", sub ? ctl_subscription_json(sub) : NULL);
        if (w->has_plan) {
            wo = json_object_new_object();
            json_object_object_add(wo, "5h", window_json(w->quota_5h, w->used_5h, w->reset_5h,
                                                         now, p));
            json_object_object_add(wo, "7d", window_json(w->quota_7d, w->used_7d, w->reset_7d,
                                                         now, p));
        }
        json_object_object_add(o, "windows", wo);
        ctl_json_print(o);
        return CTL_OK;
    }
    printf("balance of %s: %s credits\n", u->email, ctl_credits(st.balance, p));
    if (st.held)
        ctl_kv("held:", apr_pstrcat(p, ctl_credits(st.held, p),
                                    " credits (by requests in flight)", NULL));
    ctl_kv("plan:", sub ? sub_text(sub, p) : "none (requests are paid from the balance)");
    if (w->has_plan) {
        ctl_kv("5-hour window:", window_text(w->quota_5h, w->used_5h, w->reset_5h, now, p));
        ctl_kv("7-day window:", window_text(w->quota_7d, w->used_7d, w->reset_7d, now, p));
    }
    return CTL_OK;
}
