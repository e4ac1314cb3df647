/* prov_log.h: the core's logging seam. The core never writes to a file or to
 * httpd's log itself: it calls a callback that the module bridges to
 * ap_log_error and providerctl to stderr (the mod_md pattern). Messages carry a
 * stable tag ("PROV00042: ") and never a secret. */
#ifndef PROV_LOG_H
#define PROV_LOG_H

#include "prov_common.h"

typedef enum {
    PROV_LOG_ERR = 0,
    PROV_LOG_WARN,
    PROV_LOG_INFO,
    PROV_LOG_DEBUG
} prov_log_level_e;

typedef void prov_log_cb(void *baton, prov_log_level_e level, apr_status_t rv,
                         const char *msg);

/* Installs the sink; NULL restores the default (stderr for ERR and WARN only). */
void prov_log_set(prov_log_cb *cb, void *baton, prov_log_level_e max_level);
/* Returns non-zero when messages of this level would be delivered. */
int prov_log_enabled(prov_log_level_e level);
/* printf-style; the message is formatted on the stack (truncated at 1 KiB). */
void prov_log(prov_log_level_e level, apr_status_t rv, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
