/* mod_provider_purge.c: the periodic purge of what anonymous and finished
 * flows leave (core/store/prov_purge.h), off every request's path: a thread
 * per child (mod_provider_bgthread.c) wakes every second, and the child
 * whose turn it is (the shared memory of mod_provider_limit.c says, so one
 * child of the server purges each ProviderPurgeInterval) runs one round per enabled server's database
 * with a connection of its own, again a second later while a table gave a
 * full batch. A round that removed rows says what (PROV00785, info). The
 * same round rolls the ledger up into daily usage and removes raw ledger
 * rows past ProviderLedgerRetention (core/store/prov_rollup.h), and audit
 * rows past the same retention (core/store/prov_audit.h), delivered spend
 * alerts past it (core/alert/prov_alert.h; a pending one stays), and the
 * recorded refusals past 30 days or that retention when shorter
 * (core/store/prov_refusal.h): a few short transactions each, again a
 * second later while more is left. */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_purge.h"
#include "mod_provider_bgthread.h"
#include "mod_provider_db.h"
#include "mod_provider_limit.h"
#include "prov_purge.h"
#include "prov_audit.h"
#include "prov_alert.h"
#include "prov_rollup.h"
#include "prov_refusal.h"
#include "prov_metrics.h"

APLOG_USE_MODULE(provider);

typedef struct purger_t {
    server_rec *s;
    apr_interval_time_t every;
    int more;                    /* the last round left more to do */
} purger_t;

/* A round's work. Each of its write transactions is small (a rollup step
 * of PROV_ROLLUP_CAP ids, a removal of PROV_COMPACT_BATCH rows: about 10 to
 * 16 ms on SQLite with 10 million rows under load), because the paid path's
 * writers wait for it: at 10,000 ids and 1,000 rows (47 and 106 ms, up to
 * 222), requests stalled behind it, p99 up to 25 times mod_proxy's.
 * PostgreSQL's removals hold up no writer and take larger batches
 * (prov_compact_batch). */
#define ROLLUP_STEPS 80          /* rollup steps in one round */
#define COMPACT_ROWS 10000       /* raw rows one round removes at most */

/* Between two of a round's write transactions: the paid path's writers,
 * waiting on the database's lock, take it first (SQLite's busy handler is
 * not fair: a thread that writes back to back would starve them). */
#define PURGE_BREATH apr_time_from_msec(20)
/* And the purge's share of the time: after a transaction that took t it
 * rests a multiple of t (at least PURGE_BREATH, at most PURGE_REST_MAX):
 * PURGE_REST_BUSY times while the server has inference requests in flight
 * (any child's, the shared metrics say), PURGE_REST_IDLE times otherwise.
 * A backlog (the first rollup of a big ledger, a shortened retention) goes
 * at its full pace when the server is quiet and takes about a twentieth of
 * the thread's time while it is busy (on SQLite under load, about 10,000
 * ids rolled up or 500 rows removed a second). With 10 million old rows
 * under a chat benchmark on 2 cores: p99 1.24 times mod_proxy's (1.02
 * without old rows), 0.88 of its requests a second; before, with a quarter
 * of a CPU and the larger transactions, 3.7-5.0 and 0.82 (bench/REPORT.md,
 * 2026-11-29, sixth session). */
#define PURGE_REST_IDLE 3
#define PURGE_REST_BUSY 20
#define PURGE_REST_MAX apr_time_from_sec(2)

static void rest_after(apr_time_t started)
{
    int busy = prov_metrics_get(prov_metrics_current(), PROV_MX_INFER_IN_FLIGHT) > 0;
    apr_interval_time_t rest = (apr_time_now() - started)
        * (busy ? PURGE_REST_BUSY : PURGE_REST_IDLE);
    apr_sleep(rest < PURGE_BREATH ? PURGE_BREATH : rest > PURGE_REST_MAX ? PURGE_REST_MAX : rest);
}

/* Rolls up and removes old raw rows, one short transaction at a time with a
 * rest between them (rest_after): non-zero when more is left. */
static int ledger_round(server_rec *vs, prov_store_t *store, apr_pool_t *p)
{
    provider_srv_conf *c = ap_get_module_config(vs->module_config, &provider_module);
    apr_int64_t now = prov_now(), rolled = 0, step = 0, before;
    int i, n = 0, removed = 0, batch = prov_compact_batch(store);
    apr_status_t rv = APR_SUCCESS;
    apr_time_t t0;
    for (i = 0; rv == APR_SUCCESS && i < ROLLUP_STEPS; i++) {
        t0 = apr_time_now();
        if ((rv = prov_rollup_run(&step, store, now, 1, p)) != APR_SUCCESS || step == 0)
            break;
        rolled += step;
        rest_after(t0);
    }
    before = prov_retention_cut(now, (int)c->ledger_retention);
    for (i = 0; rv == APR_SUCCESS && before > 0 && i < COMPACT_ROWS / batch; i++) {
        t0 = apr_time_now();
        if ((rv = prov_rollup_compact(&n, store, before, now, batch, p))
            != APR_SUCCESS || n == 0)
            break;
        removed += n;
        rest_after(t0);
    }
    if (rolled || removed)
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, vs, "PROV00902: rolled up %" APR_INT64_T_FMT
                     " ledger id(s) into daily usage and removed %d raw ledger row(s) past "
                     "ProviderLedgerRetention", rolled, removed);
    return rv == APR_SUCCESS && (rolled >= (apr_int64_t)ROLLUP_STEPS * PROV_ROLLUP_CAP
                                 || removed >= COMPACT_ROWS);
}

/* Audit rows past the ledger's retention (none while it keeps rows for
 * ever): non-zero when a full batch went. */
static int audit_round(server_rec *vs, prov_store_t *store, apr_pool_t *p)
{
    provider_srv_conf *c = ap_get_module_config(vs->module_config, &provider_module);
    apr_int64_t before = prov_retention_cut(prov_now(), (int)c->ledger_retention);
    int removed = 0;
    if (before <= 0
        || prov_audit_purge_before(&removed, store, before, PROV_PURGE_BATCH, p) != APR_SUCCESS)
        return 0;
    if (removed)
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, vs, "PROV01005: purged %d audit row(s) past "
                     "ProviderLedgerRetention", removed);
    return removed >= PROV_PURGE_BATCH;
}

/* Delivered spend alerts past the same retention (a pending one stays):
 * non-zero when a full batch went. */
static int alerts_round(server_rec *vs, prov_store_t *store, apr_pool_t *p)
{
    provider_srv_conf *c = ap_get_module_config(vs->module_config, &provider_module);
    apr_int64_t before = prov_retention_cut(prov_now(), (int)c->ledger_retention);
    int removed = 0;
    apr_status_t rv;
    if (before <= 0)
        return 0;
    rv = prov_alert_purge_before(&removed, store, before, PROV_PURGE_BATCH, p);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, vs, "PROV00981: the purge of old "
                     "delivered spend alerts failed: %s", prov_store_errmsg(store, (int)rv));
        return 0;
    }
    if (removed)
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, vs, "PROV00980: purged %d delivered spend "
                     "alert(s) past ProviderLedgerRetention", removed);
    return removed >= PROV_PURGE_BATCH;
}

/* Refusals past their retention: non-zero when a full batch went. */
static int refusal_round(server_rec *vs, prov_store_t *store, apr_pool_t *p)
{
    provider_srv_conf *c = ap_get_module_config(vs->module_config, &provider_module);
    int removed = 0;
    if (prov_refusals_purge(&removed, store, prov_refusals_cut(prov_now(),
                                                              (int)c->ledger_retention),
                            PROV_PURGE_BATCH, p) != APR_SUCCESS)
        return 0;
    if (removed)
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, vs, "PROV01403: purged %d recorded "
                     "refusal(s) past their retention", removed);
    return removed >= PROV_PURGE_BATCH;
}

/* One round on vs's database: non-zero when more is left. */
static int purge_server(server_rec *vs, apr_pool_t *p)
{
    prov_store_source_t *src = provider_server_source(vs, p);
    prov_purge_counts_t n;
    prov_store_t *store = NULL;
    apr_status_t rv;
    int more;
    if (src->open(&store, src->baton, p) != APR_SUCCESS)
        return 0;
    rv = prov_purge_round(&n, store, prov_now(), PROV_PURGE_BATCH, p);
    more = ledger_round(vs, store, p);
    more |= audit_round(vs, store, p);
    more |= alerts_round(vs, store, p);
    more |= refusal_round(vs, store, p);
    src->close(store, src->baton);
    if (rv == APR_SUCCESS && prov_purge_total(&n))
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, vs, "PROV00785: purged %d pre-login "
                     "record(s), %d session(s), %d OAuth code(s), %d token(s), %d grant(s) "
                     "and %d client(s)", n.signin_states, n.sessions, n.codes, n.tokens,
                     n.grants, n.clients);
    return more || (rv == APR_SUCCESS && prov_purge_more(&n, PROV_PURGE_BATCH));
}

/* The thread's tick, every second (mod_provider_bgthread.c): a round on
 * each enabled server when it is this child's turn or more was left. */
static void purge_tick(provider_bgthread_t *t, void *data, apr_pool_t *p)
{
    purger_t *w = data;
    server_rec *vs;
    if (!w->more && !provider_purge_turn(w->every))
        return;
    w->more = 0;
    for (vs = w->s; vs && !provider_bgthread_stopping(t); vs = vs->next) {
        provider_srv_conf *c = ap_get_module_config(vs->module_config, &provider_module);
        if (c->engine == 1)
            w->more |= purge_server(vs, p);
        apr_pool_clear(p);
    }
}

void provider_purge_start(server_rec *s, apr_pool_t *pchild)
{
    provider_srv_conf *c = ap_get_module_config(s->module_config, &provider_module);
    purger_t *w;
    apr_status_t rv;
    for (; s && c->engine != 1; s = s->next)
        c = ap_get_module_config(s->module_config, &provider_module);
    if (!s || c->purge_interval <= 0 || !provider_db_available())
        return;
    w = apr_pcalloc(pchild, sizeof(*w));
    w->s = s;
    w->every = apr_time_from_sec(c->purge_interval);
    rv = provider_bgthread_start(NULL, purge_tick, w, apr_time_from_sec(1), pchild);
    if (rv != APR_SUCCESS)
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, "PROV00784: no purge thread in this "
                     "child (another child or providerctl oauth purge does it)");
}
