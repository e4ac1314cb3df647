/* mod_provider_metrics.c: the server's counters (core/base/prov_metrics.h)
 * in shared memory, and the `provider-metrics` handler that answers them in
 * Prometheus's text format. The parent makes the block at post_config in
 * anonymous shared memory (mod_provider_shm.c, as for the anonymous
 * endpoints' limits), so every child inherits it and adds to the same
 * figures: the page is the whole server's, whichever child answers it. No
 * mutex: each update is one atomic add (docs/internals/metrics.md). The
 * handler is served only where the operator maps it (`SetHandler
 * provider-metrics`, protected as the operator sees fit). */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_metrics.h"
#include "mod_provider_shm.h"
#include "prov_metrics.h"

APLOG_USE_MODULE(provider);

#define HANDLER "provider-metrics"
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static int post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    provider_shm_t shm = { NULL, NULL, NULL };   /* no mutex: atomic adds */
    apr_status_t rv;
    (void)plog, (void)ptemp;
    prov_metrics_use(NULL);
    rv = provider_shm_create(&shm, prov_metrics_size(), s, pconf);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "PROV00800: cannot make the shared memory "
                     "of the server's metrics");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    prov_metrics_use(prov_metrics_init(shm.mem));
    ap_log_error(APLOG_MARK, APLOG_DEBUG, 0, s, "PROV00801: metrics: %" APR_SIZE_T_FMT
                 " bytes of shared memory", prov_metrics_size());
    return OK;
}

static int handler(request_rec *r)
{
    const char *text;
    if (!r->handler || strcmp(r->handler, HANDLER))
        return DECLINED;
    r->allowed |= (AP_METHOD_BIT << M_GET);
    if (r->method_number != M_GET)
        return HTTP_METHOD_NOT_ALLOWED;
    if (!prov_metrics_current())
        return HTTP_SERVICE_UNAVAILABLE;
    text = prov_metrics_render(prov_metrics_current(), r->pool);
    ap_set_content_type(r, CONTENT_TYPE);
    apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    ap_set_content_length(r, (apr_off_t)strlen(text));
    if (!r->header_only)
        ap_rputs(text, r);
    return OK;
}

void provider_metrics_hooks(apr_pool_t *p)
{
    (void)p;
    ap_hook_post_config(post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_handler(handler, NULL, NULL, APR_HOOK_MIDDLE);
}
