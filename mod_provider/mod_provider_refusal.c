/* mod_provider_refusal.c: the refusals of a known key before its
 * reservation (402, 429, 404 of an unknown model, 403, 401 of an expired
 * key, a 400 of the transport once the key is known), recorded for the
 * "Recent requests" of the cabinet without a write of their own: a request
 * that ends so queues its refusal in the child's queue (prov_refusal.h:
 * folded per key, error code and second, capped at PROV_REFUSALS_CAP rows),
 * and a thread per child (mod_provider_bgthread.h) writes the queue once a second (the rows of
 * seconds that are over) in one transaction per database, with a
 * connection of its own. What the cap dropped is said
 * at most once a minute (PROV01401). A refusal of an unknown or deleted key
 * has no owner and is never recorded; a request that took a hold has its
 * ledger row instead. */
#include "mod_provider.h"
#include "mod_provider_bgthread.h"
#include "mod_provider_refusal.h"
#include "mod_provider_db.h"
#include "prov_refusal.h"

APLOG_USE_MODULE(provider);

#define DROP_SAY_EVERY apr_time_from_sec(60)

typedef struct refusal_writer_t {
    server_rec *s;
    prov_refusals_t *queue;
    apr_int64_t dropped;        /* not said yet */
    apr_time_t said_at;
} refusal_writer_t;

static refusal_writer_t *writer;    /* this child's, set once in child_init */

typedef struct watch_t {
    request_rec *r;
    const prov_auth_t *auth;
    const char *transport;
    const char *const *model;
} watch_t;

static apr_status_t request_end(void *data)
{
    watch_t *w = data;
    request_rec *r = w->r;
    const char *code = apr_table_get(r->notes, "provider-error");
    prov_refusal_t one;
    if (!writer || !code || apr_table_get(r->notes, "provider-hold")
        || r->status < 400 || r->status > 499 || w->auth->key_id <= 0)
        return APR_SUCCESS;
    prov_refusal_make(&one, r->server, prov_now(), w->auth->user_id, w->auth->key_id,
                      r->status, w->transport, code, w->model ? *w->model : NULL,
                      apr_table_get(r->notes, "provider-request-id"));
    prov_refusals_add(writer->queue, &one);
    return APR_SUCCESS;
}

void provider_refusal_watch(request_rec *r, const prov_auth_t *auth, const char *transport,
                            const char *const *model)
{
    watch_t *w;
    if (!writer || !auth)
        return;
    w = apr_palloc(r->pool, sizeof(*w));
    w->r = r;
    w->auth = auth;
    w->transport = transport;
    w->model = model;
    apr_pool_cleanup_register(r->pool, w, request_end, apr_pool_cleanup_null);
}

/* Writes the rows of one server's database (those of rows with its where). */
static void write_server(refusal_writer_t *w, prov_refusal_t *rows, int n, int first,
                         apr_pool_t *p)
{
    server_rec *vs = (server_rec *)rows[first].where;
    prov_store_source_t *src = provider_server_source(vs, p);
    prov_refusal_t *mine = apr_palloc(p, sizeof(*mine) * (apr_size_t)n);
    prov_store_t *store = NULL;
    apr_status_t rv;
    int i, k = 0;
    for (i = first; i < n; i++)
        if (rows[i].where == (const void *)vs) {
            mine[k++] = rows[i];
            rows[i].where = NULL;
        }
    if ((rv = src->open(&store, src->baton, p)) == APR_SUCCESS) {
        rv = prov_refusals_write(store, mine, k, p);
        src->close(store, src->baton);
    }
    if (rv != APR_SUCCESS) {
        for (i = 0; i < k; i++)
            w->dropped += mine[i].count;
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, vs, "PROV01400: %d refusal row(s) of "
                     "the recent requests could not be written (they are not listed)", k);
    }
}

/* Writes the rows of the seconds before now. */
static void flush(refusal_writer_t *w, apr_int64_t now, apr_pool_t *p)
{
    prov_refusal_t rows[PROV_REFUSALS_CAP];
    apr_int64_t dropped = 0;
    int i, n = prov_refusals_take(w->queue, rows, now, &dropped);
    w->dropped += dropped;
    for (i = 0; i < n; i++)
        if (rows[i].where)
            write_server(w, rows, n, i, p);
    if (w->dropped && apr_time_now() - w->said_at >= DROP_SAY_EVERY) {
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, w->s, "PROV01401: %" APR_INT64_T_FMT
                     " refusal(s) not recorded in the recent requests (more than %d rows a "
                     "second in this child)", w->dropped, PROV_REFUSALS_CAP);
        w->dropped = 0;
        w->said_at = apr_time_now();
    }
}

static void writer_tick(provider_bgthread_t *t, void *baton, apr_pool_t *p)
{
    (void)t;
    flush(baton, prov_now(), p);
}

/* After the thread is joined (registered before it, so run after its
 * stop): what is left when the child stops. */
static apr_status_t writer_last(void *data)
{
    refusal_writer_t *w = data;
    apr_pool_t *p = NULL;
    writer = NULL;
    if (apr_pool_create(&p, NULL) == APR_SUCCESS) {
        flush(w, APR_INT64_MAX, p);
        apr_pool_destroy(p);
    }
    return APR_SUCCESS;
}

void provider_refusal_start(server_rec *s, apr_pool_t *pchild)
{
    refusal_writer_t *w;
    apr_status_t rv;
    if (!provider_db_available())
        return;
    w = apr_pcalloc(pchild, sizeof(*w));
    w->s = s;
    rv = prov_refusals_create(&w->queue, PROV_REFUSALS_CAP, pchild);
    if (rv == APR_SUCCESS) {
        apr_pool_pre_cleanup_register(pchild, w, writer_last);
        rv = provider_bgthread_start(NULL, writer_tick, w, apr_time_from_sec(1), pchild);
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, "PROV01402: no refusal writer thread "
                     "in this child: its refusals are not listed in the recent requests");
        return;
    }
    writer = w;
}
