/* prov_responses_ops.c: the Responses stream's operations, what a reader
 * (prov_responses_fast.c, prov_responses_jsonc.c) does with a chunk: the
 * response started once, the message item and its text or refusal parts
 * opened, filled and closed, tool calls opened, given arguments and closed,
 * with the item numbering and the output counted. Each event is written by
 * the stream's emitter (s->em: prov_resp_emitter_t, as text or as json-c
 * trees, the same bytes); a custom tool call's end always by the tree
 * emitter, which reads its input from the arguments with json-c. */
#include <string.h>
#include "prov_responses_stream_int.h"

apr_status_t prov_resp_op_start(prov_resp_stream_t *s)
{
    if (s->seq > 0)
        return APR_SUCCESS;
    return s->em->created(s);
}

static apr_status_t close_part(prov_resp_stream_t *s)
{
    apr_status_t rv;
    if (s->part_index < 0)
        return APR_SUCCESS;
    rv = s->em->part_done(s);
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
    rv = s->em->msg_done(s);
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
        if ((rv = s->em->msg_added(s)) != APR_SUCCESS)
            return rv;
    }
    if (s->part_index >= 0 && s->part_refusal != refusal
        && (rv = close_part(s)) != APR_SUCCESS)
        return rv;
    if (s->part_index < 0) {
        s->part_index = s->n_parts;
        s->part_refusal = refusal;
        if ((rv = s->em->part_added(s)) != APR_SUCCESS)
            return rv;
    }
    prov_jwrite_mem(&s->text, t, n);
    rv = s->em->delta(s, t, n);
    if (rv == APR_SUCCESS)
        s->out_bytes += n;
    return rv;
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
    rv = s->em->call_added(s, c);
    if (rv == APR_SUCCESS)
        s->out_bytes += strlen(c->flat);
    return rv;
}

apr_status_t prov_resp_op_close_call(prov_resp_stream_t *s, prov_resp_call_t *c)
{
    if (c->index < 0)
        return APR_SUCCESS;
    return (c->custom ? &prov_resp_tree_emitter : s->em)->close_call(s, c);
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
    rv = s->em->args_delta(s, c, a, n);
    if (rv == APR_SUCCESS)
        s->out_bytes += n;
    return rv;
}
