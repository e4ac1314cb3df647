/* prov_responses_events.c: the Responses stream's text emitter
 * (prov_resp_text_emitter), the fast path's: each event's SSE frame and
 * JSON go straight into the stream's output (prov_resp_stream_set_out: the
 * module's buffer, sent after each read of the gateway) or else into one
 * reused buffer handed to the emitter, in the key order and the bytes that
 * the tree emitter (prov_responses_tree.c) prints. A part's text is escaped
 * once, into the message's kept parts, and copied from there into the
 * events that repeat it. The response object here and prov_resp_object
 * (prov_responses_answer.c) describe the same object:
 * tests/fuzz/fuzz_responses_stream.c checks that they agree. */
#include <string.h>
#include "prov_responses_stream_int.h"
#include "prov_money.h"

/* Room in the stream's output for the event being written at its end
 * (out->len stays at the event's start until the event is done; the bytes
 * written so far count while the buffer moves). */
static int grow_out(prov_jwrite_t *w, apr_size_t n)
{
    prov_sse_buf_t *out = w->owner;
    apr_size_t start = out->len;
    apr_status_t rv;
    out->len = w->len;
    rv = prov_sse_buf_reserve(out, n);
    out->len = start;
    if (rv != APR_SUCCESS)
        return 0;
    w->p = out->data;
    w->cap = out->cap;
    return 1;
}

/* "event: TYPE\ndata: {"type":"TYPE","sequence_number":N", written at the
 * end of the stream's output when it has one, else in the reused buffer */
static prov_jwrite_t *begin(prov_resp_stream_t *s, const char *type, apr_size_t n)
{
    prov_jwrite_t *w = &s->ev;
    if (s->out) {
        w = &s->ow;
        w->p = s->out->data;
        w->len = s->out->len;
        w->cap = s->out->cap;
        w->grow = grow_out;
        w->owner = s->out;
    }
    else {
        w->len = 0;
    }
    w->oom = 0;
    prov_jwrite_lit(w, "event: ");
    prov_jwrite_mem(w, type, n);
    prov_jwrite_lit(w, "\ndata: {\"type\":\"");
    prov_jwrite_mem(w, type, n);
    prov_jwrite_lit(w, "\",\"sequence_number\":");
    prov_jwrite_int(w, s->seq++);
    return w;
}

#define BEGIN(s, type) begin((s), (type), sizeof(type) - 1)

static prov_jwrite_t *begin_str(prov_resp_stream_t *s, const char *type)
{
    return begin(s, type, strlen(type));
}

/* The JSON holds no line break (strings are escaped): one data line. The
 * event joins the output's, or goes to emit. */
static apr_status_t end(prov_resp_stream_t *s)
{
    prov_jwrite_t *w = s->out ? &s->ow : &s->ev;
    prov_jwrite_lit(w, "}\n\n");
    if (w->oom)
        return APR_ENOMEM;
    if (!s->out)
        return s->emit(s->baton, w->p, w->len);
    s->out->len = w->len;
    return APR_SUCCESS;
}

/* ,"item_id":..,"output_index":..,"content_index":.. of the open part */
static void part_ref(prov_resp_stream_t *s, prov_jwrite_t *w)
{
    prov_jwrite_lit(w, ",\"item_id\":");
    prov_jwrite_cstr(w, s->msg_id);
    prov_jwrite_lit(w, ",\"output_index\":");
    prov_jwrite_int(w, s->msg_index);
    prov_jwrite_lit(w, ",\"content_index\":");
    prov_jwrite_int(w, s->part_index);
}

static apr_int64_t shown(apr_int64_t n)
{
    return n > 0 ? n : 0;
}

static void usage(prov_jwrite_t *w, const prov_resp_usage_t *u, prov_micro_t charge)
{
    prov_jwrite_lit(w, "{\"input_tokens\":");
    prov_jwrite_int(w, shown(u->input));
    prov_jwrite_lit(w, ",\"input_tokens_details\":{\"cached_tokens\":");
    prov_jwrite_int(w, shown(u->cached));
    prov_jwrite_lit(w, "},\"output_tokens\":");
    prov_jwrite_int(w, shown(u->output));
    prov_jwrite_lit(w, ",\"output_tokens_details\":{\"reasoning_tokens\":");
    prov_jwrite_int(w, shown(u->reasoning));
    prov_jwrite_lit(w, "},\"total_tokens\":");
    prov_jwrite_int(w, prov_i64_add_sat(shown(u->input), shown(u->output)));
    if (charge >= 0) {
        char money[PROV_MONEY_BUFSIZE];
        prov_jwrite_lit(w, ",\"credits\":");
        prov_jwrite_mem(w, money, strlen(prov_money_format_buf(money, charge)));
    }
    prov_jwrite_lit(w, "}");
}

/* The response object; e NULL while it is in progress (no output yet). */
static void response(prov_resp_stream_t *s, prov_jwrite_t *w, const prov_resp_end_t *e)
{
    const prov_resp_req_t *req = s->req;
    prov_jwrite_lit(w, "{\"id\":");
    prov_jwrite_cstr(w, s->resp_id);
    prov_jwrite_lit(w, ",\"object\":\"response\",\"created_at\":");
    prov_jwrite_int(w, s->created_at);
    prov_jwrite_lit(w, ",\"status\":");
    prov_jwrite_cstr(w, !e ? "in_progress" : e->code ? "failed" : e->reason ? "incomplete"
                        : "completed");
    prov_jwrite_lit(w, ",\"background\":false,\"error\":");
    if (e && e->code) {
        prov_jwrite_lit(w, "{\"code\":");
        prov_jwrite_cstr(w, e->code);
        prov_jwrite_lit(w, ",\"message\":");
        prov_jwrite_cstr(w, e->message);
        prov_jwrite_lit(w, "}");
    }
    else
        prov_jwrite_lit(w, "null");
    prov_jwrite_lit(w, ",\"incomplete_details\":");
    if (e && e->reason) {
        prov_jwrite_lit(w, "{\"reason\":");
        prov_jwrite_cstr(w, e->reason);
        prov_jwrite_lit(w, "}");
    }
    else
        prov_jwrite_lit(w, "null");
    prov_jwrite_lit(w, ",\"instructions\":");
    if (req->instructions)
        prov_jwrite_cstr(w, req->instructions);
    else
        prov_jwrite_lit(w, "null");
    prov_jwrite_lit(w, ",\"max_output_tokens\":");
    if (req->max_output_tokens > 0)
        prov_jwrite_int(w, req->max_output_tokens);
    else
        prov_jwrite_lit(w, "null");
    prov_jwrite_lit(w, ",\"model\":");
    prov_jwrite_cstr(w, s->public_id);
    prov_jwrite_lit(w, ",\"output\":");
    if (e)
        prov_resp_output_write(s, w);
    else
        prov_jwrite_lit(w, "[]");
    if (req->parallel_tool_calls)
        prov_jwrite_lit(w, ",\"parallel_tool_calls\":true");
    else
        prov_jwrite_lit(w, ",\"parallel_tool_calls\":false");
    prov_jwrite_lit(w, ",\"previous_response_id\":null,\"store\":false,"
                       "\"text\":{\"format\":{\"type\":\"text\"}},\"usage\":");
    if (e && e->usage)
        usage(w, &s->usage, e->charge);
    else
        prov_jwrite_lit(w, "null");
    prov_jwrite_lit(w, "}");
}

static apr_status_t text_created(prov_resp_stream_t *s)
{
    prov_jwrite_t *w = BEGIN(s, "response.created");
    apr_status_t rv;
    prov_jwrite_lit(w, ",\"response\":");
    response(s, w, NULL);
    if ((rv = end(s)) != APR_SUCCESS)
        return rv;
    w = BEGIN(s, "response.in_progress");
    prov_jwrite_lit(w, ",\"response\":");
    response(s, w, NULL);
    return end(s);
}

/* ,"output_index":N,"item": and the message item without its content's
 * closing "]}"; returns where the item begins in w. */
static apr_size_t message_head(prov_resp_stream_t *s, prov_jwrite_t *w, int done)
{
    apr_size_t at;
    prov_jwrite_lit(w, ",\"output_index\":");
    prov_jwrite_int(w, s->msg_index);
    prov_jwrite_lit(w, ",\"item\":");
    at = w->len;
    prov_jwrite_lit(w, "{\"id\":");
    prov_jwrite_cstr(w, s->msg_id);
    if (done)
        prov_jwrite_lit(w, ",\"type\":\"message\",\"status\":\"completed\","
                           "\"role\":\"assistant\",\"content\":[");
    else
        prov_jwrite_lit(w, ",\"type\":\"message\",\"status\":\"in_progress\","
                           "\"role\":\"assistant\",\"content\":[");
    return at;
}

static apr_status_t text_msg_added(prov_resp_stream_t *s)
{
    prov_jwrite_t *w = BEGIN(s, "response.output_item.added");
    message_head(s, w, 0);
    prov_jwrite_lit(w, "]}");
    return end(s);
}

static apr_status_t text_part_added(prov_resp_stream_t *s)
{
    prov_jwrite_t *w = BEGIN(s, "response.content_part.added");
    part_ref(s, w);
    if (s->part_refusal)
        prov_jwrite_lit(w, ",\"part\":{\"type\":\"refusal\",\"refusal\":\"\"}");
    else
        prov_jwrite_lit(w, ",\"part\":{\"type\":\"output_text\",\"text\":\"\","
                           "\"annotations\":[],\"logprobs\":[]}");
    return end(s);
}

static apr_status_t text_delta(prov_resp_stream_t *s, const char *t, apr_size_t n)
{
    prov_jwrite_t *w = s->part_refusal ? BEGIN(s, "response.refusal.delta")
                                       : BEGIN(s, "response.output_text.delta");
    part_ref(s, w);
    prov_jwrite_lit(w, ",\"delta\":");
    prov_jwrite_str(w, t, n);
    if (!s->part_refusal)
        prov_jwrite_lit(w, ",\"logprobs\":[]");
    return end(s);
}

static apr_status_t text_part_done(prov_resp_stream_t *s)
{
    prov_jwrite_t *pw = &s->parts, *w;
    apr_size_t part_at, text_at, text_end;
    apr_status_t rv;
    int r = s->part_refusal;

    if (s->n_parts)
        prov_jwrite_lit(pw, ",");
    part_at = pw->len;
    if (r)
        prov_jwrite_lit(pw, "{\"type\":\"refusal\",\"refusal\":");
    else
        prov_jwrite_lit(pw, "{\"type\":\"output_text\",\"text\":");
    text_at = pw->len;
    prov_jwrite_str(pw, s->text.p ? s->text.p : "", s->text.len);
    text_end = pw->len;
    if (!r)
        prov_jwrite_lit(pw, ",\"annotations\":[],\"logprobs\":[]");
    prov_jwrite_lit(pw, "}");
    if (pw->oom)
        return APR_ENOMEM;
    w = r ? BEGIN(s, "response.refusal.done") : BEGIN(s, "response.output_text.done");
    part_ref(s, w);
    if (r)
        prov_jwrite_lit(w, ",\"refusal\":");
    else
        prov_jwrite_lit(w, ",\"text\":");
    prov_jwrite_mem(w, pw->p + text_at, text_end - text_at);
    if (!r)
        prov_jwrite_lit(w, ",\"logprobs\":[]");
    if ((rv = end(s)) != APR_SUCCESS)
        return rv;
    w = BEGIN(s, "response.content_part.done");
    part_ref(s, w);
    prov_jwrite_lit(w, ",\"part\":");
    prov_jwrite_mem(w, pw->p + part_at, pw->len - part_at);
    return end(s);
}

static apr_status_t text_msg_done(prov_resp_stream_t *s)
{
    prov_jwrite_t *w = BEGIN(s, "response.output_item.done");
    apr_size_t item_at = message_head(s, w, 1);
    prov_jwrite_mem(w, s->parts.p ? s->parts.p : "", s->parts.len);
    prov_jwrite_lit(w, "]}");
    if (w->oom)
        return APR_ENOMEM;
    prov_resp_item_keep(s, s->msg_index, w->p + item_at, w->len - item_at);
    return end(s);
}

/* A call's item as prov_resp_call_item makes it: in progress (empty
 * arguments or input), or a function call's completed with args (JSON
 * text, escaped) as its arguments. Returns where it begins in w. */
static apr_size_t call_item(prov_resp_stream_t *s, prov_jwrite_t *w, const prov_resp_call_t *c,
                            const char *args, apr_size_t n)
{
    const prov_resp_tool_t *t = prov_resp_tool_by_flat(s->req, c->flat);
    apr_size_t at = w->len;
    prov_jwrite_lit(w, "{\"id\":");
    prov_jwrite_cstr(w, c->id);
    if (c->custom)
        prov_jwrite_lit(w, ",\"type\":\"custom_tool_call\"");
    else
        prov_jwrite_lit(w, ",\"type\":\"function_call\"");
    if (args)
        prov_jwrite_lit(w, ",\"status\":\"completed\",\"call_id\":");
    else
        prov_jwrite_lit(w, ",\"status\":\"in_progress\",\"call_id\":");
    prov_jwrite_cstr(w, c->call_id);
    prov_jwrite_lit(w, ",\"name\":");
    prov_jwrite_cstr(w, t ? t->name : c->flat);
    if (t && t->ns) {
        prov_jwrite_lit(w, ",\"namespace\":");
        prov_jwrite_cstr(w, t->ns);
    }
    if (c->custom)
        prov_jwrite_lit(w, ",\"input\":\"\"}");
    else if (!args)
        prov_jwrite_lit(w, ",\"arguments\":\"\"}");
    else {
        prov_jwrite_lit(w, ",\"arguments\":");
        prov_jwrite_mem(w, args, n);
        prov_jwrite_lit(w, "}");
    }
    return at;
}

static apr_status_t text_call_added(prov_resp_stream_t *s, const prov_resp_call_t *c)
{
    prov_jwrite_t *w = BEGIN(s, "response.output_item.added");
    prov_jwrite_lit(w, ",\"output_index\":");
    prov_jwrite_int(w, c->index);
    prov_jwrite_lit(w, ",\"item\":");
    call_item(s, w, c, NULL, 0);
    return end(s);
}

/* ,"item_id":..,"output_index":.. of call c */
static void call_ref(prov_jwrite_t *w, const prov_resp_call_t *c)
{
    prov_jwrite_lit(w, ",\"item_id\":");
    prov_jwrite_cstr(w, c->id);
    prov_jwrite_lit(w, ",\"output_index\":");
    prov_jwrite_int(w, c->index);
}

static apr_status_t text_close_call(prov_resp_stream_t *s, prov_resp_call_t *c)
{
    const prov_resp_tool_t *t = prov_resp_tool_by_flat(s->req, c->flat);
    prov_jwrite_t *a = &s->dec, *w;
    apr_size_t at;
    apr_status_t rv;

    /* the arguments escaped once, for both events */
    a->len = 0;
    prov_jwrite_str(a, c->args.p ? c->args.p : "", c->args.len);
    if (a->oom)
        return APR_ENOMEM;
    w = BEGIN(s, "response.function_call_arguments.done");
    call_ref(w, c);
    prov_jwrite_lit(w, ",\"name\":");
    prov_jwrite_cstr(w, t ? t->name : c->flat);
    prov_jwrite_lit(w, ",\"arguments\":");
    prov_jwrite_mem(w, a->p, a->len);
    if ((rv = end(s)) != APR_SUCCESS)
        return rv;
    w = BEGIN(s, "response.output_item.done");
    prov_jwrite_lit(w, ",\"output_index\":");
    prov_jwrite_int(w, c->index);
    prov_jwrite_lit(w, ",\"item\":");
    at = call_item(s, w, c, a->p, a->len);
    if (w->oom)
        return APR_ENOMEM;
    prov_resp_item_keep(s, c->index, w->p + at, w->len - at);
    c->index = -1;
    return end(s);
}

static apr_status_t text_args_delta(prov_resp_stream_t *s, const prov_resp_call_t *c,
                                   const char *a, apr_size_t n)
{
    prov_jwrite_t *w = BEGIN(s, "response.function_call_arguments.delta");
    call_ref(w, c);
    prov_jwrite_lit(w, ",\"delta\":");
    prov_jwrite_str(w, a, n);
    return end(s);
}

static apr_status_t text_end(prov_resp_stream_t *s, const prov_resp_end_t *e)
{
    prov_jwrite_t *w = begin_str(s, e->type);
    prov_jwrite_lit(w, ",\"response\":");
    response(s, w, e);
    return end(s);
}

const prov_resp_emitter_t prov_resp_text_emitter = {
    "text",
    text_created, text_msg_added, text_part_added, text_delta, text_part_done,
    text_msg_done, text_call_added, text_args_delta, text_close_call, text_end,
};
