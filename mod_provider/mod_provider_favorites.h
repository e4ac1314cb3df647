/* mod_provider_favorites.h: the API of mod_provider_favorites.c. */
#ifndef MOD_PROVIDER_FAVORITES_H
#define MOD_PROVIDER_FAVORITES_H

#include "mod_provider.h"

/* GET /v1/models/favorites, PUT and DELETE /v1/models/{id}/favorite. */
int provider_favorites_handler(request_rec *r);

#endif
