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

/* What the gateway said, for the operator: masked, since a gateway may put
 * its address or a token into an error message. */
void provider_log_gateway_error(request_rec *r, const prov_gwerror_t *g)
{
    const char *text = g->text ? prov_redact(provider_conf(r)->redactor, g->text,
                                             strlen(g->text), 400, r->pool)
                               : "(no message)";
    if (g->kind == PROV_GWERR_AUTH)
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r, "PROV00322: request %s: the gateway "
                      "refused the service token (HTTP %d; check ProviderGatewayTokenFile): %s",
                      provider_request_id(r), g->status, text);
    else if (g->status)
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00320: request %s: the gateway "
                      "answered HTTP %d (%s): %s", provider_request_id(r), g->status, g->type,
                      text);
    else
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00321: request %s: the gateway's "
                      "stream ended with an error (%s): %s", provider_request_id(r), g->type,
                      text);
}

/* A gateway refusal made safe to show: the class of its status and a
 * message of ours (prov_gwerror_client); its own words only in the log. */
int provider_gateway_refusal(request_rec *r, provider_family_e family,
                             const prov_gw_response_t *resp)
{
    prov_gwerror_t g;
    prov_error_t *e;
    apr_int64_t ra;

    prov_gwerror_read(&g, resp->status, resp->body, resp->len, r->pool);
    provider_log_gateway_error(r, &g);
    e = prov_gwerror_client(&g, r->pool);
    if (g.kind == PROV_GWERR_RATE_LIMIT) {
        e->retry_after = 1;
        if (resp->retry_after && prov_parse_i64(&ra, resp->retry_after) == APR_SUCCESS
            && ra > 0 && ra < 3600)
            e->retry_after = ra;
    }
    return provider_send_error(r, family, e);
}

int provider_chat_handler(request_rec *r)
{
    provider_infer_t *in = NULL;
    prov_chat_req_t *req = NULL;
    prov_error_t *err = NULL;
    prov_gw_response_t *resp = NULL;
    json_object *answer = NULL;
    const char *upstream_body;
    prov_delivery_t d;
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
    if (rv == APR_SUCCESS)
        provider_infer_settle(in, &t, "ok");
    else
        provider_infer_bill(in, prov_estimate_answer(&d, prov_estimate_chat_answer(answer)),
                            "ok", "no_usage");
    return provider_infer_answer(in, prov_chat_render(answer, in->model->public_id, in->charge,
                                                      r->pool));
}
