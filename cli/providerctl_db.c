/* providerctl_db.c: the `db` group: applying the migrations compiled into
 * this build (`db migrate`, idempotent) and reporting the schema version (`db
 * status`). The db commands open the database without the schema check
 * (CTL_DB_RAW, see ctl_db_open in providerctl_common_store.c): they are how an
 * old or empty one is brought up to date. */
#include <stdio.h>
#include "providerctl.h"
#include "prov_backup.h"

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

/* A copy of a live SQLite database (core/store/prov_backup.h). */
static int db_backup(ctl_t *ctl)
{
    const char *file = ctl->argv[0];
    apr_status_t rv;
    if (ctl->store->dialect != PROV_DIALECT_SQLITE)
        return ctl_fail(ctl, "db backup copies SQLite databases only: back up PostgreSQL "
                        "with pg_dump (e.g. pg_dump -Fc -f provider.dump DBNAME) and restore "
                        "with pg_restore (see the README, \"Backing up and restoring\")");
    rv = prov_backup_sqlite(ctl->store, file, ctl->pool);
    if (APR_STATUS_IS_EEXIST(rv))
        return ctl_fail(ctl, "%s exists: db backup never overwrites a file", file);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "copy the database");
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "file", json_object_new_string(file));
        ctl_json_print(o);
    }
    else {
        printf("copied the database into %s\n", file);
    }
    return CTL_OK;
}

const ctl_cmd_t ctl_db_cmds[] = {
    { "migrate", "", 0, 0, NULL, CTL_DB_RAW, db_migrate,
      "apply the missing schema migrations",
      "Creates the database (a SQLite file is created if missing) or brings its\n"
      "schema up to the version of this build, one migration per transaction.\n"
      "Running it again is harmless: it then says the schema is up to date." },
    { "backup", "FILE", 1, 1, NULL, CTL_DB_RAW, db_backup,
      "copy a live SQLite database into a new FILE (PostgreSQL: use pg_dump)",
      "Writes a consistent copy of the database as it was when the copy began into\n"
      "FILE, a new SQLite database, while the server keeps serving (SQLite's VACUUM\n"
      "INTO: one read transaction; in WAL mode writers go on). FILE must not exist:\n"
      "it is never overwritten. To restore, stop httpd, put the copy in place of the\n"
      "database file (removing its -wal and -shm files) and start httpd again. On\n"
      "PostgreSQL it fails: use pg_dump and pg_restore." },
    { "status", "", 0, 0, NULL, CTL_DB_RAW, db_status,
      "show the schema version and the version this build expects", NULL },
    { NULL }
};
