/* mod_provider_chat.c: POST /v1/chat/completions. The shared inference path
 * (mod_provider_infer.c) with the Chat Completions rules of libprovider: a
 * validated request, the gateway call, the answer with the public model id
 * and the credits charged. */
#include <string.h>
#include "mod_provider.h"

APLOG_USE_MODULE(provider);

#include "prov_billing.h"
#include "prov_chat.h"
#include "prov_json.h"

#define FAMILY PROVIDER_FAMILY_OPENAI

/* A gateway refusal made safe to show: its own message when it is about the
 * request (4xx), a generic one otherwise. Never the gateway's URL. */
int provider_gateway_refusal(request_rec *r, provider_family_e family,
                             const prov_gw_response_t *resp)
{
    const char *perr = NULL;
    json_object *root = prov_json_parse(resp->body, resp->len, &perr, r->pool);
    json_object *error = prov_json_get(root, "error", json_type_object);
    const char *msg = prov_json_get_str(error, "message");
    prov_error_t *e;

    if (resp->status == 429) {
        apr_int64_t ra;
        e = prov_error_make(r->pool, PROV_E_GATEWAY_ERROR, NULL,
                            "The model is busy upstream; retry shortly. Nothing was charged.");
        e->retry_after = 1;
        if (resp->retry_after && prov_parse_i64(&ra, resp->retry_after) == APR_SUCCESS
            && ra > 0 && ra < 3600)
            e->retry_after = ra;
        return provider_send_error(r, family, e);
    }
    if (resp->status >= 400 && resp->status < 500 && resp->status != 401
        && resp->status != 403 && resp->status != 404 && msg) {
        return provider_fail(r, family, PROV_E_INVALID_REQUEST, NULL, "%s",
                             strlen(msg) > 1000 ? apr_pstrndup(r->pool, msg, 1000) : msg);
    }
    return provider_fail(r, family, PROV_E_GATEWAY_ERROR, NULL,
                         "The model gateway failed to answer this request (HTTP %d). "
                         "Nothing was charged.", resp->status);
}

int provider_chat_handler(request_rec *r)
{
    provider_infer_t *in = NULL;
    prov_chat_req_t *req = NULL;
    prov_error_t *err = NULL;
    prov_gw_response_t *resp = NULL;
    json_object *answer = NULL;
    const char *upstream_body;
    prov_tokens_t t;
    apr_status_t rv;
    int st;

    if ((st = provider_infer_begin(&in, r, FAMILY, "chat", 0)) != PROVIDER_GO)
        return st;
    if (prov_chat_parse(&req, &err, in->body, in->len, r->pool) != APR_SUCCESS) {
        provider_infer_close(in);
        return provider_send_error(r, FAMILY, err);
    }
    if ((st = provider_infer_model(in, req->model, 0)) != PROVIDER_GO)
        return st;
    if ((st = provider_infer_reserve(in, prov_billing_input_estimate(req->prompt_bytes,
                                                                     req->n_messages),
                                     req->max_tokens)) != PROVIDER_GO)
        return st;

    upstream_body = prov_chat_upstream_body(req, in->model->upstream_id, r->pool);
    rv = prov_gateway_request(&resp, in->conf->gateway, "/v1/chat/completions", upstream_body,
                              strlen(upstream_body), NULL, r->pool);
    if (rv != APR_SUCCESS)
        return provider_infer_gateway_failed(in, rv);
    if (resp->status != 200) {
        provider_infer_release(in, "refused");
        return provider_gateway_refusal(r, FAMILY, resp);
    }
    rv = prov_chat_read_answer(&answer, &t, resp->body, resp->len, r->pool);
    if (rv == APR_EINVAL) {
        provider_infer_release(in, "malformed");
        return provider_fail(r, FAMILY, PROV_E_GATEWAY_ERROR, NULL,
                             "The model gateway sent an answer that is not a chat completion. "
                             "Nothing was charged.");
    }
    /* Without usage from the gateway, the hold is the charge. */
    provider_infer_settle(in, rv == APR_SUCCESS ? &t : NULL,
                          rv == APR_SUCCESS ? "ok" : "no_usage");
    return provider_send_json(r, HTTP_OK,
                              prov_chat_render(answer, in->model->public_id, in->charge,
                                               r->pool));
}
