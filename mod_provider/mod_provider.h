/* mod_provider.h: what every glue file of mod_provider needs: the module,
 * the server configuration (directives with unset markers, and the runtime
 * objects built from them), the endpoints the module routes to, the error
 * family of a transport, and the result of a request's step. Each glue file
 * declares its own API in a header named after it (mod_provider_http.h for
 * mod_provider_http.c, ...), as mod_md's glue does; a file includes the
 * headers of what it calls. Only mod_provider/ includes httpd headers. */
#ifndef MOD_PROVIDER_H
#define MOD_PROVIDER_H

#include "httpd.h"
#include "http_config.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"

#include "prov_common.h"
#include "prov_gateway.h"
#include "prov_catalog.h"
#include "prov_credit.h"
#include "prov_redact.h"
#include "prov_ratelimit.h"

extern module AP_MODULE_DECLARE_DATA provider_module;

#define PROVIDER_HANDLER "provider-api"
#define PROVIDER_UNSET (-1)

typedef enum {
    PROVIDER_EP_NONE = 0,
    PROVIDER_EP_MODELS,
    PROVIDER_EP_CHAT,
    PROVIDER_EP_MESSAGES,
    PROVIDER_EP_COUNT_TOKENS,
    PROVIDER_EP_RESPONSES,
    PROVIDER_EP_AUTH,          /* /v1/auth/...: sign-in (mod_provider_auth.c) */
    PROVIDER_EP_CABINET,       /* /cabinet and /cabinet/... (mod_provider_cabinet.c) */
    PROVIDER_EP_ACCOUNT,       /* /v1/account (mod_provider_account.c) */
    PROVIDER_EP_USAGE,         /* /v1/usage (mod_provider_account.c) */
    PROVIDER_EP_KEYS,          /* /v1/keys... (mod_provider_keys.c) */
    PROVIDER_EP_FAVORITES,     /* /v1/models/... (mod_provider_favorites.c) */
    PROVIDER_EP_DOCS,          /* /docs and /docs/... (mod_provider_docs.c) */
    PROVIDER_EP_OPENAPI,       /* /v1/docs, the OpenAPI description (mod_provider_docs.c) */
    PROVIDER_EP_MCP,           /* /v1/mcp (mod_provider_mcp.c) */
    PROVIDER_EP_MCP_ACCOUNT,   /* /v1/mcp/account (mod_provider_oauth.c) */
    PROVIDER_EP_MCP_CLIENTS,   /* /v1/mcp/clients[/ID] (mod_provider_oauth.c) */
    PROVIDER_EP_OAUTH,         /* /oauth/... and /.well-known/oauth-... (mod_provider_oauth.c) */
    PROVIDER_EP_ACTIVITY,      /* /v1/account/activity (mod_provider_audit.c) */
    PROVIDER_EP_ACCOUNT_ALERTS, /* /v1/account/alerts (mod_provider_alert.c) */
    PROVIDER_EP_REQUESTS,      /* /v1/requests (mod_provider_account.c) */
    PROVIDER_EP_UNKNOWN        /* under /v1/ but not served: 404 in our shape */
} provider_endpoint_e;

/* The error family a transport answers in. */
typedef enum {
    PROVIDER_FAMILY_OPENAI = 0,
    PROVIDER_FAMILY_ANTHROPIC
} provider_family_e;

/* What a step of a request's handling returns: PROVIDER_GO to go on, or,
 * when the step has answered (in its endpoint's error shape), what the
 * handler returns (OK, or an HTTP status). PROVIDER_GO is no value httpd
 * gives a meaning (OK, DECLINED, DONE, SUSPENDED, an HTTP status), so a GO
 * that leaked out of a handler cannot pass for an answer. */
typedef int provider_step_t;
#define PROVIDER_GO (-7000)
_Static_assert(PROVIDER_GO != OK && PROVIDER_GO != DECLINED && PROVIDER_GO != DONE
               && PROVIDER_GO != SUSPENDED && !ap_is_HTTP_VALID_RESPONSE(PROVIDER_GO),
               "PROVIDER_GO must not be an httpd status");

typedef struct provider_srv_conf {
    int engine;                     /* PROVIDER_UNSET, 0, 1 */
    const char *gateway_url;
    const char *token_file;
    apr_int64_t gateway_timeout;    /* seconds */
    apr_int64_t connect_timeout;    /* seconds */
    apr_int64_t max_body;           /* bytes */
    apr_int64_t models_ttl;         /* seconds */
    const char *messages_family;
    apr_int64_t default_max_tokens;
    apr_int64_t hold_timeout;       /* seconds */
    apr_int64_t stream_max;         /* seconds a stream may last (below the hold timeout) */
    apr_int64_t lookup_ttl;         /* seconds the key and model lookups are cached */
    const char *clock_file;         /* tests only */
    apr_int64_t ping_interval;      /* seconds between keep-alive events of a silent stream */
    const char *journal_dir;        /* the billing journal's directory, or "none" */
    /* Sign-in (mod_provider_auth.c, mod_provider_session.c). */
    const char *public_url;         /* ProviderPublicURL, an origin without a trailing '/' */
    apr_array_header_t *idps;       /* prov_idp_t *: ProviderIdentityProvider, up to four */
    int cookie_secure;              /* ProviderCookieSecure: PROVIDER_UNSET, 0, 1 */
    const char *docs_root;          /* ProviderDocsRoot: the installed docs/site/ */
    const char *web_root;           /* ProviderWebRoot: the cabinet's files */
    prov_credit_offer_t credit;     /* ProviderCreditValue, ProviderTopUpURL */
    /* The anonymous endpoints' limits (mod_provider_limit.c) and the purge
     * (mod_provider_purge.c). per_minute PROVIDER_UNSET: the class's default. */
    prov_rl_limit_t anon_limit[PROV_RL_CLASSES];  /* ProviderAnonRateLimit CLASS N [BURST] */
    apr_int64_t anon_slots;         /* ProviderAnonRateLimitSlots (the first server's) */
    apr_int64_t purge_interval;     /* ProviderPurgeInterval, seconds (the first server's) */
    /* Spend alerts (mod_provider_alert.c; the first server with a webhook's). */
    const char *alert_webhook;      /* ProviderAlertWebhook, an http(s) URL */
    const char *alert_secret_file;  /* ProviderAlertSecretFile */
    apr_int64_t alert_balance_below; /* ProviderAlertBalanceBelow, micro-credits (0: none) */
    apr_int64_t alert_interval;     /* ProviderAlertInterval, seconds between scans */
    const char *alert_secret;       /* read at post_config; never logged */
    apr_int64_t ledger_retention;   /* ProviderLedgerRetention, days (0: for ever) */

    /* Built at post_config / child_init from the above. */
    prov_gateway_t *gateway;
    prov_catalog_cache_t *catalog;
    prov_redactor_t *redactor;      /* masks the gateway's URL and token in logged text */
    struct prov_docs_cache_t *docs_cache; /* search_docs' sections, per child (or NULL) */
} provider_srv_conf;

#endif
