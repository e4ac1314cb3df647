/* mod_provider_responses.h: the API of mod_provider_responses.c, POST /v1/responses. */
#ifndef MOD_PROVIDER_RESPONSES_H
#define MOD_PROVIDER_RESPONSES_H

#include "mod_provider.h"

int provider_responses_handler(request_rec *r);

#endif
