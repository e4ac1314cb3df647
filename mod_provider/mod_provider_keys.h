/* mod_provider_keys.h: the API of mod_provider_keys.c. */
#ifndef MOD_PROVIDER_KEYS_H
#define MOD_PROVIDER_KEYS_H

#include "mod_provider.h"

/* /v1/keys and /v1/keys/{id}[/reissue]: a signed-in user's own keys. */
int provider_keys_handler(request_rec *r);

#endif
