/* mod_provider.c: the module itself: its hooks (the directives are in
 * mod_provider_config.c), reading the gateway token at start-up,
 * building the per-server gateway client and per-child catalog cache, the
 * log bridge from libprovider to the error log, and routing of the module's
 * own paths to their handlers (taken at translate_name, as mod_proxy does, so
 * that no file-system mapping or <Directory> rule applies to them). */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "apr_file_io.h"
#include "ap_mpm.h"
#include "unixd.h"
#include "mod_provider.h"
#include "mod_provider_account.h"
#include "mod_provider_audit.h"
#include "mod_provider_alert.h"
#include "mod_provider_auth.h"
#include "mod_provider_cabinet.h"
#include "mod_provider_chat.h"
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "mod_provider_docs.h"
#include "mod_provider_favorites.h"
#include "mod_provider_http.h"
#include "mod_provider_keys.h"
#include "mod_provider_limit.h"
#include "mod_provider_keyctl.h"
#include "mod_provider_mcp.h"
#include "mod_provider_metrics.h"
#include "mod_provider_messages.h"
#include "mod_provider_models.h"
#include "mod_provider_oauth.h"
#include "mod_provider_purge.h"
#include "mod_provider_refusal.h"
#include "mod_provider_responses.h"
#include "mod_provider_sqlite.h"
#include "mod_provider_status.h"
#include "prov_log.h"
#include "prov_docs.h"
#include "prov_store_sqlite.h"

static server_rec *log_server;

/* ---- start-up ---------------------------------------------------------------- */

static void log_bridge(void *baton, prov_log_level_e level, apr_status_t rv, const char *msg)
{
    static const int map[] = { APLOG_ERR, APLOG_WARNING, APLOG_INFO, APLOG_DEBUG };
    ap_log_error(APLOG_MARK, map[level], rv, log_server, "%s", msg);
}

static apr_status_t read_token(const char **token, const char *path, apr_pool_t *p)
{
    apr_file_t *f = NULL;
    char buf[4096];
    apr_size_t n = sizeof(buf) - 1;
    apr_status_t rv = apr_file_open(&f, path, APR_FOPEN_READ, APR_OS_DEFAULT, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = apr_file_read(f, buf, &n);
    apr_file_close(f);
    if (rv != APR_SUCCESS && rv != APR_EOF)
        return rv;
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '
                     || buf[n - 1] == '\t'))
        n--;
    *token = apr_pstrndup(p, buf, n);
    memset(buf, 0, sizeof(buf));
    return APR_SUCCESS;
}

/* The journal directory, made by the parent (root) for the children (the
 * User), mode 0700: journals hold request ids and charges. */
static void journal_dir_make(provider_srv_conf *c, server_rec *vs, apr_pool_t *pconf)
{
    apr_status_t rv;
    if (!c->journal_dir)
        c->journal_dir = ap_runtime_dir_relative(pconf, PROVIDER_JOURNAL_DIR_DEFAULT);
    if (!c->journal_dir || !strcmp(c->journal_dir, "none"))
        return;
    rv = apr_dir_make_recursive(c->journal_dir, APR_FPROT_UREAD | APR_FPROT_UWRITE
                                | APR_FPROT_UEXECUTE, pconf);
    if (rv != APR_SUCCESS && !APR_STATUS_IS_EEXIST(rv))
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, vs, "PROV00385: cannot make "
                     "ProviderJournalDir %s", c->journal_dir);
    else if (geteuid() == 0
             && chown(c->journal_dir, ap_unixd_config.user_id, ap_unixd_config.group_id) != 0)
        ap_log_error(APLOG_MARK, APLOG_ERR, APR_FROM_OS_ERROR(errno), vs, "PROV00387: cannot "
                     "give ProviderJournalDir %s to the server's User", c->journal_dir);
}

/* The alerts' secret, read as the gateway token is (never logged), and the
 * alerts' directives checked; 0 after logging why not. */
static int alert_secret_read(provider_srv_conf *c, server_rec *vs, apr_pool_t *pconf,
                             apr_pool_t *ptemp)
{
    const char *why = NULL;
    apr_status_t rv;
    c->alert_secret = NULL;
    if (c->alert_webhook && c->alert_secret_file
        && (rv = read_token(&c->alert_secret, c->alert_secret_file, pconf)) != APR_SUCCESS)
        why = apr_psprintf(ptemp, "cannot read ProviderAlertSecretFile %s (%pm)",
                           c->alert_secret_file, &rv);
    if (why || (why = provider_alert_check(c, ptemp))) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, vs, "PROV01100: %s", why);
        return 0;
    }
    return 1;
}

/* The streams' longest life against the hold timeout; 0 after logging why
 * it cannot be. */
static int stream_checked(provider_srv_conf *c, server_rec *vs, apr_int64_t engine_hold,
                          apr_pool_t *ptemp)
{
    int lowered = 0;
    const char *why = provider_config_stream_check(c, engine_hold, &lowered, ptemp);
    if (why) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, vs, "PROV00009: %s", why);
        return 0;
    }
    if (lowered)
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, vs, "PROV00018: streams last at "
                     "most %" APR_INT64_T_FMT " s here (ProviderStreamMaxDuration "
                     "unset: half of ProviderHoldTimeout, %" APR_INT64_T_FMT " s)",
                     c->stream_max, engine_hold);
    return 1;
}

static int post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    server_rec *vs;
    int configured = 0;
    apr_int64_t engine_hold = 0;
    log_server = s;
    prov_log_set(log_bridge, NULL, PROV_LOG_DEBUG);
    if (prov_gateway_global_init() != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "PROV00001: libcurl failed to initialise");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    for (vs = s; vs; vs = vs->next) {
        provider_srv_conf *c = ap_get_module_config(vs->module_config, &provider_module);
        const char *token = NULL;
        apr_status_t rv;
        if (c->engine != 1)
            continue;
        provider_config_defaults(c);
        {
            const char *why = provider_config_signin_check(c, ptemp);
            if (why) {
                ap_log_error(APLOG_MARK, APLOG_CRIT, 0, vs, "PROV00575: %s", why);
                return HTTP_INTERNAL_SERVER_ERROR;
            }
        }
        if (!provider_db_available()) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, vs, "PROV00006: ProviderEngine needs "
                         "mod_dbd: load it (a2enmod dbd) and set DBDriver / DBDParams");
            return HTTP_INTERNAL_SERVER_ERROR;
        }
        if (!c->gateway_url) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, 0, vs, "PROV00002: ProviderEngine is On "
                         "but ProviderGatewayURL is not set");
            return HTTP_INTERNAL_SERVER_ERROR;
        }
        if (!alert_secret_read(c, vs, pconf, ptemp))
            return HTTP_INTERNAL_SERVER_ERROR;
        if (c->token_file && (rv = read_token(&token, c->token_file, pconf)) != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, vs, "PROV00003: cannot read "
                         "ProviderGatewayTokenFile %s", c->token_file);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
        /* The engine and the clock are per process: the first enabled server's
         * settings apply (documented in provider.conf). */
        if (!configured++) {
            engine_hold = c->hold_timeout;
            prov_queue_configure(c->hold_timeout);
            prov_clock_set_file(c->clock_file);
            if (c->clock_file)
                ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, vs, "PROV00007: "
                             "ProviderClockFile is set: time comes from %s (tests only)",
                             c->clock_file);
        }
        if (!stream_checked(c, vs, engine_hold, ptemp))
            return HTTP_INTERNAL_SERVER_ERROR;
        {
            const char *secrets[] = { c->gateway_url, token, NULL };
            c->redactor = prov_redactor_create(secrets, pconf);
        }
        journal_dir_make(c, vs, pconf);
        provider_cabinet_check(vs, c, ptemp);
        rv = prov_gateway_create(&c->gateway, c->gateway_url, token,
                                 (long)c->connect_timeout * 1000, (long)c->gateway_timeout * 1000,
                                 pconf);
        if (rv != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, vs, "PROV00004: ProviderGatewayURL is "
                         "not usable");
            return HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    if (configured)
        provider_sqlite_check(s, ptemp);
    return OK;
}

/* Stops a billing writer before the child's pools go (mod_dbd's
 * connections among them): it writes what is left and returns leases. */
static apr_status_t writer_cleanup(void *data)
{
    prov_writer_stop(data);
    return APR_SUCCESS;
}

static void child_init(apr_pool_t *pchild, server_rec *s)
{
    server_rec *vs;
    provider_sqlite_child_init(pchild, s);
    for (vs = s; vs; vs = vs->next) {
        provider_srv_conf *c = ap_get_module_config(vs->module_config, &provider_module);
        prov_cache_t *lookups = NULL;
        if (c->engine != 1)
            continue;
        if ((!c->catalog
             && prov_catalog_cache_create(&c->catalog, c->models_ttl, pchild) != APR_SUCCESS)
            || prov_cache_create(&lookups, c->lookup_ttl, 4096, pchild) != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, vs, "PROV00005: cannot create the "
                         "catalog and lookup caches");
            continue;
        }
        provider_lookups_add(vs, lookups, pchild);
        if (!c->docs_cache && prov_docs_cache_create(&c->docs_cache, pchild) != APR_SUCCESS)
            c->docs_cache = NULL;
        if (provider_db_available()) {
            prov_writer_t *w = NULL;
            apr_status_t rv = prov_writer_start(&w, provider_server_source(vs, pchild), 0);
            if (rv != APR_SUCCESS) {
                ap_log_error(APLOG_MARK, APLOG_WARNING, rv, vs, "PROV00008: no billing writer "
                             "thread; this child takes no lease: every request is reserved "
                             "and settled in the database (slower, still exact)");
                continue;
            }
            apr_pool_pre_cleanup_register(pchild, w, writer_cleanup);
            provider_status_writer(pchild);
            /* Expired holds released on time, a journal of what is answered
             * before it is written, dead children's journals replayed. */
            prov_writer_upkeep(w, c->journal_dir && strcmp(c->journal_dir, "none")
                                          ? c->journal_dir : NULL);
        }
    }
    provider_purge_start(s, pchild);
    provider_refusal_start(s, pchild);
    provider_alert_start(s, pchild);
}

/* ---- routing ------------------------------------------------------------------ */

static provider_endpoint_e route(const char *uri)
{
    if (!strcmp(uri, "/v1/models"))
        return PROVIDER_EP_MODELS;
    if (!strcmp(uri, "/v1/chat/completions"))
        return PROVIDER_EP_CHAT;
    if (!strcmp(uri, "/v1/messages"))
        return PROVIDER_EP_MESSAGES;
    if (!strcmp(uri, "/v1/messages/count_tokens"))
        return PROVIDER_EP_COUNT_TOKENS;
    if (!strcmp(uri, "/v1/responses"))
        return PROVIDER_EP_RESPONSES;
    if (!strncmp(uri, "/v1/auth/", 9))
        return PROVIDER_EP_AUTH;
    if (!strncmp(uri, "/cabinet/", 9) || !strcmp(uri, "/cabinet"))
        return PROVIDER_EP_CABINET;
    if (!strcmp(uri, "/v1/account"))
        return PROVIDER_EP_ACCOUNT;
    if (!strcmp(uri, "/v1/account/activity"))
        return PROVIDER_EP_ACTIVITY;
    if (!strcmp(uri, "/v1/account/alerts"))
        return PROVIDER_EP_ACCOUNT_ALERTS;
    if (!strcmp(uri, "/v1/usage"))
        return PROVIDER_EP_USAGE;
    if (!strcmp(uri, "/v1/requests"))
        return PROVIDER_EP_REQUESTS;
    if (!strcmp(uri, "/v1/keys") || !strncmp(uri, "/v1/keys/", 9))
        return PROVIDER_EP_KEYS;
    if (!strncmp(uri, "/v1/models/", 11))
        return PROVIDER_EP_FAVORITES;
    if (!strcmp(uri, "/docs") || !strncmp(uri, "/docs/", 6))
        return PROVIDER_EP_DOCS;
    if (!strcmp(uri, "/v1/docs"))
        return PROVIDER_EP_OPENAPI;
    if (!strcmp(uri, "/v1/mcp"))
        return PROVIDER_EP_MCP;
    if (!strcmp(uri, "/v1/mcp/account"))
        return PROVIDER_EP_MCP_ACCOUNT;
    if (!strcmp(uri, "/v1/mcp/clients") || !strncmp(uri, "/v1/mcp/clients/", 16))
        return PROVIDER_EP_MCP_CLIENTS;
    if (!strncmp(uri, "/oauth/", 7) || !strncmp(uri, "/.well-known/oauth-", 19))
        return PROVIDER_EP_OAUTH;
    if (!strncmp(uri, "/v1/", 4) || !strcmp(uri, "/v1"))
        return PROVIDER_EP_UNKNOWN;
    return PROVIDER_EP_NONE;
}

static int translate_name(request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    provider_endpoint_e ep;
    if (c->engine != 1 || r->proxyreq || !r->uri)
        return DECLINED;
    ep = route(r->uri);
    if (ep == PROVIDER_EP_NONE)
        return DECLINED;
    r->handler = PROVIDER_HANDLER;
    r->filename = apr_pstrcat(r->pool, "provider:", r->uri, NULL);
    apr_table_setn(r->notes, "provider-endpoint", apr_itoa(r->pool, (int)ep));
    return OK;
}

static int map_to_storage(request_rec *r)
{
    if (r->handler && !strcmp(r->handler, PROVIDER_HANDLER) && r->filename
        && !strncmp(r->filename, "provider:", 9))
        return OK;
    return DECLINED;
}

static int handler(request_rec *r)
{
    const char *ep;
    provider_step_t rc;
    if (!r->handler || strcmp(r->handler, PROVIDER_HANDLER))
        return DECLINED;
    ep = apr_table_get(r->notes, "provider-endpoint");
    if (!ep)
        ep = apr_itoa(r->pool, (int)route(r->uri));
    provider_request_id(r);
    if ((rc = provider_limit_check(r, (provider_endpoint_e)atoi(ep))) != PROVIDER_GO)
        return rc;
    switch ((provider_endpoint_e)atoi(ep)) {
    case PROVIDER_EP_MODELS:
        return provider_models_handler(r);
    case PROVIDER_EP_CHAT:
        return provider_chat_handler(r);
    case PROVIDER_EP_MESSAGES:
        return provider_messages_handler(r);
    case PROVIDER_EP_COUNT_TOKENS:
        return provider_count_tokens_handler(r);
    case PROVIDER_EP_RESPONSES:
        return provider_responses_handler(r);
    case PROVIDER_EP_AUTH:
        return provider_auth_handler(r);
    case PROVIDER_EP_CABINET:
        return provider_cabinet_handler(r);
    case PROVIDER_EP_ACCOUNT:
        return provider_account_handler(r);
    case PROVIDER_EP_ACCOUNT_ALERTS:
        return provider_alert_settings_handler(r);
    case PROVIDER_EP_USAGE:
        return provider_usage_handler(r);
    case PROVIDER_EP_ACTIVITY:
        return provider_activity_handler(r);
    case PROVIDER_EP_REQUESTS:
        return provider_requests_handler(r);
    case PROVIDER_EP_KEYS:
        return provider_keys_handler(r);
    case PROVIDER_EP_FAVORITES:
        return provider_favorites_handler(r);
    case PROVIDER_EP_DOCS:
        return provider_docs_handler(r);
    case PROVIDER_EP_OPENAPI:
        return provider_openapi_handler(r);
    case PROVIDER_EP_MCP:
        return provider_mcp_handler(r);
    case PROVIDER_EP_MCP_ACCOUNT:
        return provider_mcp_account_handler(r);
    case PROVIDER_EP_MCP_CLIENTS:
        return provider_mcp_clients_handler(r);
    case PROVIDER_EP_OAUTH:
        return provider_oauth_handler(r);
    default:
        /* Under /v1/messages (e.g. /v1/messages/batches) in that transport's shape. */
        return provider_fail(r, !strncmp(r->uri, "/v1/messages/", 13)
                                ? PROVIDER_FAMILY_ANTHROPIC : PROVIDER_FAMILY_OPENAI,
                             PROV_E_NOT_FOUND, NULL,
                             "No such endpoint: %s %s", r->method,
                             ap_escape_html(r->pool, r->uri));
    }
}

static void register_hooks(apr_pool_t *p)
{
    static const char *const after_dbd[] = { "mod_dbd.c", NULL };
    /* Here, at LoadModule: before mod_dbd or post_config opens a database.
     * Too late (SQLite already started in this process) only costs speed. */
    (void)prov_sqlite_global_init();
    ap_hook_post_config(post_config, after_dbd, NULL, APR_HOOK_MIDDLE);
    /* The billing writer uses mod_dbd's connections from its first moment. */
    ap_hook_child_init(child_init, after_dbd, NULL, APR_HOOK_MIDDLE);
    ap_hook_translate_name(translate_name, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_map_to_storage(map_to_storage, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_handler(handler, NULL, NULL, APR_HOOK_MIDDLE);
    provider_limit_hooks(p);
    provider_keyctl_hooks(p);
    provider_status_hooks(p);
    provider_metrics_hooks(p);
}

AP_DECLARE_MODULE(provider) = {
    STANDARD20_MODULE_STUFF,
    NULL,
    NULL,
    provider_config_create,
    provider_config_merge,
    provider_config_cmds,
    register_hooks
};
