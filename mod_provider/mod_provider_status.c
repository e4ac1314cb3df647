/* mod_provider_status.c: what the inference path counts, into the server's
 * counters in shared memory (core/base/prov_metrics.h, made by
 * mod_provider_metrics.c), and their section of mod_status's
 * /server-status (through its optional status_hook, as mod_md and
 * mod_proxy_balancer add theirs): the requests in flight and since the
 * server started, the holds drawn from a lease or reserved in the
 * database, the streams open, and the billing writers. Each figure is
 * summed over every child of the server; each update is one atomic add:
 * nothing here takes a lock or reads the database. A request's end
 * (its pool's cleanup) counts it by transport, model and status, and the
 * check that refused it, from the notes the access log reads. */
#include <string.h>
#include <unistd.h>
#include "mod_provider.h"
#include "mod_provider_status.h"
#include "mod_status.h"
#include "prov_error.h"
#include "prov_metrics.h"

typedef struct ending_t {
    request_rec *r;
    prov_mx_transport_e transport;
} ending_t;

/* The check that refused a request, from its error code (the note
 * provider-error); -1 for any other error. */
static int refusal_of(const char *code)
{
    static const struct { prov_errcode_e code; prov_mx_refusal_e why; } map[] = {
        { PROV_E_INVALID_API_KEY, PROV_MX_REFUSED_KEY },
        { PROV_E_USER_BLOCKED, PROV_MX_REFUSED_BLOCKED },
        { PROV_E_KEY_BUDGET_EXCEEDED, PROV_MX_REFUSED_BUDGET },
        { PROV_E_QUOTA_EXCEEDED, PROV_MX_REFUSED_WINDOW },
        { PROV_E_INSUFFICIENT_CREDITS, PROV_MX_REFUSED_BALANCE },
    };
    apr_size_t i;
    for (i = 0; code && i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(code, prov_error_info(map[i].code)->code))
            return (int)map[i].why;
    return -1;
}

static apr_status_t request_done(void *data)
{
    ending_t *e = data;
    prov_metrics_t *m = prov_metrics_current();
    int why = refusal_of(apr_table_get(e->r->notes, "provider-error"));
    prov_metrics_add(m, PROV_MX_INFER_IN_FLIGHT, -1);
    prov_metrics_request(m, e->transport, apr_table_get(e->r->notes, "provider-model"),
                         e->r->status);
    if (why >= 0)
        prov_metrics_refused(m, (prov_mx_refusal_e)why);
    return APR_SUCCESS;
}

void provider_status_request(request_rec *r, const char *transport)
{
    ending_t *e;
    prov_metrics_t *m = prov_metrics_current();
    if (!m)
        return;
    e = apr_palloc(r->pool, sizeof(*e));
    e->r = r;
    e->transport = prov_metrics_transport(transport);
    prov_metrics_add(m, PROV_MX_INFER_STARTED, 1);
    prov_metrics_add(m, PROV_MX_INFER_IN_FLIGHT, 1);
    apr_pool_cleanup_register(r->pool, e, request_done, apr_pool_cleanup_null);
}

typedef struct held_t {
    apr_int64_t amount;
} held_t;

static apr_status_t hold_done(void *data)
{
    held_t *h = data;
    prov_metrics_add(prov_metrics_current(), PROV_MX_HOLDS_IN_FLIGHT, -1);
    prov_metrics_add(prov_metrics_current(), PROV_MX_HELD_IN_FLIGHT, -h->amount);
    return APR_SUCCESS;
}

void provider_status_hold(request_rec *r, int leased, apr_int64_t amount)
{
    prov_metrics_t *m = prov_metrics_current();
    held_t *h;
    if (!m)
        return;
    h = apr_palloc(r->pool, sizeof(*h));
    h->amount = amount;
    prov_metrics_add(m, leased ? PROV_MX_HOLDS_LEASE : PROV_MX_HOLDS_DATABASE, 1);
    prov_metrics_add(m, PROV_MX_HOLDS_IN_FLIGHT, 1);
    prov_metrics_add(m, PROV_MX_HELD_IN_FLIGHT, amount);
    apr_pool_cleanup_register(r->pool, h, hold_done, apr_pool_cleanup_null);
}

void provider_status_charge(int from_plan, apr_int64_t charge, const prov_tokens_t *t)
{
    prov_metrics_t *m = prov_metrics_current();
    prov_metrics_add(m, from_plan ? PROV_MX_CREDITS_PLAN : PROV_MX_CREDITS_BALANCE, charge);
    prov_metrics_add(m, PROV_MX_TOKENS_INPUT, t->input);
    prov_metrics_add(m, PROV_MX_TOKENS_OUTPUT, t->output);
    prov_metrics_add(m, PROV_MX_TOKENS_CACHE, t->cache);
    prov_metrics_add(m, PROV_MX_TOKENS_REASONING, t->reasoning);
}

void provider_status_stream(int delta)
{
    prov_metrics_add(prov_metrics_current(), PROV_MX_STREAMS_OPEN, delta > 0 ? 1 : -1);
}

static apr_status_t writer_done(void *data)
{
    (void)data;
    prov_metrics_add(prov_metrics_current(), PROV_MX_WRITERS, -1);
    return APR_SUCCESS;
}

void provider_status_writer(apr_pool_t *pchild)
{
    prov_metrics_add(prov_metrics_current(), PROV_MX_WRITERS, 1);
    apr_pool_cleanup_register(pchild, NULL, writer_done, apr_pool_cleanup_null);
}

/* One figure: a "Name: value" line (?auto) or a row of the table. */
static void figure(request_rec *r, int flags, const char *name, const char *label,
                   prov_mx_scalar_e s)
{
    apr_int64_t v = prov_metrics_get(prov_metrics_current(), s);
    if (flags & AP_STATUS_SHORT)
        ap_rprintf(r, "Provider%s: %" APR_INT64_T_FMT "\n", name, v);
    else
        ap_rprintf(r, "<tr><td>%s</td><td>%" APR_INT64_T_FMT "</td></tr>\n", label, v);
}

static int status_hook(request_rec *r, int flags)
{
    if (flags & AP_STATUS_SHORT)
        ap_rprintf(r, "ProviderPid: %" APR_PID_T_FMT "\n", getpid());
    else
        ap_rprintf(r, "<hr />\n<h2>mod_provider (all children of the server; this page from "
                   "pid %" APR_PID_T_FMT ")</h2>\n<table border=\"0\">\n", getpid());
    figure(r, flags, "RequestsInFlight", "inference requests in flight",
           PROV_MX_INFER_IN_FLIGHT);
    figure(r, flags, "Requests", "inference requests since the server started",
           PROV_MX_INFER_STARTED);
    figure(r, flags, "HoldsLease", "holds drawn from the children's leases",
           PROV_MX_HOLDS_LEASE);
    figure(r, flags, "HoldsDatabase", "holds reserved in the database", PROV_MX_HOLDS_DATABASE);
    figure(r, flags, "StreamsOpen", "streams open", PROV_MX_STREAMS_OPEN);
    figure(r, flags, "BillingWriters", "billing writer threads (one per database and child)",
           PROV_MX_WRITERS);
    if (!(flags & AP_STATUS_SHORT))
        ap_rputs("</table>\n", r);
    return OK;
}

void provider_status_hooks(apr_pool_t *p)
{
    (void)p;
    APR_OPTIONAL_HOOK(ap, status_hook, status_hook, NULL, NULL, APR_HOOK_MIDDLE);
}
