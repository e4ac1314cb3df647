/* mod_provider_sqlite.c: the database settings an operator can get wrong,
 * checked once at start-up from the configuration tree (mod_dbd keeps its
 * own settings private), and the SQLite lock-wait summary of a child when
 * it stops.
 *
 * For every server with ProviderEngine On (mod_dbd's directives inherited
 * from the main server as mod_dbd does) it warns, naming the directive and
 * where it is, about: a pool mod_dbd cannot create (DBDMin <= DBDKeep <=
 * DBDMax, defaults 1, 2, 10) and DBDPersist Off (a new connection, with
 * every statement prepared again, per request); and with SQLite: a database
 * file or directory the children's user cannot write (WAL creates side files
 * next to the file), a missing file (no schema yet), and a DBDInitSQL that
 * mod_dbd never runs because an earlier one returns a row. DBDMax itself
 * gets no warning: 1 to 25 connections per child measured the same (see
 * docs/internals/sqlite-and-mod_dbd.md). The connection settings themselves
 * (WAL, synchronous=NORMAL, the busy handler) are the core's
 * (prov_store_setup). */
#include <string.h>
#include <unistd.h>
#include <pwd.h>
#include "mod_provider.h"
#include "mod_provider_sqlite.h"
#include "apr_lib.h"
#include "http_core.h"
#include "ap_mpm.h"
#include "unixd.h"
#include "util_cfgtree.h"
#include "prov_store_sqlite.h"

APLOG_USE_MODULE(provider);

/* mod_dbd's pool sizes when not set (threaded MPMs). */
#define DBD_DEFAULT_MIN 1
#define DBD_DEFAULT_KEEP 2
#define DBD_DEFAULT_MAX 10

/* The DBD directives of one scope: the main server or one <VirtualHost>. */
typedef struct dbd_scope_t {
    const ap_directive_t *vhost;      /* NULL: the main server */
    const ap_directive_t *driver, *params, *min, *keep, *max, *persist;
    apr_array_header_t *init;         /* const ap_directive_t * of DBDInitSQL */
} dbd_scope_t;

static dbd_scope_t *scope_make(apr_array_header_t *all, const ap_directive_t *vhost,
                               apr_pool_t *p)
{
    dbd_scope_t *sc = apr_pcalloc(p, sizeof(*sc));
    sc->vhost = vhost;
    sc->init = apr_array_make(p, 4, sizeof(const ap_directive_t *));
    APR_ARRAY_PUSH(all, dbd_scope_t *) = sc;
    return sc;
}

static void collect(apr_array_header_t *all, dbd_scope_t *sc, const ap_directive_t *d,
                    apr_pool_t *p)
{
    for (; d; d = d->next) {
        if (!strcasecmp(d->directive, "<VirtualHost")) {
            collect(all, scope_make(all, d, p), d->first_child, p);
            continue;
        }
        if (!strcasecmp(d->directive, "DBDriver"))
            sc->driver = d;
        else if (!strcasecmp(d->directive, "DBDParams"))
            sc->params = d;
        else if (!strcasecmp(d->directive, "DBDMin"))
            sc->min = d;
        else if (!strcasecmp(d->directive, "DBDKeep"))
            sc->keep = d;
        else if (!strcasecmp(d->directive, "DBDMax"))
            sc->max = d;
        else if (!strcasecmp(d->directive, "DBDPersist"))
            sc->persist = d;
        else if (!strcasecmp(d->directive, "DBDInitSQL"))
            APR_ARRAY_PUSH(sc->init, const ap_directive_t *) = d;
        if (d->first_child)
            collect(all, sc, d->first_child, p);
    }
}

/* A directive's first argument, unquoted. */
static const char *arg1(const ap_directive_t *d, apr_pool_t *p)
{
    const char *a = d ? d->args : NULL;
    return a ? ap_getword_conf(p, &a) : NULL;
}

#define WHERE(d) (d)->filename, (d)->line_num

/* Statements after which mod_dbd runs no further DBDInitSQL: those that
 * return a row (a query, a pragma read, or a pragma that answers its value). */
static int returns_row(const char *sql)
{
    static const char *const answering[] = {
        "busy_timeout", "journal_mode", "locking_mode", "mmap_size", "wal_autocheckpoint",
        "journal_size_limit", "max_page_count", "soft_heap_limit", "hard_heap_limit",
        "threads", NULL
    };
    const char *const *a;
    while (apr_isspace(*sql))
        sql++;
    if (!strncasecmp(sql, "select", 6) || !strncasecmp(sql, "with", 4))
        return 1;
    if (strncasecmp(sql, "pragma", 6))
        return 0;
    if (!strchr(sql, '=') && !strchr(sql, '('))
        return 1;
    for (a = answering; *a; a++)
        if (ap_strcasestr(sql, *a))
            return 1;
    return 0;
}

static void check_init(const apr_array_header_t *init, server_rec *s, apr_pool_t *p)
{
    int i;
    for (i = 0; i + 1 < init->nelts; i++) {
        const ap_directive_t *d = APR_ARRAY_IDX(init, i, const ap_directive_t *);
        const ap_directive_t *next = APR_ARRAY_IDX(init, i + 1, const ap_directive_t *);
        if (returns_row(arg1(d, p))) {
            ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "PROV00400: DBDInitSQL at %s:%d "
                         "returns a row, so mod_dbd never runs the DBDInitSQL after it "
                         "(%s:%d); mod_provider sets WAL, synchronous and its busy handling "
                         "itself: these lines can go", WHERE(d), WHERE(next));
            return;
        }
    }
}

static void check_path(const char *path, const ap_directive_t *where, server_rec *s,
                       apr_pool_t *p)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    const char *user = NULL, *what = NULL;
    struct passwd *pw;
    if (!path || !*path || !strcmp(path, ":memory:") || !strncmp(path, "file:", 5))
        return;
    if (uid == 0) {          /* the children switch to User / Group */
        uid = ap_unixd_config.user_id;
        gid = ap_unixd_config.group_id;
        user = ap_unixd_config.user_name;
    }
    else if ((pw = getpwuid(uid)) != NULL) {
        user = apr_pstrdup(p, pw->pw_name);
    }
    switch (prov_sqlite_check_path(&what, path, uid, gid, user, p)) {
    case PROV_SQLITE_PATH_OK:
        return;
    case PROV_SQLITE_PATH_MISSING:
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "PROV00401: DBDParams %s (%s:%d): no "
                     "such database file; create it with `providerctl db migrate` and give "
                     "it to %s", path, WHERE(where), user ? user : "the server's User");
        return;
    case PROV_SQLITE_PATH_DIR_MISSING:
    case PROV_SQLITE_PATH_NOT_FILE:
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "PROV00402: DBDParams %s (%s:%d): %s "
                     "is not a usable %s", path, WHERE(where), what,
                     what == path ? "database file" : "directory");
        return;
    case PROV_SQLITE_PATH_FILE_RO:
    case PROV_SQLITE_PATH_DIR_RO:
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "PROV00403: DBDParams %s (%s:%d): %s "
                     "is not writable by %s, the user httpd's children run as: every charge "
                     "will fail (SQLite in WAL mode writes the file and, next to it, its -wal "
                     "and -shm files)", path, WHERE(where), what,
                     user ? user : "the server's User");
        return;
    }
}

static int pool_size(const ap_directive_t *d, int dflt, apr_pool_t *p)
{
    const char *v = arg1(d, p);
    return v ? atoi(v) : dflt;
}

/* mod_dbd refuses (AH00633, every request then fails) a pool whose sizes
 * are out of order; without persistence every request opens a connection. */
static void check_pool(const ap_directive_t *min, const ap_directive_t *keep,
                       const ap_directive_t *max, const ap_directive_t *persist,
                       server_rec *s, apr_pool_t *p)
{
    int nmin = pool_size(min, DBD_DEFAULT_MIN, p), nkeep = pool_size(keep, DBD_DEFAULT_KEEP, p);
    int nmax = pool_size(max, DBD_DEFAULT_MAX, p);
    const char *pv = arg1(persist, p);
    int threaded = 0;
    /* Without threads mod_dbd keeps one connection and no pool. */
    ap_mpm_query(AP_MPMQ_IS_THREADED, &threaded);
    if (threaded && (nmin > nkeep || nkeep > nmax)) {
        const ap_directive_t *at = max ? max : keep ? keep : min;
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "PROV00407: DBDMin %d, DBDKeep %d, "
                     "DBDMax %d (%s:%d; unset ones are mod_dbd's defaults 1, 2, 10) are out "
                     "of order: mod_dbd cannot make its connection pool (AH00633) and every "
                     "request will answer 503; keep DBDMin <= DBDKeep <= DBDMax",
                     nmin, nkeep, nmax, WHERE(at));
    }
    if (pv && !strcasecmp(pv, "off"))
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "PROV00409: DBDPersist Off (%s:%d): "
                     "every request opens a database connection and prepares mod_provider's "
                     "statements on it again; leave DBDPersist On", WHERE(persist));
}

/* The scope of a server: its <VirtualHost> block, else the main server's. */
static dbd_scope_t *scope_of(const apr_array_header_t *all, server_rec *s)
{
    int i;
    if (s->is_virtual && s->defn_name)
        for (i = 1; i < all->nelts; i++) {
            dbd_scope_t *sc = APR_ARRAY_IDX(all, i, dbd_scope_t *);
            if ((unsigned)sc->vhost->line_num == (unsigned)s->defn_line_number
                && !strcmp(sc->vhost->filename, s->defn_name))
                return sc;
        }
    return APR_ARRAY_IDX(all, 0, dbd_scope_t *);
}

void provider_sqlite_check(server_rec *main_s, apr_pool_t *ptemp)
{
    apr_array_header_t *all = apr_array_make(ptemp, 4, sizeof(dbd_scope_t *));
    dbd_scope_t *top = scope_make(all, NULL, ptemp);
    apr_hash_t *seen = apr_hash_make(ptemp);
    server_rec *s;

    /* httpd reads its configuration twice at start: warn once. */
    if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG)
        return;
    collect(all, top, ap_conftree, ptemp);
    for (s = main_s; s; s = s->next) {
        provider_srv_conf *c = ap_get_module_config(s->module_config, &provider_module);
        dbd_scope_t *sc = scope_of(all, s);
        const ap_directive_t *driver = sc->driver ? sc->driver : top->driver;
        const ap_directive_t *params = sc->params ? sc->params : top->params;
#define EFFECTIVE(f) (sc->f ? sc->f : top->f)
        const ap_directive_t *min = EFFECTIVE(min), *keep = EFFECTIVE(keep);
        const ap_directive_t *max = EFFECTIVE(max), *persist = EFFECTIVE(persist);
#undef EFFECTIVE
        apr_array_header_t *init = sc == top ? top->init
                                             : apr_array_append(ptemp, top->init, sc->init);
        const char *path = arg1(params, ptemp);
        if (c->engine != 1 || !driver || !path || apr_hash_get(seen, path, APR_HASH_KEY_STRING))
            continue;
        apr_hash_set(seen, path, APR_HASH_KEY_STRING, path);
        check_pool(min, keep, max, persist, s, ptemp);
        if (strcmp(arg1(driver, ptemp), "sqlite3"))
            continue;
        check_path(path, params, s, ptemp);
        check_init(init, s, ptemp);
    }
}

static apr_status_t busy_summary(void *data)
{
    prov_sqlite_busy_stats_t st;
    prov_sqlite_busy_stats(&st);
    if (st.waits)
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, data, "PROV00408: SQLite lock waits in this "
                     "child: %" APR_UINT64_T_FMT " (%" APR_UINT64_T_FMT " sleeps, %"
                     APR_UINT64_T_FMT " ms in all), %" APR_UINT64_T_FMT " gave up",
                     st.waits, st.sleeps, st.waited_us / 1000, st.gave_up);
    return APR_SUCCESS;
}

void provider_sqlite_child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_pool_cleanup_register(pchild, s, busy_summary, apr_pool_cleanup_null);
}
