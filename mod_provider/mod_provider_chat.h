/* mod_provider_chat.h: the API of mod_provider_chat.c, POST /v1/chat/completions. */
#ifndef MOD_PROVIDER_CHAT_H
#define MOD_PROVIDER_CHAT_H

#include "mod_provider.h"

int provider_chat_handler(request_rec *r);

#endif
