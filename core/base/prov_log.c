/* prov_log.c: the logging seam's one implementation: a process-wide sink set
 * by the module (bridged to ap_log_error) or providerctl (stderr). */
#include <stdarg.h>
#include <stdio.h>
#include "prov_log.h"

static prov_log_cb *sink;
static void *sink_baton;
static prov_log_level_e sink_max = PROV_LOG_WARN;

void prov_log_set(prov_log_cb *cb, void *baton, prov_log_level_e max_level)
{
    sink = cb;
    sink_baton = baton;
    sink_max = cb ? max_level : PROV_LOG_WARN;
}

int prov_log_enabled(prov_log_level_e level)
{
    return level <= sink_max;
}

void prov_log(prov_log_level_e level, apr_status_t rv, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    if (!prov_log_enabled(level))
        return;
    va_start(ap, fmt);
    apr_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (sink) {
        sink(sink_baton, level, rv, buf);
    }
    else {
        char err[128] = "";
        if (rv != APR_SUCCESS) {
            char eb[96];
            apr_snprintf(err, sizeof(err), " (%s)", apr_strerror(rv, eb, sizeof(eb)));
        }
        fprintf(stderr, "%s%s\n", buf, err);
    }
}
