/* prov_responses_tree.c: the Responses stream's tree emitter
 * (prov_resp_tree_emitter): each event built as a json-c tree and printed,
 * as the translator always did, for the chunks json-c read
 * (prov_responses_jsonc.c); also the end of every custom tool call (its
 * input is read from the arguments by prov_resp_call_item, json-c). The
 * finished parts and items are kept as JSON text (the state both emitters
 * share, prov_responses_state.c) and go into a tree as values that print
 * that text. With prov_resp_stream_tree_only, every event goes this way:
 * the reference that the text emitter is compared with. */
#include <string.h>
#include "prov_responses_stream_int.h"

static json_object *jstr(const char *s)
{
    return json_object_new_string(s ? s : "");
}

static const char *print(json_object *o)
{
    return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN
                                             | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* Emits one event: type and sequence_number are added to ev, which is put. */
static apr_status_t emit(prov_resp_stream_t *s, const char *type, json_object *ev)
{
    const char *enc;
    json_object *full = json_object_new_object();

    /* type and sequence_number first, for readers that peek. */
    json_object_object_add(full, "type", jstr(type));
    json_object_object_add(full, "sequence_number", json_object_new_int64(s->seq++));
    {
        json_object_object_foreach(ev, key, val)
            json_object_object_add(full, key, json_object_get(val));
    }
    json_object_put(ev);
    enc = prov_sse_encode(type, print(full), s->scratch);
    json_object_put(full);
    return prov_resp_emit(s, enc, strlen(enc));
}

static int raw_print(json_object *o, struct printbuf *pb, int level, int flags)
{
    const prov_resp_span_t *sp = json_object_get_userdata(o);
    (void)level;
    (void)flags;
    return printbuf_memappend(pb, sp->p, (int)sp->len);
}

/* A value that prints as the JSON text given (kept parts and items). */
static json_object *raw(prov_resp_stream_t *s, const char *json, apr_size_t len)
{
    json_object *o = json_object_new_array();
    prov_resp_span_t *sp = apr_palloc(s->scratch, sizeof(*sp));
    sp->p = apr_pstrmemdup(s->scratch, json, len);
    sp->len = len;
    json_object_set_serializer(o, raw_print, sp, NULL);
    return o;
}

static json_object *output(prov_resp_stream_t *s)
{
    prov_jwrite_t w;
    json_object *o;
    memset(&w, 0, sizeof(w));
    prov_resp_output_write(s, &w);
    o = raw(s, w.p ? w.p : "[]", w.p ? w.len : 2);
    prov_jwrite_free(&w);
    return o;
}

static void ev_int(json_object *ev, const char *k, apr_int64_t v)
{
    json_object_object_add(ev, k, json_object_new_int64(v));
}

static apr_status_t tree_created(prov_resp_stream_t *s)
{
    apr_status_t rv;
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "response", prov_resp_object(s->req, s->resp_id, s->public_id,
                                                            s->created_at, "in_progress", NULL));
    if ((rv = emit(s, "response.created", json_object_get(ev))) != APR_SUCCESS) {
        json_object_put(ev);
        return rv;
    }
    return emit(s, "response.in_progress", ev);
}

static apr_status_t tree_msg_added(prov_resp_stream_t *s)
{
    json_object *ev = json_object_new_object();
    ev_int(ev, "output_index", s->msg_index);
    json_object_object_add(ev, "item", prov_resp_message_item(s->msg_id, "in_progress", NULL));
    return emit(s, "response.output_item.added", ev);
}

static json_object *part_event(prov_resp_stream_t *s)
{
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "item_id", jstr(s->msg_id));
    ev_int(ev, "output_index", s->msg_index);
    ev_int(ev, "content_index", s->part_index);
    return ev;
}

static apr_status_t tree_part_added(prov_resp_stream_t *s)
{
    json_object *ev = part_event(s);
    json_object_object_add(ev, "part", prov_resp_text_part("", 0, s->part_refusal));
    return emit(s, "response.content_part.added", ev);
}

static apr_status_t tree_delta(prov_resp_stream_t *s, const char *t, apr_size_t n)
{
    json_object *ev = part_event(s);
    json_object_object_add(ev, "delta", json_object_new_string_len(t, (int)n));
    if (!s->part_refusal)
        json_object_object_add(ev, "logprobs", json_object_new_array());
    return emit(s, s->part_refusal ? "response.refusal.delta" : "response.output_text.delta",
                ev);
}

static apr_status_t tree_part_done(prov_resp_stream_t *s)
{
    int r = s->part_refusal;
    const char *text = s->text.p ? s->text.p : "", *json;
    json_object *ev, *part = prov_resp_text_part(text, s->text.len, r);
    apr_status_t rv;

    if (s->n_parts)
        prov_jwrite_lit(&s->parts, ",");
    json = print(part);
    prov_jwrite_mem(&s->parts, json, strlen(json));
    ev = part_event(s);
    json_object_object_add(ev, r ? "refusal" : "text",
                           json_object_new_string_len(text, (int)s->text.len));
    if (!r)
        json_object_object_add(ev, "logprobs", json_object_new_array());
    if ((rv = emit(s, r ? "response.refusal.done" : "response.output_text.done", ev))
        != APR_SUCCESS) {
        json_object_put(part);
        return rv;
    }
    ev = part_event(s);
    json_object_object_add(ev, "part", part);
    return emit(s, "response.content_part.done", ev);
}

static apr_status_t tree_msg_done(prov_resp_stream_t *s)
{
    json_object *ev = json_object_new_object(), *item, *content;
    const char *text;

    content = json_object_new_array();
    json_object_array_add(content, raw(s, s->parts.p ? s->parts.p : "", s->parts.len));
    item = prov_resp_message_item(s->msg_id, "completed", content);
    text = print(item);
    prov_resp_item_keep(s, s->msg_index, text, strlen(text));
    ev_int(ev, "output_index", s->msg_index);
    json_object_object_add(ev, "item", item);
    return emit(s, "response.output_item.done", ev);
}

static json_object *call_event(const prov_resp_call_t *c)
{
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "item_id", jstr(c->id));
    ev_int(ev, "output_index", c->index);
    return ev;
}

static apr_status_t tree_args_delta(prov_resp_stream_t *s, const prov_resp_call_t *c,
                                   const char *a, apr_size_t n)
{
    json_object *ev = call_event(c);
    json_object_object_add(ev, "delta", json_object_new_string_len(a, (int)n));
    return emit(s, "response.function_call_arguments.delta", ev);
}

static apr_status_t tree_call_added(prov_resp_stream_t *s, const prov_resp_call_t *c)
{
    json_object *ev = json_object_new_object();
    int custom;
    ev_int(ev, "output_index", c->index);
    json_object_object_add(ev, "item", prov_resp_call_item(s->req, c->id, "in_progress",
                                                           c->call_id, c->flat, "", 0, &custom));
    return emit(s, "response.output_item.added", ev);
}

static apr_status_t tree_close_call(prov_resp_stream_t *s, prov_resp_call_t *c)
{
    const char *args = c->args.p ? c->args.p : "", *text;
    json_object *ev, *item;
    apr_status_t rv;
    int custom;

    if (c->index < 0)
        return APR_SUCCESS;
    item = prov_resp_call_item(s->req, c->id, "completed", c->call_id, c->flat, args,
                               c->args.len, &custom);
    if (custom) {
        json_object *input = json_object_object_get(item, "input");
        ev = call_event(c);
        json_object_object_add(ev, "delta", json_object_get(input));
        rv = emit(s, "response.custom_tool_call_input.delta", ev);
        if (rv != APR_SUCCESS)
            goto out;
        s->out_bytes += (apr_size_t)json_object_get_string_len(input);
        ev = call_event(c);
        json_object_object_add(ev, "input", json_object_get(input));
        rv = emit(s, "response.custom_tool_call_input.done", ev);
    }
    else {
        ev = call_event(c);
        json_object_object_add(ev, "name", json_object_get(json_object_object_get(item, "name")));
        json_object_object_add(ev, "arguments", json_object_new_string_len(args,
                                                                           (int)c->args.len));
        rv = emit(s, "response.function_call_arguments.done", ev);
    }
    if (rv != APR_SUCCESS)
        goto out;
    text = print(item);
    prov_resp_item_keep(s, c->index, text, strlen(text));
    ev = json_object_new_object();
    ev_int(ev, "output_index", c->index);
    json_object_object_add(ev, "item", json_object_get(item));
    c->index = -1;
    rv = emit(s, "response.output_item.done", ev);
out:
    json_object_put(item);
    return rv;
}

static apr_status_t tree_end(prov_resp_stream_t *s, const prov_resp_end_t *e)
{
    json_object *resp, *ev;
    resp = prov_resp_object(s->req, s->resp_id, s->public_id, s->created_at,
                            e->code ? "failed" : "completed", output(s));
    if (e->reason)
        prov_resp_set_incomplete(resp, e->reason);
    if (e->code) {
        json_object *err = json_object_new_object();
        json_object_object_add(err, "code", jstr(e->code));
        json_object_object_add(err, "message", jstr(e->message));
        json_object_object_add(resp, "error", err);
    }
    if (e->usage)
        json_object_object_add(resp, "usage", prov_resp_usage_json(&s->usage, e->charge));
    ev = json_object_new_object();
    json_object_object_add(ev, "response", resp);
    return emit(s, e->type, ev);
}

const prov_resp_emitter_t prov_resp_tree_emitter = {
    "tree",
    tree_created, tree_msg_added, tree_part_added, tree_delta, tree_part_done,
    tree_msg_done, tree_call_added, tree_args_delta, tree_close_call, tree_end,
};
