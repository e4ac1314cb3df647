/* mod_provider_cabinet.h: the API of mod_provider_cabinet.c. */
#ifndef MOD_PROVIDER_CABINET_H
#define MOD_PROVIDER_CABINET_H

#include "mod_provider.h"

/* GET /cabinet/ and its files (ProviderWebRoot). */
int provider_cabinet_handler(request_rec *r);
/* GET /v1/auth/providers: the configured identity providers (public). */
int provider_cabinet_providers(request_rec *r);
/* Warns at start-up when c's web root has no cabinet page. */
void provider_cabinet_check(server_rec *s, const provider_srv_conf *c, apr_pool_t *ptemp);

#endif
