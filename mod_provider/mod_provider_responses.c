/* mod_provider_responses.c: POST /v1/responses. The shared inference path
 * (mod_provider_infer.c) with the Responses rules of libprovider
 * (prov_responses.c): the request translated for the gateway's Chat
 * Completions, the hosted tools it dropped named in x-provider-dropped-tools,
 * the plan's windows in Codex's rate-limit headers, and the answer either as
 * one response object (with x-provider-credits) or as the response.* event
 * stream, written and flushed event by event while the gateway streams. A
 * stream is settled once: on completion with the reported usage, or when cut
 * (by the gateway or the client) with what was reported, else the hold. */
#include <string.h>
#include "mod_provider.h"

APLOG_USE_MODULE(provider);

#include "apr_buckets.h"
#include "prov_billing.h"
#include "prov_chat.h"
#include "prov_json.h"
#include "prov_money.h"
#include "prov_responses.h"

#define FAMILY PROVIDER_FAMILY_OPENAI
/* A gateway refusal body kept for the error answer (the rest is dropped). */
#define REFUSAL_MAX (64 * 1024)

typedef struct stream_ctx {
    request_rec *r;
    apr_bucket_brigade *bb;
    prov_resp_stream_t *s;
    int *status;
    char *refusal;           /* the body of a non-200 gateway answer */
    apr_size_t refusal_len;
    int client_gone;
    int malformed;
} stream_ctx;

/* Writes one SSE event and flushes it to the client. */
static apr_status_t write_event(void *baton, const char *ev, apr_size_t len)
{
    stream_ctx *c = baton;
    request_rec *r = c->r;
    apr_status_t rv;

    if (c->client_gone || r->connection->aborted) {
        c->client_gone = 1;
        return APR_ECONNABORTED;
    }
    apr_brigade_write(c->bb, NULL, NULL, ev, len);
    APR_BRIGADE_INSERT_TAIL(c->bb, apr_bucket_flush_create(r->connection->bucket_alloc));
    rv = ap_pass_brigade(r->output_filters, c->bb);
    apr_brigade_cleanup(c->bb);
    if (rv != APR_SUCCESS || r->connection->aborted) {
        c->client_gone = 1;
        return APR_ECONNABORTED;
    }
    return APR_SUCCESS;
}

/* Gateway bytes: translated and written as they come (a refusal is kept). */
static apr_status_t on_gateway_data(void *baton, const char *data, apr_size_t len)
{
    stream_ctx *c = baton;
    apr_status_t rv;

    if (*c->status != HTTP_OK) {
        apr_size_t room = REFUSAL_MAX - c->refusal_len;
        if (len > room)
            len = room;
        memcpy(c->refusal + c->refusal_len, data, len);
        c->refusal_len += len;
        return APR_SUCCESS;
    }
    if (c->client_gone || c->r->connection->aborted) {
        c->client_gone = 1;
        return APR_ECONNABORTED;
    }
    rv = prov_resp_stream_feed(c->s, data, len);
    if (rv != APR_SUCCESS && !c->client_gone)
        c->malformed = 1;
    return rv;
}

static int stream_answer(provider_infer_t *in, const prov_resp_req_t *req, const char *body,
                         const char *resp_id, apr_int64_t created_at)
{
    request_rec *r = in->r;
    stream_ctx c;
    int status = 0;
    prov_tokens_t t;
    int have_tokens;
    prov_micro_t charge;
    apr_status_t rv;

    memset(&c, 0, sizeof(c));
    c.r = r;
    c.status = &status;
    c.bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    c.refusal = apr_palloc(r->pool, REFUSAL_MAX + 1);
    c.s = prov_resp_stream_create(req, resp_id, in->model->public_id, created_at, write_event,
                                  &c, r->pool);
    ap_set_content_type(r, "text/event-stream");
    apr_table_setn(r->headers_out, "Cache-Control", "no-cache");
    apr_table_setn(r->headers_out, "X-Accel-Buffering", "no");

    rv = prov_gateway_stream(&status, in->conf->gateway, "/v1/chat/completions", body,
                             strlen(body), NULL, on_gateway_data, &c, r->pool);

    if (!prov_resp_stream_started(c.s)) {
        /* Nothing reached the client: an ordinary error answer is still possible. */
        if (status != 0 && status != HTTP_OK) {
            prov_gw_response_t resp;
            memset(&resp, 0, sizeof(resp));
            resp.status = status;
            c.refusal[c.refusal_len] = '\0';
            resp.body = c.refusal;
            resp.len = c.refusal_len;
            provider_infer_release(in, "refused");
            return provider_gateway_refusal(r, FAMILY, &resp);
        }
        if (c.client_gone) {
            provider_infer_settle(in, NULL, "aborted");
            return OK;
        }
        if (prov_resp_stream_error(c.s)) {
            provider_log_gateway_error(r, prov_resp_stream_error(c.s));
            provider_infer_release(in, "refused");
            return provider_send_error(r, FAMILY,
                                       prov_gwerror_client(prov_resp_stream_error(c.s), r->pool));
        }
        if (rv != APR_SUCCESS && !c.malformed)
            return provider_infer_gateway_failed(in, rv);
        provider_infer_release(in, "malformed");
        return provider_fail(r, FAMILY, PROV_E_GATEWAY_ERROR, NULL,
                             "The model gateway sent a stream that is not a chat completion "
                             "stream. Nothing was charged.");
    }

    if (prov_resp_stream_error(c.s))
        provider_log_gateway_error(r, prov_resp_stream_error(c.s));
    have_tokens = prov_resp_stream_tokens(c.s, &t) == APR_SUCCESS;
    if (prov_resp_stream_finished(c.s) && !c.malformed && !c.client_gone
        && (rv == APR_SUCCESS || have_tokens)) {
        charge = provider_infer_settle(in, have_tokens ? &t : NULL,
                                       have_tokens ? "ok" : "no_usage");
        prov_resp_stream_complete(c.s, charge);
        return OK;
    }
    /* Cut short: charged for what the gateway reported, else the hold. */
    charge = provider_infer_settle(in, have_tokens ? &t : NULL,
                                   c.client_gone ? "aborted" : "cut");
    ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r, "PROV00140: responses stream %s cut short "
                  "(%s); charged %s credits", in->request_id,
                  c.client_gone ? "client went away" : c.malformed ? "malformed gateway stream"
                  : "gateway stream ended", prov_money_format(charge, r->pool));
    if (!c.client_gone)
        prov_resp_stream_fail(c.s, rv == APR_TIMEUP ? "GATEWAY_TIMEOUT" : "GATEWAY_ERROR",
                              apr_psprintf(r->pool, "The model's answer was cut short by the "
                                           "gateway; %s credits were charged for it.",
                                           prov_money_format(charge, r->pool)), charge);
    return OK;
}

static int plain_answer(provider_infer_t *in, const prov_resp_req_t *req, const char *body,
                        const char *resp_id, apr_int64_t created_at)
{
    request_rec *r = in->r;
    prov_gw_response_t *resp = NULL;
    json_object *answer = NULL;
    prov_tokens_t t;
    apr_status_t rv;

    rv = prov_gateway_request(&resp, in->conf->gateway, "/v1/chat/completions", body,
                              strlen(body), NULL, r->pool);
    if (rv != APR_SUCCESS)
        return provider_infer_gateway_failed(in, rv);
    if (resp->status != HTTP_OK) {
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
    provider_infer_settle(in, rv == APR_SUCCESS ? &t : NULL,
                          rv == APR_SUCCESS ? "ok" : "no_usage");
    return provider_send_json(r, HTTP_OK, prov_resp_render(req, answer, resp_id,
                                                           in->model->public_id, created_at,
                                                           in->charge, r->pool));
}

int provider_responses_handler(request_rec *r)
{
    provider_infer_t *in = NULL;
    prov_resp_req_t *req = NULL;
    prov_error_t *err = NULL;
    const char *body, *resp_id;
    apr_int64_t created_at = (apr_int64_t)apr_time_sec(r->request_time);
    int st;

    if ((st = provider_infer_begin(&in, r, FAMILY, "responses", 0)) != PROVIDER_GO)
        return st;
    if (prov_resp_parse(&req, &err, in->body, in->len, r->pool) != APR_SUCCESS) {
        provider_infer_close(in);
        return provider_send_error(r, FAMILY, err);
    }
    if ((st = provider_infer_model(in, req->model, 0)) != PROVIDER_GO)
        return st;
    if ((st = provider_infer_reserve(in, prov_billing_input_estimate(req->prompt_bytes,
                                                                     req->n_messages),
                                     req->max_output_tokens)) != PROVIDER_GO)
        return st;

    /* Set on both tables: they go out with an answer or with an error. */
    if (req->dropped_tools)
        apr_table_setn(r->err_headers_out, "x-provider-dropped-tools", req->dropped_tools);
    prov_resp_quota_headers(r->err_headers_out, &in->res->windows, prov_now(), r->pool);

    resp_id = apr_pstrcat(r->pool, "resp_", !strncmp(in->request_id, "req_", 4)
                          ? in->request_id + 4 : in->request_id, NULL);
    body = prov_resp_upstream_body(req, in->model->upstream_id, r->pool);
    return req->stream ? stream_answer(in, req, body, resp_id, created_at)
                       : plain_answer(in, req, body, resp_id, created_at);
}
