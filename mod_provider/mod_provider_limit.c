/* mod_provider_limit.c: the per-client-address limits of the anonymous
 * endpoints (core/base/prov_ratelimit.h): which class a request is, the
 * table in shared memory that every child of the server sees (made by the
 * parent at post_config and taken under one global mutex of the
 * "provider-anon" type, which httpd's Mutex directive can configure; both
 * made by mod_provider_shm.c), and the 429 with Retry-After in the endpoint's
 * own shape: RFC 6749's JSON error for the OAuth machine endpoints, a
 * JSON-RPC error for MCP, a small page for the browser's pages. The client
 * is r->useragent_ip: behind a proxy, mod_remoteip makes it the real one.
 * The same shared memory holds when the next purge is due
 * (mod_provider_purge.c), so that one child of the server runs it. */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_limit.h"
#include "mod_provider_shm.h"
#include "mod_provider_config.h"
#include "mod_provider_http.h"
#include "prov_mcp.h"
#include "prov_json.h"
#include "prov_metrics.h"

APLOG_USE_MODULE(provider);

#define MUTEX_TYPE "provider-anon"
/* JSON-RPC's range of server errors: a limit is not a malformed request. */
#define MCP_RATE_LIMITED (-32000)

/* What the children share: the purge's turn, then the table. */
typedef struct shared_t {
    apr_int64_t purge_next;      /* apr_time_t when the next purge round is due */
    apr_int64_t pad;
} shared_t;

static provider_shm_t shm = { MUTEX_TYPE, NULL, NULL };
static shared_t *shared;
static prov_ratelimit_t *table;
static apr_time_t full_logged;   /* per process: when a full table was last told */

static int pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp)
{
    (void)plog, (void)ptemp;
    provider_shm_register(&shm, pconf);
    return OK;
}

/* The table's size: the first enabled server's ProviderAnonRateLimitSlots
 * (one table for the whole server, as one engine). 0: no server enabled. */
static unsigned slots_of(server_rec *s)
{
    provider_srv_conf *c = provider_shm_conf(s);
    if (!c)
        return 0;
    return c->anon_slots > 0 ? (unsigned)c->anon_slots : PROV_RL_SLOTS_DEFAULT;
}

static int post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    unsigned slots = slots_of(s);
    apr_status_t rv;
    (void)plog, (void)ptemp;
    provider_shm_reset(&shm);
    shared = NULL, table = NULL;
    if (!slots)
        return OK;
    rv = provider_shm_create(&shm, sizeof(shared_t) + prov_ratelimit_size(slots), s, pconf);
    if (rv == APR_SUCCESS) {
        shared = shm.mem;
        memset(shared, 0, sizeof(*shared));
        rv = prov_ratelimit_init(&table, shared + 1, slots);
    }
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "PROV00782: cannot make the shared "
                     "memory and mutex of the anonymous endpoints' limits");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s, "PROV00783: anonymous rate limits: %u slots "
                 "(%" APR_SIZE_T_FMT " bytes of shared memory)", slots,
                 prov_ratelimit_size(slots));
    return OK;
}

static void child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv = provider_shm_child(&shm, pchild);
    if (rv != APR_SUCCESS)
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, "PROV00787: this child cannot use the "
                     "mutex of the anonymous endpoints' limits: it does not limit them");
}

void provider_limit_hooks(apr_pool_t *p)
{
    (void)p;
    ap_hook_pre_config(pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(child_init, NULL, NULL, APR_HOOK_MIDDLE);
}

const char *provider_client_key(request_rec *r)
{
    return prov_ratelimit_key(r->useragent_ip, r->pool);
}

int provider_purge_turn(apr_interval_time_t every)
{
    apr_time_t now = apr_time_now();
    int mine = 0;
    if (!shm.mutex || !shared)
        return 1;
    if (apr_global_mutex_lock(shm.mutex) != APR_SUCCESS)
        return 0;
    if (shared->purge_next <= now) {
        shared->purge_next = now + every;
        mine = 1;
    }
    apr_global_mutex_unlock(shm.mutex);
    return mine;
}

/* The class of r, or PROV_RL_CLASSES when its endpoint is not limited. */
static prov_rl_class_e classify(request_rec *r, provider_endpoint_e ep)
{
    const char *slash;
    if (ep == PROVIDER_EP_MCP)
        return PROV_RL_MCP;
    if (ep == PROVIDER_EP_OAUTH) {
        if (!strcmp(r->uri, "/oauth/register"))
            return PROV_RL_REGISTER;
        if (!strcmp(r->uri, "/oauth/token") || !strcmp(r->uri, "/oauth/revoke"))
            return PROV_RL_TOKEN;
        if (!strcmp(r->uri, "/oauth/authorize"))
            return PROV_RL_AUTHORIZE;
    }
    if (ep == PROVIDER_EP_AUTH && (slash = strchr(r->uri + 9, '/'))
        && (!strcmp(slash, "/login") || !strcmp(slash, "/callback") || !strcmp(slash, "/link")))
        return PROV_RL_SIGNIN;
    return PROV_RL_CLASSES;
}

static int refuse(request_rec *r, prov_rl_class_e c, int retry_after)
{
    const char *msg = apr_psprintf(r->pool, "Too many requests from your address: try again "
                                   "in %d s.", retry_after);
    prov_metrics_refused(prov_metrics_current(),
                         (prov_mx_refusal_e)(PROV_MX_REFUSED_RATE_LIMIT + c));
    apr_table_setn(r->err_headers_out, "Retry-After", apr_itoa(r->pool, retry_after));
    if (c == PROV_RL_REGISTER || c == PROV_RL_TOKEN) {
        /* RFC 6749's only "try later" code (temporarily_unavailable); the
         * status and Retry-After say when. */
        json_object *o = prov_json_own(json_object_new_object(), r->pool);
        json_object_object_add(o, "error", json_object_new_string("temporarily_unavailable"));
        json_object_object_add(o, "error_description", json_object_new_string(msg));
        apr_table_setn(r->err_headers_out, "Pragma", "no-cache");
        return provider_send_json(r, HTTP_TOO_MANY_REQUESTS, prov_json_dump(o, r->pool));
    }
    if (c == PROV_RL_MCP)
        return provider_send_json(r, HTTP_TOO_MANY_REQUESTS,
                                  prov_mcp_error_body(MCP_RATE_LIMITED, msg, r->pool));
    r->status = HTTP_TOO_MANY_REQUESTS;
    ap_set_content_type(r, "text/html; charset=utf-8");
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    apr_table_setn(r->err_headers_out, "X-Content-Type-Options", "nosniff");
    apr_table_setn(r->err_headers_out, "Content-Security-Policy",
                   "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    if (!r->header_only)
        ap_rprintf(r, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<title>Too many requests</title></head>\n<body><h1>Too many requests</h1>"
                   "\n<p id=\"reason\">%s</p>\n</body></html>\n", msg);
    return OK;
}

provider_step_t provider_limit_check(request_rec *r, provider_endpoint_e ep)
{
    provider_srv_conf *c = provider_conf(r);
    prov_rl_class_e cls = classify(r, ep);
    const char *key;
    prov_rl_verdict_t v;
    if (cls == PROV_RL_CLASSES || !table || !shm.mutex || c->anon_limit[cls].per_minute <= 0)
        return PROVIDER_GO;
    key = provider_client_key(r);
    if (apr_global_mutex_lock(shm.mutex) != APR_SUCCESS)
        return PROVIDER_GO;
    prov_ratelimit_take(&v, table, cls, &c->anon_limit[cls], key, apr_time_now());
    apr_global_mutex_unlock(shm.mutex);
    if (v.evicted && apr_time_now() - full_logged > apr_time_from_sec(60)) {
        full_logged = apr_time_now();
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, "PROV00781: the anonymous rate limits' "
                      "table is full: addresses are forgotten before their limit refills "
                      "(raise ProviderAnonRateLimitSlots)");
    }
    if (v.allowed)
        return PROVIDER_GO;
    if (v.first)
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00780: %s: client %s over its limit "
                      "(%d a minute, burst %d): 429 for %d s", prov_rl_class_name(cls), key,
                      c->anon_limit[cls].per_minute, c->anon_limit[cls].burst, v.retry_after);
    return refuse(r, cls, v.retry_after);
}
