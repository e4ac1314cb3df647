/*
 * mockgw_anthropic.c — POST /v1/messages and /v1/messages/count_tokens of the
 * mock gateway (the native Anthropic Messages API).
 *
 * Owns the deterministic answer of the messages transport: which reply to give
 * (echo of the last user text, a tool_use of the first tool, or an echo of the
 * tool_result the last user message carries), the usage arithmetic
 * (input_tokens = 10 + bytes of text in system and messages / 4, output_tokens
 * = 20 capped by max_tokens, the greedy, bytetok, reasoning and zero-input
 * faults and the overrides applied), and the two encodings: one message
 * object, or the message_start ... message_stop SSE event sequence, with the
 * usage faults (malformed shapes, text after message_delta).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mockgw.h"

#define MGW_MAX_GREEDY_BYTES (16L << 20)    /* the cap of one greedy answer */

typedef struct {
    const char *model;
    unsigned long n;            /* id suffix */
    const char *tool_name;      /* a tool_use when not NULL */
    json_object *input;         /* the tool_use input (owned) */
    mgw_buf_t out;              /* the reply text, or the input as JSON */
    long input_tokens, output_tokens, cache_read, cache_creation;
    size_t piece;               /* streamed fragment size */
    const mgw_fault_t *f;
} msg_reply_t;

static bool is_type(json_object *o, const char *type)
{
    const char *t = mgw_json_str(o, "type");
    return t && strcmp(t, type) == 0;
}

/* Returns the first tool_result block of a content, or NULL. */
static json_object *first_tool_result(json_object *content)
{
    size_t n;

    if (!content || !json_object_is_type(content, json_type_array))
        return NULL;
    n = json_object_array_length(content);
    for (size_t i = 0; i < n; i++) {
        json_object *b = json_object_array_get_idx(content, i);
        if (is_type(b, "tool_result"))
            return b;
    }
    return NULL;
}

/* Returns the tool named on a "TOOL: <name>" line of text, if tools has it. */
static const char *named_tool(json_object *tools, const char *text)
{
    const char *line = strstr(text, "TOOL: ");
    size_t n = json_object_array_length(tools), len;

    if (!line)
        return NULL;
    line += 6;
    len = strcspn(line, " \t\r\n");
    for (size_t i = 0; i < n; i++) {
        const char *name = mgw_json_str(json_object_array_get_idx(tools, i), "name");
        if (name && strlen(name) == len && strncmp(name, line, len) == 0)
            return name;
    }
    return NULL;
}

/* Returns the name of the tool to use, or NULL for a text answer. */
static const char *pick_tool(json_object *body, const char *text)
{
    json_object *tools = mgw_json_get(body, "tools", json_type_array);
    json_object *choice = mgw_json_get(body, "tool_choice", json_type_object);
    const char *name;

    if (!tools || json_object_array_length(tools) == 0 || is_type(choice, "none"))
        return NULL;
    if (is_type(choice, "tool") && (name = mgw_json_str(choice, "name")))
        return name;
    if ((name = named_tool(tools, text)) != NULL)
        return name;
    return mgw_json_str(json_object_array_get_idx(tools, 0), "name");
}

/* Returns 10 + (bytes of text in system and messages) / 4, or with bytetok
 * the bytes of the whole request body. */
static long input_tokens(const mgw_ctx_t *x, json_object *messages)
{
    size_t bytes = 0, n = json_object_array_length(messages);
    json_object *content, *body = x->body;

    if (x->fault.bytetok)
        return (long)x->body_bytes;
    if (json_object_object_get_ex(body, "system", &content))
        bytes += mgw_content_bytes(content);
    for (size_t i = 0; i < n; i++)
        if (json_object_object_get_ex(json_object_array_get_idx(messages, i),
                                      "content", &content))
            bytes += mgw_content_bytes(content);
    return 10 + (long)(bytes / 4);
}

/* Chooses the reply (p->out, p->tool_name, p->input). */
static void plan_reply(msg_reply_t *p, json_object *body, json_object *messages)
{
    size_t n = json_object_array_length(messages);
    json_object *last_user = NULL, *content = NULL, *result;
    mgw_buf_t t = { 0 };

    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(messages, i);
        const char *role = mgw_json_str(m, "role");
        if (role && strcmp(role, "user") == 0)
            last_user = m;
    }
    if (last_user)
        json_object_object_get_ex(last_user, "content", &content);
    if ((result = first_tool_result(content)) != NULL) {
        json_object *rc;
        if (json_object_object_get_ex(result, "content", &rc))
            mgw_content_text(rc, &t);
        mgw_reply_text(&p->out, "tool said: ", t.p ? t.p : "", t.len);
    } else {
        mgw_content_text(content, &t);
        /* greedy answers text: its length is what it bills */
        p->tool_name = p->f->greedy >= 0 ? NULL : pick_tool(body, t.p ? t.p : "");
        if (p->tool_name) {
            p->input = mgw_args_from_text(t.p ? t.p : "");
            if (!p->input || !json_object_is_type(p->input, json_type_object)) {
                json_object_put(p->input);
                p->input = json_object_new_object();
            }
            mgw_buf_json(&p->out, p->input);
        } else {
            mgw_reply_text(&p->out, "mock reply to: ", t.p ? t.p : "", t.len);
        }
    }
    mgw_buf_free(&t);
}

/* The counts: the formulas, then the faults, then the overrides. greedy is
 * the cap greedy writes to, or -1. */
static void plan_usage(msg_reply_t *p, const mgw_ctx_t *x, json_object *messages,
                       long greedy)
{
    const mgw_usage_override_t *u = &x->usage;
    json_object *mt = mgw_json_get(x->body, "max_tokens", json_type_int);

    p->input_tokens = x->fault.zero_input ? 0 : input_tokens(x, messages);
    p->output_tokens = 20;
    if (mt && json_object_get_int64(mt) >= 0 && json_object_get_int64(mt) < 20)
        p->output_tokens = (long)json_object_get_int64(mt);
    if (greedy >= 0)
        p->output_tokens = greedy;      /* thinking included, within the cap */
    else if (x->fault.reasoning >= 0)
        p->output_tokens += x->fault.reasoning;
    p->cache_read = p->cache_creation = 0;
    if (u->prompt != MGW_USAGE_UNSET) p->input_tokens = u->prompt;
    if (u->completion != MGW_USAGE_UNSET) p->output_tokens = u->completion;
    if (u->cached != MGW_USAGE_UNSET) p->cache_read = u->cached;
    if (u->creation != MGW_USAGE_UNSET) p->cache_creation = u->creation;
}

static json_object *usage_json(const msg_reply_t *p, long output_tokens)
{
    json_object *u = json_object_new_object();

    mgw_jset(u, "input_tokens", json_object_new_int64(p->input_tokens));
    mgw_jset(u, "cache_creation_input_tokens",
             json_object_new_int64(p->cache_creation));
    mgw_jset(u, "cache_read_input_tokens", json_object_new_int64(p->cache_read));
    mgw_jset(u, "output_tokens", json_object_new_int64(output_tokens));
    return mgw_usage_shaped(p->f, u, false);
}

/* Returns the content block; a streamed one starts empty. */
static json_object *block(const msg_reply_t *p, bool empty)
{
    json_object *b = json_object_new_object();
    char id[64];

    if (p->tool_name) {
        snprintf(id, sizeof id, "toolu_mock_%lu", p->n);
        mgw_jset(b, "type", json_object_new_string("tool_use"));
        mgw_jset(b, "id", json_object_new_string(id));
        mgw_jset(b, "name", json_object_new_string(p->tool_name));
        mgw_jset(b, "input", empty ? json_object_new_object()
                                   : json_object_get(p->input));
    } else {
        mgw_jset(b, "type", json_object_new_string("text"));
        mgw_jset(b, "text", empty ? json_object_new_string("")
                 : json_object_new_string_len(p->out.p, (int)p->out.len));
    }
    return b;
}

/* Returns the message object; a streamed one (message_start) is empty. */
static json_object *message(const msg_reply_t *p, bool start)
{
    json_object *o = json_object_new_object(), *content = json_object_new_array();
    char id[64];

    snprintf(id, sizeof id, "msg_mock_%lu", p->n);
    mgw_jset(o, "id", json_object_new_string(id));
    mgw_jset(o, "type", json_object_new_string("message"));
    mgw_jset(o, "role", json_object_new_string("assistant"));
    mgw_jset(o, "model", json_object_new_string(p->model));
    if (!start)
        json_object_array_add(content, block(p, false));
    mgw_jset(o, "content", content);
    mgw_jset(o, "stop_reason", start ? NULL : json_object_new_string(
                 p->tool_name ? "tool_use" : "end_turn"));
    mgw_jset(o, "stop_sequence", NULL);
    if (!p->f->no_usage)
        mgw_jset(o, "usage", usage_json(p, start ? 1 : p->output_tokens));
    return o;
}

static json_object *event(const char *type)
{
    json_object *o = json_object_new_object();
    mgw_jset(o, "type", json_object_new_string(type));
    return o;
}

/* A content_block_delta of block 0: text, or the tool input's JSON. */
static json_object *delta(bool json, const char *s, size_t n)
{
    json_object *o = event("content_block_delta");
    json_object *d = event(json ? "input_json_delta" : "text_delta");

    mgw_jset(o, "index", json_object_new_int(0));
    mgw_jset(d, json ? "partial_json" : "text", json_object_new_string_len(s, (int)n));
    mgw_jset(o, "delta", d);
    return o;
}

static void stream_events(const msg_reply_t *p, mgw_events_t *e)
{
    json_object *o, *d;
    size_t off = 0;

    o = event("message_start");
    mgw_jset(o, "message", message(p, true));
    mgw_events_add(e, "message_start", o);

    o = event("content_block_start");
    mgw_jset(o, "index", json_object_new_int(0));
    mgw_jset(o, "content_block", block(p, true));
    mgw_events_add(e, "content_block_start", o);
    mgw_events_add(e, "ping", event("ping"));

    e->first_piece = e->n;
    while (off < p->out.len) {
        size_t n = mgw_utf8_piece(p->out.p + off, p->out.len - off, p->piece);
        mgw_events_add(e, "content_block_delta",
                       delta(p->tool_name != NULL, p->out.p + off, n));
        off += n;
    }
    e->npieces = e->n - e->first_piece;

    o = event("content_block_stop");
    mgw_jset(o, "index", json_object_new_int(0));
    mgw_events_add(e, "content_block_stop", o);

    o = event("message_delta");
    d = json_object_new_object();
    mgw_jset(d, "stop_reason",
             json_object_new_string(p->tool_name ? "tool_use" : "end_turn"));
    mgw_jset(d, "stop_sequence", NULL);
    mgw_jset(o, "delta", d);
    if (!p->f->no_usage) {
        d = json_object_new_object();
        mgw_jset(d, "output_tokens", json_object_new_int64(p->output_tokens));
        mgw_jset(o, "usage", mgw_usage_shaped(p->f, d, false));
    }
    mgw_events_add(e, "message_delta", o);
    if (p->f->after_delta) {
        mgw_buf_t late = { 0 };
        mgw_buf_puts(&late, "late");
        mgw_pad_to(&late, MGW_LATE_BYTES);
        mgw_events_add(e, "content_block_delta", delta(false, late.p, late.len));
        mgw_buf_free(&late);
    }
    mgw_events_add(e, "message_stop", event("message_stop"));
}

static int reply(mgw_ctx_t *x, msg_reply_t *p)
{
    json_object *stream = mgw_json_get(x->body, "stream", json_type_boolean);
    mgw_events_t e = { 0 };
    int ret;

    if (!stream || !json_object_get_boolean(stream))
        return mgw_send_json(x, 200, message(p, false));
    stream_events(p, &e);
    if (x->fault.kind == MGW_FAULT_ERROR_EVENT)
        mgw_events_fail(x, &e, MGW_FAMILY_ANTHROPIC);
    ret = mgw_http_stream(x->conn, &e, &x->fault);
    mgw_events_free(&e);
    return ret;
}

int mgw_anthropic_messages(mgw_ctx_t *x)
{
    json_object *messages = mgw_json_get(x->body, "messages", json_type_array);
    msg_reply_t p;
    long greedy = -1;
    int ret;

    memset(&p, 0, sizeof p);
    p.f = &x->fault;
    p.model = mgw_json_str(x->body, "model");
    if (!p.model)
        return mgw_send_anthropic_error(x, 400, "invalid_request_error",
                                        "model: field required", NULL);
    if (!messages)
        return mgw_send_anthropic_error(x, 400, "invalid_request_error",
                                        "messages: must be an array", NULL);
    if (x->fault.greedy >= 0)
        greedy = mgw_greedy_cap(&x->fault, x->body, false);
    if (greedy > MGW_MAX_GREEDY_BYTES)
        return mgw_send_anthropic_error(x, 400, "invalid_request_error",
                                        "mockgw greedy: the output cap passes 16 MiB",
                                        NULL);
    p.n = mgw_next_id();
    p.piece = mgw_piece_bytes(&x->fault, greedy);
    plan_reply(&p, x->body, messages);
    plan_usage(&p, x, messages, greedy);
    if (greedy >= 0)
        mgw_pad_to(&p.out, (size_t)greedy);
    else if (!p.tool_name && x->fault.pieces > 0)
        mgw_pad_pieces(&p.out, x->fault.pieces);
    ret = reply(x, &p);
    json_object_put(p.input);
    mgw_buf_free(&p.out);
    return ret;
}

int mgw_anthropic_count_tokens(mgw_ctx_t *x)
{
    json_object *messages = mgw_json_get(x->body, "messages", json_type_array);
    json_object *o;

    if (!messages)
        return mgw_send_anthropic_error(x, 400, "invalid_request_error",
                                        "messages: must be an array", NULL);
    o = json_object_new_object();
    mgw_jset(o, "input_tokens", json_object_new_int64(
                 x->usage.prompt != MGW_USAGE_UNSET ? x->usage.prompt
                                                    : input_tokens(x, messages)));
    return mgw_send_json(x, 200, o);
}
