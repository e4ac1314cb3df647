/* mod_provider_responses.c: POST /v1/responses (being written: until then it
 * answers 404 in the OpenAI shape). */
#include "mod_provider.h"

int provider_responses_handler(request_rec *r)
{
    return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_NOT_FOUND, NULL,
                         "/v1/responses is not available yet");
}
