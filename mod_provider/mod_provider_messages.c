/* mod_provider_messages.c: POST /v1/messages and /v1/messages/count_tokens,
 * the transport that Claude Code and the Anthropic SDKs use, as tables for
 * the driver (mod_provider_drive.c) with the Messages rules of libprovider
 * (prov_messages.c): the anthropic-version header, the request normalised
 * and forwarded natively to the gateway with the upstream id, and the answer
 * either as one Message or as an SSE stream relayed event by event
 * (mod_provider_stream.c: each event flushed, a ping while the gateway is
 * silent; the usage read and the output counted on the way, settled when the
 * stream ends, however it ends, by what was delivered). Errors are in the
 * Anthropic shape. count_tokens is never charged and holds nothing: the
 * driver takes it up to its model, this file does the rest. */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_messages.h"
#include "mod_provider_drive.h"
#include "mod_provider_http.h"
#include "mod_provider_infer.h"
#include "mod_provider_stream.h"

APLOG_USE_MODULE(provider);

#include "prov_header.h"
#include "prov_messages.h"
#include "prov_money.h"
#include "prov_json.h"

#define FAMILY PROVIDER_FAMILY_ANTHROPIC

/* The anthropic-version header: required, a date not before 2023-06-01. */
static provider_step_t check_version(provider_infer_t *in)
{
    const char *v = apr_table_get(in->r->headers_in, "anthropic-version");
    apr_status_t rv = prov_messages_version_check(v);
    if (rv == APR_SUCCESS)
        return PROVIDER_GO;
    provider_infer_close(in);
    if (!v)
        return provider_fail(in->r, FAMILY, PROV_E_INVALID_REQUEST, NULL,
                             "anthropic-version: header is required (for example "
                             "'anthropic-version: " PROV_MESSAGES_VERSION "')");
    return provider_fail(in->r, FAMILY, PROV_E_INVALID_REQUEST, NULL,
                         "anthropic-version: '%s' is not a supported version (a date "
                         "YYYY-MM-DD not before " PROV_MESSAGES_VERSION ")",
                         ap_escape_html(in->r->pool, apr_pstrndup(in->r->pool, v, 40)));
}

/* Headers for the gateway: the version it knows and the client's beta flags
 * (they switch on the beta body fields the client sends). Never the client's
 * API key: the gateway client adds the service token. */
static apr_table_t *upstream_headers(request_rec *r)
{
    apr_table_t *h = apr_table_make(r->pool, 3);
    const char *beta = apr_table_get(r->headers_in, "anthropic-beta");
    apr_table_setn(h, "anthropic-version", PROV_MESSAGES_VERSION);
    /* httpd already refuses control characters in request headers (unless
     * HttpProtocolOptions Unsafe): never pass one on to the gateway. */
    if (beta && *beta && prov_header_value_ok(beta))
        apr_table_setn(h, "anthropic-beta", beta);
    return h;
}

/* count_tokens has no billing transaction that re-checks a key taken from
 * the lookup cache: it is read again (provider_infer_recheck_key) before the
 * version is checked. */
static provider_step_t check_count(provider_infer_t *in)
{
    provider_step_t st = provider_infer_recheck_key(in);
    return st == PROVIDER_GO ? check_version(in) : st;
}

static apr_status_t parse_request(provider_infer_t *in, prov_error_t **err, int count_tokens)
{
    prov_messages_req_t *q = NULL;
    apr_status_t rv = prov_messages_parse(&q, err, in->body, in->len, count_tokens,
                                          in->r->pool);
    if (rv == APR_SUCCESS)
        in->call = (provider_call_t){ .req = q, .model = q->model, .stream = q->stream,
                                      .max_output = q->max_tokens,
                                      .prompt_bytes = q->prompt_bytes,
                                      .n_messages = q->n_messages };
    return rv;
}

static apr_status_t parse(provider_infer_t *in, prov_error_t **err)
{
    return parse_request(in, err, 0);
}

static apr_status_t parse_count(provider_infer_t *in, prov_error_t **err)
{
    return parse_request(in, err, 1);
}

static const char *upstream(provider_infer_t *in, apr_table_t **headers)
{
    prov_messages_req_t *req = in->call.req;
    *headers = upstream_headers(in->r);
    if (req->stream)
        apr_table_setn(*headers, "Accept", "text/event-stream");
    return prov_messages_upstream_body(req, in->model->upstream_id, in->forward_cap,
                                       in->r->pool);
}

static const char *render(provider_infer_t *in, json_object *answer)
{
    return prov_messages_render(answer, in->model->public_id, in->charge, in->r->pool);
}

/* ---- streaming ---------------------------------------------------------------- */

/* The relay encodes straight into the stream's output (x->out): it is only
 * fed inside a read of the gateway (x->feeding), whose events go out together
 * when the read is done, as provider_stream_write would have them go. */
static void *stream_open(provider_infer_t *in, provider_stream_t *x)
{
    prov_messages_stream_t *s = prov_messages_stream_create(in->model->public_id, &in->eff,
                                                            in->input_estimate, in->max_output,
                                                            in->hold, provider_stream_write, x,
                                                            in->r->pool);
    prov_messages_stream_set_out(s, x->out);
    return s;
}

static apr_status_t stream_feed(void *s, const char *data, apr_size_t len)
{
    return prov_messages_stream_feed(s, data, len);
}

static int stream_complete(void *s)
{
    return prov_messages_stream_complete(s);
}

static void stream_written(void *s)
{
    prov_messages_stream_written(s);
}

static void stream_delivery(void *s, prov_delivery_t *d)
{
    prov_messages_stream_delivery(s, d);
}

/* The end of a stream that the client has: settled by what was delivered
 * (docs/internals/broken-streams.md), the figure that message_delta or the
 * error event told the client. */
static int stream_end(provider_infer_t *in, provider_stream_t *x, apr_status_t rv)
{
    request_rec *r = in->r;
    prov_messages_stream_t *s = x->translator;
    int failed = prov_messages_stream_failed(s);
    prov_delivery_t d;
    prov_micro_t charge;
    prov_ending_e end;

    if (failed)
        provider_log_gateway_error(r, prov_messages_stream_error(s));
    prov_messages_stream_delivery(s, &d);
    end = provider_stream_ending(x, rv, d.complete, failed);
    if (end == PROV_END_COMPLETE) {
        provider_infer_bill(in, &d, end);
        return provider_stream_commit(in, x);
    }
    r->connection->keepalive = AP_CONN_CLOSE;
    d.client_left = end == PROV_END_CLIENT_LEFT;
    charge = provider_infer_bill(in, &d, end);
    if (end == PROV_END_CLIENT_LEFT) {
        provider_infer_commit(in);
        return OK;
    }
    if (end != PROV_END_GATEWAY_ERROR) {
        prov_error_t *e = provider_stream_cut_error(x, rv, "The model gateway ended the stream "
                                                    "before the message was complete", charge);
        const char *ev = prov_messages_error_event(e, charge, r->pool);
        provider_stream_write(x, ev, strlen(ev));
    }
    provider_infer_commit(in);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r, "PROV00120: request %s: the gateway's "
                  "stream ended early after %d events; charged %s credits", in->request_id,
                  prov_messages_stream_events(s), prov_money_format(charge, r->pool));
    return OK;
}

static const prov_gwerror_t *stream_early_error(void *s)
{
    return prov_messages_stream_early_error(s);
}

/* Relayed: the gateway's errors become error events of ours; one before any
 * event, a plain error answer. */
static const provider_streamer_t messages_stream = {
    .content_type = "text/event-stream; charset=utf-8", .ping = prov_messages_ping_event,
    .early_error = stream_early_error,
    .open = stream_open, .feed = stream_feed, .complete = stream_complete,
    .written = stream_written, .end = stream_end,
    .delivery = stream_delivery,
    .malformed = "The model gateway sent an answer that is not a message stream. "
                 "Nothing was charged.",
};

static const provider_transport_t messages = {
    .name = "messages", .family = FAMILY, .x_api_key = 1, .messages_only = 1,
    .path = "/v1/messages", .check = check_version, .parse = parse, .upstream = upstream,
    .render = render, .read_answer = prov_messages_read_answer,
    .answer_bytes = prov_estimate_messages_answer, .answer_kind = "a message",
    .stream = &messages_stream, .relay_read = prov_messages_relay_read,
};

/* count_tokens up to its model (provider_drive_prepare); the rest is below. */
static const provider_transport_t count_tokens = {
    .name = "messages", .family = FAMILY, .x_api_key = 1, .messages_only = 1,
    .path = "/v1/messages/count_tokens", .check = check_count, .parse = parse_count,
};

/* ---- handlers ---------------------------------------------------------------- */

int provider_messages_handler(request_rec *r)
{
    return provider_drive(r, &messages);
}

int provider_count_tokens_handler(request_rec *r)
{
    provider_infer_t *in = NULL;
    prov_messages_req_t *req = NULL;
    prov_gateway_response_t *resp = NULL;
    const char *upstream_body, *perr = NULL;
    json_object *answer;
    apr_status_t rv;
    provider_step_t st;

    if ((st = provider_drive_prepare(&in, r, &count_tokens)) != PROVIDER_GO)
        return st;
    /* Never charged: no reservation, no ledger row. */
    provider_infer_close(in);
    req = in->call.req;
    upstream_body = prov_messages_upstream_body(req, in->model->upstream_id, 0, r->pool);
    rv = prov_gateway_request(&resp, in->conf->gateway, count_tokens.path, upstream_body,
                              strlen(upstream_body), upstream_headers(r), r->pool);
    if (rv != APR_SUCCESS)
        return provider_infer_gateway_failed(in, rv);
    if (resp->status == HTTP_NOT_FOUND) {
        /* A gateway without count_tokens: our own estimate. */
        apr_table_setn(r->headers_out, "x-provider-token-count", "estimated");
        return provider_send_json(r, HTTP_OK, apr_psprintf(r->pool, "{\"input_tokens\":%"
                                  APR_INT64_T_FMT "}", prov_messages_estimate_tokens(req)));
    }
    if (resp->status != HTTP_OK)
        return provider_gateway_refusal(r, FAMILY, resp);
    answer = prov_json_parse(resp->body, resp->len, &perr, r->pool);
    if (!prov_json_get(answer, "input_tokens", json_type_int))
        return provider_fail(r, FAMILY, PROV_E_GATEWAY_ERROR, NULL,
                             "The model gateway sent a token count that cannot be read.");
    return provider_send_json(r, HTTP_OK, prov_json_dump(answer, r->pool));
}
