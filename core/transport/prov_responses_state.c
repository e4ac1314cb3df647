/* prov_responses_state.c: the Responses stream's state that both emitters
 * (prov_responses_events.c, prov_responses_tree.c) and both readers call
 * down into, and that calls nothing of theirs: an encoded event handed on
 * (into the module's out buffer, or to the emit callback), the finished
 * items kept as JSON text and written back as the response's output, the
 * gateway's usage reports taken, and the tool calls by the gateway's index.
 * The state itself is prov_resp_stream_t (prov_responses_stream_int.h). */
#include <string.h>
#include "prov_responses_stream_int.h"

apr_status_t prov_resp_emit(prov_resp_stream_t *s, const char *event, apr_size_t len)
{
    return s->out ? prov_sse_put_bytes(s->out, event, len) : s->emit(s->baton, event, len);
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

prov_resp_call_t *prov_resp_call_at(prov_resp_stream_t *s, int idx)
{
    while (s->calls->nelts <= idx) {
        prov_resp_call_t *c = apr_array_push(s->calls);
        memset(c, 0, sizeof(*c));
        c->index = -1;
    }
    return &APR_ARRAY_IDX(s->calls, idx, prov_resp_call_t);
}
