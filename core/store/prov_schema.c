/* prov_schema.c: schema versions and migrations. The migrations are compiled
 * in (prov_schema_data.c, generated from schema/); each runs in its own
 * transaction with its schema_version row, so a failed one leaves nothing
 * half-applied. A migration runs when its own row is missing, not when its
 * number is above the highest one applied: numbers are handed out to work
 * that lands in any order, so a database may have 7 before 6 arrives. The
 * module uses prov_schema_current to refuse an old schema. */
#include <stdlib.h>
#include <string.h>
#include "prov_store.h"
#include "prov_schema_data.h"
#include "prov_log.h"

int prov_schema_expected(void)
{
    int i, v = 0;
    for (i = 0; prov_migrations[i].version >= 0; i++) {
        if (prov_migrations[i].version > v)
            v = prov_migrations[i].version;
    }
    return v;
}

static apr_status_t select_int(int *out, prov_store_t *s, const char *sql, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *v = NULL;
    int rc = apr_dbd_select(s->driver, p, s->handle, &res, sql, 1);
    /* Once more when a migration changed the schema under it (SQLite's
     * SQLITE_SCHEMA: another process migrating while this one checks). */
    if (rc)
        rc = apr_dbd_select(s->driver, p, s->handle, &res, sql, 1);
    if (rc) {
        prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00020: schema query failed: %s",
                 apr_dbd_error(s->driver, s->handle, rc));
        return APR_EGENERAL;
    }
    if (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        v = prov_store_get(s, row, 0);
    while (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        ;
    *out = v ? atoi(v) : 0;
    return APR_SUCCESS;
}

static apr_status_t has_version(int *has, prov_store_t *s, int v, apr_pool_t *p)
{
    return select_int(has, s, apr_psprintf(p, "SELECT COUNT(*) FROM schema_version "
                                           "WHERE version = %d", v), p);
}

/* The highest version applied, or, when a compiled migration below it is
 * missing, the one before the first missing: the schema is only that far. */
static apr_status_t applied_through(int *version, prov_store_t *s, apr_pool_t *p)
{
    int i, max = 0, has = 0;
    apr_status_t rv = select_int(&max, s, "SELECT COALESCE(MAX(version), 0) FROM schema_version",
                                 p);
    for (i = 0; rv == APR_SUCCESS && prov_migrations[i].version >= 0; i++) {
        int v = prov_migrations[i].version;
        if (v == 0 || v > max)
            continue;
        if ((rv = has_version(&has, s, v, p)) == APR_SUCCESS && !has) {
            *version = v - 1;
            return APR_SUCCESS;
        }
    }
    if (rv == APR_SUCCESS)
        *version = max;
    return rv;
}

apr_status_t prov_schema_current(int *version, prov_store_t *s, apr_pool_t *p)
{
    int exists = 0;
    apr_status_t rv = select_int(&exists, s, s->dialect == PROV_DIALECT_SQLITE
        ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
        : "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'schema_version' "
          "AND table_schema = current_schema()", p);
    if (rv != APR_SUCCESS)
        return rv;
    if (!exists) {
        *version = 0;
        return APR_SUCCESS;
    }
    return applied_through(version, s, p);
}

/* Statements end with ';' at the end of a line; chunks holding only comments
 * and blanks are skipped. */
static apr_status_t run_script(prov_store_t *s, const char *script, apr_pool_t *p)
{
    const char *c = script;
    while (*c) {
        const char *end = strstr(c, ";\n");
        const char *stmt_end = end ? end + 1 : c + strlen(c);
        char *stmt = apr_pstrndup(p, c, stmt_end - c);
        const char *q = stmt;
        int has_sql = 0;
        while (*q) {
            while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')
                q++;
            if (q[0] == '-' && q[1] == '-') {
                q = strchr(q, '\n');
                if (!q)
                    break;
                continue;
            }
            has_sql = (*q != '\0');
            break;
        }
        if (has_sql) {
            apr_status_t rv = prov_store_raw(s, stmt, p);
            if (rv != APR_SUCCESS)
                return rv;
        }
        c = end ? end + 2 : stmt_end;
    }
    return APR_SUCCESS;
}

apr_status_t prov_schema_migrate(int *applied, prov_store_t *s, apr_pool_t *p)
{
    int i, n = 0, has = 0;
    apr_status_t rv;

    for (i = 0; prov_migrations[i].version >= 0; i++) {
        const prov_migration_t *m = &prov_migrations[i];
        const char *sql = s->dialect == PROV_DIALECT_SQLITE ? m->sqlite_sql : m->pgsql_sql;
        if (m->version == 0) {
            if ((rv = run_script(s, sql, p)) != APR_SUCCESS)
                return rv;
            continue;
        }
        if ((rv = has_version(&has, s, m->version, p)) != APR_SUCCESS)
            return rv;
        if (has)
            continue;
        if ((rv = prov_store_begin(s, p)) != APR_SUCCESS)
            return rv;
        rv = run_script(s, sql, p);
        if (rv == APR_SUCCESS) {
            rv = prov_store_raw(s, apr_psprintf(p, "INSERT INTO schema_version (version, "
                                "applied_at) VALUES (%d, %" APR_INT64_T_FMT ")",
                                m->version, prov_now()), p);
        }
        if (rv != APR_SUCCESS) {
            prov_store_rollback(s, p);
            prov_log(PROV_LOG_ERR, rv, "PROV00021: migration %s failed; nothing of it was kept",
                     m->name);
            return rv;
        }
        if ((rv = prov_store_commit(s, p)) != APR_SUCCESS)
            return rv;
        prov_log(PROV_LOG_INFO, APR_SUCCESS, "PROV00022: applied migration %s", m->name);
        n++;
    }
    *applied = n;
    return APR_SUCCESS;
}
