/* mod_provider_consent.h: the API of mod_provider_consent.c. */
#ifndef MOD_PROVIDER_CONSENT_H
#define MOD_PROVIDER_CONSENT_H

#include "mod_provider.h"

/* GET and POST /oauth/authorize: the consent page and its answer. */
int provider_consent_handler(request_rec *r);

#endif
