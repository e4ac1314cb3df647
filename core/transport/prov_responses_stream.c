/* prov_responses_stream.c: the Responses transport's streamed answer,
 * without httpd: the gateway's chat.completion.chunk stream translated into
 * the response.* event sequence with sequence numbers (response.created,
 * the items and their parts opened, filled by deltas and closed, ending in
 * response.completed, .incomplete or .failed), the output text counted as it
 * is sent, and the usage and the gateway's error chunk kept for the
 * settlement and the log. This file keeps the state and its operations;
 * each chunk is read by the scanner and its events written as text
 * (prov_responses_fast.c, prov_responses_events.c) unless the scanner does
 * not plainly recognise it: then json-c reads it and builds its events
 * (prov_responses_tree.c), as before; the bytes are the same
 * (prov_responses_stream_int.h). */
#include <stdlib.h>
#include <string.h>
#include "prov_responses_stream_int.h"

/* ---- the state's operations ------------------------------------------------- */

apr_status_t prov_resp_op_start(prov_resp_stream_t *s)
{
    if (s->seq > 0)
        return APR_SUCCESS;
    return s->tree ? prov_resp_tree_created(s) : prov_resp_text_created(s);
}

static apr_status_t close_part(prov_resp_stream_t *s)
{
    apr_status_t rv;
    if (s->part_index < 0)
        return APR_SUCCESS;
    rv = s->tree ? prov_resp_tree_part_done(s) : prov_resp_text_part_done(s);
    s->n_parts++;
    s->text.len = 0;
    s->part_index = -1;
    return rv;
}

apr_status_t prov_resp_op_close_message(prov_resp_stream_t *s)
{
    apr_status_t rv;
    if (s->msg_index < 0)
        return APR_SUCCESS;
    if ((rv = close_part(s)) != APR_SUCCESS)
        return rv;
    rv = s->tree ? prov_resp_tree_msg_done(s) : prov_resp_text_msg_done(s);
    s->parts.len = 0;
    s->n_parts = 0;
    s->msg_index = -1;
    return rv;
}

apr_status_t prov_resp_op_text(prov_resp_stream_t *s, const char *t, apr_size_t n, int refusal)
{
    apr_status_t rv;
    if (s->msg_index < 0) {
        s->msg_index = s->n_items++;
        s->msg_id = prov_resp_item_id(s->resp_id, "msg", s->msg_index, s->p);
        s->parts.len = 0;
        s->n_parts = 0;
        s->part_index = -1;
        rv = s->tree ? prov_resp_tree_msg_added(s) : prov_resp_text_msg_added(s);
        if (rv != APR_SUCCESS)
            return rv;
    }
    if (s->part_index >= 0 && s->part_refusal != refusal
        && (rv = close_part(s)) != APR_SUCCESS)
        return rv;
    if (s->part_index < 0) {
        s->part_index = s->n_parts;
        s->part_refusal = refusal;
        rv = s->tree ? prov_resp_tree_part_added(s) : prov_resp_text_part_added(s);
        if (rv != APR_SUCCESS)
            return rv;
    }
    prov_jwrite_mem(&s->text, t, n);
    rv = s->tree ? prov_resp_tree_delta(s, t, n) : prov_resp_text_delta(s, t, n);
    if (rv == APR_SUCCESS)
        s->out_bytes += n;
    return rv;
}

prov_resp_call_t *prov_resp_op_call(prov_resp_stream_t *s, int idx)
{
    while (s->calls->nelts <= idx) {
        prov_resp_call_t *c = apr_array_push(s->calls);
        memset(c, 0, sizeof(*c));
        c->index = -1;
    }
    return &APR_ARRAY_IDX(s->calls, idx, prov_resp_call_t);
}

apr_status_t prov_resp_op_open_call(prov_resp_stream_t *s, prov_resp_call_t *c, const char *id,
                                    apr_size_t idn, const char *name, apr_size_t namen)
{
    const prov_resp_tool_t *t;
    apr_status_t rv;
    if ((rv = prov_resp_op_close_message(s)) != APR_SUCCESS)
        return rv;
    c->index = s->n_items++;
    c->id = prov_resp_item_id(s->resp_id, "fc", c->index, s->p);
    c->call_id = id ? apr_pstrmemdup(s->p, id, idn) : c->id;
    c->flat = name ? apr_pstrmemdup(s->p, name, namen) : "";
    t = prov_resp_tool_by_flat(s->req, c->flat);
    c->custom = t && t->custom;
    /* c->args stays zeroed: calls move when s->calls grows, so their
     * buffers are freed by the stream's cleanup, not one of their own */
    rv = s->tree ? prov_resp_tree_call_added(s, c) : prov_resp_text_call_added(s, c);
    if (rv == APR_SUCCESS)
        s->out_bytes += strlen(c->flat);
    return rv;
}

apr_status_t prov_resp_op_close_call(prov_resp_stream_t *s, prov_resp_call_t *c)
{
    if (c->index < 0)
        return APR_SUCCESS;
    return s->tree || c->custom ? prov_resp_tree_close_call(s, c)
                                : prov_resp_text_close_call(s, c);
}

apr_status_t prov_resp_op_args(prov_resp_stream_t *s, prov_resp_call_t *c, const char *a,
                               apr_size_t n)
{
    apr_status_t rv;
    if (!n)
        return APR_SUCCESS;
    prov_jwrite_mem(&c->args, a, n);
    if (c->custom)     /* its input is known only once the JSON arguments are whole */
        return APR_SUCCESS;
    rv = s->tree ? prov_resp_tree_args_delta(s, c, a, n) : prov_resp_text_args_delta(s, c, a, n);
    if (rv == APR_SUCCESS)
        s->out_bytes += n;
    return rv;
}

void prov_resp_item_keep(prov_resp_stream_t *s, int i, const char *json, apr_size_t len)
{
    prov_resp_span_t *sp;
    while (s->items->nelts <= i) {
        sp = apr_array_push(s->items);
        sp->p = NULL;
        sp->len = 0;
    }
    sp = &APR_ARRAY_IDX(s->items, i, prov_resp_span_t);
    sp->p = apr_pstrmemdup(s->p, json, len);
    sp->len = len;
}

void prov_resp_output_write(const prov_resp_stream_t *s, prov_jwrite_t *w)
{
    int i, first = 1;
    prov_jwrite_lit(w, "[");
    for (i = 0; i < s->items->nelts; i++) {
        const prov_resp_span_t *sp = &APR_ARRAY_IDX(s->items, i, prov_resp_span_t);
        if (!sp->p)
            continue;
        if (!first)
            prov_jwrite_lit(w, ",");
        prov_jwrite_mem(w, sp->p, sp->len);
        first = 0;
    }
    prov_jwrite_lit(w, "]");
}

void prov_resp_usage_take(prov_resp_stream_t *s, const prov_chat_usage_t *c, apr_status_t rv)
{
    if (rv != APR_SUCCESS) {
        s->usage_bad++;
        return;
    }
    prov_resp_usage_set(&s->usage, c);
    s->usage_reports++;
}

/* ---- the stream ------------------------------------------------------------- */

/* One gateway event, its data a slice of the fed bytes (not copied, not
 * NUL-terminated): both readers take it by length. */
static apr_status_t on_event(void *baton, const prov_sse_ev_t *ev)
{
    prov_resp_stream_t *s = baton;
    const char *data = ev->data;
    apr_size_t len = ev->len;
    apr_int64_t reports;
    apr_status_t rv;

    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        s->finished = 1;
        return APR_SUCCESS;
    }
    reports = s->usage_reports;
    if (!s->tree_only && prov_resp_fast_chunk(s, data, len, &rv))
        s->n_fast++;
    else {
        s->n_tree++;
        s->tree = 1;
        rv = prov_resp_tree_chunk(s, data, len);
        s->tree = s->tree_only;
    }
    /* a report counts the output of its own chunk and of those before */
    s->chunk_bytes = s->out_bytes;
    if (s->usage_reports != reports)
        s->usage_bytes = s->out_bytes;
    return rv;
}

/* The calls' argument buffers, when the stream's pool goes. */
static apr_status_t free_calls(void *data)
{
    prov_resp_stream_t *s = data;
    int i;
    for (i = 0; i < s->calls->nelts; i++)
        prov_jwrite_free(&APR_ARRAY_IDX(s->calls, i, prov_resp_call_t).args);
    return APR_SUCCESS;
}

prov_resp_stream_t *prov_resp_stream_create(const prov_resp_req_t *req, const char *resp_id,
                                            const char *public_id, apr_int64_t created_at,
                                            prov_resp_emit_fn *emit_fn, void *baton,
                                            apr_pool_t *p)
{
    prov_resp_stream_t *s = apr_pcalloc(p, sizeof(*s));
    s->req = req;
    s->resp_id = apr_pstrdup(p, resp_id);
    s->public_id = apr_pstrdup(p, public_id);
    s->created_at = created_at;
    s->emit = emit_fn;
    s->baton = baton;
    s->p = p;
    apr_pool_create(&s->scratch, p);
    s->parser = prov_sse_parser_create_ev(on_event, s, 4 * 1024 * 1024, p);
    s->items = apr_array_make(p, 4, sizeof(prov_resp_span_t));
    s->msg_index = -1;
    s->part_index = -1;
    s->calls = apr_array_make(p, 4, sizeof(prov_resp_call_t));
    prov_jwrite_init(&s->parts, p);
    prov_jwrite_init(&s->text, p);
    prov_jwrite_init(&s->ev, p);
    prov_jwrite_init(&s->dec, p);
    apr_pool_cleanup_register(p, s, free_calls, apr_pool_cleanup_null);
    return s;
}

void prov_resp_stream_set_out(prov_resp_stream_t *s, prov_sse_buf_t *out)
{
    s->out = out;
}

apr_status_t prov_resp_emit(prov_resp_stream_t *s, const char *event, apr_size_t len)
{
    return s->out ? prov_sse_put_bytes(s->out, event, len) : s->emit(s->baton, event, len);
}

void prov_resp_stream_tree_only(prov_resp_stream_t *s)
{
    s->tree_only = s->tree = 1;
}

void prov_resp_stream_paths(const prov_resp_stream_t *s, apr_int64_t *fast, apr_int64_t *tree)
{
    *fast = s->n_fast;
    *tree = s->n_tree;
}

apr_status_t prov_resp_stream_feed(prov_resp_stream_t *s, const char *buf, apr_size_t len)
{
    apr_pool_clear(s->scratch);
    return prov_sse_feed(s->parser, buf, len);
}

int prov_resp_stream_finished(const prov_resp_stream_t *s)
{
    return s->finished;
}

int prov_resp_stream_started(const prov_resp_stream_t *s)
{
    return s->seq > 0;
}

apr_int64_t prov_resp_stream_events(const prov_resp_stream_t *s)
{
    return s->seq;
}

const prov_gwerror_t *prov_resp_stream_error(const prov_resp_stream_t *s)
{
    return s->gw_failed ? &s->gw_error : NULL;
}

apr_status_t prov_resp_stream_tokens(const prov_resp_stream_t *s, prov_tokens_t *t)
{
    if (!s->usage.have)
        return APR_ENOENT;
    prov_tokens_split(t, s->usage.input, s->usage.output, s->usage.cached, s->usage.reasoning);
    return APR_SUCCESS;
}

void prov_resp_stream_delivery(const prov_resp_stream_t *s, prov_delivery_t *d)
{
    memset(d, 0, sizeof(*d));
    /* a report that more output followed is partial */
    if (prov_resp_stream_tokens(s, &d->reported) == APR_SUCCESS)
        d->usage = s->chunk_bytes > s->usage_bytes ? PROV_USAGE_PARTIAL : PROV_USAGE_FINAL;
    d->unreadable = s->usage_bad;
    /* without an out buffer, every event went through emit */
    d->output_bytes = s->out ? s->sent_bytes : s->out_bytes;
    d->queued_bytes = s->out_bytes - d->output_bytes;
    d->started = s->seq > 0;
}

void prov_resp_stream_written(prov_resp_stream_t *s)
{
    s->sent_bytes = s->out_bytes;
}

static apr_status_t end(prov_resp_stream_t *s, const prov_resp_end_t *e)
{
    return s->tree ? prov_resp_tree_end(s, e) : prov_resp_text_end(s, e);
}

apr_status_t prov_resp_stream_complete(prov_resp_stream_t *s, prov_micro_t charge)
{
    prov_resp_end_t e = { NULL, NULL, NULL, NULL, 1, 0 };
    apr_status_t rv;
    int i;

    apr_pool_clear(s->scratch);
    if ((rv = prov_resp_op_start(s)) != APR_SUCCESS
        || (rv = prov_resp_op_close_message(s)) != APR_SUCCESS)
        return rv;
    for (i = 0; i < s->calls->nelts; i++) {
        rv = prov_resp_op_close_call(s, &APR_ARRAY_IDX(s->calls, i, prov_resp_call_t));
        if (rv != APR_SUCCESS)
            return rv;
    }
    e.reason = prov_resp_incomplete_reason(s->finish_reason);
    e.type = e.reason ? "response.incomplete" : "response.completed";
    e.charge = charge;
    return end(s, &e);
}

apr_status_t prov_resp_stream_fail(prov_resp_stream_t *s, const char *code, const char *message,
                                   prov_micro_t charge)
{
    prov_resp_end_t e = { "response.failed", NULL, NULL, NULL, 0, 0 };
    apr_status_t rv;

    apr_pool_clear(s->scratch);
    if ((rv = prov_resp_op_start(s)) != APR_SUCCESS)
        return rv;
    e.code = code ? code : "";
    e.message = message ? message : "";
    e.usage = s->usage.have || charge >= 0;
    e.charge = charge;
    return end(s, &e);
}
