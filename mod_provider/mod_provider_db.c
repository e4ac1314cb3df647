/* mod_provider_db.c: database connections leased from mod_dbd
 * (ap_dbd_open / ap_dbd_close, looked up as optional functions so that a
 * server without mod_dbd can say so), held for one phase of a request only
 * (never across the gateway call), with the schema version checked per
 * child; and the billing engine's two sources of connections: a request's
 * (opened only when its thread leads a batch) and the server's own (the
 * billing writer thread's).
 *
 * The statement table is prepared on each pooled connection the first time
 * this module uses it, after the schema check, rather than with
 * ap_dbd_prepare at start-up: a database whose schema is missing or old then
 * still yields a connection, so the module can say why it answers 503 instead
 * of mod_dbd failing every connection on a statement it cannot prepare.
 * Before anything runs on a new connection it is set up (prov_store_setup:
 * on SQLite the busy handler and pragmas that DBDInitSQL needed before). */
#include "apr_optional.h"
#include "apr_dbd.h"
#include "mod_dbd.h"
#include "mod_provider.h"
#include "mod_provider_db.h"
#include "prov_metrics.h"

APLOG_USE_MODULE(provider);

static APR_OPTIONAL_FN_TYPE(ap_dbd_open) *dbd_open_fn;
static APR_OPTIONAL_FN_TYPE(ap_dbd_close) *dbd_close_fn;

/* Schema state of this child: re-checked every few seconds until it is right,
 * so that `providerctl db migrate` heals a running server. */
static volatile int schema_ok;
static volatile apr_int64_t schema_checked_at;
#define SCHEMA_RECHECK 5
/* Set in a connection's prepared-statement hash once ours are prepared, and
 * once the connection has been set up (prov_store_setup: SQLite's busy
 * handler and pragmas, before anything else runs on it). */
#define PREPARED_MARK PROV_STMT_PREFIX "_ready"
#define SETUP_MARK PROV_STMT_PREFIX "_setup"

static void resolve_dbd(void)
{
    if (!dbd_open_fn) {
        dbd_open_fn = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_open);
        dbd_close_fn = APR_RETRIEVE_OPTIONAL_FN(ap_dbd_close);
    }
}

int provider_db_available(void)
{
    resolve_dbd();
    return dbd_open_fn && dbd_close_fn;
}

typedef struct db_lease_t {
    server_rec *s;
    ap_dbd_t *dbd;
} db_lease_t;

static apr_status_t db_release(void *data)
{
    db_lease_t *l = data;
    if (l->dbd) {
        dbd_close_fn(l->s, l->dbd);
        l->dbd = NULL;
    }
    return APR_SUCCESS;
}

/* Logs for a request, or for its server when there is none (the billing
 * writer thread). */
#define DB_LOG(r, s, ...) \
    do { \
        if (r) \
            ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, (r), __VA_ARGS__); \
        else \
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, (s), __VA_ARGS__); \
    } while (0)

static int schema_usable(request_rec *r, server_rec *srv, prov_store_t *store, apr_pool_t *p)
{
    apr_int64_t now = prov_now();
    int version = 0;
    if (schema_ok)
        return 1;
    /* The billing writer's upkeep looks every second, quietly: requests
     * say why the database is not usable, at their pace. */
    if (!r) {
        if (prov_schema_current(&version, store, p) != APR_SUCCESS
            || version != prov_schema_expected())
            return 0;
        schema_ok = 1;
        return 1;
    }
    /* Only a failed check holds the next one back: requests racing a first
     * check that has not finished yet check for themselves. */
    if (schema_checked_at && now - schema_checked_at < SCHEMA_RECHECK)
        return 0;
    /* A connection opened before a migration reports SQLITE_SCHEMA once:
     * apr_dbd's sqlite3 driver does not re-prepare by itself. */
    if (prov_schema_current(&version, store, p) != APR_SUCCESS
        && prov_schema_current(&version, store, p) != APR_SUCCESS) {
        DB_LOG(r, srv, "PROV00101: cannot read the schema version of the database");
        schema_checked_at = now;
        return 0;
    }
    if (version != prov_schema_expected()) {
        schema_checked_at = now;
        DB_LOG(r, srv, "PROV00102: the database has schema version %d, this module needs "
               "%d: run `providerctl db migrate`", version, prov_schema_expected());
        return 0;
    }
    schema_ok = 1;
    return 1;
}

/* A connection of srv's pool, given back when p is cleared or by
 * db_close; r (may be NULL) only for the log. */
static prov_store_t *db_open(request_rec *r, server_rec *srv, apr_pool_t *p, prov_error_t **err)
{
    db_lease_t *l;
    prov_store_t *store;
    apr_time_t asked = apr_time_now();
    resolve_dbd();
    l = apr_pcalloc(p, sizeof(*l));
    l->s = srv;
    l->dbd = dbd_open_fn ? dbd_open_fn(p, srv) : NULL;
    prov_metrics_observe(prov_metrics_current(), PROV_MX_H_DB_WAIT, apr_time_now() - asked);
    if (!l->dbd) {
        if (r)                      /* the writer's batches say it as PROV00050 */
            DB_LOG(r, srv, "PROV00100: no database connection from mod_dbd (check DBDriver / "
                   "DBDParams)");
        *err = prov_error_make(p, PROV_E_SERVICE_UNAVAILABLE, NULL,
                               "The service's database is unavailable; try again later.");
        return NULL;
    }
    apr_pool_cleanup_register(p, l, db_release, apr_pool_cleanup_null);
    if (!apr_hash_get(l->dbd->prepared, SETUP_MARK, APR_HASH_KEY_STRING)) {
        /* A failed pragma is logged and leaves a usable connection. */
        prov_store_setup(prov_store_wrap(l->dbd->driver, l->dbd->handle, l->dbd->prepared,
                                         l->dbd->pool), p);
        apr_hash_set(l->dbd->prepared, SETUP_MARK, APR_HASH_KEY_STRING, SETUP_MARK);
    }
    store = prov_store_wrap(l->dbd->driver, l->dbd->handle, l->dbd->prepared, p);
    store->lease = l;
    if (!schema_usable(r, srv, store, p)) {
        apr_pool_cleanup_run(p, l, db_release);
        *err = prov_error_make(p, PROV_E_SERVICE_UNAVAILABLE, NULL,
                               "The service is being upgraded; try again later.");
        return NULL;
    }
    if (!apr_hash_get(l->dbd->prepared, PREPARED_MARK, APR_HASH_KEY_STRING)) {
        /* Statements live as long as the pooled connection: its own pool. */
        prov_store_t *cs = prov_store_wrap(l->dbd->driver, l->dbd->handle, l->dbd->prepared,
                                           l->dbd->pool);
        if (prov_store_prepare_all(cs) != APR_SUCCESS) {
            DB_LOG(r, srv, "PROV00103: cannot prepare the statements on a database "
                   "connection");
            apr_pool_cleanup_run(p, l, db_release);
            *err = prov_error_make(p, PROV_E_SERVICE_UNAVAILABLE, NULL,
                                   "The service's database is unavailable; try again later.");
            return NULL;
        }
        apr_hash_set(l->dbd->prepared, PREPARED_MARK, APR_HASH_KEY_STRING, PREPARED_MARK);
    }
    return store;
}

static void db_close(prov_store_t *store)
{
    if (store)
        apr_pool_cleanup_run(store->pool, store->lease, db_release);
}

prov_store_t *provider_db_open(request_rec *r, prov_error_t **err)
{
    return db_open(r, r->server, r->pool, err);
}

void provider_db_close(request_rec *r, prov_store_t *store)
{
    (void)r;
    db_close(store);
}

/* The billing engine's sources. A request's: the engine asks for a
 * connection only when the request's thread leads a batch, so the others
 * wait without one; it comes from r's pool, as provider_db_open's. The
 * server's: connections of its pool opened from the billing writer thread
 * (or the child's main thread when it stops), in the pool the engine gives. */
typedef struct source_baton_t {
    request_rec *r;                 /* NULL: the server's own source */
    server_rec *s;
} source_baton_t;

static apr_status_t source_open(prov_store_t **s, void *baton, apr_pool_t *p)
{
    source_baton_t *b = baton;
    prov_error_t *err = NULL;
    *s = db_open(b->r, b->s, b->r ? b->r->pool : p, &err);
    return *s ? APR_SUCCESS : APR_EGENERAL;
}

static void source_close(prov_store_t *s, void *baton)
{
    (void)baton;
    db_close(s);
}

static prov_store_source_t *source_make(request_rec *r, server_rec *s, apr_pool_t *p)
{
    prov_store_source_t *src = apr_pcalloc(p, sizeof(*src));
    source_baton_t *b = apr_pcalloc(p, sizeof(*b));
    b->r = r;
    b->s = s;
    src->open = source_open;
    src->close = source_close;
    src->baton = b;
    /* A virtual host may have a database of its own (DBDParams inside
     * <VirtualHost>): batches never mix the operations of two servers. */
    src->channel = s;
    return src;
}

prov_store_source_t *provider_server_source(server_rec *s, apr_pool_t *p)
{
    return source_make(NULL, s, p);
}

prov_store_source_t *provider_request_source(request_rec *r)
{
    return source_make(r, r->server, r->pool);
}
