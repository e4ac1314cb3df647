/* prov_store.c: the database seam over apr_dbd, and the one place that knows
 * the SQLite / PostgreSQL differences at run time (connection set-up, how a
 * write transaction starts; the SQLite side of both is prov_store_sqlite.c).
 * Statements are run by label from the
 * statement table (prov_sql.c) with string arguments; rows are read NULL-aware. */
#include <pthread.h>
#include <string.h>
#include "prov_store.h"
#include "prov_store_sqlite.h"
#include "prov_log.h"

apr_status_t prov_store_dialect(prov_dialect_e *d, const char *driver_name)
{
    if (!strcmp(driver_name, "sqlite3"))
        *d = PROV_DIALECT_SQLITE;
    else if (!strcmp(driver_name, "pgsql"))
        *d = PROV_DIALECT_PGSQL;
    else
        return APR_ENOTIMPL;
    return APR_SUCCESS;
}

prov_store_t *prov_store_wrap(const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                              apr_hash_t *prepared, apr_pool_t *p)
{
    prov_store_t *s = apr_pcalloc(p, sizeof(*s));
    s->driver = driver;
    s->handle = handle;
    s->prepared = prepared;
    s->pool = p;
    if (prov_store_dialect(&s->dialect, apr_dbd_name(driver)) != APR_SUCCESS)
        s->dialect = PROV_DIALECT_SQLITE;
    return s;
}

static apr_status_t run_rowful(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    int rc = apr_dbd_select(s->driver, p, s->handle, &res, sql, 1);
    if (rc) {
        prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00010: %s failed: %s", sql,
                 apr_dbd_error(s->driver, s->handle, rc));
        return APR_EGENERAL;
    }
    while (apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        ;
    return APR_SUCCESS;
}

static apr_status_t store_close_cleanup(void *data)
{
    prov_store_t *s = data;
    if (s->handle) {
        apr_dbd_close(s->driver, s->handle);
        s->handle = NULL;
    }
    return APR_SUCCESS;
}

apr_status_t prov_store_open(prov_store_t **ps, const char *spec, int prepare, apr_pool_t *p)
{
    const char *colon = spec ? strchr(spec, ':') : NULL;
    const char *name, *params, *err = NULL;
    const apr_dbd_driver_t *driver = NULL;
    apr_dbd_t *handle = NULL;
    prov_store_t *s;
    prov_dialect_e d;
    apr_status_t rv;

    if (!colon || colon == spec)
        return APR_EINVAL;
    name = apr_pstrndup(p, spec, colon - spec);
    params = colon + 1;
    if (prov_store_dialect(&d, name) != APR_SUCCESS)
        return APR_ENOTIMPL;
    apr_dbd_init(p);
    rv = apr_dbd_get_driver(p, name, &driver);
    if (rv != APR_SUCCESS) {
        prov_log(PROV_LOG_ERR, rv, "PROV00011: cannot load the apr_dbd driver '%s' "
                 "(is libaprutil1-dbd-%s installed?)", name, name);
        return rv;
    }
    rv = apr_dbd_open_ex(driver, p, params, &handle, &err);
    if (rv != APR_SUCCESS || !handle) {
        prov_log(PROV_LOG_ERR, rv, "PROV00012: cannot open the %s database: %s", name,
                 err ? err : "unknown error");
        return rv ? rv : APR_EGENERAL;
    }
    s = prov_store_wrap(driver, handle, apr_hash_make(p), p);
    s->owned = 1;
    apr_pool_cleanup_register(p, s, store_close_cleanup, apr_pool_cleanup_null);
    if (d == PROV_DIALECT_SQLITE) {
        if ((rv = run_rowful(s, "PRAGMA foreign_keys = ON", p)) != APR_SUCCESS
            || (rv = prov_store_setup(s, p)) != APR_SUCCESS)
            return rv;
    }
    if (prepare && (rv = prov_store_prepare_all(s)) != APR_SUCCESS)
        return rv;
    *ps = s;
    return APR_SUCCESS;
}

apr_status_t prov_store_setup(prov_store_t *s, apr_pool_t *p)
{
    return s->dialect == PROV_DIALECT_SQLITE ? prov_sqlite_setup(s, p) : APR_SUCCESS;
}

/* Prepares the statements of one table for s's dialect. */
static apr_status_t prepare_table(prov_store_t *s, const prov_stmt_def_t *d)
{
    for (; d->label; d++) {
        apr_dbd_prepared_t *stmt = NULL;
        const char *label = apr_pstrcat(s->pool, PROV_STMT_PREFIX, d->label, NULL);
        const char *sql = (s->dialect == PROV_DIALECT_PGSQL && d->pgsql) ? d->pgsql : d->sql;
        int rc;
        if (!*sql)
            continue;               /* not on this dialect */
        rc = apr_dbd_prepare(s->driver, s->pool, s->handle, sql, label, &stmt);
        if (rc) {
            prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00013: cannot prepare statement %s: %s",
                     d->label, apr_dbd_error(s->driver, s->handle, rc));
            return APR_EGENERAL;
        }
        apr_hash_set(s->prepared, label, APR_HASH_KEY_STRING, stmt);
    }
    return APR_SUCCESS;
}

apr_status_t prov_store_prepare_all(prov_store_t *s)
{
    apr_status_t rv = prepare_table(s, prov_store_statements());
    return rv == APR_SUCCESS ? prepare_table(s, prov_store_statements_books()) : rv;
}

void prov_store_close(prov_store_t *s)
{
    if (s && s->owned) {
        apr_pool_cleanup_run(s->pool, s, store_close_cleanup);
    }
}

static apr_dbd_prepared_t *find_stmt(prov_store_t *s, const char *label)
{
    char full[96];
    apr_dbd_prepared_t *stmt = NULL;
    apr_size_t n = strlen(label), k = sizeof(PROV_STMT_PREFIX) - 1;
    /* (no apr_snprintf: every statement of the hot path comes here) */
    if (k + n < sizeof(full)) {
        memcpy(full, PROV_STMT_PREFIX, k);
        memcpy(full + k, label, n);
        stmt = apr_hash_get(s->prepared, full, (apr_ssize_t)(k + n));
    }
    if (!stmt)
        prov_log(PROV_LOG_ERR, APR_ENOENT, "PROV00014: statement %s is not prepared", label);
    return stmt;
}

/* A labelled statement's outcome (rc from apr_dbd), logged when it failed. */
static apr_status_t exec_done(prov_store_t *s, const char *label, int rc)
{
    if (!rc)
        return APR_SUCCESS;
    prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00015: %s failed: %s", label,
             apr_dbd_error(s->driver, s->handle, rc));
    return APR_EGENERAL;
}

/* The deferred writes (prov_store_defer) as one string, taken, or NULL. */
static const char *pending_take(prov_store_t *s, apr_pool_t *p)
{
    const char *sql;
    if (!s->pending || !s->pending->nelts)
        return NULL;
    sql = apr_array_pstrcat(p, s->pending, 0);
    s->pending = NULL;
    return sql;
}

static apr_status_t raw_send(prov_store_t *s, const char *sql)
{
    int n = 0;
    int rc = apr_dbd_query(s->driver, s->handle, &n, sql);
    s->round_trips++;
    if (rc) {
        prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00017: SQL failed: %s",
                 apr_dbd_error(s->driver, s->handle, rc));
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

/* Sends the deferred writes before a statement bound as values (which
 * cannot share their string). */
static apr_status_t pending_send(prov_store_t *s, apr_pool_t *p)
{
    const char *sql = pending_take(s, p);
    return sql ? raw_send(s, sql) : APR_SUCCESS;
}

apr_status_t prov_store_defer(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    if (s->dialect != PROV_DIALECT_PGSQL || !s->in_txn)
        return prov_store_write(s, sql, p);
    if (!s->pending)
        s->pending = apr_array_make(p, 4, sizeof(const char *));
    APR_ARRAY_PUSH(s->pending, const char *) = sql;
    APR_ARRAY_PUSH(s->pending, const char *) = "; ";
    return APR_SUCCESS;
}

/* The deferred writes, then the labelled statement run by SQL's EXECUTE
 * (apr_dbd's pgsql driver prepares them with SQL's PREPARE under their full
 * label) with its arguments as quoted literals, which the statement's
 * parameter types convert: one string, one round trip. NULL when nothing is
 * deferred. */
static const char *pending_with(prov_store_t *s, const char *label, int nargs,
                                const char *const *args, apr_pool_t *p)
{
    const char *sql = pending_take(s, p);
    int i;
    if (!sql)
        return NULL;
    sql = apr_pstrcat(p, sql, "EXECUTE " PROV_STMT_PREFIX, label, nargs ? "(" : "", NULL);
    for (i = 0; i < nargs; i++)
        sql = apr_pstrcat(p, sql, i ? ", " : "", args[i] ? "'" : "NULL",
                          args[i] ? apr_dbd_escape(s->driver, p, args[i], s->handle) : "",
                          args[i] ? "'" : "", NULL);
    return nargs ? apr_pstrcat(p, sql, ")", NULL) : sql;
}

/* SQLite: whether a write must run in a transaction of its own. As a lone
 * statement it would wait for another process's write lock inside
 * apr_dbd's mutex, which every thread of the process needs for any query:
 * a thread of ours holding the lock (prov_store_begin takes it outside that
 * mutex) could not run its next statement, and both would wait out the
 * busy cap (5 s) with the whole process stalled. prov_store_begin takes
 * the lock the right way, one writer of the process at a time. */
static int own_txn(prov_store_t *s)
{
    return s->dialect == PROV_DIALECT_SQLITE && !s->in_txn;
}

/* Ends the transaction own_txn asked for: committed when rv says so, else
 * rolled back. An armed audit row stays armed: whether the change happened
 * (a revocation that found nothing did not) is its caller's to say, with
 * prov_audit_settle, as for a lone statement. */
static apr_status_t own_txn_end(prov_store_t *s, apr_status_t rv, const char *armed,
                                apr_pool_t *p)
{
    if (rv == APR_SUCCESS)
        rv = prov_store_commit(s, p);
    else
        prov_store_rollback(s, p);
    s->audit_armed = armed;
    return rv;
}

/* Begins the transaction own_txn asked for; *armed keeps the armed audit
 * row out of it. */
static apr_status_t own_txn_begin(prov_store_t *s, const char **armed, apr_pool_t *p)
{
    apr_status_t rv;
    *armed = s->audit_armed;
    s->audit_armed = NULL;
    if ((rv = prov_store_begin(s, p)) != APR_SUCCESS)
        s->audit_armed = *armed;
    return rv;
}

apr_status_t prov_store_write(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    const char *armed;
    apr_status_t rv;
    if (!own_txn(s))
        return prov_store_raw(s, sql, p);
    if ((rv = own_txn_begin(s, &armed, p)) != APR_SUCCESS)
        return rv;
    return own_txn_end(s, prov_store_raw(s, sql, p), armed, p);
}

apr_status_t prov_store_exec(prov_store_t *s, int *nrows, const char *label,
                             int nargs, const char *const *args, apr_pool_t *p)
{
    apr_dbd_prepared_t *stmt = find_stmt(s, label);
    const char *sql, *armed;
    int n = 0;
    apr_status_t rv;
    if (!stmt)
        return APR_ENOENT;
    if (own_txn(s)) {
        if ((rv = own_txn_begin(s, &armed, p)) != APR_SUCCESS)
            return rv;
        return own_txn_end(s, prov_store_exec(s, nrows, label, nargs, args, p), armed, p);
    }
    s->round_trips++;
    if ((sql = pending_with(s, label, nargs, args, p)))
        rv = exec_done(s, label, apr_dbd_query(s->driver, s->handle, &n, sql));
    else
        rv = exec_done(s, label, apr_dbd_pquery(s->driver, p, s->handle, &n, stmt, nargs,
                                                (const char **)args));
    if (rv == APR_SUCCESS && nrows)
        *nrows = n;
    return rv;
}

apr_status_t prov_store_exec_bin(prov_store_t *s, const char *label, const void **args,
                                 apr_pool_t *p)
{
    apr_dbd_prepared_t *stmt = find_stmt(s, label);
    const char *armed;
    int n = 0;
    apr_status_t rv;
    if (!stmt)
        return APR_ENOENT;
    if (own_txn(s)) {
        if ((rv = own_txn_begin(s, &armed, p)) != APR_SUCCESS)
            return rv;
        return own_txn_end(s, prov_store_exec_bin(s, label, args, p), armed, p);
    }
    if ((rv = pending_send(s, p)) != APR_SUCCESS)
        return rv;
    s->round_trips++;
    return exec_done(s, label, apr_dbd_pbquery(s->driver, p, s->handle, &n, stmt, args));
}

apr_status_t prov_store_select(prov_store_t *s, apr_dbd_results_t **res, const char *label,
                               int nargs, const char *const *args, apr_pool_t *p)
{
    apr_dbd_prepared_t *stmt = find_stmt(s, label);
    apr_dbd_results_t *r = NULL;
    const char *sql;
    int rc;
    if (!stmt)
        return APR_ENOENT;
    s->round_trips++;
    if ((sql = pending_with(s, label, nargs, args, p)))
        rc = apr_dbd_select(s->driver, p, s->handle, &r, sql, 1);
    else
        rc = apr_dbd_pselect(s->driver, p, s->handle, &r, stmt, 1, nargs, (const char **)args);
    if (rc) {
        prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00016: %s failed: %s", label,
                 apr_dbd_error(s->driver, s->handle, rc));
        return APR_EGENERAL;
    }
    *res = r;
    return APR_SUCCESS;
}

apr_status_t prov_store_select_one(apr_dbd_row_t **row, prov_store_t *s, const char *label,
                                   int nargs, const char *const *args, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *r = NULL;
    apr_status_t rv = prov_store_select(s, &res, label, nargs, args, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_row(s, res, &r, p);
    if (rv == APR_EOF)
        return APR_NOTFOUND;
    if (rv != APR_SUCCESS)
        return rv;
    *row = r;
    return APR_SUCCESS;
}

apr_status_t prov_store_list(apr_array_header_t **out, prov_store_t *s, const char *label,
                             prov_store_row_fn from_row, apr_pool_t *p)
{
    return prov_store_list_args(out, s, label, PROV_NOARGS, from_row, p);
}

apr_status_t prov_store_list_args(apr_array_header_t **out, prov_store_t *s, const char *label,
                                  int nargs, const char *const *args,
                                  prov_store_row_fn from_row, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *arr;
    apr_status_t rv = prov_store_select(s, &res, label, nargs, args, p);

    if (rv != APR_SUCCESS)
        return rv;
    arr = apr_array_make(p, 16, sizeof(void *));
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS)
        APR_ARRAY_PUSH(arr, void *) = from_row(s, row, p);
    if (rv != APR_EOF)
        return rv;
    *out = arr;
    return APR_SUCCESS;
}

apr_status_t prov_store_row(prov_store_t *s, apr_dbd_results_t *res, apr_dbd_row_t **row,
                            apr_pool_t *p)
{
    /* *row is the cursor: the pgsql driver counts rows in the row object. */
    int rc = apr_dbd_get_row(s->driver, p, res, row, -1);
    if (rc == -1)
        return APR_EOF;
    return rc ? APR_EGENERAL : APR_SUCCESS;
}

const char *prov_store_get(prov_store_t *s, apr_dbd_row_t *row, int n)
{
    char *v = NULL;
    if (apr_dbd_datum_get(s->driver, row, n, APR_DBD_TYPE_STRING, &v) != APR_SUCCESS || !v)
        return NULL;
    /* The pgsql driver frees a result once its rows have all been read. */
    return apr_pstrdup(s->pool, v);
}

apr_int64_t prov_store_get_i64(prov_store_t *s, apr_dbd_row_t *row, int n, apr_int64_t dflt)
{
    apr_int64_t v;
    const char *t = prov_store_get(s, row, n);
    if (!t || prov_parse_i64(&v, t) != APR_SUCCESS)
        return dflt;
    return v;
}

apr_status_t prov_store_raw(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    const char *before = pending_take(s, p);
    return raw_send(s, before ? apr_pstrcat(p, before, sql, NULL) : sql);
}

static pthread_mutex_t sqlite_writer = PTHREAD_MUTEX_INITIALIZER;

static void txn_end(prov_store_t *s)
{
    s->pending = NULL;
    if (s->in_txn) {
        s->in_txn = 0;
        if (s->dialect == PROV_DIALECT_SQLITE)
            pthread_mutex_unlock(&sqlite_writer);
    }
}

apr_status_t prov_store_begin(prov_store_t *s, apr_pool_t *p)
{
    apr_status_t rv;
    if (s->in_txn)
        return APR_EINVAL;
    if (s->dialect == PROV_DIALECT_SQLITE)
        pthread_mutex_lock(&sqlite_writer);
    s->in_txn = 1;
    rv = s->dialect == PROV_DIALECT_SQLITE ? prov_sqlite_begin(s) : prov_store_raw(s, "BEGIN", p);
    if (rv != APR_SUCCESS)
        txn_end(s);
    return rv;
}

apr_status_t prov_store_begin_with(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    apr_status_t rv;
    if (s->dialect == PROV_DIALECT_PGSQL && sql) {
        if (s->in_txn)
            return APR_EINVAL;
        s->in_txn = 1;
        rv = raw_send(s, apr_pstrcat(p, "BEGIN; ", sql, NULL));
    }
    else if ((rv = prov_store_begin(s, p)) != APR_SUCCESS || !sql)
        return rv;
    else
        rv = prov_store_raw(s, sql, p);
    if (rv != APR_SUCCESS)
        prov_store_rollback(s, p);
    return rv;
}

apr_status_t prov_store_commit(prov_store_t *s, apr_pool_t *p)
{
    /* An armed audit row joins the change's transaction (prov_audit.h);
     * it stays armed until a commit succeeds. */
    apr_status_t rv = s->audit_armed ? prov_store_defer(s, s->audit_armed, p) : APR_SUCCESS;
    if (rv == APR_SUCCESS)
        rv = s->dialect == PROV_DIALECT_SQLITE ? prov_sqlite_commit(s)
                                               : prov_store_raw(s, "COMMIT", p);
    if (rv != APR_SUCCESS) {
        prov_store_rollback(s, p);
        return rv;
    }
    s->audit_armed = NULL;
    txn_end(s);
    return APR_SUCCESS;
}

void prov_store_rollback(prov_store_t *s, apr_pool_t *p)
{
    int n = 0;
    (void)p;
    /* Fails harmlessly when no transaction is open. */
    apr_dbd_query(s->driver, s->handle, &n, "ROLLBACK");
    s->round_trips++;
    txn_end(s);
}

const char *prov_store_errmsg(prov_store_t *s, int rc)
{
    return apr_dbd_error(s->driver, s->handle, rc);
}
