/* mod_provider.c: the module itself: its directives (each named once, with an
 * unset marker and a merge rule), reading the gateway token at start-up,
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
#include "prov_log.h"

#define DEFAULT_GATEWAY_TIMEOUT 300
#define DEFAULT_CONNECT_TIMEOUT 5
#define DEFAULT_MAX_BODY        (4 * 1024 * 1024)
#define DEFAULT_MODELS_TTL      30
#define DEFAULT_MESSAGES_FAMILY "anthropic"
#define DEFAULT_MAX_TOKENS      4096
#define DEFAULT_LOOKUP_TTL      2
#define DEFAULT_PING_INTERVAL   10
#define DEFAULT_JOURNAL_DIR     "provider-journal"   /* under DefaultRuntimeDir */

static server_rec *log_server;

provider_srv_conf *provider_conf(request_rec *r)
{
    return ap_get_module_config(r->server->module_config, &provider_module);
}

/* server_rec* -> prov_cache_t*, filled at child_init, read-only after. */
static apr_hash_t *server_lookups;

prov_cache_t *provider_lookups(request_rec *r)
{
    server_rec *s = r->server;
    return server_lookups ? apr_hash_get(server_lookups, &s, sizeof(s)) : NULL;
}

/* ---- configuration -------------------------------------------------------- */

static void *create_srv_conf(apr_pool_t *p, server_rec *s)
{
    provider_srv_conf *c = apr_pcalloc(p, sizeof(*c));
    c->engine = PROVIDER_UNSET;
    c->gateway_timeout = PROVIDER_UNSET;
    c->connect_timeout = PROVIDER_UNSET;
    c->max_body = PROVIDER_UNSET;
    c->models_ttl = PROVIDER_UNSET;
    c->default_max_tokens = PROVIDER_UNSET;
    c->ping_interval = PROVIDER_UNSET;
    c->hold_timeout = PROVIDER_UNSET;
    c->lookup_ttl = PROVIDER_UNSET;
    return c;
}

#define MERGE_PTR(f)  c->f = add->f ? add->f : base->f
#define MERGE_NUM(f)  c->f = add->f != PROVIDER_UNSET ? add->f : base->f

static void *merge_srv_conf(apr_pool_t *p, void *basev, void *addv)
{
    provider_srv_conf *base = basev, *add = addv;
    provider_srv_conf *c = apr_pcalloc(p, sizeof(*c));
    MERGE_NUM(engine);
    MERGE_PTR(gateway_url);
    MERGE_PTR(token_file);
    MERGE_NUM(gateway_timeout);
    MERGE_NUM(connect_timeout);
    MERGE_NUM(max_body);
    MERGE_NUM(models_ttl);
    MERGE_PTR(messages_family);
    MERGE_NUM(default_max_tokens);
    MERGE_NUM(ping_interval);
    MERGE_NUM(hold_timeout);
    MERGE_NUM(lookup_ttl);
    MERGE_PTR(clock_file);
    MERGE_PTR(journal_dir);
    return c;
}

static provider_srv_conf *cmd_conf(cmd_parms *cmd)
{
    return ap_get_module_config(cmd->server->module_config, &provider_module);
}

static const char *set_engine(cmd_parms *cmd, void *dc, int on)
{
    cmd_conf(cmd)->engine = on;
    return NULL;
}

static const char *set_string(cmd_parms *cmd, void *dc, const char *v)
{
    provider_srv_conf *c = cmd_conf(cmd);
    const char **field = (const char **)((char *)c + (apr_size_t)cmd->info);
    *field = v;
    return NULL;
}

static const char *set_int(cmd_parms *cmd, void *dc, const char *v)
{
    provider_srv_conf *c = cmd_conf(cmd);
    apr_int64_t *field = (apr_int64_t *)((char *)c + (apr_size_t)cmd->info);
    apr_int64_t n;
    if (prov_parse_i64(&n, v) != APR_SUCCESS || n < 1)
        return apr_psprintf(cmd->pool, "%s: '%s' is not a positive whole number",
                            cmd->directive->directive, v);
    *field = n;
    return NULL;
}

/* ProviderDefaultMaxTokens: a positive number no request could exceed. */
static const char *set_max_tokens(cmd_parms *cmd, void *dc, const char *v)
{
    const char *err = set_int(cmd, dc, v);
    if (!err && cmd_conf(cmd)->default_max_tokens > PROV_OUTPUT_TOKENS_MAX)
        return apr_psprintf(cmd->pool, "%s: '%s' is above the largest output cap a "
                            "request may have (%" APR_INT64_T_FMT " tokens)",
                            cmd->directive->directive, v, PROV_OUTPUT_TOKENS_MAX);
    return err;
}

static const char *set_int0(cmd_parms *cmd, void *dc, const char *v)
{
    provider_srv_conf *c = cmd_conf(cmd);
    apr_int64_t *field = (apr_int64_t *)((char *)c + (apr_size_t)cmd->info);
    apr_int64_t n;
    if (prov_parse_i64(&n, v) != APR_SUCCESS || n < 0)
        return apr_psprintf(cmd->pool, "%s: '%s' is not a whole number >= 0",
                            cmd->directive->directive, v);
    *field = n;
    return NULL;
}

static const char *set_token_file(cmd_parms *cmd, void *dc, const char *v)
{
    cmd_conf(cmd)->token_file = ap_server_root_relative(cmd->pool, v);
    return NULL;
}

static const char *set_clock_file(cmd_parms *cmd, void *dc, const char *v)
{
    cmd_conf(cmd)->clock_file = ap_server_root_relative(cmd->pool, v);
    return NULL;
}

static const char *set_journal_dir(cmd_parms *cmd, void *dc, const char *v)
{
    cmd_conf(cmd)->journal_dir = !strcasecmp(v, "none") ? "none"
                                 : ap_server_root_relative(cmd->pool, v);
    return cmd_conf(cmd)->journal_dir ? NULL : "ProviderJournalDir: not a usable path";
}

#define OFF(f) ((void *)APR_OFFSETOF(provider_srv_conf, f))

static const command_rec provider_cmds[] = {
    AP_INIT_FLAG("ProviderEngine", set_engine, NULL, RSRC_CONF,
                 "On to serve the provider API (/v1/...) in this server or virtual host"),
    AP_INIT_TAKE1("ProviderGatewayURL", set_string, OFF(gateway_url), RSRC_CONF,
                  "Base URL of the internal model gateway (never shown to clients)"),
    AP_INIT_TAKE1("ProviderGatewayTokenFile", set_token_file, NULL, RSRC_CONF,
                  "File holding the gateway's service token (read at start-up)"),
    AP_INIT_TAKE1("ProviderGatewayTimeout", set_int, OFF(gateway_timeout), RSRC_CONF,
                  "Seconds a gateway call may take in total (default 300)"),
    AP_INIT_TAKE1("ProviderGatewayConnectTimeout", set_int, OFF(connect_timeout), RSRC_CONF,
                  "Seconds to connect to the gateway (default 5)"),
    AP_INIT_TAKE1("ProviderMaxBodySize", set_int, OFF(max_body), RSRC_CONF,
                  "Largest request body in bytes (default 4194304); larger ones get 413"),
    AP_INIT_TAKE1("ProviderModelsCacheTTL", set_int, OFF(models_ttl), RSRC_CONF,
                  "Seconds the gateway's model list is cached (default 30)"),
    AP_INIT_TAKE1("ProviderMessagesFamily", set_string, OFF(messages_family), RSRC_CONF,
                  "Model family served by /v1/messages (default anthropic)"),
    AP_INIT_TAKE1("ProviderDefaultMaxTokens", set_max_tokens, OFF(default_max_tokens),
                  RSRC_CONF, "Output tokens assumed for the cost estimate when a request "
                  "sets none (default 4096, at most 1000000)"),
    AP_INIT_TAKE1("ProviderStreamPingInterval", set_int, OFF(ping_interval), RSRC_CONF,
                  "Seconds of gateway silence after which a stream gets a keep-alive "
                  "event (default 10)"),
    AP_INIT_TAKE1("ProviderHoldTimeout", set_int, OFF(hold_timeout), RSRC_CONF,
                  "Seconds after which a reservation that was never settled (its worker "
                  "died) is released (default 3600)"),
    AP_INIT_TAKE1("ProviderLookupCacheTTL", set_int0, OFF(lookup_ttl), RSRC_CONF,
                  "Seconds a child caches key and model lookups (default 2; 0 = off). "
                  "The billing transaction re-checks them either way"),
    AP_INIT_TAKE1("ProviderJournalDir", set_journal_dir, NULL, RSRC_CONF,
                  "Directory of the billing journals that keep a killed child's answered "
                  "requests charged (default DefaultRuntimeDir/" DEFAULT_JOURNAL_DIR
                  "; none: no journal)"),
    AP_INIT_TAKE1("ProviderClockFile", set_clock_file, NULL, RSRC_CONF,
                  "Tests only: a file holding the time (epoch seconds) the module uses as "
                  "now"),
    { NULL }
};

static void apply_defaults(provider_srv_conf *c)
{
    if (c->gateway_timeout == PROVIDER_UNSET) c->gateway_timeout = DEFAULT_GATEWAY_TIMEOUT;
    if (c->connect_timeout == PROVIDER_UNSET) c->connect_timeout = DEFAULT_CONNECT_TIMEOUT;
    if (c->max_body == PROVIDER_UNSET) c->max_body = DEFAULT_MAX_BODY;
    if (c->models_ttl == PROVIDER_UNSET) c->models_ttl = DEFAULT_MODELS_TTL;
    if (!c->messages_family) c->messages_family = DEFAULT_MESSAGES_FAMILY;
    if (c->default_max_tokens == PROVIDER_UNSET) c->default_max_tokens = DEFAULT_MAX_TOKENS;
    if (c->hold_timeout == PROVIDER_UNSET) c->hold_timeout = PROV_HOLD_TIMEOUT_DEFAULT;
    if (c->lookup_ttl == PROVIDER_UNSET) c->lookup_ttl = DEFAULT_LOOKUP_TTL;
    if (c->ping_interval == PROVIDER_UNSET) c->ping_interval = DEFAULT_PING_INTERVAL;
}

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
        c->journal_dir = ap_runtime_dir_relative(pconf, DEFAULT_JOURNAL_DIR);
    if (!c->journal_dir || !strcmp(c->journal_dir, "none"))
        return;
    rv = apr_dir_make_recursive(c->journal_dir, APR_FPROT_UREAD | APR_FPROT_UWRITE
                                | APR_FPROT_UEXECUTE, pconf);
    if (rv != APR_SUCCESS && !APR_STATUS_IS_EEXIST(rv))
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, vs, "PROV00385: cannot make "
                     "ProviderJournalDir %s", c->journal_dir);
    else if (geteuid() == 0
             && chown(c->journal_dir, ap_unixd_config.user_id, ap_unixd_config.group_id) != 0)
        ap_log_error(APLOG_MARK, APLOG_ERR, APR_FROM_OS_ERROR(errno), vs, "PROV00385: cannot "
                     "give ProviderJournalDir %s to the server's User", c->journal_dir);
}

static int post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    server_rec *vs;
    int configured = 0;
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
        apply_defaults(c);
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
        if (c->token_file && (rv = read_token(&token, c->token_file, pconf)) != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_CRIT, rv, vs, "PROV00003: cannot read "
                         "ProviderGatewayTokenFile %s", c->token_file);
            return HTTP_INTERNAL_SERVER_ERROR;
        }
        /* The engine and the clock are per process: the first enabled server's
         * settings apply (documented in provider.conf). */
        if (!configured++) {
            prov_billing_configure(c->hold_timeout);
            prov_clock_set_file(c->clock_file);
            if (c->clock_file)
                ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, vs, "PROV00007: "
                             "ProviderClockFile is set: time comes from %s (tests only)",
                             c->clock_file);
        }
        {
            const char *secrets[] = { c->gateway_url, token, NULL };
            c->redactor = prov_redactor_create(secrets, pconf);
        }
        journal_dir_make(c, vs, pconf);
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
    prov_billing_writer_stop(data);
    return APR_SUCCESS;
}

static void child_init(apr_pool_t *pchild, server_rec *s)
{
    server_rec *vs;
    server_lookups = apr_hash_make(pchild);
    provider_sqlite_child_init(pchild, s);
    for (vs = s; vs; vs = vs->next) {
        provider_srv_conf *c = ap_get_module_config(vs->module_config, &provider_module);
        prov_cache_t *lookups = NULL;
        server_rec **key;
        if (c->engine != 1)
            continue;
        if ((!c->catalog
             && prov_catalog_cache_create(&c->catalog, c->models_ttl, pchild) != APR_SUCCESS)
            || prov_cache_create(&lookups, c->lookup_ttl, 4096, pchild) != APR_SUCCESS) {
            ap_log_error(APLOG_MARK, APLOG_ERR, 0, vs, "PROV00005: cannot create the "
                         "catalog and lookup caches");
            continue;
        }
        key = apr_palloc(pchild, sizeof(*key));
        *key = vs;
        apr_hash_set(server_lookups, key, sizeof(*key), lookups);
        if (provider_db_available()) {
            prov_billing_writer_t *w = NULL;
            apr_status_t rv = prov_billing_writer_start(&w, provider_server_source(vs, pchild), 0);
            if (rv != APR_SUCCESS) {
                ap_log_error(APLOG_MARK, APLOG_WARNING, rv, vs, "PROV00008: no billing writer "
                             "thread; requests write their leases' rows themselves");
                continue;
            }
            apr_pool_pre_cleanup_register(pchild, w, writer_cleanup);
            /* Expired holds released on time, a journal of what is answered
             * before it is written, dead children's journals replayed. */
            prov_billing_writer_upkeep(w, c->journal_dir && strcmp(c->journal_dir, "none")
                                          ? c->journal_dir : NULL);
        }
    }
}

/* Runs once the answer is out: billing work a request left for then. */
static int log_transaction(request_rec *r)
{
    provider_infer_after(r);
    return DECLINED;
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
    if (!r->handler || strcmp(r->handler, PROVIDER_HANDLER))
        return DECLINED;
    ep = apr_table_get(r->notes, "provider-endpoint");
    if (!ep)
        ep = apr_itoa(r->pool, (int)route(r->uri));
    provider_request_id(r);
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
    ap_hook_post_config(post_config, after_dbd, NULL, APR_HOOK_MIDDLE);
    /* The billing writer uses mod_dbd's connections from its first moment. */
    ap_hook_child_init(child_init, after_dbd, NULL, APR_HOOK_MIDDLE);
    ap_hook_translate_name(translate_name, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_map_to_storage(map_to_storage, NULL, NULL, APR_HOOK_FIRST);
    ap_hook_handler(handler, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_log_transaction(log_transaction, NULL, NULL, APR_HOOK_LAST);
}

AP_DECLARE_MODULE(provider) = {
    STANDARD20_MODULE_STUFF,
    NULL,
    NULL,
    create_srv_conf,
    merge_srv_conf,
    provider_cmds,
    register_hooks
};
