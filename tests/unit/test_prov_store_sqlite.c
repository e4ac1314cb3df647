/* test_prov_store_sqlite.c: unit tests of what libprovider does to an SQLite
 * connection (prov_store_sqlite.c): the pragmas applied on first use, the
 * busy handler (a second writer waits for the first and succeeds, also past
 * apr-util's own retry budget; the cap ends a wait that lasts too long; a
 * lone write beside a transaction of the same process waits without
 * stopping it), and
 * the file checks behind the module's start-up warnings, and the process-wide
 * setting made before any database is used (memory statistics off). The connections are
 * opened like mod_dbd opens them: plain apr_dbd_open, no pragmas. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include "unit_tests.h"
#include "prov_store.h"
#include "prov_store_sqlite.h"

/* A database file in a fresh directory, with the schema. */
static const char *make_db(apr_pool_t *p)
{
    char *dir = apr_pstrdup(p, "/tmp/prov-unit-sqlite.XXXXXX");
    prov_store_t *s = NULL;
    int applied = 0;
    const char *file;
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    file = apr_pstrcat(p, dir, "/provider.db", NULL);
    CU_ASSERT_EQUAL_FATAL(prov_store_open(&s, apr_pstrcat(p, "sqlite3:", file, NULL), 0, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_schema_migrate(&applied, s, p), APR_SUCCESS);
    prov_store_close(s);
    return file;
}

static void remove_db(const char *file, apr_pool_t *p)
{
    char *dir = apr_pstrdup(p, file);
    unlink(file);
    unlink(apr_pstrcat(p, file, "-wal", NULL));
    unlink(apr_pstrcat(p, file, "-shm", NULL));
    *strrchr(dir, '/') = '\0';
    rmdir(dir);
}

static apr_status_t raw_close(void *data)
{
    prov_store_t *s = data;
    apr_dbd_close(s->driver, s->handle);
    return APR_SUCCESS;
}

/* A connection as mod_dbd hands it out: opened, nothing set on it; closed
 * with p (apr_dbd_open leaves that to its caller, as mod_dbd does). */
static prov_store_t *raw_store(const char *file, apr_pool_t *p)
{
    const apr_dbd_driver_t *drv = NULL;
    apr_dbd_t *h = NULL;
    prov_store_t *s;
    apr_dbd_init(p);
    CU_ASSERT_EQUAL_FATAL(apr_dbd_get_driver(p, "sqlite3", &drv), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(apr_dbd_open(drv, p, file, &h), APR_SUCCESS);
    s = prov_store_wrap(drv, h, apr_hash_make(p), p);
    apr_pool_cleanup_register(p, s, raw_close, apr_pool_cleanup_null);
    return s;
}

static const char *one(prov_store_t *s, const char *sql, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *v = NULL;
    if (apr_dbd_select(s->driver, p, s->handle, &res, sql, 1) == 0
        && apr_dbd_get_row(s->driver, p, res, &row, -1) == 0)
        v = apr_pstrdup(p, apr_dbd_get_entry(s->driver, row, 0));
    return v ? v : "";
}

static int raw(prov_store_t *s, const char *sql)
{
    int n = 0;
    return apr_dbd_query(s->driver, s->handle, &n, sql);
}

static void test_busy_delay(void)
{
    int n;
    apr_interval_time_t prev = 0, total = 0;
    CU_ASSERT_TRUE(prov_sqlite_busy_delay(0) > 0);
    CU_ASSERT_TRUE(prov_sqlite_busy_delay(0) <= 100);
    for (n = 0; n < 40; n++) {
        apr_interval_time_t d = prov_sqlite_busy_delay(n);
        CU_ASSERT_TRUE(d >= prev);
        CU_ASSERT_TRUE(d <= PROV_SQLITE_BUSY_MAX_US);
        CU_ASSERT_TRUE(d <= 2000);         /* never apr-util's 100 ms */
        prev = d;
        if (n < 8)
            total += d;
    }
    CU_ASSERT_EQUAL(prov_sqlite_busy_delay(1000), PROV_SQLITE_BUSY_MAX_US);
    CU_ASSERT_TRUE(total < 10000);          /* eight tries within 10 ms */
}

static void test_setup_pragmas(void)
{
    apr_pool_t *p = NULL;
    const char *file;
    prov_store_t *s, *t;
    apr_pool_create(&p, prov_test_pool());
    file = make_db(p);
    s = raw_store(file, p);
    /* The file is in WAL already (prov_store_open); a fresh connection is
     * at SQLite's defaults for the rest. */
    CU_ASSERT_STRING_EQUAL(one(s, "PRAGMA synchronous", p), "2");
    CU_ASSERT_EQUAL(prov_store_setup(s, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(one(s, "PRAGMA journal_mode", p), "wal");
    CU_ASSERT_STRING_EQUAL(one(s, "PRAGMA synchronous", p), "1");
    /* An operator's own synchronous (DBDInitSQL) is kept. */
    t = raw_store(file, p);
    CU_ASSERT_EQUAL(raw(t, "PRAGMA synchronous = EXTRA"), 0);
    CU_ASSERT_EQUAL(prov_store_setup(t, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(one(t, "PRAGMA synchronous", p), "3");
    apr_pool_destroy(p);
    apr_pool_create(&p, prov_test_pool());
    remove_db(file, p);
    apr_pool_destroy(p);
}

/* The other writer: takes the write lock, tells, holds it, commits. */
typedef struct holder_t {
    prov_store_t *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int locked, release;            /* under mu */
    apr_interval_time_t hold;       /* 0: until release is set */
    int committed;
} holder_t;

static void *hold_lock(void *data)
{
    holder_t *h = data;
    int ok = raw(h->s, "BEGIN IMMEDIATE") == 0
        && raw(h->s, "INSERT INTO users (email, name, created_at) VALUES "
                     "('holder@example.com', 'H', 1)") == 0;
    pthread_mutex_lock(&h->mu);
    h->locked = ok ? 1 : -1;
    pthread_cond_broadcast(&h->cv);
    if (h->hold == 0)
        while (!h->release)
            pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    if (h->hold)
        apr_sleep(h->hold);
    h->committed = ok && raw(h->s, "COMMIT") == 0;
    return NULL;
}

static pthread_t start_holder(holder_t *h)
{
    pthread_t th;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, hold_lock, h), 0);
    pthread_mutex_lock(&h->mu);
    while (!h->locked)
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    CU_ASSERT_EQUAL_FATAL(h->locked, 1);
    return th;
}

static void stop_holder(holder_t *h, pthread_t th)
{
    pthread_join(th, NULL);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
}

/* Another connection holds the write lock for 2.5 s, longer than apr-util's
 * own retries (16 sleeps of 100 ms) last: the second writer waits in the
 * busy handler and gets the lock once the first commits. */
static void test_second_writer_waits(void)
{
    apr_pool_t *p = NULL;
    const char *file;
    prov_store_t *s;
    holder_t h;
    pthread_t th;
    prov_sqlite_busy_stats_t before, after;
    apr_pool_create(&p, prov_test_pool());
    file = make_db(p);
    memset(&h, 0, sizeof(h));
    h.s = raw_store(file, p);
    h.hold = apr_time_from_msec(2500);
    s = raw_store(file, p);
    CU_ASSERT_EQUAL_FATAL(prov_store_setup(s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_prepare_all(s), APR_SUCCESS);
    prov_sqlite_busy_stats(&before);
    th = start_holder(&h);
    CU_ASSERT_EQUAL(prov_store_begin(s, p), APR_SUCCESS);
    /* The holder committed before we got the lock: its row is visible. */
    CU_ASSERT_STRING_EQUAL(one(s, "SELECT COUNT(*) FROM users WHERE email = "
                                  "'holder@example.com'", p), "1");
    CU_ASSERT_EQUAL(raw(s, "INSERT INTO users (email, name, created_at) VALUES "
                           "('second@example.com', 'S', 2)"), 0);
    CU_ASSERT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    stop_holder(&h, th);
    CU_ASSERT_TRUE(h.committed);
    prov_sqlite_busy_stats(&after);
    CU_ASSERT_TRUE(after.waits > before.waits);
    CU_ASSERT_EQUAL(after.gave_up, before.gave_up);
    CU_ASSERT_STRING_EQUAL(one(s, "SELECT COUNT(*) FROM users", p), "2");
    apr_pool_destroy(p);
    apr_pool_create(&p, prov_test_pool());
    remove_db(file, p);
    apr_pool_destroy(p);
}

/* A connection whose busy_timeout was set before us (DBDInitSQL) keeps it
 * as the cap: past it, begin fails APR_EBUSY instead of waiting on. */
static void test_busy_cap(void)
{
    apr_pool_t *p = NULL;
    const char *file;
    prov_store_t *s;
    holder_t h;
    pthread_t th;
    prov_sqlite_busy_stats_t before, after;
    apr_pool_create(&p, prov_test_pool());
    file = make_db(p);
    memset(&h, 0, sizeof(h));
    h.s = raw_store(file, p);
    s = raw_store(file, p);
    CU_ASSERT_STRING_EQUAL(one(s, "PRAGMA busy_timeout = 100", p), "100");
    CU_ASSERT_EQUAL_FATAL(prov_store_setup(s, p), APR_SUCCESS);
    prov_sqlite_busy_stats(&before);
    th = start_holder(&h);
    CU_ASSERT_EQUAL(prov_store_begin(s, p), APR_EBUSY);
    prov_sqlite_busy_stats(&after);
    CU_ASSERT_EQUAL(after.gave_up, before.gave_up + 1);
    pthread_mutex_lock(&h.mu);
    h.release = 1;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    stop_holder(&h, th);
    CU_ASSERT_TRUE(h.committed);
    /* A failed begin left nothing behind: the next one works. */
    CU_ASSERT_EQUAL(prov_store_begin(s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_commit(s, p), APR_SUCCESS);
    apr_pool_destroy(p);
    apr_pool_create(&p, prov_test_pool());
    remove_db(file, p);
    apr_pool_destroy(p);
}

/* A lone write of another connection of the process (a purge's DELETE),
 * started while a transaction holds the lock. */
typedef struct lone_t {
    prov_store_t *s;
    apr_pool_t *p;
    apr_status_t rv;
    int removed;
} lone_t;

static void *lone_write(void *data)
{
    lone_t *w = data;
    w->rv = prov_store_exec(w->s, &w->removed, "ledger_compact",
                            PROV_ARGS("10", "1"), w->p);
    return NULL;
}

/* A transaction of this process holds the write lock; another thread's
 * lone write waits for it, and must not wait holding apr_dbd's mutex: the
 * transaction's next statement needs that mutex, and both would wait out
 * the busy cap (1 s here; the busy handler gives up, apr-util's driver
 * retries) with every database call of the process stopped. Now the lone
 * write takes the lock as a transaction does: the first commits, then it
 * runs, and no wait gives up. */
static void test_lone_write_waits_aside(void)
{
    apr_pool_t *p = NULL, *wp = NULL;
    const char *file;
    prov_store_t *a, *b;
    lone_t w;
    pthread_t th;
    int n = -1;
    prov_sqlite_busy_stats_t before, after;
    apr_pool_create(&p, prov_test_pool());
    apr_pool_create(&wp, p);
    file = make_db(p);
    a = raw_store(file, p);
    b = raw_store(file, p);
    CU_ASSERT_STRING_EQUAL(one(b, "PRAGMA busy_timeout = 1000", p), "1000");
    CU_ASSERT_EQUAL_FATAL(prov_store_setup(a, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_store_setup(b, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_prepare_all(a), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_store_prepare_all(b), APR_SUCCESS);
    prov_sqlite_busy_stats(&before);
    CU_ASSERT_EQUAL_FATAL(prov_store_begin(a, p), APR_SUCCESS);
    memset(&w, 0, sizeof(w));
    w.s = b;
    w.p = wp;
    w.rv = APR_EGENERAL;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, lone_write, &w), 0);
    apr_sleep(apr_time_from_msec(300));      /* the lone write is waiting */
    CU_ASSERT_EQUAL(prov_store_exec(a, &n, "ledger_compact", PROV_ARGS("10", "1"), p),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(prov_store_commit(a, p), APR_SUCCESS);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(w.rv, APR_SUCCESS);
    CU_ASSERT_EQUAL(w.removed, 0);
    prov_sqlite_busy_stats(&after);
    CU_ASSERT_EQUAL(after.gave_up, before.gave_up);
    apr_pool_destroy(p);
    apr_pool_create(&p, prov_test_pool());
    remove_db(file, p);
    apr_pool_destroy(p);
}

static void test_check_path(void)
{
    apr_pool_t *p = NULL;
    char *dir;
    const char *file, *wal, *what = NULL;
    uid_t other = getuid() == 65534 ? 65533 : 65534;
    gid_t ogid = getgid() == 65534 ? 65533 : 65534;
    FILE *f;
    apr_pool_create(&p, prov_test_pool());
    dir = apr_pstrdup(p, "/tmp/prov-unit-path.XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    file = apr_pstrcat(p, dir, "/provider.db", NULL);
    wal = apr_pstrcat(p, file, "-wal", NULL);

    CU_ASSERT_EQUAL(prov_sqlite_check_path(&what, apr_pstrcat(p, dir, "/none/x.db", NULL),
                                           other, ogid, NULL, p), PROV_SQLITE_PATH_DIR_MISSING);
    chmod(dir, 0755);
    CU_ASSERT_EQUAL(prov_sqlite_check_path(&what, file, other, ogid, NULL, p),
                    PROV_SQLITE_PATH_DIR_RO);
    CU_ASSERT_STRING_EQUAL(what, dir);
    chmod(dir, 0777);
    CU_ASSERT_EQUAL(prov_sqlite_check_path(&what, file, other, ogid, NULL, p),
                    PROV_SQLITE_PATH_MISSING);
    f = fopen(file, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
    chmod(file, 0644);
    CU_ASSERT_EQUAL(prov_sqlite_check_path(&what, file, other, ogid, NULL, p),
                    PROV_SQLITE_PATH_FILE_RO);
    CU_ASSERT_STRING_EQUAL(what, file);
    /* Its owner may write it. */
    CU_ASSERT_EQUAL(prov_sqlite_check_path(&what, file, getuid(), getgid(), NULL, p),
                    PROV_SQLITE_PATH_OK);
    chmod(file, 0666);
    CU_ASSERT_EQUAL(prov_sqlite_check_path(&what, file, other, ogid, NULL, p),
                    PROV_SQLITE_PATH_OK);
    /* A side file left by another user (providerctl run as root). */
    f = fopen(wal, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fclose(f);
    chmod(wal, 0644);
    CU_ASSERT_EQUAL(prov_sqlite_check_path(&what, file, other, ogid, NULL, p),
                    PROV_SQLITE_PATH_FILE_RO);
    CU_ASSERT_STRING_EQUAL(what, wal);
    CU_ASSERT_EQUAL(prov_sqlite_check_path(&what, dir, other, ogid, NULL, p),
                    PROV_SQLITE_PATH_NOT_FILE);
    unlink(wal);
    unlink(file);
    rmdir(dir);
    apr_pool_destroy(p);
}

/* unit_tests.c calls prov_sqlite_global_init first, as the module does at
 * LoadModule: SQLite then keeps no memory statistics (the figure stays 0
 * while a database is used), and a second call, SQLite running, is
 * refused without harm. */
static void test_global_init(void)
{
    apr_pool_t *p = NULL;
    sqlite3_int64 used = -1, high = -1;
    const char *file;
    prov_store_t *s;
    apr_pool_create(&p, prov_test_pool());
    file = make_db(p);
    s = raw_store(file, p);
    CU_ASSERT_EQUAL(prov_store_setup(s, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(one(s, "PRAGMA journal_mode", p), "wal");
    CU_ASSERT_EQUAL(sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &used, &high, 0), SQLITE_OK);
    CU_ASSERT_EQUAL(used, 0);
    CU_ASSERT_EQUAL(prov_sqlite_global_init(), SQLITE_MISUSE);
    apr_pool_destroy(p);
    apr_pool_create(&p, prov_test_pool());
    remove_db(file, p);
    apr_pool_destroy(p);
}

void prov_test_suite_store_sqlite(void)
{
    PROV_SUITE("store_sqlite",
               PROV_TEST(test_busy_delay),
               PROV_TEST(test_setup_pragmas),
               PROV_TEST(test_second_writer_waits),
               PROV_TEST(test_busy_cap),
               PROV_TEST(test_lone_write_waits_aside),
               PROV_TEST(test_check_path),
               PROV_TEST(test_global_init));
}
