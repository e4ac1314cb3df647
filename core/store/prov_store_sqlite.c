/* prov_store_sqlite.c: the SQLite connection as libprovider wants it, set
 * through the sqlite3 handle that apr_dbd wraps (apr_dbd_native_handle).
 *
 * apr-util's sqlite3 driver sets no busy timeout; when a statement meets
 * another process's lock it sleeps a fixed 100 ms (16 times at most), and
 * while SQLite's own busy_timeout waits, the driver's process-wide mutex is
 * held, so every database call of the process waits too. With several httpd
 * children writing one file that made the latency tail. Here each connection
 * gets, on its first use, a busy handler of short sleeps (50 us doubling to
 * 0.5 ms, 5 s in all: in interleaved stock-MPM runs 0.5 ms gave a lower p99
 * than 2 ms), WAL and synchronous=NORMAL, and a write transaction's BEGIN
 * IMMEDIATE runs on the native handle, outside the driver's mutex, so that
 * only the writer waits for the lock. Write transactions start IMMEDIATE
 * (never a read upgraded to a write), so a stale WAL snapshot
 * (SQLITE_BUSY_SNAPSHOT, which no busy handler sees) cannot happen to them.
 * Before any of that, prov_sqlite_global_init turns SQLite's memory
 * statistics off for the process. Also the permission checks behind the
 * module's start-up warnings. */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h>
#include "prov_store_sqlite.h"
#include "prov_log.h"

#define BUSY_FIRST_US 50

typedef struct busy_ctx_t {
    apr_time_t started;           /* when the current wait began */
    apr_interval_time_t cap;      /* give up after this long */
} busy_ctx_t;

static atomic_uint_fast64_t st_waits, st_sleeps, st_gave_up, st_waited_us;

int prov_sqlite_global_init(void)
{
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

apr_interval_time_t prov_sqlite_busy_delay(int n)
{
    apr_interval_time_t d = BUSY_FIRST_US;
    while (n-- > 0 && d < PROV_SQLITE_BUSY_MAX_US)
        d *= 2;
    return d < PROV_SQLITE_BUSY_MAX_US ? d : PROV_SQLITE_BUSY_MAX_US;
}

void prov_sqlite_busy_stats(prov_sqlite_busy_stats_t *st)
{
    st->waits = atomic_load(&st_waits);
    st->sleeps = atomic_load(&st_sleeps);
    st->gave_up = atomic_load(&st_gave_up);
    st->waited_us = atomic_load(&st_waited_us);
}

/* SQLite calls this with n = the calls before it for the same lock request;
 * 0 stops the wait (the statement fails SQLITE_BUSY). */
static int busy_handler(void *data, int n)
{
    busy_ctx_t *c = data;
    apr_time_t now = apr_time_now();
    apr_interval_time_t d;
    if (n == 0) {
        c->started = now;
        atomic_fetch_add(&st_waits, 1);
    }
    else if (now - c->started >= c->cap) {
        atomic_fetch_add(&st_gave_up, 1);
        return 0;
    }
    d = prov_sqlite_busy_delay(n);
    apr_sleep(d);
    atomic_fetch_add(&st_sleeps, 1);
    atomic_fetch_add(&st_waited_us, (uint_fast64_t)d);
    return 1;
}

static sqlite3 *native(prov_store_t *s)
{
    return apr_dbd_native_handle(s->driver, s->handle);
}

/* One integer (or text) from a statement's first row. */
static int query_one(sqlite3 *db, const char *sql, int *ival, char *text, size_t tlen)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(st, 0);
            if (ival)
                *ival = sqlite3_column_int(st, 0);
            if (text)
                apr_cpystrn(text, t ? (const char *)t : "", tlen);
            rc = SQLITE_OK;
        }
        else if (rc == SQLITE_DONE) {
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

static apr_status_t pragma_failed(sqlite3 *db, const char *what)
{
    prov_log(PROV_LOG_WARN, APR_EGENERAL, "PROV00404: cannot set %s on an SQLite connection "
             "(%s): the database works, less well with several httpd children",
             what, sqlite3_errmsg(db));
    return APR_EGENERAL;
}

apr_status_t prov_sqlite_setup(prov_store_t *s, apr_pool_t *p)
{
    sqlite3 *db;
    busy_ctx_t *c = NULL;
    const char *file;
    char mode[16] = "";
    int timeout = 0, sync = 0;
    apr_status_t rv = APR_SUCCESS;
    (void)p;

    if (s->dialect != PROV_DIALECT_SQLITE || !(db = native(s)))
        return APR_SUCCESS;
    /* A busy timeout set before us (DBDInitSQL) is the operator's cap. */
    if (query_one(db, "PRAGMA busy_timeout", &timeout, NULL, 0) != SQLITE_OK || timeout <= 0)
        timeout = PROV_SQLITE_BUSY_CAP_MS;
    c = apr_pcalloc(s->pool, sizeof(*c));
    c->cap = apr_time_from_msec(timeout);
    sqlite3_busy_handler(db, busy_handler, c);

    file = sqlite3_db_filename(db, "main");
    if (file && *file) {
        /* Persistent in the file: a no-op once set. */
        if (query_one(db, "PRAGMA journal_mode = WAL", NULL, mode, sizeof(mode)) != SQLITE_OK
            || strcasecmp(mode, "wal"))
            rv = pragma_failed(db, "journal_mode=WAL");
    }
    /* FULL (SQLite's default) syncs the WAL at every commit; NORMAL at
     * checkpoints only, and a crash of the process still loses nothing. A
     * value other than the default came from the operator: kept. */
    if (query_one(db, "PRAGMA synchronous", &sync, NULL, 0) == SQLITE_OK && sync == 2
        && sqlite3_exec(db, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL) != SQLITE_OK
        && rv == APR_SUCCESS)
        rv = pragma_failed(db, "synchronous=NORMAL");
    return rv;
}

apr_status_t prov_sqlite_begin(prov_store_t *s)
{
    sqlite3 *db = native(s);
    int rc;
    if (!db)
        return APR_EGENERAL;
    rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        return APR_SUCCESS;
    if ((rc & 0xff) == SQLITE_BUSY) {
        prov_log(PROV_LOG_ERR, APR_EBUSY, "PROV00405: the SQLite database stayed locked by "
                 "another process past the busy cap (a long providerctl or backup?): %s",
                 sqlite3_errmsg(db));
        return APR_EBUSY;
    }
    prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00406: BEGIN IMMEDIATE failed: %s",
             sqlite3_errmsg(db));
    return APR_EGENERAL;
}

apr_status_t prov_sqlite_commit(prov_store_t *s)
{
    sqlite3 *db = native(s);
    int rc;
    if (!db)
        return APR_EGENERAL;
    if ((rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL)) == SQLITE_OK)
        return APR_SUCCESS;
    prov_log(PROV_LOG_ERR, APR_EGENERAL, "PROV00410: COMMIT failed: %s", sqlite3_errmsg(db));
    return APR_EGENERAL;
}

/* ---- start-up checks -------------------------------------------------------- */

static int in_group(gid_t want, gid_t gid, const char *name)
{
    gid_t groups[64];
    int n = 64, i;
    if (want == gid)
        return 1;
    if (!name || getgrouplist(name, gid, groups, &n) < 0)
        return 0;
    for (i = 0; i < n; i++)
        if (groups[i] == want)
            return 1;
    return 0;
}

static int may_write(const struct stat *st, uid_t uid, gid_t gid, const char *name)
{
    if (uid == 0)
        return 1;
    if (st->st_uid == uid)
        return (st->st_mode & S_IWUSR) != 0;
    if (in_group(st->st_gid, gid, name))
        return (st->st_mode & S_IWGRP) != 0;
    return (st->st_mode & S_IWOTH) != 0;
}

static int may_enter(const struct stat *st, uid_t uid, gid_t gid, const char *name)
{
    if (uid == 0)
        return 1;
    if (st->st_uid == uid)
        return (st->st_mode & S_IXUSR) != 0;
    if (in_group(st->st_gid, gid, name))
        return (st->st_mode & S_IXGRP) != 0;
    return (st->st_mode & S_IXOTH) != 0;
}

prov_sqlite_path_e prov_sqlite_check_path(const char **what, const char *path, uid_t uid,
                                          gid_t gid, const char *name, apr_pool_t *p)
{
    static const char *const sides[] = { "-wal", "-shm" };
    const char *slash = strrchr(path, '/');
    const char *dir = slash ? (slash == path ? "/" : apr_pstrndup(p, path, slash - path)) : ".";
    struct stat st;
    size_t i;

    *what = dir;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return PROV_SQLITE_PATH_DIR_MISSING;
    if (!may_write(&st, uid, gid, name) || !may_enter(&st, uid, gid, name))
        return PROV_SQLITE_PATH_DIR_RO;
    *what = path;
    if (stat(path, &st) != 0)
        return PROV_SQLITE_PATH_MISSING;
    if (!S_ISREG(st.st_mode))
        return PROV_SQLITE_PATH_NOT_FILE;
    if (!may_write(&st, uid, gid, name))
        return PROV_SQLITE_PATH_FILE_RO;
    for (i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
        const char *side = apr_pstrcat(p, path, sides[i], NULL);
        if (stat(side, &st) == 0 && !may_write(&st, uid, gid, name)) {
            *what = side;
            return PROV_SQLITE_PATH_FILE_RO;
        }
    }
    return PROV_SQLITE_PATH_OK;
}
