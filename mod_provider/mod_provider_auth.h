/* mod_provider_auth.h: the API of mod_provider_auth.c, the /v1/auth routes of
 * sign-in through an identity provider (docs/internals/identity.md). */
#ifndef MOD_PROVIDER_AUTH_H
#define MOD_PROVIDER_AUTH_H

#include "mod_provider.h"

/* GET /v1/auth/... and POST /v1/auth/logout. */
int provider_auth_handler(request_rec *r);

#endif
