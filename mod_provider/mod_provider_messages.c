/* mod_provider_messages.c: POST /v1/messages and /v1/messages/count_tokens,
 * the transport that Claude Code and the Anthropic SDKs use. The shared
 * inference path (mod_provider_infer.c) with the Messages rules of
 * libprovider (prov_messages.c): the anthropic-version header, the request
 * normalised and forwarded natively to the gateway with the upstream id, and
 * the answer either as one Message or as an SSE stream relayed event by event
 * (each event flushed, a ping while the gateway is silent, the usage read and
 * the output counted on the way, settled when the stream ends, however it
 * ends, by what was delivered). Errors are in the Anthropic shape.
 * count_tokens is never charged and holds nothing. */
#include <string.h>
#include "mod_provider.h"

APLOG_USE_MODULE(provider);

#include "prov_billing.h"
#include "prov_header.h"
#include "prov_messages.h"
#include "prov_money.h"
#include "prov_json.h"

#define FAMILY PROVIDER_FAMILY_ANTHROPIC
/* A gateway refusal that arrives on a stream request is kept up to this size. */
#define REFUSAL_MAX (64 * 1024)

/* The anthropic-version header: required, a date not before 2023-06-01. */
static int check_version(provider_infer_t *in)
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
    apr_table_t *h = apr_table_make(r->pool, 2);
    const char *beta = apr_table_get(r->headers_in, "anthropic-beta");
    apr_table_setn(h, "anthropic-version", PROV_MESSAGES_VERSION);
    /* httpd already refuses control characters in request headers (unless
     * HttpProtocolOptions Unsafe): never pass one on to the gateway. */
    if (beta && *beta && prov_header_value_ok(beta))
        apr_table_setn(h, "anthropic-beta", beta);
    return h;
}

/* count_tokens has no billing transaction that re-checks a key taken from
 * the lookup cache: the key and its account are read again from the
 * database, so that a deleted or reissued key (401) and a blocked user (403)
 * are refused at once. The cache is left as it is: a blocked answer put
 * there would outlive an unblock. */
static int recheck_key(provider_infer_t *in)
{
    request_rec *r = in->r;
    prov_error_t *err = NULL;
    prov_auth_t *auth = NULL;
    apr_status_t rv;

    if (in->auth_fresh)
        return PROVIDER_GO;
    if (!in->store && !(in->store = provider_db_open(r, &err)))
        return provider_send_error(r, FAMILY, err);
    rv = prov_auth_lookup(&auth, in->store, in->secret, r->pool);
    if (rv != APR_SUCCESS) {
        provider_infer_close(in);
        if (rv == APR_NOTFOUND)
            return provider_fail(r, FAMILY, PROV_E_INVALID_API_KEY, NULL, "Invalid API key.");
        return provider_fail(r, FAMILY, PROV_E_SERVICE_UNAVAILABLE, NULL,
                             "The service's database is unavailable; try again later.");
    }
    in->auth = auth;
    in->auth_fresh = 1;
    if (auth->user_blocked) {
        provider_infer_close(in);
        return provider_fail(r, FAMILY, PROV_E_USER_BLOCKED, NULL,
                             "This account is blocked. Contact the service's administrator.");
    }
    return PROVIDER_GO;
}

/* Steps shared by both endpoints up to a validated request and its model. */
static int prepare(provider_infer_t **in, prov_messages_req_t **req, request_rec *r,
                   int count_tokens)
{
    prov_error_t *err = NULL;
    int st;
    if ((st = provider_infer_begin(in, r, FAMILY, "messages", 1)) != PROVIDER_GO)
        return st;
    if (count_tokens && (st = recheck_key(*in)) != PROVIDER_GO)
        return st;
    if ((st = check_version(*in)) != PROVIDER_GO)
        return st;
    if (prov_messages_parse(req, &err, (*in)->body, (*in)->len, count_tokens, r->pool)
        != APR_SUCCESS) {
        provider_infer_close(*in);
        return provider_send_error(r, FAMILY, err);
    }
    return provider_infer_model(*in, (*req)->model, 1);
}

/* ---- streaming ---------------------------------------------------------------- */

typedef struct relay_t {
    request_rec *r;
    apr_bucket_brigade *bb;
    prov_messages_stream_t *stream;
    int status;                 /* the gateway's HTTP status, once known */
    int started;                /* the client has the 200 and its headers */
    int client_gone;
    int undelivered;            /* PROVIDER_WRITE_REFUSED or _FAILED: our answer failed */
    apr_time_t last_write;
    apr_interval_time_t ping;
    char *refusal;              /* a non-200 answer's body */
    apr_size_t refusal_len;
} relay_t;

static apr_status_t write_flush(relay_t *x, const char *buf, apr_size_t len)
{
    conn_rec *c = x->r->connection;
    int w;
    if (x->client_gone || x->undelivered)
        return APR_ECONNABORTED;
    if (!x->started) {
        x->r->status = HTTP_OK;
        ap_set_content_type(x->r, "text/event-stream; charset=utf-8");
        apr_table_setn(x->r->headers_out, "Cache-Control", "no-cache");
        apr_table_setn(x->r->headers_out, "X-Accel-Buffering", "no");
    }
    APR_BRIGADE_INSERT_TAIL(x->bb, apr_bucket_transient_create(buf, len, c->bucket_alloc));
    APR_BRIGADE_INSERT_TAIL(x->bb, apr_bucket_flush_create(c->bucket_alloc));
    w = provider_pass(x->r, x->bb);
    if (w != PROVIDER_WRITE_OK) {
        if (w == PROVIDER_WRITE_GONE)
            x->client_gone = 1;
        else
            x->undelivered = w;
        return APR_ECONNABORTED;
    }
    x->started = 1;
    x->last_write = apr_time_now();
    return APR_SUCCESS;
}

static apr_status_t on_event(void *baton, const char *event, apr_size_t len)
{
    return write_flush(baton, event, len);
}

static apr_status_t on_data(void *baton, const char *data, apr_size_t len)
{
    relay_t *x = baton;
    if (x->status != HTTP_OK) {
        /* A refusal: kept whole for provider_gateway_refusal. */
        apr_size_t room = REFUSAL_MAX - x->refusal_len;
        if (!x->refusal)
            x->refusal = apr_palloc(x->r->pool, REFUSAL_MAX + 1);
        if (len > room)
            len = room;
        memcpy(x->refusal + x->refusal_len, data, len);
        x->refusal_len += len;
        x->refusal[x->refusal_len] = '\0';
        return APR_SUCCESS;
    }
    return prov_messages_stream_feed(x->stream, data, len);
}

/* While the gateway is silent: a ping after the interval; notices a client
 * that has gone (the transfer then stops, and with it the upstream work). */
static apr_status_t on_tick(void *baton)
{
    relay_t *x = baton;
    if (x->r->connection->aborted || x->client_gone) {
        x->client_gone = 1;
        return APR_ECONNABORTED;
    }
    if (x->started && apr_time_now() - x->last_write >= x->ping) {
        const char *ping = prov_messages_ping_event();
        return write_flush(x, ping, strlen(ping));
    }
    return APR_SUCCESS;
}

/* The gateway answered something other than a stream, or failed before its
 * first event: nothing has gone to the client, so it gets a plain error. */
static int stream_not_started(provider_infer_t *in, relay_t *x, apr_status_t rv)
{
    request_rec *r = in->r;
    if (x->client_gone) {
        provider_infer_release(in, "client_gone");
        r->connection->keepalive = AP_CONN_CLOSE;
        return OK;
    }
    /* APR_ECONNABORTED without a client gone: the relay refused the bytes
     * (an event too large to be one): a malformed answer. */
    if (rv != APR_SUCCESS && rv != APR_ECONNABORTED
        && (x->status == 0 || x->status == HTTP_OK))
        return provider_infer_gateway_failed(in, rv);
    if (x->status != HTTP_OK) {
        prov_gw_response_t resp;
        memset(&resp, 0, sizeof(resp));
        resp.status = x->status;
        resp.body = x->refusal ? x->refusal : "";
        resp.len = x->refusal_len;
        provider_infer_release(in, "refused");
        return provider_gateway_refusal(r, FAMILY, &resp);
    }
    provider_infer_release(in, "malformed");
    return provider_fail(r, FAMILY, PROV_E_GATEWAY_ERROR, NULL,
                         "The model gateway sent an answer that is not a message stream. "
                         "Nothing was charged.");
}

static int relay_stream(provider_infer_t *in, const char *body, apr_table_t *headers)
{
    request_rec *r = in->r;
    relay_t x;
    prov_delivery_t d;
    prov_micro_t charge;
    apr_status_t rv;
    int failed;

    memset(&x, 0, sizeof(x));
    x.r = r;
    x.bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    x.ping = apr_time_from_sec(in->conf->ping_interval);
    x.stream = prov_messages_stream_create(in->model->public_id, &in->eff, in->input_estimate,
                                           in->max_output, in->hold, on_event, &x, r->pool);
    apr_table_setn(headers, "Accept", "text/event-stream");
    rv = prov_gateway_stream_tick(&x.status, in->conf->gateway, "/v1/messages", body,
                                  strlen(body), headers, on_data, on_tick, &x, r->pool);
    if (x.undelivered)
        return provider_infer_undelivered(in, x.undelivered);
    if (!x.started)
        return stream_not_started(in, &x, rv);
    if (prov_messages_stream_failed(x.stream))
        provider_log_gateway_error(r, prov_messages_stream_error(x.stream));

    /* Settled by what was delivered (docs/internals/broken-streams.md): the
     * figure message_delta or the error event told the client. */
    prov_messages_stream_delivery(x.stream, &d);
    if (d.complete) {
        provider_infer_bill(in, &d, "ok", "no_usage");
        provider_infer_commit(in);
        return OK;
    }
    r->connection->keepalive = AP_CONN_CLOSE;
    if (x.client_gone) {
        d.client_left = 1;
        provider_infer_bill(in, &d, "client_cut", "client_gone");
        provider_infer_commit(in);
        return OK;
    }
    failed = prov_messages_stream_failed(x.stream);
    charge = provider_infer_bill(in, &d, failed ? "error" : "cut", failed ? "error"
                                 : rv == APR_TIMEUP ? "timeout" : "cut");
    if (!failed) {
        prov_error_t *e = prov_error_make(r->pool, rv == APR_TIMEUP ? PROV_E_GATEWAY_TIMEOUT
                                                                    : PROV_E_GATEWAY_ERROR,
                                          NULL, "The model gateway ended the stream before "
                                          "the message was complete; %s credits were charged "
                                          "for what was delivered.",
                                          prov_money_format(charge, r->pool));
        const char *ev = prov_messages_error_event(e, charge, r->pool);
        write_flush(&x, ev, strlen(ev));
    }
    provider_infer_commit(in);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r, "PROV00120: request %s: the gateway's "
                  "stream ended early after %d events; charged %s credits", in->request_id,
                  prov_messages_stream_events(x.stream), prov_money_format(charge, r->pool));
    return OK;
}

/* ---- handlers ---------------------------------------------------------------- */

int provider_messages_handler(request_rec *r)
{
    provider_infer_t *in = NULL;
    prov_messages_req_t *req = NULL;
    prov_gw_response_t *resp = NULL;
    json_object *answer = NULL;
    apr_table_t *headers;
    const char *upstream_body;
    prov_delivery_t d;
    prov_tokens_t t;
    apr_status_t rv;
    int st;

    if ((st = prepare(&in, &req, r, 0)) != PROVIDER_GO)
        return st;
    if ((st = provider_infer_reserve(in, prov_billing_input_estimate(req->prompt_bytes,
                                                                     req->n_messages),
                                     req->max_tokens)) != PROVIDER_GO)
        return st;

    upstream_body = prov_messages_upstream_body(req, in->model->upstream_id, r->pool);
    headers = upstream_headers(r);
    if (req->stream)
        return relay_stream(in, upstream_body, headers);

    rv = prov_gateway_request(&resp, in->conf->gateway, "/v1/messages", upstream_body,
                              strlen(upstream_body), headers, r->pool);
    if (rv != APR_SUCCESS)
        return provider_infer_gateway_failed(in, rv);
    if (resp->status != HTTP_OK) {
        provider_infer_release(in, "refused");
        return provider_gateway_refusal(r, FAMILY, resp);
    }
    rv = prov_messages_read_answer(&answer, &t, resp->body, resp->len, r->pool);
    if (rv == APR_EINVAL) {
        provider_infer_release(in, "malformed");
        return provider_fail(r, FAMILY, PROV_E_GATEWAY_ERROR, NULL,
                             "The model gateway sent an answer that is not a message. "
                             "Nothing was charged.");
    }
    if (rv == APR_SUCCESS)
        provider_infer_settle(in, &t, "ok");
    else
        provider_infer_bill(in, prov_estimate_answer(&d, prov_estimate_messages_answer(answer)),
                            "ok", "no_usage");
    return provider_infer_answer(in, prov_messages_render(answer, in->model->public_id,
                                                          in->charge, r->pool));
}

int provider_count_tokens_handler(request_rec *r)
{
    provider_infer_t *in = NULL;
    prov_messages_req_t *req = NULL;
    prov_gw_response_t *resp = NULL;
    const char *upstream_body, *perr = NULL;
    json_object *answer;
    apr_status_t rv;
    int st;

    if ((st = prepare(&in, &req, r, 1)) != PROVIDER_GO)
        return st;
    /* Never charged: no reservation, no ledger row. */
    provider_infer_close(in);
    upstream_body = prov_messages_upstream_body(req, in->model->upstream_id, r->pool);
    rv = prov_gateway_request(&resp, in->conf->gateway, "/v1/messages/count_tokens",
                              upstream_body, strlen(upstream_body), upstream_headers(r),
                              r->pool);
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
