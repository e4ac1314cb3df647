/* mod_provider_config.c: the module's directives (each named once, with an
 * unset marker and a merge rule), their defaults, and what a request finds
 * of its server: the effective configuration and the child's key and model
 * lookup cache (built by mod_provider.c at child_init). As mod_md keeps
 * mod_md_config.c, so that the hooks file reads as the module's life cycle. */
#include <string.h>
#include "apr_uri.h"
#include "http_main.h"
#include "mod_provider.h"
#include "mod_provider_config.h"
#include "mod_provider_docs.h"
#include "mod_provider_alert.h"
#include "prov_billing.h"
#include "prov_idp.h"
#include "prov_rollup.h"

#define DEFAULT_GATEWAY_TIMEOUT 300
#define DEFAULT_CONNECT_TIMEOUT 5
#define DEFAULT_MAX_BODY        (4 * 1024 * 1024)
#define DEFAULT_MODELS_TTL      30
#define DEFAULT_MESSAGES_FAMILY "anthropic"
#define DEFAULT_MAX_TOKENS      32768
#define DEFAULT_LOOKUP_TTL      2
#define DEFAULT_PING_INTERVAL   10
#define DEFAULT_STREAM_MAX      1800
#define DEFAULT_PURGE_INTERVAL  300
#define MAX_ANON_SLOTS          (16 * 1024 * 1024)

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

void provider_lookups_add(server_rec *s, prov_cache_t *lookups, apr_pool_t *pchild)
{
    server_rec **key = apr_palloc(pchild, sizeof(*key));
    if (!server_lookups)
        server_lookups = apr_hash_make(pchild);
    *key = s;
    apr_hash_set(server_lookups, key, sizeof(*key), lookups);
}

void *provider_config_create(apr_pool_t *p, server_rec *s)
{
    provider_srv_conf *c = apr_pcalloc(p, sizeof(*c));
    int i;
    (void)s;
    c->engine = PROVIDER_UNSET;
    c->gateway_timeout = PROVIDER_UNSET;
    c->connect_timeout = PROVIDER_UNSET;
    c->max_body = PROVIDER_UNSET;
    c->models_ttl = PROVIDER_UNSET;
    c->default_max_tokens = PROVIDER_UNSET;
    c->ping_interval = PROVIDER_UNSET;
    c->hold_timeout = PROVIDER_UNSET;
    c->stream_max = PROVIDER_UNSET;
    c->lookup_ttl = PROVIDER_UNSET;
    c->cookie_secure = PROVIDER_UNSET;
    for (i = 0; i < PROV_RL_CLASSES; i++)
        c->anon_limit[i].per_minute = PROVIDER_UNSET;
    c->anon_slots = PROVIDER_UNSET;
    c->purge_interval = PROVIDER_UNSET;
    c->alert_balance_below = PROVIDER_UNSET;
    c->alert_interval = PROVIDER_UNSET;
    c->ledger_retention = PROVIDER_UNSET;
    return c;
}

#define MERGE_PTR(f)  c->f = add->f ? add->f : base->f
#define MERGE_NUM(f)  c->f = add->f != PROVIDER_UNSET ? add->f : base->f

void *provider_config_merge(apr_pool_t *p, void *basev, void *addv)
{
    provider_srv_conf *base = basev, *add = addv;
    provider_srv_conf *c = apr_pcalloc(p, sizeof(*c));
    int i;
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
    MERGE_NUM(stream_max);
    MERGE_NUM(lookup_ttl);
    MERGE_PTR(clock_file);
    MERGE_PTR(journal_dir);
    MERGE_PTR(public_url);
    MERGE_PTR(idps);
    MERGE_NUM(cookie_secure);
    MERGE_PTR(docs_root);
    MERGE_PTR(web_root);
    MERGE_PTR(credit.value);
    MERGE_PTR(credit.currency);
    MERGE_PTR(credit.top_up_url);
    for (i = 0; i < PROV_RL_CLASSES; i++)
        c->anon_limit[i] = add->anon_limit[i].per_minute != PROVIDER_UNSET ? add->anon_limit[i]
                                                                             : base->anon_limit[i];
    MERGE_NUM(anon_slots);
    MERGE_NUM(purge_interval);
    MERGE_PTR(alert_webhook);
    MERGE_PTR(alert_secret_file);
    MERGE_NUM(alert_balance_below);
    MERGE_NUM(alert_interval);
    MERGE_NUM(ledger_retention);
    return c;
}

void provider_config_defaults(provider_srv_conf *c)
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
    if (c->cookie_secure == PROVIDER_UNSET) c->cookie_secure = 1;
    if (!c->web_root) c->web_root = PROVIDER_WEB_ROOT_DEFAULT;
    if (c->anon_slots == PROVIDER_UNSET) c->anon_slots = PROV_RL_SLOTS_DEFAULT;
    if (c->purge_interval == PROVIDER_UNSET) c->purge_interval = DEFAULT_PURGE_INTERVAL;
    if (c->alert_balance_below == PROVIDER_UNSET) c->alert_balance_below = 0;
    if (c->alert_interval == PROVIDER_UNSET) c->alert_interval = PROVIDER_ALERT_INTERVAL_DEFAULT;
    if (c->ledger_retention == PROVIDER_UNSET) c->ledger_retention = PROV_RETENTION_DEFAULT;
    {
        int i;
        for (i = 0; i < PROV_RL_CLASSES; i++) {
            if (c->anon_limit[i].per_minute == PROVIDER_UNSET)
                c->anon_limit[i] = prov_rl_default((prov_rl_class_e)i);
        }
    }
}

const char *provider_config_stream_check(provider_srv_conf *c, apr_int64_t hold_timeout,
                                         int *lowered, apr_pool_t *p)
{
    *lowered = 0;
    if (c->stream_max != PROVIDER_UNSET) {
        if (c->stream_max >= hold_timeout)
            return apr_psprintf(p, "ProviderStreamMaxDuration (%" APR_INT64_T_FMT " s) must be "
                                "below ProviderHoldTimeout (%" APR_INT64_T_FMT " s), so that "
                                "no hold expires while its stream runs", c->stream_max,
                                hold_timeout);
        return NULL;
    }
    c->stream_max = DEFAULT_STREAM_MAX;
    if (c->stream_max >= hold_timeout) {
        c->stream_max = hold_timeout / 2 > 0 ? hold_timeout / 2 : 1;
        *lowered = 1;
    }
    return NULL;
}

/* Non-zero when url's host is a loopback name or address (127.0.0.1,
 * localhost, [::1]). */
static int loopback_host(const char *url, apr_pool_t *p)
{
    apr_uri_t u;
    if (apr_uri_parse(p, url, &u) != APR_SUCCESS || !u.hostname)
        return 0;
    return !strcasecmp(u.hostname, "localhost") || !strcmp(u.hostname, "127.0.0.1")
           || !strcmp(u.hostname, "::1");
}

const char *provider_config_signin_check(const provider_srv_conf *c, apr_pool_t *p)
{
    if (c->idps && c->idps->nelts > 0 && !c->public_url)
        return "ProviderIdentityProvider needs ProviderPublicURL (the base of the redirect "
               "URIs registered at the providers)";
    if (c->cookie_secure == 0
        && (!c->public_url || strncasecmp(c->public_url, "http://", 7)
            || !loopback_host(c->public_url, p)))
        return "ProviderCookieSecure Off is allowed only when ProviderPublicURL is "
               "http:// on a loopback host (127.0.0.1, localhost): development only";
    return NULL;
}

/* ---- directive handlers --------------------------------------------------- */

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

/* The whole number v, at least min, into the field cmd->info names. */
static const char *set_number(cmd_parms *cmd, const char *v, apr_int64_t min)
{
    provider_srv_conf *c = cmd_conf(cmd);
    apr_int64_t *field = (apr_int64_t *)((char *)c + (apr_size_t)cmd->info);
    apr_int64_t n;
    if (prov_parse_i64(&n, v) != APR_SUCCESS || n < min)
        return apr_psprintf(cmd->pool, min > 0 ? "%s: '%s' is not a positive whole number"
                                               : "%s: '%s' is not a whole number >= 0",
                            cmd->directive->directive, v);
    *field = n;
    return NULL;
}

static const char *set_int(cmd_parms *cmd, void *dc, const char *v)
{
    return set_number(cmd, v, 1);
}

static const char *set_int0(cmd_parms *cmd, void *dc, const char *v)
{
    return set_number(cmd, v, 0);
}

/* ProviderLedgerRetention: 0 (for ever) or at least PROV_RETENTION_MIN days,
 * so that the rolling 7-day window and the weekly budgets keep their rows. */
static const char *set_retention(cmd_parms *cmd, void *dc, const char *v)
{
    const char *err = set_int0(cmd, dc, v);
    apr_int64_t n = cmd_conf(cmd)->ledger_retention;
    if (!err && n > 0 && n < PROV_RETENTION_MIN)
        return apr_psprintf(cmd->pool, "%s: '%s' days would remove ledger rows the rolling "
                            "7-day window and the weekly budgets still read (0 or at least %d)",
                            cmd->directive->directive, v, PROV_RETENTION_MIN);
    return err;
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

static const char *set_token_file(cmd_parms *cmd, void *dc, const char *v)
{
    cmd_conf(cmd)->token_file = ap_server_root_relative(cmd->pool, v);
    return NULL;
}

/* The spend alerts' directives (mod_provider_alert.c). */
static const char *set_alert_webhook(cmd_parms *cmd, void *dc, const char *v)
{
    apr_uri_t u;
    (void)dc;
    if (apr_uri_parse(cmd->pool, v, &u) != APR_SUCCESS || !u.scheme || !u.hostname
        || (strcasecmp(u.scheme, "http") && strcasecmp(u.scheme, "https")))
        return apr_psprintf(cmd->pool, "%s: not an http:// or https:// URL",
                            cmd->directive->directive);
    cmd_conf(cmd)->alert_webhook = v;
    return NULL;
}

static const char *set_alert_secret_file(cmd_parms *cmd, void *dc, const char *v)
{
    (void)dc;
    cmd_conf(cmd)->alert_secret_file = ap_server_root_relative(cmd->pool, v);
    return NULL;
}

static const char *set_alert_balance(cmd_parms *cmd, void *dc, const char *v)
{
    prov_micro_t amount = 0;
    (void)dc;
    if (prov_money_parse(&amount, v, 0) != APR_SUCCESS || amount > PROV_AMOUNT_MAX)
        return apr_psprintf(cmd->pool, "%s: '%s' is not an amount of credits (e.g. 5 or 2.5)",
                            cmd->directive->directive, v);
    cmd_conf(cmd)->alert_balance_below = amount;
    return NULL;
}

static const char *set_clock_file(cmd_parms *cmd, void *dc, const char *v)
{
    cmd_conf(cmd)->clock_file = ap_server_root_relative(cmd->pool, v);
    return NULL;
}

static const char *set_web_root(cmd_parms *cmd, void *dc, const char *v)
{
    apr_size_t n;
    const char *root = ap_server_root_relative(cmd->pool, v);
    if (!root || !*root)
        return "ProviderWebRoot: not a usable path";
    n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    cmd_conf(cmd)->web_root = apr_pstrndup(cmd->pool, root, n);
    return NULL;
}

static const char *set_journal_dir(cmd_parms *cmd, void *dc, const char *v)
{
    cmd_conf(cmd)->journal_dir = !strcasecmp(v, "none") ? "none"
                                 : ap_server_root_relative(cmd->pool, v);
    return cmd_conf(cmd)->journal_dir ? NULL : "ProviderJournalDir: not a usable path";
}

/* ProviderPublicURL: an origin (scheme://host[:port], a trailing '/' allowed),
 * https:// or http:// on a loopback host. */
static const char *set_public_url(cmd_parms *cmd, void *dc, const char *v)
{
    apr_uri_t u;
    apr_size_t n = strlen(v);
    while (n > 0 && v[n - 1] == '/')
        n--;
    if (!prov_idp_url_ok(v) || apr_uri_parse(cmd->pool, v, &u) != APR_SUCCESS
        || (u.path && strcmp(u.path, "/")) || u.query || u.fragment)
        return apr_psprintf(cmd->pool, "ProviderPublicURL: '%s' is not an https:// origin "
                            "(or http:// on a loopback host) without a path", v);
    cmd_conf(cmd)->public_url = apr_pstrndup(cmd->pool, v, n);
    return NULL;
}

/* ProviderCreditValue AMOUNT CURRENCY: what one credit is worth. */
static const char *set_credit_value(cmd_parms *cmd, void *dc, const char *amount,
                                    const char *currency)
{
    const char *err = prov_credit_value_check(amount, currency, cmd->pool);
    (void)dc;
    if (err)
        return apr_pstrcat(cmd->pool, "ProviderCreditValue: ", err, NULL);
    cmd_conf(cmd)->credit.value = amount;
    cmd_conf(cmd)->credit.currency = currency;
    return NULL;
}

/* ProviderTopUpURL URL: where a user gets more credits. */
static const char *set_top_up_url(cmd_parms *cmd, void *dc, const char *url)
{
    const char *err = prov_credit_url_check(url, cmd->pool);
    (void)dc;
    if (err)
        return apr_pstrcat(cmd->pool, "ProviderTopUpURL: ", err, NULL);
    cmd_conf(cmd)->credit.top_up_url = url;
    return NULL;
}

/* ProviderIdentityProvider NAME key=value...: parsed (its secret file read,
 * as root) by core/identity; a fifth provider or a name twice is refused. */
static const char *set_identity_provider(cmd_parms *cmd, void *dc, const char *args)
{
    provider_srv_conf *c = cmd_conf(cmd);
    prov_idp_t *idp = NULL;
    const char *err = NULL;
    if (prov_idp_parse_line(&idp, &err, args, ap_server_root, cmd->pool) != APR_SUCCESS)
        return err ? err : "ProviderIdentityProvider: not usable";
    if (!c->idps)
        c->idps = apr_array_make(cmd->pool, PROV_IDP_MAX, sizeof(prov_idp_t *));
    if (prov_idp_add(c->idps, idp, &err, cmd->pool) != APR_SUCCESS)
        return err ? err : "ProviderIdentityProvider: not usable";
    return NULL;
}

static const char *set_docs_root(cmd_parms *cmd, void *dc, const char *v)
{
    cmd_conf(cmd)->docs_root = ap_server_root_relative(cmd->pool, v);
    return cmd_conf(cmd)->docs_root ? NULL : "ProviderDocsRoot: not a usable path";
}

static const char *set_cookie_secure(cmd_parms *cmd, void *dc, int on)
{
    cmd_conf(cmd)->cookie_secure = on;
    return NULL;
}

/* ProviderAnonRateLimit CLASS PER_MINUTE [BURST]: BURST defaults to
 * PER_MINUTE (a minute's worth at once); PER_MINUTE 0 lifts the class's limit. */
static const char *set_anon_limit(cmd_parms *cmd, void *dc, const char *cls, const char *rate,
                                  const char *burst)
{
    prov_rl_class_e c;
    apr_int64_t n = 0, b = 0;
    if (prov_rl_class_parse(&c, cls) != APR_SUCCESS)
        return apr_psprintf(cmd->pool, "ProviderAnonRateLimit: '%s' is not register, token, "
                            "authorize, signin or mcp", cls);
    if (prov_parse_i64(&n, rate) != APR_SUCCESS || n < 0 || n > PROV_RL_RATE_MAX
        || (burst && (prov_parse_i64(&b, burst) != APR_SUCCESS || b < 1
                      || b > PROV_RL_RATE_MAX)))
        return apr_psprintf(cmd->pool, "ProviderAnonRateLimit %s: the requests a minute (0 "
                            "for no limit) and the burst must be whole numbers up to %d",
                            cls, PROV_RL_RATE_MAX);
    cmd_conf(cmd)->anon_limit[c].per_minute = (int)n;
    cmd_conf(cmd)->anon_limit[c].burst = burst ? (int)b : (n > 0 ? (int)n : 1);
    return NULL;
}

static const char *set_anon_slots(cmd_parms *cmd, void *dc, const char *v)
{
    const char *err = set_int(cmd, dc, v);
    if (!err && (cmd_conf(cmd)->anon_slots < PROV_RL_SLOTS_MIN
                 || cmd_conf(cmd)->anon_slots > MAX_ANON_SLOTS))
        return apr_psprintf(cmd->pool, "ProviderAnonRateLimitSlots: from %d to %d",
                            PROV_RL_SLOTS_MIN, MAX_ANON_SLOTS);
    return err;
}

#define OFF(f) ((void *)APR_OFFSETOF(provider_srv_conf, f))

const command_rec provider_config_cmds[] = {
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
                  RSRC_CONF, "The maximum output of a catalog model without its own "
                  "(providerctl model set --max-output; default 32768, at most 1000000)"),
    AP_INIT_TAKE1("ProviderStreamPingInterval", set_int, OFF(ping_interval), RSRC_CONF,
                  "Seconds of gateway silence after which a stream gets a keep-alive "
                  "event (default 10)"),
    AP_INIT_TAKE1("ProviderHoldTimeout", set_int, OFF(hold_timeout), RSRC_CONF,
                  "Seconds after which a reservation that was never settled (its worker "
                  "died) is released (default 3600)"),
    AP_INIT_TAKE1("ProviderStreamMaxDuration", set_int, OFF(stream_max), RSRC_CONF,
                  "Seconds a streamed answer may last; then it is ended like a gateway cut "
                  "and charged for what was delivered (default 1800; below "
                  "ProviderHoldTimeout)"),
    AP_INIT_TAKE1("ProviderLookupCacheTTL", set_int0, OFF(lookup_ttl), RSRC_CONF,
                  "Seconds a child caches key and model lookups (default 2; 0 = off). "
                  "The billing transaction re-checks them either way"),
    AP_INIT_TAKE1("ProviderJournalDir", set_journal_dir, NULL, RSRC_CONF,
                  "Directory of the billing journals that keep a killed child's answered "
                  "requests charged (default DefaultRuntimeDir/" PROVIDER_JOURNAL_DIR_DEFAULT
                  "; none: no journal)"),
    AP_INIT_TAKE1("ProviderPublicURL", set_public_url, NULL, RSRC_CONF,
                  "The service's external base URL (an origin): redirect URIs of sign-in"),
    AP_INIT_RAW_ARGS("ProviderIdentityProvider", set_identity_provider, NULL, RSRC_CONF,
                     "NAME issuer=URL client_id=ID client_secret_file=PATH [display= scope= "
                     "auth=], or NAME authorization_endpoint= token_endpoint= "
                     "userinfo_endpoint= subject_field= client_id= client_secret_file=: "
                     "an identity provider to sign in with (up to four)"),
    AP_INIT_FLAG("ProviderCookieSecure", set_cookie_secure, NULL, RSRC_CONF,
                 "Off: cabinet cookies without Secure and __Host- names (only with an "
                 "http:// loopback ProviderPublicURL, for development); default On"),
    AP_INIT_TAKE1("ProviderDocsRoot", set_docs_root, NULL, RSRC_CONF,
                  "Directory of the installed documentation pages served at /docs and "
                  "/v1/docs (default " PROVIDER_DOCS_ROOT_DEFAULT ")"),
    AP_INIT_TAKE1("ProviderWebRoot", set_web_root, NULL, RSRC_CONF,
                  "Directory of the cabinet's files (index.html, app.js, app.css) served "
                  "at /cabinet/ (default " PROVIDER_WEB_ROOT_DEFAULT ")"),
    AP_INIT_TAKE2("ProviderCreditValue", set_credit_value, NULL, RSRC_CONF,
                  "AMOUNT CURRENCY: what one credit is worth (e.g. 0.01 USD), shown in the "
                  "cabinet, the documentation and GET /v1/account"),
    AP_INIT_TAKE1("ProviderTopUpURL", set_top_up_url, NULL, RSRC_CONF,
                  "https:// URL or mailto: address where users get more credits, shown with "
                  "every refusal for want of credits"),
    AP_INIT_TAKE23("ProviderAnonRateLimit", set_anon_limit, NULL, RSRC_CONF,
                   "CLASS PER_MINUTE [BURST]: the requests a client address may send to "
                   "register, token, authorize, signin or mcp (defaults 10/20, 60/60, "
                   "30/30, 30/30, 120/60; 0 = no limit); more get 429 with Retry-After"),
    AP_INIT_TAKE1("ProviderAnonRateLimitSlots", set_anon_slots, OFF(anon_slots), RSRC_CONF,
                  "Client addresses the limits remember at once, in shared memory (default "
                  "16384, 32 bytes each; the first enabled server's applies)"),
    AP_INIT_TAKE1("ProviderPurgeInterval", set_int0, OFF(purge_interval), RSRC_CONF,
                  "Seconds between purges of ended sign-ins, sessions and OAuth clients, "
                  "codes, grants and tokens (default 300; 0 = only providerctl oauth purge)"),
    AP_INIT_TAKE1("ProviderAlertWebhook", set_alert_webhook, NULL, RSRC_CONF,
                  "The http(s) URL spend alerts are POSTed to, signed (needs "
                  "ProviderAlertSecretFile)"),
    AP_INIT_TAKE1("ProviderAlertSecretFile", set_alert_secret_file, NULL, RSRC_CONF,
                  "A file holding the HMAC-SHA256 secret that signs the alerts (read at "
                  "start-up)"),
    AP_INIT_TAKE1("ProviderAlertBalanceBelow", set_alert_balance, NULL, RSRC_CONF,
                  "CREDITS: a balance falling below it sends an alert, unless the user set "
                  "their own threshold (default 0: none)"),
    AP_INIT_TAKE1("ProviderAlertInterval", set_int, OFF(alert_interval), RSRC_CONF,
                  "Seconds between two scans for crossings (default 10)"),
    AP_INIT_TAKE1("ProviderLedgerRetention", set_retention, OFF(ledger_retention), RSRC_CONF,
                  "Days raw ledger rows are kept once rolled up into daily usage (default "
                  "400; 0 = for ever; at least 8); removed in small batches by the purge"),
    AP_INIT_TAKE1("ProviderClockFile", set_clock_file, NULL, RSRC_CONF,
                  "Tests only: a file holding the time (epoch seconds) the module uses as "
                  "now"),
    { NULL }
};
