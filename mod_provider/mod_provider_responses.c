/* mod_provider_responses.c: POST /v1/responses. The shared inference path
 * (mod_provider_infer.c) with the Responses rules of libprovider
 * (prov_responses.c): the request translated for the gateway's Chat
 * Completions, the hosted tools it dropped named in x-provider-dropped-tools,
 * the plan's windows in Codex's rate-limit headers, and the answer either as
 * one response object (with x-provider-credits) or as the response.* event
 * stream, written and flushed event by event while the gateway streams. A
 * stream is settled once, when it ends, however it ends, by what was
 * delivered (docs/internals/broken-streams.md); its last event tells the
 * figure. */
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
    int sent;                /* the client has the 200 and its headers */
    int client_gone;
    int undelivered;         /* PROVIDER_WRITE_REFUSED or _FAILED: our answer failed */
    int malformed;
} stream_ctx;

/* Writes one SSE event and flushes it to the client. */
static apr_status_t write_event(void *baton, const char *ev, apr_size_t len)
{
    stream_ctx *c = baton;
    request_rec *r = c->r;
    int w;

    if (c->client_gone || c->undelivered)
        return APR_ECONNABORTED;
    apr_brigade_write(c->bb, NULL, NULL, ev, len);
    APR_BRIGADE_INSERT_TAIL(c->bb, apr_bucket_flush_create(r->connection->bucket_alloc));
    w = provider_pass(r, c->bb);
    if (w != PROVIDER_WRITE_OK) {
        if (w == PROVIDER_WRITE_GONE)
            c->client_gone = 1;
        else
            c->undelivered = w;
        return APR_ECONNABORTED;
    }
    c->sent = 1;
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
    if (rv != APR_SUCCESS && !c->client_gone && !c->undelivered)
        c->malformed = 1;
    return rv;
}

/* The end of a stream that the client has: settled by what was delivered
 * (docs/internals/broken-streams.md), and the last event tells the figure. */
static int stream_end(provider_infer_t *in, stream_ctx *c, apr_status_t rv)
{
    request_rec *r = in->r;
    prov_delivery_t d;
    prov_micro_t charge;

    const prov_gwerror_t *gw_error = prov_resp_stream_error(c->s);

    if (gw_error)
        provider_log_gateway_error(r, gw_error);
    prov_resp_stream_delivery(c->s, &d);
    d.complete = prov_resp_stream_finished(c->s) && !c->malformed && !c->client_gone
                 && (rv == APR_SUCCESS || d.usage == PROV_USAGE_FINAL);
    if (d.complete) {
        charge = provider_infer_bill(in, &d, "ok", "no_usage");
        prov_resp_stream_complete(c->s, charge);
        provider_infer_commit(in);
        return OK;
    }
    r->connection->keepalive = AP_CONN_CLOSE;
    d.client_left = c->client_gone;
    charge = provider_infer_bill(in, &d, c->client_gone ? "client_cut" : gw_error ? "error"
                                 : "cut", c->client_gone ? "client_gone" : gw_error ? "error"
                                 : c->malformed ? "malformed" : rv == APR_TIMEUP ? "timeout"
                                 : "cut");
    ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r, "PROV00140: responses stream %s cut short "
                  "(%s); charged %s credits", in->request_id,
                  c->client_gone ? "client went away" : gw_error ? "gateway error"
                  : c->malformed ? "malformed gateway stream" : "gateway stream ended",
                  prov_money_format(charge, r->pool));
    if (!c->client_gone)
        prov_resp_stream_fail(c->s, rv == APR_TIMEUP ? "GATEWAY_TIMEOUT" : "GATEWAY_ERROR",
                              apr_psprintf(r->pool, "The model's answer was cut short by the "
                                           "gateway; %s credits were charged for what was "
                                           "delivered.", prov_money_format(charge, r->pool)),
                              charge);
    provider_infer_commit(in);
    return OK;
}

static int stream_answer(provider_infer_t *in, const prov_resp_req_t *req, const char *body,
                         const char *resp_id, apr_int64_t created_at)
{
    request_rec *r = in->r;
    stream_ctx c;
    int status = 0;
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

    if (c.undelivered)
        return provider_infer_undelivered(in, c.undelivered);
    if (c.sent)
        return stream_end(in, &c, rv);
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
        provider_infer_release(in, "client_gone");
        r->connection->keepalive = AP_CONN_CLOSE;
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

static int plain_answer(provider_infer_t *in, const prov_resp_req_t *req, const char *body,
                        const char *resp_id, apr_int64_t created_at)
{
    request_rec *r = in->r;
    prov_gw_response_t *resp = NULL;
    json_object *answer = NULL;
    prov_delivery_t d;
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
    if (rv == APR_SUCCESS)
        provider_infer_settle(in, &t, "ok");
    else
        provider_infer_bill(in, prov_estimate_answer(&d, prov_estimate_chat_answer(answer)),
                            "ok", "no_usage");
    return provider_infer_answer(in, prov_resp_render(req, answer, resp_id,
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
