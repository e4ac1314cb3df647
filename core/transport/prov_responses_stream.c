/* prov_responses_stream.c: the Responses transport's streamed answer,
 * without httpd: the gateway's chat.completion.chunk stream translated into
 * the response.* event sequence with sequence numbers (response.created,
 * the items and their parts opened, filled by deltas and closed, ending in
 * response.completed, .incomplete or .failed), the output text counted as it
 * is sent, and the usage and the gateway's error chunk kept for the
 * settlement and the log. This file is the stream's face: it makes the
 * state, feeds the SSE parser, and for each gateway event picks the reader
 * and the emitter: the scanner and events written as text
 * (prov_responses_fast.c, prov_resp_text_emitter) unless the scanner does
 * not plainly recognise the chunk: then json-c reads it and builds its
 * events (prov_responses_jsonc.c, prov_resp_tree_emitter), as before; the
 * bytes are the same. It is the top of the files' call order
 * (prov_responses_stream_int.h): it calls them, none calls it. */
#include <stdlib.h>
#include <string.h>
#include "prov_responses_stream_int.h"

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
        /* a chunk json-c read has its events built by json-c */
        s->n_tree++;
        s->em = &prov_resp_tree_emitter;
        rv = prov_resp_jsonc_chunk(s, data, len);
        s->em = s->tree_only ? &prov_resp_tree_emitter : &prov_resp_text_emitter;
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
    s->em = &prov_resp_text_emitter;
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

void prov_resp_stream_tree_only(prov_resp_stream_t *s)
{
    s->tree_only = 1;
    s->em = &prov_resp_tree_emitter;
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
    return s->em->end(s, &e);
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
    return s->em->end(s, &e);
}
