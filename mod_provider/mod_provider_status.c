/* mod_provider_status.c: what this process (one httpd child) counts of its
 * inference requests, and their section of mod_status's /server-status
 * (through its optional status_hook, as mod_md and mod_proxy_balancer add
 * theirs): the requests in flight and since the child started, the holds
 * drawn from a lease or reserved in the database, the streams open, and
 * whether the child runs a billing writer. Counters only, updated with
 * atomics: nothing here takes a lock or reads the database. Each child
 * keeps its own, so a page shows the child that answered it. */
#include <unistd.h>
#include "mod_provider.h"
#include "mod_provider_status.h"
#include "apr_atomic.h"
#include "mod_status.h"

static apr_uint32_t requests, in_flight, held_lease, held_db, streams, writers;

static apr_status_t request_done(void *data)
{
    (void)data;
    apr_atomic_dec32(&in_flight);
    return APR_SUCCESS;
}

void provider_status_request(request_rec *r)
{
    apr_atomic_inc32(&requests);
    apr_atomic_inc32(&in_flight);
    apr_pool_cleanup_register(r->pool, NULL, request_done, apr_pool_cleanup_null);
}

void provider_status_hold(int leased)
{
    apr_atomic_inc32(leased ? &held_lease : &held_db);
}

void provider_status_stream(int delta)
{
    if (delta > 0)
        apr_atomic_inc32(&streams);
    else
        apr_atomic_dec32(&streams);
}

void provider_status_writer(void)
{
    apr_atomic_inc32(&writers);
}

/* One figure: a "Name: value" line (?auto) or a row of the table. */
static void figure(request_rec *r, int flags, const char *name, const char *label,
                   apr_uint32_t v)
{
    if (flags & AP_STATUS_SHORT)
        ap_rprintf(r, "Provider%s: %u\n", name, v);
    else
        ap_rprintf(r, "<tr><td>%s</td><td>%u</td></tr>\n", label, v);
}

static int status_hook(request_rec *r, int flags)
{
    if (flags & AP_STATUS_SHORT)
        ap_rprintf(r, "ProviderPid: %" APR_PID_T_FMT "\n", getpid());
    else
        ap_rprintf(r, "<hr />\n<h2>mod_provider (this process, pid %" APR_PID_T_FMT
                   ")</h2>\n<table border=\"0\">\n", getpid());
    figure(r, flags, "RequestsInFlight", "inference requests in flight",
           apr_atomic_read32(&in_flight));
    figure(r, flags, "Requests", "inference requests since this child started",
           apr_atomic_read32(&requests));
    figure(r, flags, "HoldsLease", "holds drawn from this process's leases",
           apr_atomic_read32(&held_lease));
    figure(r, flags, "HoldsDatabase", "holds reserved in the database",
           apr_atomic_read32(&held_db));
    figure(r, flags, "StreamsOpen", "streams open", apr_atomic_read32(&streams));
    figure(r, flags, "BillingWriters", "billing writer threads (one per database)",
           apr_atomic_read32(&writers));
    if (!(flags & AP_STATUS_SHORT))
        ap_rputs("</table>\n", r);
    return OK;
}

void provider_status_hooks(apr_pool_t *p)
{
    (void)p;
    APR_OPTIONAL_HOOK(ap, status_hook, status_hook, NULL, NULL, APR_HOOK_MIDDLE);
}
