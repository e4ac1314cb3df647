/* prov_store_sqlite.h: what libprovider does to an SQLite connection itself,
 * through the sqlite3 handle under apr_dbd's (apr_dbd_native_handle): the
 * connection settings (WAL, synchronous=NORMAL, a busy handler of short
 * sleeps with a total cap), the write transaction's BEGIN IMMEDIATE outside
 * apr-util's driver mutex, and the file checks behind the module's start-up
 * warnings. Callers go through prov_store.h (prov_store_setup,
 * prov_store_begin); tests and the module's start-up checks use this header. */
#ifndef PROV_STORE_SQLITE_H
#define PROV_STORE_SQLITE_H

#include <sys/types.h>
#include "prov_store.h"

/* The busy handler gives up after this long unless the connection had a busy
 * timeout of its own (PRAGMA busy_timeout, e.g. from DBDInitSQL): then that. */
#define PROV_SQLITE_BUSY_CAP_MS 5000
/* The longest sleep between two tries (they start at 50 us and double). */
#define PROV_SQLITE_BUSY_MAX_US 500

/* Process-wide counters of the busy handler (since the process started). */
typedef struct prov_sqlite_busy_stats_t {
    apr_uint64_t waits;      /* lock requests that found the lock taken */
    apr_uint64_t sleeps;     /* sleeps between tries */
    apr_uint64_t gave_up;    /* waits that hit the cap (the call failed BUSY) */
    apr_uint64_t waited_us;  /* total time slept */
} prov_sqlite_busy_stats_t;

/* Process-wide SQLite settings, made before SQLite is first used in the
 * process (else SQLITE_MISUSE, and SQLite stays at its defaults): memory
 * statistics off, so that an allocation inside SQLite does not take its
 * global statistics mutex (about 4 % of the billing writer thread's time
 * under load). Returns SQLite's result code. */
int prov_sqlite_global_init(void);
/* Settles one connection, once (the caller keeps track): the busy handler
 * (its state in s->pool, which must live as long as the connection), then
 * journal_mode=WAL (file databases) and synchronous=NORMAL (unless the
 * connection is already at a value other than SQLite's default FULL).
 * APR_SUCCESS, or the first failure (already logged; the connection stays
 * usable). */
apr_status_t prov_sqlite_setup(prov_store_t *s, apr_pool_t *p);
/* BEGIN IMMEDIATE on the native handle: a wait for another process's write
 * lock blocks only the caller, not every apr_dbd call of the process.
 * APR_EBUSY when the lock stayed taken past the cap. */
apr_status_t prov_sqlite_begin(prov_store_t *s);
/* COMMIT on the native handle, for the same reason: the WAL checkpoint a
 * commit may run holds up only the caller. */
apr_status_t prov_sqlite_commit(prov_store_t *s);
/* The sleep before try n + 1 of one wait (n = 0, 1, ...), in microseconds. */
apr_interval_time_t prov_sqlite_busy_delay(int n);
/* The counters so far. */
void prov_sqlite_busy_stats(prov_sqlite_busy_stats_t *st);

typedef enum {
    PROV_SQLITE_PATH_OK = 0,
    PROV_SQLITE_PATH_MISSING,       /* no such file (no schema yet) */
    PROV_SQLITE_PATH_NOT_FILE,      /* exists, not a regular file */
    PROV_SQLITE_PATH_FILE_RO,       /* the file (or its -wal / -shm) is not writable */
    PROV_SQLITE_PATH_DIR_RO,        /* its directory is not writable (WAL side files) */
    PROV_SQLITE_PATH_DIR_MISSING    /* its directory does not exist */
} prov_sqlite_path_e;

/* Whether user uid (primary group gid, supplementary groups those of user
 * name, which may be NULL) can use the database file path: *what says which
 * file failed (a copy in p). Permission bits only (no ACLs). */
prov_sqlite_path_e prov_sqlite_check_path(const char **what, const char *path, uid_t uid,
                                          gid_t gid, const char *name, apr_pool_t *p);

#endif
