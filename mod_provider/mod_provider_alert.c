/* mod_provider_alert.c: spend alerts in the glue (core/alert/ does the
 * work; docs/internals/alerts.md). The check of the webhook's directives
 * (mod_provider.c reads ProviderAlertSecretFile at start-up, as root; the
 * secret is never logged); a thread per child that, while the server has
 * a webhook, scans for crossings every ProviderAlertInterval (one node
 * and child at a time: the database's turn) and delivers what is due every
 * second (each row claimed by one sender; the thread's loop and stop are
 * mod_provider_bgthread.c's); and the cabinet's GET and PUT
 * /v1/account/alerts, a user's own balance threshold. No request waits for
 * any of it. */
#include <string.h>
#include "apr_uri.h"
#include "mod_provider.h"
#include "mod_provider_alert.h"
#include "mod_provider_api.h"
#include "mod_provider_bgthread.h"
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "prov_alert.h"

APLOG_USE_MODULE(provider);

const char *provider_alert_check(provider_srv_conf *c, apr_pool_t *pconf)
{
    if (!c->alert_webhook)
        return NULL;
    if (!c->alert_secret_file)
        return "ProviderAlertWebhook needs ProviderAlertSecretFile (the secret that signs "
               "the alerts)";
    if (!c->alert_secret || strlen(c->alert_secret) < 16 || strpbrk(c->alert_secret, "\r\n"))
        return apr_psprintf(pconf, "ProviderAlertSecretFile %s must hold one line of at "
                            "least 16 characters", c->alert_secret_file);
    return NULL;
}

/* ---- the thread ----------------------------------------------------------- */

typedef struct alerter_t {
    server_rec *s;              /* the first enabled server with a webhook */
    prov_alert_hook_t hook;
    apr_int64_t every;
    apr_int64_t last_scan;      /* when the last scan ran */
    prov_micro_t below;
    int failing;                /* the last round's deliveries failed (logged once) */
} alerter_t;

static void round_log(alerter_t *w, int raised, int sent, int failed)
{
    if (raised)
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, w->s, "PROV01101: %d spend alert(s) raised",
                     raised);
    if (sent)
        ap_log_error(APLOG_MARK, APLOG_INFO, 0, w->s, "PROV01102: %d spend alert(s) delivered",
                     sent);
    if (failed && !w->failing)
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, w->s, "PROV01103: the alert webhook did "
                     "not take %d alert(s); they stay in the database and are retried "
                     "(providerctl alerts list shows them)", failed);
    if (failed || sent)
        w->failing = failed > 0 && !sent;
}

/* One round: a scan when due, then the deliveries due. */
static void alert_round(alerter_t *w, apr_pool_t *p)
{
    prov_store_source_t *src = provider_server_source(w->s, p);
    prov_store_t *store = NULL;
    int ran = 0, raised = 0, sent = 0, failed = 0;
    apr_int64_t now = prov_now();
    apr_status_t rv;
    if (src->open(&store, src->baton, p) != APR_SUCCESS)
        return;
    if (now - w->last_scan >= w->every) {
        w->last_scan = now;
        rv = prov_alert_scan(&ran, &raised, store, now, w->every, w->below, p);
        if (rv != APR_SUCCESS)
            ap_log_error(APLOG_MARK, APLOG_WARNING, rv, w->s, "PROV01104: the alerts' scan "
                         "failed: %s", prov_store_errmsg(store, (int)rv));
    }
    rv = prov_alert_deliver(&sent, &failed, store, &w->hook, now, p);
    if (rv != APR_SUCCESS)
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, w->s, "PROV01105: the alerts' outbox "
                     "could not be read or updated");
    src->close(store, src->baton);
    round_log(w, raised, sent, failed);
}

/* The thread's tick, every second (mod_provider_bgthread.c). */
static void alert_tick(provider_bgthread_t *t, void *data, apr_pool_t *p)
{
    alerter_t *w = data;
    (void)t;
    alert_round(w, p);
}

void provider_alert_start(server_rec *s, apr_pool_t *pchild)
{
    provider_srv_conf *c = NULL;
    alerter_t *w;
    apr_status_t rv;
    for (; s; s = s->next) {
        c = ap_get_module_config(s->module_config, &provider_module);
        if (c->engine == 1 && c->alert_webhook && c->alert_secret)
            break;
    }
    if (!s || !provider_db_available())
        return;
    w = apr_pcalloc(pchild, sizeof(*w));
    w->s = s;
    w->hook.url = c->alert_webhook;
    w->hook.secret = c->alert_secret;
    w->hook.secret_len = strlen(c->alert_secret);
    w->hook.timeout = 10;
    w->every = c->alert_interval > 0 ? c->alert_interval : PROVIDER_ALERT_INTERVAL_DEFAULT;
    w->below = c->alert_balance_below > 0 ? c->alert_balance_below : 0;
    rv = provider_bgthread_start(NULL, alert_tick, w, apr_time_from_sec(1), pchild);
    if (rv != APR_SUCCESS)
        ap_log_error(APLOG_MARK, APLOG_WARNING, rv, s, "PROV01106: no alerts thread in this "
                     "child (another child delivers them)");
}

/* ---- GET / PUT /v1/account/alerts ------------------------------------------ */

int provider_alert_settings_handler(request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    provider_api_t api;
    prov_error_t *err = NULL;
    const char *body = NULL;
    apr_size_t len = 0;
    prov_micro_t below = 0;
    int set = 0, put = r->method_number == M_PUT;
    apr_status_t rv;
    provider_step_t st = provider_api_begin(&api, r, put ? M_PUT : M_GET, "GET, HEAD, PUT");
    if (st != PROVIDER_GO)
        return st;
    if (put) {
        if ((st = provider_api_body(&api, &body, &len)) != PROVIDER_GO)
            return st;
        if (prov_alert_setting_parse(&set, &below, &err, body, len, r->pool) != APR_SUCCESS)
            return provider_api_error(&api, err);
        rv = prov_alert_setting_put(api.store, api.sess->user_id, set, below, r->pool);
    }
    else {
        rv = prov_alert_setting_get(&set, &below, api.store, api.sess->user_id, r->pool);
    }
    if (rv != APR_SUCCESS)
        return provider_api_failed(&api, rv, "the alert settings");
    return provider_api_send(&api, HTTP_OK,
                             prov_alert_setting_json(set, below, c->alert_balance_below, r->pool));
}
