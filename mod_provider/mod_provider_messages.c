/* mod_provider_messages.c: POST /v1/messages and /v1/messages/count_tokens
 * (being written: until then both answer 404 in the Anthropic shape). */
#include "mod_provider.h"

int provider_messages_handler(request_rec *r)
{
    return provider_fail(r, PROVIDER_FAMILY_ANTHROPIC, PROV_E_NOT_FOUND, NULL,
                         "/v1/messages is not available yet");
}

int provider_count_tokens_handler(request_rec *r)
{
    return provider_fail(r, PROVIDER_FAMILY_ANTHROPIC, PROV_E_NOT_FOUND, NULL,
                         "/v1/messages/count_tokens is not available yet");
}
