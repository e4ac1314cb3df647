/* mod_provider_messages.h: the API of mod_provider_messages.c, POST
 * /v1/messages and /v1/messages/count_tokens. */
#ifndef MOD_PROVIDER_MESSAGES_H
#define MOD_PROVIDER_MESSAGES_H

#include "mod_provider.h"

int provider_messages_handler(request_rec *r);
int provider_count_tokens_handler(request_rec *r);

#endif
