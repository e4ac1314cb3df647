/* mod_provider_drive.c: the one inference driver. Every transport (Chat
 * Completions, Messages, Responses; count_tokens up to its model) is a table
 * of its rules (provider_transport_t: family, gateway path, parse, upstream
 * body, read answer, render, stream), and this file walks a request through
 * them in the order docs/internals/transports.md gives: key -> blocked user -> the transport's
 * checks -> parse -> model -> reserve -> gateway -> settle -> render. The
 * steps themselves are in mod_provider_infer.c, the event streams in
 * mod_provider_stream.c; docs/internals/transports.md walks through it. */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_drive.h"
#include "mod_provider_http.h"
#include "mod_provider_infer.h"
#include "mod_provider_stream.h"

APLOG_USE_MODULE(provider);

provider_step_t provider_drive_prepare(provider_infer_t **pin, request_rec *r,
                                       const provider_transport_t *t)
{
    provider_infer_t *in;
    prov_error_t *err = NULL;
    provider_step_t st;

    if ((st = provider_infer_begin(pin, r, t->family, t->name, t->x_api_key)) != PROVIDER_GO)
        return st;
    in = *pin;
    if (t->check && (st = t->check(in)) != PROVIDER_GO)
        return st;
    if (t->parse(in, &err) != APR_SUCCESS) {
        provider_infer_close(in);
        return provider_send_error(r, t->family, err);
    }
    return provider_infer_model(in, in->call.model, t->messages_only);
}

/* A 200 answer with usage relayed as the gateway wrote it, "model" and the
 * charge spliced in (the same answer json-c's render gives, in the
 * gateway's spacing); through json-c when the splice declines. */
static int relay(provider_infer_t *in, const prov_relay_t *rl, const prov_tokens_t *tokens)
{
    const char *perr = NULL, *out;
    json_object *tree;
    provider_infer_settle(in, tokens);
    out = prov_relay_render(rl, in->model->public_id, in->charge, in->r->pool);
    if (!out && (tree = prov_json_parse(rl->body, rl->len, &perr, in->r->pool)))
        out = prov_relay_render_tree(tree, in->model->public_id, in->charge, in->r->pool);
    if (!out)
        return provider_infer_undelivered(in, PROVIDER_WRITE_REFUSED);
    return provider_infer_answer(in, out);
}

/* One gateway call, one JSON answer: charged by the usage it reports, else
 * by an estimate of its output; rendered with the charge. */
static int answer(provider_infer_t *in, const provider_transport_t *t, const char *body,
                  const apr_table_t *headers)
{
    request_rec *r = in->r;
    prov_gateway_response_t *resp = NULL;
    json_object *answer = NULL;
    prov_delivery_t d;
    prov_tokens_t tokens;
    apr_status_t rv;

    rv = prov_gateway_request(&resp, in->conf->gateway, t->path, body, strlen(body), headers,
                              r->pool);
    if (rv != APR_SUCCESS)
        return provider_infer_gateway_failed(in, rv);
    if (resp->status != HTTP_OK) {
        provider_infer_release(in, PROV_END_REFUSED);
        return provider_gateway_refusal(r, t->family, resp);
    }
    if (t->relay_read) {
        prov_relay_t rl;
        if (t->relay_read(&rl, &tokens, resp->body, resp->len) == APR_SUCCESS)
            return relay(in, &rl, &tokens);
    }
    rv = t->read_answer(&answer, &tokens, resp->body, resp->len, r->pool);
    if (rv == APR_EINVAL) {
        provider_infer_release(in, PROV_END_MALFORMED);
        return provider_fail(r, t->family, PROV_E_GATEWAY_ERROR, NULL,
                             "The model gateway sent an answer that is not %s. "
                             "Nothing was charged.", t->answer_kind);
    }
    if (rv == APR_SUCCESS)
        provider_infer_settle(in, &tokens);
    else {
        /* no usage, or none that can be read: the estimate */
        prov_estimate_answer(&d, t->answer_bytes(answer));
        d.unreadable = rv == PROV_USAGE_UNREADABLE;
        provider_infer_bill(in, &d, PROV_END_COMPLETE);
    }
    return provider_infer_answer(in, t->render(in, answer));
}

static int drive(provider_infer_t **pin, request_rec *r, const provider_transport_t *t)
{
    provider_infer_t *in;
    apr_table_t *headers = NULL;
    const char *body;
    provider_step_t st;

    if ((st = provider_drive_prepare(pin, r, t)) != PROVIDER_GO)
        return st;
    in = *pin;
    st = provider_infer_reserve(in, prov_billing_input_estimate(in->call.prompt_bytes,
                                                                in->call.n_messages));
    if (st != PROVIDER_GO)
        return st;
    if (t->held)
        t->held(in);
    body = t->upstream(in, &headers);
    if (in->call.stream && t->stream)
        return provider_stream_run(in, t->stream, t->path, body, headers);
    return answer(in, t, body, headers);
}

/* Every ending goes through here: the key's in-flight count is given back
 * as soon as the answer (or the refusal) is written. */
int provider_drive(request_rec *r, const provider_transport_t *t)
{
    provider_infer_t *in = NULL;
    int st = drive(&in, r, t);
    provider_infer_done(in);
    return st;
}
