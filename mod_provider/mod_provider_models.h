/* mod_provider_models.h: the API of mod_provider_models.c, GET /v1/models,
 * GET /v1/models/{id} and the catalog's answer other endpoints reuse. */
#ifndef MOD_PROVIDER_MODELS_H
#define MOD_PROVIDER_MODELS_H

#include "mod_provider.h"

int provider_models_handler(request_rec *r);
/* GET /v1/models/{id}: one model the catalog offers now, in the family's
 * shape of the request (404 MODEL_NOT_FOUND otherwise). */
int provider_model_handler(request_rec *r, const char *public_id);
/* Answers the catalog entries of models (prov_model_t*) that the gateway
 * offers now, as GET /v1/models does (502 when its list is unknown). */
int provider_catalog_send(request_rec *r, const apr_array_header_t *models);

#endif
