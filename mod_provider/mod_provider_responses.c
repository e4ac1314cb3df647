/* mod_provider_responses.c: POST /v1/responses, the transport Codex and the
 * OpenAI SDKs' Responses API use, as a table for the driver
 * (mod_provider_drive.c) with the rules of libprovider (prov_responses.c):
 * the request translated for the gateway's Chat Completions, the hosted
 * tools it dropped named in x-provider-dropped-tools, the plan's windows in
 * Codex's rate-limit headers, and the answer either as one response object
 * (with x-provider-credits) or as the response.* event stream translated
 * from the gateway's chat chunks while they come (mod_provider_stream.c). A
 * stream is settled once, when it ends, however it ends, by what was
 * delivered (docs/internals/broken-streams.md); its last event tells the
 * figure. */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_responses.h"
#include "mod_provider_drive.h"
#include "mod_provider_infer.h"
#include "mod_provider_stream.h"

APLOG_USE_MODULE(provider);

#include "prov_chat.h"
#include "prov_money.h"
#include "prov_responses.h"

static apr_status_t parse(provider_infer_t *in, prov_error_t **err)
{
    prov_resp_req_t *q = NULL;
    apr_status_t rv = prov_resp_parse(&q, err, in->body, in->len, in->r->pool);
    if (rv == APR_SUCCESS)
        in->call = (provider_call_t){ .req = q, .model = q->model, .stream = q->stream,
                                      .max_output = q->max_output_tokens,
                                      .prompt_bytes = q->prompt_bytes,
                                      .n_messages = q->n_messages };
    return rv;
}

/* Set on both tables: they go out with an answer or with an error. */
static void held(provider_infer_t *in)
{
    prov_resp_req_t *req = in->call.req;
    request_rec *r = in->r;
    if (req->dropped_tools)
        apr_table_setn(r->err_headers_out, "x-provider-dropped-tools", req->dropped_tools);
    prov_resp_quota_headers(r->err_headers_out, &in->res->windows, prov_now(), r->pool);
}

static const char *upstream(provider_infer_t *in, apr_table_t **headers)
{
    *headers = NULL;
    return prov_resp_upstream_body(in->call.req, in->model->upstream_id, in->forward_cap,
                                   in->r->pool);
}

/* The response's id: the request id's, with the resp_ prefix. */
static const char *resp_id(provider_infer_t *in)
{
    return apr_pstrcat(in->r->pool, "resp_", !strncmp(in->request_id, "req_", 4)
                       ? in->request_id + 4 : in->request_id, NULL);
}

static apr_int64_t created_at(provider_infer_t *in)
{
    return (apr_int64_t)apr_time_sec(in->r->request_time);
}

static const char *render(provider_infer_t *in, json_object *answer)
{
    return prov_resp_render(in->call.req, answer, resp_id(in), in->model->public_id,
                            created_at(in), in->charge, in->r->pool);
}

/* ---- streaming ---------------------------------------------------------------- */

/* The translator writes its events straight into the stream's output
 * (x->out): they go out together when the gateway pauses
 * (mod_provider_stream.c), a complete answer's last ones with its end
 * (provider_stream_finish). */
static void *stream_open(provider_infer_t *in, provider_stream_t *x)
{
    prov_resp_stream_t *s = prov_resp_stream_create(in->call.req, resp_id(in),
                                                    in->model->public_id, created_at(in),
                                                    provider_stream_write, x, in->r->pool);
    prov_resp_stream_set_out(s, x->out);
    return s;
}

static apr_status_t stream_feed(void *s, const char *data, apr_size_t len)
{
    return prov_resp_stream_feed(s, data, len);
}

static const prov_gwerror_t *stream_error(void *s)
{
    return prov_resp_stream_error(s);
}

static int stream_complete(void *s)
{
    return prov_resp_stream_finished(s);
}

static void stream_written(void *s)
{
    prov_resp_stream_written(s);
}

static void stream_delivery(void *s, prov_delivery_t *d)
{
    prov_resp_stream_delivery(s, d);
}

/* What response.failed says: the model's own condition when the gateway's
 * error chunk was one (context_length_exceeded, rate_limit_exceeded,
 * server_is_overloaded: Codex acts on these codes), else the cut. */
static prov_error_t *failed_error(provider_stream_t *x, const prov_gwerror_t *gw_error,
                                  apr_status_t rv, prov_micro_t charge)
{
    apr_pool_t *p = x->r->pool;
    prov_error_t *e = gw_error && !x->too_long ? prov_gwerror_client(gw_error, p) : NULL;
    if (!e || e->code == PROV_E_GATEWAY_ERROR)
        return provider_stream_cut_error(x, rv, "The model's answer was cut short by the "
                                         "gateway", charge);
    e->message = apr_psprintf(p, "%s %s credits were charged for what was delivered.",
                              e->message, prov_money_format(charge, p));
    return e;
}

/* The end of a stream that the client has: settled by what was delivered
 * (docs/internals/broken-streams.md), and the last event tells the figure. */
static int stream_end(provider_infer_t *in, provider_stream_t *x, apr_status_t rv)
{
    request_rec *r = in->r;
    prov_resp_stream_t *s = x->translator;
    const prov_gwerror_t *gw_error = prov_resp_stream_error(s);
    prov_delivery_t d;
    prov_micro_t charge;
    prov_ending_e end;

    if (gw_error)
        provider_log_gateway_error(r, gw_error);
    prov_resp_stream_delivery(s, &d);
    d.complete = prov_resp_stream_finished(s) && !x->malformed && !x->client_gone
                 && (rv == APR_SUCCESS || d.usage == PROV_USAGE_FINAL);
    end = provider_stream_ending(x, rv, d.complete, gw_error != NULL);
    if (end == PROV_END_COMPLETE) {
        charge = provider_infer_bill(in, &d, end);
        prov_resp_stream_complete(s, charge);
        return provider_stream_commit(in, x);
    }
    r->connection->keepalive = AP_CONN_CLOSE;
    d.client_left = x->client_gone;
    charge = provider_infer_bill(in, &d, end);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r, "PROV00140: responses stream %s cut short "
                  "(%s); charged %s credits", in->request_id, prov_ending_name(end),
                  prov_money_format(charge, r->pool));
    if (!x->client_gone) {
        prov_error_t *e = failed_error(x, gw_error, rv, charge);
        prov_resp_stream_fail(s, prov_error_info(e->code)->code, e->message, charge);
        provider_stream_finish(x);
    }
    provider_infer_commit(in);
    return OK;
}

/* No keep-alive event: the Responses stream has none. */
static const provider_streamer_t responses_stream = {
    .content_type = "text/event-stream", .early_error = stream_error,
    .open = stream_open, .feed = stream_feed, .complete = stream_complete,
    .written = stream_written, .end = stream_end,
    .delivery = stream_delivery,
    .malformed = "The model gateway sent a stream that is not a chat completion stream. "
                 "Nothing was charged.",
};

/* Translated for the gateway's Chat Completions, and back. */
static const provider_transport_t responses = {
    .name = "responses", .family = PROVIDER_FAMILY_OPENAI, .path = "/v1/chat/completions",
    .parse = parse, .held = held, .upstream = upstream, .render = render,
    .read_answer = prov_chat_read_answer, .answer_bytes = prov_estimate_chat_answer,
    .answer_kind = "a chat completion", .stream = &responses_stream,
};

int provider_responses_handler(request_rec *r)
{
    return provider_drive(r, &responses);
}
