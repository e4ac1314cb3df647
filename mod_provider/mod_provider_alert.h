/* mod_provider_alert.h: the API of mod_provider_alert.c, spend alerts in the
 * glue: the directives' checks, the thread per child that scans and
 * delivers, and the cabinet's GET/PUT /v1/account/alerts. */
#ifndef MOD_PROVIDER_ALERT_H
#define MOD_PROVIDER_ALERT_H

#include "mod_provider.h"

/* ProviderAlertInterval's default, seconds between two scans. */
#define PROVIDER_ALERT_INTERVAL_DEFAULT 10

/* Reads ProviderAlertSecretFile into c (post_config, as root): an error
 * message naming the directive, or NULL. The secret is never logged. */
const char *provider_alert_configure(provider_srv_conf *c, apr_pool_t *pconf);
/* Starts the alerts' thread when a server has a webhook (child_init). */
void provider_alert_start(server_rec *s, apr_pool_t *pchild);
/* GET and PUT /v1/account/alerts. */
int provider_alert_settings_handler(request_rec *r);

#endif
