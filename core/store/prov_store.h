/* core/store/: the database. The apr_dbd seam and its helpers (prov_store.h,
 * this header), the table of labelled statements (prov_sql.c), what
 * libprovider does to an SQLite connection itself (prov_store_sqlite), and
 * the schema's versions and migrations, compiled in from schema/
 * (prov_schema), the billing writes built at run time
 * (prov_store_billing), the sources a thread takes a connection from
 * (prov_store_source), the audit trail's rows (prov_audit) and the copy of
 * a live SQLite database (prov_backup). SQL text and SQLite / PostgreSQL dialect branches belong
 * here and nowhere else; the rooms above ask for rows by statement label.
 * It calls base only. */
/* prov_store.h: the database seam. One statement table (label -> SQL with
 * apr_dbd placeholders) shared by the module (registered with ap_dbd_prepare)
 * and providerctl (prepared by prov_store_open); the SQLite / PostgreSQL
 * dialect differences; small helpers for running labelled statements with
 * string arguments and reading rows (NULL-aware). */
#ifndef PROV_STORE_H
#define PROV_STORE_H

#include "prov_common.h"
#include <apr_dbd.h>

typedef enum {
    PROV_DIALECT_SQLITE = 0,
    PROV_DIALECT_PGSQL
} prov_dialect_e;

/* Prepared statements are registered as PROV_STMT_PREFIX + label, so that
 * they cannot clash with other modules' labels on a shared mod_dbd pool. */
#define PROV_STMT_PREFIX "prov_"

typedef struct prov_stmt_def_t {
    const char *label;
    const char *sql;    /* apr_dbd placeholders (%s text, %lld / %d integers);
                         * every argument is passed as a string */
    const char *pgsql;  /* PostgreSQL's own text when it differs, else NULL;
                         * "" for a statement PostgreSQL does not prepare */
} prov_stmt_def_t;

typedef struct prov_store_t {
    const apr_dbd_driver_t *driver;
    apr_dbd_t *handle;
    prov_dialect_e dialect;
    apr_hash_t *prepared;     /* label -> apr_dbd_prepared_t* */
    apr_pool_t *pool;         /* the pool the handle lives in */
    int owned;                /* opened by prov_store_open: close it ourselves */
    void *lease;              /* the caller's handle on a borrowed connection */
    int in_txn;               /* between prov_store_begin and commit/rollback */
    apr_array_header_t *pending; /* statements deferred (prov_store_defer), or NULL */
    apr_uint64_t round_trips; /* statements or strings of them sent (PostgreSQL:
                               * each waits for the server once) */
    const char *audit_armed;  /* an audit row's INSERT that the next commit
                               * writes in its transaction (prov_audit.h) */
} prov_store_t;

/* The statement tables, each terminated by a row with label NULL: the
 * module's (prov_sql.c) and the books' beside the ledger (prov_sql_books.c). */
const prov_stmt_def_t *prov_store_statements(void);
const prov_stmt_def_t *prov_store_statements_books(void);
/* The dialect of an apr_dbd driver name ("sqlite3", "pgsql"); APR_ENOTIMPL otherwise. */
apr_status_t prov_store_dialect(prov_dialect_e *d, const char *driver_name);

/* Wraps a connection that somebody else owns (mod_dbd). */
prov_store_t *prov_store_wrap(const apr_dbd_driver_t *driver, apr_dbd_t *handle,
                              apr_hash_t *prepared, apr_pool_t *p);
/* Opens "DRIVER:PARAMS" (e.g. "sqlite3:/var/lib/provider/provider.db"); for
 * SQLite sets foreign keys and runs prov_store_setup. When prepare is set, also
 * prepares the whole statement table (needs the schema to exist). */
apr_status_t prov_store_open(prov_store_t **s, const char *spec, int prepare, apr_pool_t *p);
/* Readies a connection for libprovider, once per connection: on its first
 * use (mod_dbd's connections) or when opened (prov_store_open). SQLite: a busy handler of
 * short sleeps capped at 5 s (or at the connection's own busy_timeout),
 * journal_mode=WAL, synchronous=NORMAL (see prov_store_sqlite.h); s->pool
 * must live as long as the connection. PostgreSQL: nothing. A pragma that
 * cannot be set is logged and returned; the connection stays usable. */
apr_status_t prov_store_setup(prov_store_t *s, apr_pool_t *p);
/* Prepares the statement table on an open connection. */
apr_status_t prov_store_prepare_all(prov_store_t *s);
/* Closes a store opened by prov_store_open (no-op for wrapped ones). */
void prov_store_close(prov_store_t *s);

/* Runs a labelled statement with its arguments as values of the types its
 * text declares (apr_dbd_pbquery: a char * for %s, an apr_int64_t * for
 * %lld): no number is written out and read back. */
apr_status_t prov_store_exec_bin(prov_store_t *s, const char *label, const void **args,
                                 apr_pool_t *p);
/* The writes below (prov_store_exec, prov_store_exec_bin, prov_store_write,
 * prov_store_defer) run, on SQLite outside a transaction, in one of their
 * own (prov_store_begin): the write lock is never awaited inside apr_dbd's
 * mutex, which stalls every thread of the process. */
/* Runs one write statement given as text (an audit row, a deferred write). */
apr_status_t prov_store_write(prov_store_t *s, const char *sql, apr_pool_t *p);
/* Runs a labelled statement; args are strings or NULL (SQL NULL). */
apr_status_t prov_store_exec(prov_store_t *s, int *nrows, const char *label,
                             int nargs, const char *const *args, apr_pool_t *p);
/* Runs a labelled query; all rows are fetched (random access). */
apr_status_t prov_store_select(prov_store_t *s, apr_dbd_results_t **res, const char *label,
                               int nargs, const char *const *args, apr_pool_t *p);
/* Runs a labelled query and gives its first row (random-access results are
 * fully fetched: the rest needs no draining); APR_NOTFOUND when none. */
apr_status_t prov_store_select_one(apr_dbd_row_t **row, prov_store_t *s, const char *label,
                                   int nargs, const char *const *args, apr_pool_t *p);
/* Makes one entity (a pointer) from a row of a list query. */
typedef void *(*prov_store_row_fn)(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p);
/* Runs a labelled query without arguments and gives every row made into
 * an entity by from_row (an array of pointers, in the query's order). */
apr_status_t prov_store_list(apr_array_header_t **out, prov_store_t *s, const char *label,
                             prov_store_row_fn from_row, apr_pool_t *p);
/* The same for a query with arguments (as prov_store_select takes them). */
apr_status_t prov_store_list_args(apr_array_header_t **out, prov_store_t *s, const char *label,
                                  int nargs, const char *const *args,
                                  prov_store_row_fn from_row, apr_pool_t *p);
/* Next row: APR_SUCCESS, APR_EOF when done, other on error. *row is the
 * cursor: set it to NULL before the first call on each result set. */
apr_status_t prov_store_row(prov_store_t *s, apr_dbd_results_t *res, apr_dbd_row_t **row,
                            apr_pool_t *p);
/* Column n of a row as text (a copy in the store's pool: the pgsql driver
 * frees a result when its last row has been read), or NULL when SQL NULL. */
const char *prov_store_get(prov_store_t *s, apr_dbd_row_t *row, int n);
/* Column n as int64; dflt when NULL or not a number. */
apr_int64_t prov_store_get_i64(prov_store_t *s, apr_dbd_row_t *row, int n, apr_int64_t dflt);
/* Runs raw SQL (no arguments): migrations, transactions, statements built
 * at run time; on PostgreSQL several separated by ';' in one round trip.
 * Deferred writes (prov_store_defer) are sent first, in the same string. */
apr_status_t prov_store_raw(prov_store_t *s, const char *sql, apr_pool_t *p);

/* Write transactions: SQLite takes the write lock at BEGIN (IMMEDIATE), so the
 * checks inside cannot race another writer (and no read is ever upgraded to a
 * write: no SQLITE_BUSY_SNAPSHOT); a process runs one SQLite write
 * transaction at a time, and waits for other processes' in the busy handler
 * without holding apr-util's driver mutex. APR_EBUSY past the busy cap. Every begin is ended by exactly one commit or
 * rollback (a failed commit rolls back itself). */
apr_status_t prov_store_begin(prov_store_t *s, apr_pool_t *p);
apr_status_t prov_store_commit(prov_store_t *s, apr_pool_t *p);
void prov_store_rollback(prov_store_t *s, apr_pool_t *p);
/* prov_store_begin, then sql (no rows read; NULL: none) in the same
 * transaction: on PostgreSQL both in one string, one round trip. A failure
 * rolls back: no transaction is left open. */
apr_status_t prov_store_begin_with(prov_store_t *s, const char *sql, apr_pool_t *p);
/* A write whose outcome nobody reads (no rows, no row count) inside a
 * transaction: on PostgreSQL it is kept and sent in one string with the
 * next statement (prov_store_raw's and COMMIT's string, or alone just
 * before a labelled statement), so that several such writes cost one round
 * trip; its failure is the failure of that statement, and rollback drops
 * it. sql and p must last until the transaction ends. Elsewhere, or outside
 * a transaction: run at once. */
apr_status_t prov_store_defer(prov_store_t *s, const char *sql, apr_pool_t *p);

/* The driver's last error text (for logs; never contains a secret). */
const char *prov_store_errmsg(prov_store_t *s, int rc);

/* Argument lists: PROV_ARGS("a", b, NULL) -> nargs, array. */
#define PROV_ARGS(...) \
    ((int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))), \
    ((const char *const[]){__VA_ARGS__})
#define PROV_NOARGS 0, NULL

/* The schema version this build expects (the highest migration it carries). */
int prov_schema_expected(void);
/* The version the database has: 0 when it has no schema yet. */
apr_status_t prov_schema_current(int *version, prov_store_t *s, apr_pool_t *p);
/* Applies the missing migrations, each in its own transaction; *applied counts
 * them. Idempotent. */
apr_status_t prov_schema_migrate(int *applied, prov_store_t *s, apr_pool_t *p);

#endif
