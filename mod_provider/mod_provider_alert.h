/* mod_provider_alert.h: the API of mod_provider_alert.c, spend alerts in the
 * glue: the directives' checks, the thread per child that scans and
 * delivers, and the cabinet's GET/PUT /v1/account/alerts. */
#ifndef MOD_PROVIDER_ALERT_H
#define MOD_PROVIDER_ALERT_H

#include "mod_provider.h"

/* ProviderAlertInterval's default, seconds between two scans. */
#define PROVIDER_ALERT_INTERVAL_DEFAULT 10

/* What is wrong with c's alert directives once the secret was read into
 * c->alert_secret (post_config): a message naming the directive, or NULL.
 * The message never holds the secret. */
const char *provider_alert_check(provider_srv_conf *c, apr_pool_t *pconf);
/* Starts the alerts' thread when a server has a webhook (child_init). */
void provider_alert_start(server_rec *s, apr_pool_t *pchild);
/* GET and PUT /v1/account/alerts. */
int provider_alert_settings_handler(request_rec *r);

#endif
