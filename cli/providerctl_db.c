/* providerctl_db.c: the database side of providerctl. Where the database
 * comes from (--db, else $PROVIDER_DB, else "db = DRIVER:PARAMS" in the config
 * file), opening it and checking that its schema is the one this build
 * expects before any command touches it; and the `db` group: applying the
 * migrations compiled into this build (`db migrate`, idempotent) and
 * reporting the schema version (`db status`). The db commands open the
 * database without the schema check (CTL_DB_RAW): they are how an old or
 * empty one is brought up to date. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <apr_lib.h>
#include "providerctl.h"

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

/* ---- the db group -------------------------------------------------------- */


static const char *driver_name(ctl_t *ctl)
{
    return ctl->store->dialect == PROV_DIALECT_PGSQL ? "pgsql" : "sqlite3";
}

static int db_migrate(ctl_t *ctl)
{
    int before = 0, after = 0, applied = 0, expected = prov_schema_expected();
    apr_status_t rv = prov_schema_current(&before, ctl->store, ctl->pool);

    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the schema version");
    if (before > expected)
        return ctl_fail(ctl, "the database schema (version %d) is newer than this "
                        "providerctl (%d): nothing done", before, expected);
    rv = prov_schema_migrate(&applied, ctl->store, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "migrate the schema");
    rv = prov_schema_current(&after, ctl->store, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the schema version");

    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "driver", json_object_new_string(driver_name(ctl)));
        json_object_object_add(o, "applied", json_object_new_int(applied));
        json_object_object_add(o, "from", json_object_new_int(before));
        json_object_object_add(o, "version", json_object_new_int(after));
        json_object_object_add(o, "expected", json_object_new_int(expected));
        ctl_json_print(o);
    }
    else if (applied == 0) {
        printf("the schema is up to date (version %d)\n", after);
    }
    else {
        printf("applied %d migration%s: schema version %d -> %d\n", applied,
               applied == 1 ? "" : "s", before, after);
    }
    return CTL_OK;
}

static int db_status(ctl_t *ctl)
{
    int current = 0, expected = prov_schema_expected();
    const char *state;
    apr_status_t rv = prov_schema_current(&current, ctl->store, ctl->pool);

    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the schema version");
    state = current == expected ? "up to date"
          : current < expected ? "needs migration (run 'providerctl db migrate')"
          : "newer than this providerctl";
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "driver", json_object_new_string(driver_name(ctl)));
        json_object_object_add(o, "version", json_object_new_int(current));
        json_object_object_add(o, "expected", json_object_new_int(expected));
        json_object_object_add(o, "up_to_date", json_object_new_boolean(current == expected));
        ctl_json_print(o);
        return CTL_OK;
    }
    ctl_kv("driver:", driver_name(ctl));
    ctl_kv("schema version:", apr_itoa(ctl->pool, current));
    ctl_kv("expected:", apr_itoa(ctl->pool, expected));
    ctl_kv("status:", state);
    return CTL_OK;
}

const ctl_cmd_t ctl_db_cmds[] = {
    { "migrate", "", 0, 0, NULL, CTL_DB_RAW, db_migrate,
      "apply the missing schema migrations",
      "Creates the database (a SQLite file is created if missing) or brings its\n"
      "schema up to the version of this build, one migration per transaction.\n"
      "Running it again is harmless: it then says the schema is up to date." },
    { "status", "", 0, 0, NULL, CTL_DB_RAW, db_status,
      "show the schema version and the version this build expects", NULL },
    { NULL }
};
