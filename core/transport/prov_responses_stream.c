/* prov_responses_stream.c: the Responses transport's streamed answer,
 * without httpd: the gateway's chat.completion.chunk stream translated into
 * the response.* event sequence with sequence numbers (response.created,
 * the items and their parts opened, filled by deltas and closed, ending in
 * response.completed, .incomplete or .failed), the output text counted as it
 * is sent, and the usage and the gateway's error chunk kept for the
 * settlement and the log. The response object's pieces come from
 * prov_responses_answer.c. */
#include <stdlib.h>
#include <string.h>
#include "prov_responses_int.h"
#include "prov_sse.h"

static json_object *jstr(const char *s)
{
    return json_object_new_string(s ? s : "");
}

typedef struct sbuf_t {
    char *p;
    apr_size_t len, cap;
} sbuf_t;

typedef struct call_t {
    int index;                /* output_index */
    const char *id;           /* item id */
    const char *call_id, *flat;
    sbuf_t args;
    int custom;
} call_t;

struct prov_resp_stream_t {
    const prov_resp_req_t *req;
    const char *resp_id, *public_id;
    apr_int64_t created_at;
    prov_resp_emit_fn *emit;
    void *baton;
    apr_pool_t *p, *scratch;
    prov_sse_parser_t *parser;
    apr_int64_t seq;
    int finished;
    const char *finish_reason;
    prov_resp_usage_t usage;
    int n_items;
    json_object *items;       /* finished items by output_index (owned by p) */
    /* the open message item: msg_index < 0 when none */
    int msg_index, part_index, part_refusal;
    const char *msg_id;
    json_object *parts;       /* finished parts of the open message */
    sbuf_t text;
    apr_array_header_t *calls;  /* call_t by the gateway's tool-call index */
    prov_gwerror_t gw_error;    /* an error chunk of the gateway's, when gw_failed */
    int gw_failed;
    apr_uint64_t out_bytes;     /* output text the client was sent */
};

static apr_status_t sbuf_free(void *data)
{
    free(((sbuf_t *)data)->p);
    return APR_SUCCESS;
}

static void sbuf_init(sbuf_t *b, apr_pool_t *p)
{
    memset(b, 0, sizeof(*b));
    apr_pool_cleanup_register(p, b, sbuf_free, apr_pool_cleanup_null);
}

static void sbuf_add(sbuf_t *b, const char *s, apr_size_t n)
{
    if (b->len + n + 1 > b->cap) {
        apr_size_t cap = b->cap ? b->cap * 2 : 256;
        char *np;
        while (cap < b->len + n + 1)
            cap *= 2;
        if (!(np = realloc(b->p, cap)))
            return;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

/* Emits one event: type and sequence_number are added to ev, which is put. */
static apr_status_t emit(prov_resp_stream_t *s, const char *type, json_object *ev)
{
    const char *data, *enc;
    json_object *full = json_object_new_object();

    /* type and sequence_number first, for readers that peek. */
    json_object_object_add(full, "type", jstr(type));
    json_object_object_add(full, "sequence_number", json_object_new_int64(s->seq++));
    {
        json_object_object_foreach(ev, key, val)
            json_object_object_add(full, key, json_object_get(val));
    }
    json_object_put(ev);
    data = json_object_to_json_string_ext(full, JSON_C_TO_STRING_PLAIN
                                                | JSON_C_TO_STRING_NOSLASHESCAPE);
    enc = prov_sse_encode(type, data, s->scratch);
    json_object_put(full);
    return s->emit(s->baton, enc, strlen(enc));
}

/* Emits an event that brings the client n bytes of output text. */
static apr_status_t emit_counted(prov_resp_stream_t *s, const char *type, json_object *ev,
                                 apr_size_t n)
{
    apr_status_t rv = emit(s, type, ev);
    if (rv == APR_SUCCESS)
        s->out_bytes += n;
    return rv;
}

static json_object *ev_new(void)
{
    return json_object_new_object();
}

static void ev_int(json_object *ev, const char *k, apr_int64_t v)
{
    json_object_object_add(ev, k, json_object_new_int64(v));
}

static apr_status_t start(prov_resp_stream_t *s)
{
    apr_status_t rv;
    json_object *ev;
    if (s->seq > 0)
        return APR_SUCCESS;
    ev = ev_new();
    json_object_object_add(ev, "response", prov_resp_object(s->req, s->resp_id, s->public_id,
                                                            s->created_at, "in_progress", NULL));
    if ((rv = emit(s, "response.created", json_object_get(ev))) != APR_SUCCESS) {
        json_object_put(ev);
        return rv;
    }
    return emit(s, "response.in_progress", ev);
}

static json_object *part_event(prov_resp_stream_t *s)
{
    json_object *ev = ev_new();
    json_object_object_add(ev, "item_id", jstr(s->msg_id));
    ev_int(ev, "output_index", s->msg_index);
    ev_int(ev, "content_index", s->part_index);
    return ev;
}

static apr_status_t close_part(prov_resp_stream_t *s)
{
    json_object *ev;
    apr_status_t rv;
    int r = s->part_refusal;
    if (s->part_index < 0)
        return APR_SUCCESS;
    ev = part_event(s);
    json_object_object_add(ev, r ? "refusal" : "text",
                           json_object_new_string_len(s->text.p ? s->text.p : "",
                                                      (int)s->text.len));
    if (!r)
        json_object_object_add(ev, "logprobs", json_object_new_array());
    if ((rv = emit(s, r ? "response.refusal.done" : "response.output_text.done", ev))
        != APR_SUCCESS)
        return rv;
    ev = part_event(s);
    json_object_object_add(ev, "part", prov_resp_text_part(s->text.p, s->text.len, r));
    json_object_array_add(s->parts, prov_resp_text_part(s->text.p, s->text.len, r));
    s->text.len = 0;
    s->part_index = -1;
    return emit(s, "response.content_part.done", ev);
}

static apr_status_t close_message(prov_resp_stream_t *s)
{
    json_object *ev, *item;
    apr_status_t rv;
    if (s->msg_index < 0)
        return APR_SUCCESS;
    if ((rv = close_part(s)) != APR_SUCCESS)
        return rv;
    item = prov_resp_message_item(s->msg_id, "completed", s->parts);
    s->parts = NULL;
    json_object_array_put_idx(s->items, (size_t)s->msg_index, json_object_get(item));
    ev = ev_new();
    ev_int(ev, "output_index", s->msg_index);
    json_object_object_add(ev, "item", item);
    s->msg_index = -1;
    return emit(s, "response.output_item.done", ev);
}

/* Text or refusal text from the gateway: opens the item and part it needs. */
static apr_status_t add_text(prov_resp_stream_t *s, const char *t, apr_size_t n, int refusal)
{
    json_object *ev;
    apr_status_t rv;
    if (s->msg_index < 0) {
        s->msg_index = s->n_items++;
        s->msg_id = prov_resp_item_id(s->resp_id, "msg", s->msg_index, s->p);
        s->parts = json_object_new_array();
        s->part_index = -1;
        ev = ev_new();
        ev_int(ev, "output_index", s->msg_index);
        json_object_object_add(ev, "item", prov_resp_message_item(s->msg_id, "in_progress", NULL));
        if ((rv = emit(s, "response.output_item.added", ev)) != APR_SUCCESS)
            return rv;
    }
    if (s->part_index >= 0 && s->part_refusal != refusal
        && (rv = close_part(s)) != APR_SUCCESS)
        return rv;
    if (s->part_index < 0) {
        s->part_index = (int)json_object_array_length(s->parts);
        s->part_refusal = refusal;
        ev = part_event(s);
        json_object_object_add(ev, "part", prov_resp_text_part("", 0, refusal));
        if ((rv = emit(s, "response.content_part.added", ev)) != APR_SUCCESS)
            return rv;
    }
    sbuf_add(&s->text, t, n);
    ev = part_event(s);
    json_object_object_add(ev, "delta", json_object_new_string_len(t, (int)n));
    if (!refusal)
        json_object_object_add(ev, "logprobs", json_object_new_array());
    return emit_counted(s, refusal ? "response.refusal.delta" : "response.output_text.delta",
                        ev, n);
}

static json_object *call_event(const call_t *c)
{
    json_object *ev = ev_new();
    json_object_object_add(ev, "item_id", jstr(c->id));
    ev_int(ev, "output_index", c->index);
    return ev;
}

static apr_status_t add_call_delta(prov_resp_stream_t *s, json_object *tc)
{
    json_object *fn = prov_json_get(tc, "function", json_type_object);
    json_object *jidx = prov_json_get(tc, "index", json_type_int);
    json_object *args = prov_json_get(fn, "arguments", json_type_string);
    int idx = jidx ? (int)json_object_get_int64(jidx) : 0;
    call_t *c;
    apr_status_t rv;

    if (idx < 0 || idx > 1024)
        return APR_EINVAL;
    while (s->calls->nelts <= idx) {
        c = apr_array_push(s->calls);
        memset(c, 0, sizeof(*c));
        c->index = -1;
    }
    c = &APR_ARRAY_IDX(s->calls, idx, call_t);
    if (c->index < 0) {
        json_object *ev;
        const char *name = prov_json_get_str(fn, "name");
        const char *id = prov_json_get_str(tc, "id");
        if ((rv = close_message(s)) != APR_SUCCESS)
            return rv;
        c->index = s->n_items++;
        c->id = prov_resp_item_id(s->resp_id, "fc", c->index, s->p);
        c->call_id = apr_pstrdup(s->p, id ? id : c->id);
        c->flat = apr_pstrdup(s->p, name ? name : "");
        /* c->args stays zeroed: calls move when s->calls grows, so their
         * buffers are freed by the stream's cleanup, not one of their own */
        ev = ev_new();
        ev_int(ev, "output_index", c->index);
        json_object_object_add(ev, "item", prov_resp_call_item(s->req, c->id, "in_progress",
                                                               c->call_id, c->flat, "", 0,
                                                               &c->custom));
        if ((rv = emit_counted(s, "response.output_item.added", ev, strlen(c->flat)))
            != APR_SUCCESS)
            return rv;
    }
    if (!args || !json_object_get_string_len(args))
        return APR_SUCCESS;
    sbuf_add(&c->args, json_object_get_string(args), (apr_size_t)json_object_get_string_len(args));
    if (c->custom)     /* its input is known only once the JSON arguments are whole */
        return APR_SUCCESS;
    {
        json_object *ev = call_event(c);
        json_object_object_add(ev, "delta", json_object_get(args));
        return emit_counted(s, "response.function_call_arguments.delta", ev,
                            (apr_size_t)json_object_get_string_len(args));
    }
}

static apr_status_t close_call(prov_resp_stream_t *s, call_t *c)
{
    const char *args = c->args.p ? c->args.p : "";
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
        if ((rv = emit_counted(s, "response.custom_tool_call_input.delta", ev,
                               (apr_size_t)json_object_get_string_len(input))) != APR_SUCCESS)
            goto out;
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
    json_object_array_put_idx(s->items, (size_t)c->index, json_object_get(item));
    ev = ev_new();
    ev_int(ev, "output_index", c->index);
    json_object_object_add(ev, "item", json_object_get(item));
    c->index = -1;
    rv = emit(s, "response.output_item.done", ev);
out:
    json_object_put(item);
    return rv;
}

static apr_status_t on_chunk(prov_resp_stream_t *s, json_object *chunk)
{
    json_object *choices, *choice, *delta, *calls, *v;
    const char *finish;
    apr_status_t rv;
    size_t i;

    if (!json_object_is_type(chunk, json_type_object))
        return APR_EINVAL;
    if (prov_json_get(chunk, "error", json_type_object)) {
        /* Kept for the log; the client never gets the gateway's words. */
        const char *raw = json_object_to_json_string_ext(chunk, JSON_C_TO_STRING_PLAIN);
        prov_gwerror_read(&s->gw_error, 0, raw, strlen(raw), s->p);
        s->gw_failed = 1;
        return APR_EINVAL;
    }
    if ((rv = start(s)) != APR_SUCCESS)
        return rv;
    prov_resp_usage_read(&s->usage, prov_json_get(chunk, "usage", json_type_object));
    /* a chunk may come without choices (usage alone): json-c aborts the
     * process when asked for an element of what is not an array */
    choices = prov_json_get(chunk, "choices", json_type_array);
    choice = choices ? json_object_array_get_idx(choices, 0) : NULL;
    if (!choice)
        return APR_SUCCESS;
    delta = prov_json_get(choice, "delta", json_type_object);
    if ((v = prov_json_get(delta, "content", json_type_string)) && json_object_get_string_len(v)
        && (rv = add_text(s, json_object_get_string(v), (apr_size_t)json_object_get_string_len(v),
                          0)) != APR_SUCCESS)
        return rv;
    if ((v = prov_json_get(delta, "refusal", json_type_string)) && json_object_get_string_len(v)
        && (rv = add_text(s, json_object_get_string(v), (apr_size_t)json_object_get_string_len(v),
                          1)) != APR_SUCCESS)
        return rv;
    calls = prov_json_get(delta, "tool_calls", json_type_array);
    for (i = 0; calls && i < json_object_array_length(calls); i++)
        if ((rv = add_call_delta(s, json_object_array_get_idx(calls, i))) != APR_SUCCESS)
            return rv;
    if ((finish = prov_json_get_str(choice, "finish_reason"))) {
        s->finish_reason = apr_pstrdup(s->p, finish);
        s->finished = 1;
    }
    return APR_SUCCESS;
}

static apr_status_t on_event(void *baton, const char *name, const char *data, apr_size_t len)
{
    prov_resp_stream_t *s = baton;
    const char *perr = NULL;
    json_object *chunk;
    apr_status_t rv;

    (void)name;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        s->finished = 1;
        return APR_SUCCESS;
    }
    chunk = prov_json_parse_raw(data, len, &perr);
    if (!chunk)
        return APR_EINVAL;
    rv = on_chunk(s, chunk);
    json_object_put(chunk);
    return rv;
}

/* The parts of a message still open and the calls' argument buffers, when
 * the stream's pool goes. */
static apr_status_t put_parts(void *data)
{
    prov_resp_stream_t *s = data;
    int i;
    json_object_put(s->parts);
    s->parts = NULL;
    for (i = 0; i < s->calls->nelts; i++) {
        call_t *c = &APR_ARRAY_IDX(s->calls, i, call_t);
        free(c->args.p);
        c->args.p = NULL;
    }
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
    s->parser = prov_sse_parser_create(on_event, s, 4 * 1024 * 1024, p);
    s->items = prov_json_own(json_object_new_array(), p);
    s->msg_index = -1;
    s->part_index = -1;
    s->calls = apr_array_make(p, 4, sizeof(call_t));
    sbuf_init(&s->text, p);
    apr_pool_cleanup_register(p, s, put_parts, apr_pool_cleanup_null);
    return s;
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
    if (prov_resp_stream_tokens(s, &d->reported) == APR_SUCCESS)
        d->usage = PROV_USAGE_FINAL;
    d->output_bytes = s->out_bytes;
    d->started = s->seq > 0;
}

/* The finished items, in output order. */
static json_object *finished_output(prov_resp_stream_t *s)
{
    json_object *out = json_object_new_array();
    size_t i;
    for (i = 0; i < json_object_array_length(s->items); i++) {
        json_object *it = json_object_array_get_idx(s->items, i);
        if (it)
            json_object_array_add(out, json_object_get(it));
    }
    return out;
}

apr_status_t prov_resp_stream_complete(prov_resp_stream_t *s, prov_micro_t charge)
{
    const char *reason = prov_resp_incomplete_reason(s->finish_reason);
    json_object *resp, *ev;
    apr_status_t rv;
    int i;

    apr_pool_clear(s->scratch);
    if ((rv = start(s)) != APR_SUCCESS || (rv = close_message(s)) != APR_SUCCESS)
        return rv;
    for (i = 0; i < s->calls->nelts; i++)
        if ((rv = close_call(s, &APR_ARRAY_IDX(s->calls, i, call_t))) != APR_SUCCESS)
            return rv;
    resp = prov_resp_object(s->req, s->resp_id, s->public_id, s->created_at, "completed",
                            finished_output(s));
    if (reason)
        prov_resp_set_incomplete(resp, reason);
    json_object_object_add(resp, "usage", prov_resp_usage_json(&s->usage, charge));
    ev = ev_new();
    json_object_object_add(ev, "response", resp);
    return emit(s, reason ? "response.incomplete" : "response.completed", ev);
}

apr_status_t prov_resp_stream_fail(prov_resp_stream_t *s, const char *code, const char *message,
                                   prov_micro_t charge)
{
    json_object *resp, *ev, *e = json_object_new_object();
    apr_status_t rv;

    apr_pool_clear(s->scratch);
    if ((rv = start(s)) != APR_SUCCESS) {
        json_object_put(e);
        return rv;
    }
    resp = prov_resp_object(s->req, s->resp_id, s->public_id, s->created_at, "failed",
                            finished_output(s));
    json_object_object_add(e, "code", jstr(code));
    json_object_object_add(e, "message", jstr(message));
    json_object_object_add(resp, "error", e);
    if (s->usage.have || charge >= 0)
        json_object_object_add(resp, "usage", prov_resp_usage_json(&s->usage, charge));
    ev = ev_new();
    json_object_object_add(ev, "response", resp);
    return emit(s, "response.failed", ev);
}

