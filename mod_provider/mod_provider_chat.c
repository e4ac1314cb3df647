/* mod_provider_chat.c: POST /v1/chat/completions, the Chat Completions
 * transport as a table for the driver (mod_provider_drive.c): libprovider's
 * rules (prov_chat.c) for the request, the gateway's own Chat Completions
 * answer relayed with the public model id and the credits charged. It is
 * never streamed. */
#include "mod_provider.h"
#include "mod_provider_chat.h"
#include "mod_provider_drive.h"
#include "mod_provider_infer.h"

APLOG_USE_MODULE(provider);

#include "prov_chat.h"

static apr_status_t parse(provider_infer_t *in, prov_error_t **err)
{
    prov_chat_req_t *q = NULL;
    apr_status_t rv = prov_chat_parse(&q, err, in->body, in->len, in->r->pool);
    if (rv == APR_SUCCESS)
        in->call = (provider_call_t){ .req = q, .model = q->model, .max_output = q->max_tokens,
                                      .prompt_bytes = q->prompt_bytes,
                                      .n_messages = q->n_messages, .choices = q->n };
    return rv;
}

static const char *upstream(provider_infer_t *in, apr_table_t **headers)
{
    prov_chat_req_t *req = in->call.req;
    *headers = NULL;
    return prov_chat_upstream_body(req, in->model->upstream_id, in->forward_cap, in->r->pool);
}

static const char *render(provider_infer_t *in, json_object *answer)
{
    return prov_chat_render(answer, in->model->public_id, in->charge, in->r->pool);
}

static const provider_transport_t chat = {
    .name = "chat", .family = PROVIDER_FAMILY_OPENAI, .path = "/v1/chat/completions",
    .parse = parse, .upstream = upstream, .render = render,
    .read_answer = prov_chat_read_answer, .answer_bytes = prov_estimate_chat_answer,
    .answer_kind = "a chat completion", .relay_read = prov_chat_relay_read,
};

int provider_chat_handler(request_rec *r)
{
    return provider_drive(r, &chat);
}
