/*
 * mockgw_openai.c — POST /v1/chat/completions of the mock gateway (OpenAI
 * Chat Completions).
 *
 * Owns the deterministic answer of the chat transport: which reply to give
 * (echo of the last user message, a call of the first tool or of the tool a
 * "TOOL: name" line names, or an echo of the last tool result), the "n"
 * choices, the usage arithmetic (prompt = 10 + content bytes / 4,
 * completion = n x 20 capped by max_tokens / max_completion_tokens, the
 * greedy, bytetok, reasoning and zero-input faults and the overrides
 * applied), and the two encodings: one chat.completion object, or the
 * chat.completion.chunk SSE stream ending with "data: [DONE]", with the
 * usage faults (malformed shapes, early usage, text after the usage).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mockgw.h"

#define MGW_MAX_CHOICES 128                 /* OpenAI's bound on "n" */
#define MGW_MAX_GREEDY_BYTES (16L << 20)    /* n x cap of one greedy answer */

typedef struct {
    const char *model;
    unsigned long n;            /* id suffix */
    int64_t created;
    const char *tool_name;      /* a tool call when not NULL */
    mgw_buf_t out;              /* each choice's reply text, or the arguments JSON */
    long prompt, completion, cached, reasoning;
    long choices;               /* the request's "n" */
    size_t piece;               /* streamed fragment size */
    const mgw_fault_t *f;
} chat_reply_t;

/* The tool a "TOOL: <name>" line of the last user text asks for: the name
 * of that tool in tools (its storage), "" for "TOOL: none", NULL when the
 * text has no such line or names no tool in the list. */
static const char *tool_from_text(json_object *tools, const char *text)
{
    const char *line = text;

    while (line && *line) {
        const char *p = line, *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line), n;
        while (*p == ' ' || *p == '\t')
            p++;
        if ((size_t)(p - line) + 5 <= len && strncmp(p, "TOOL:", 5) == 0) {
            p += 5;
            while (*p == ' ')
                p++;
            n = len - (size_t)(p - line);
            while (n && (p[n - 1] == ' ' || p[n - 1] == '\r'))
                n--;
            if (n == 4 && strncmp(p, "none", 4) == 0)
                return "";
            for (size_t i = 0; i < json_object_array_length(tools); i++) {
                json_object *t = json_object_array_get_idx(tools, i);
                const char *name = mgw_json_str(mgw_json_get(t, "function", json_type_object),
                                                "name");
                if (!name)
                    name = mgw_json_str(t, "name");
                if (name && strlen(name) == n && strncmp(name, p, n) == 0)
                    return name;
            }
            return NULL;
        }
        line = end ? end + 1 : NULL;
    }
    return NULL;
}

/* Returns the name of the tool to call, or NULL for a text answer. */
static const char *pick_tool(json_object *body, const char *text)
{
    json_object *tools = mgw_json_get(body, "tools", json_type_array);
    json_object *choice, *first;
    const char *name;

    if (!tools || json_object_array_length(tools) == 0)
        return NULL;
    if (json_object_object_get_ex(body, "tool_choice", &choice) && choice) {
        if (json_object_is_type(choice, json_type_string)
            && strcmp(json_object_get_string(choice), "none") == 0)
            return NULL;
        name = mgw_json_str(mgw_json_get(choice, "function", json_type_object),
                            "name");
        if (name)
            return name;
    }
    if ((name = tool_from_text(tools, text)))
        return *name ? name : NULL;
    first = json_object_array_get_idx(tools, 0);
    name = mgw_json_str(mgw_json_get(first, "function", json_type_object), "name");
    return name ? name : mgw_json_str(first, "name");
}

/* Returns the smallest non-negative integer among the members, or -1. */
static long max_tokens(json_object *body)
{
    static const char *const keys[] = { "max_tokens", "max_completion_tokens" };
    long cap = -1;

    for (size_t i = 0; i < 2; i++) {
        json_object *v = mgw_json_get(body, keys[i], json_type_int);
        if (v && json_object_get_int64(v) >= 0
            && (cap < 0 || json_object_get_int64(v) < cap))
            cap = (long)json_object_get_int64(v);
    }
    return cap;
}

/* Chooses the reply (p->out, p->tool_name). Returns the bytes of all message
 * contents. */
static size_t plan_reply(chat_reply_t *p, json_object *body, json_object *messages)
{
    size_t bytes = 0, n = json_object_array_length(messages);
    json_object *last = NULL, *last_user = NULL, *content;
    const char *role = NULL;
    mgw_buf_t t = { 0 };

    for (size_t i = 0; i < n; i++) {
        json_object *m = json_object_array_get_idx(messages, i);
        bytes += json_object_object_get_ex(m, "content", &content)
            ? mgw_content_bytes(content) : 0;
        role = mgw_json_str(m, "role");
        if (role && strcmp(role, "user") == 0)
            last_user = m;
        last = m;
    }
    role = mgw_json_str(last, "role");
    if (role && strcmp(role, "tool") == 0) {
        if (json_object_object_get_ex(last, "content", &content))
            mgw_content_text(content, &t);
        mgw_reply_text(&p->out, "tool said: ", t.p ? t.p : "", t.len);
        mgw_buf_free(&t);
        return bytes;
    }
    if (last_user && json_object_object_get_ex(last_user, "content", &content))
        mgw_content_text(content, &t);
    /* greedy answers text: its length is what it bills */
    p->tool_name = p->f->greedy >= 0 ? NULL : pick_tool(body, t.p ? t.p : "");
    if (p->tool_name) {
        json_object *args = mgw_args_from_text(t.p ? t.p : "");
        if (args)
            mgw_buf_json(&p->out, args);
        else
            mgw_buf_puts(&p->out, "{}");
        json_object_put(args);
    } else {
        mgw_reply_text(&p->out, "mock reply to: ", t.p ? t.p : "", t.len);
    }
    mgw_buf_free(&t);
    return bytes;
}

/* The counts: the formulas, then the faults, then the overrides. greedy is
 * the cap greedy writes to, or -1. */
static void plan_usage(chat_reply_t *p, const mgw_ctx_t *x, size_t bytes, long greedy)
{
    const mgw_usage_override_t *u = &x->usage;
    long cap = max_tokens(x->body);
    long one = greedy >= 0 ? greedy : cap >= 0 && cap < 20 ? cap : 20;

    p->prompt = x->fault.bytetok ? (long)x->body_bytes : 10 + (long)(bytes / 4);
    if (x->fault.zero_input)
        p->prompt = 0;
    p->completion = one * p->choices;
    p->cached = p->reasoning = 0;
    if (x->fault.reasoning >= 0 && greedy >= 0) {
        /* within the cap, as OpenAI's max_completion_tokens counts it */
        p->reasoning = x->fault.reasoning < p->completion ? x->fault.reasoning
                                                          : p->completion;
    } else if (x->fault.reasoning >= 0) {
        p->reasoning = x->fault.reasoning;
        p->completion += p->reasoning;
    }
    if (u->prompt != MGW_USAGE_UNSET) p->prompt = u->prompt;
    if (u->completion != MGW_USAGE_UNSET) p->completion = u->completion;
    if (u->cached != MGW_USAGE_UNSET) p->cached = u->cached;
    if (u->reasoning != MGW_USAGE_UNSET) p->reasoning = u->reasoning;
}

/* The usage object with these completion and reasoning counts, in the shape
 * the usage-* faults ask for (NULL for usage-null). */
static json_object *usage_json(const chat_reply_t *p, long completion, long reasoning)
{
    json_object *u = json_object_new_object();
    json_object *pd = json_object_new_object(), *cd = json_object_new_object();

    mgw_jset(u, "prompt_tokens", json_object_new_int64(p->prompt));
    mgw_jset(u, "completion_tokens", json_object_new_int64(completion));
    mgw_jset(u, "total_tokens", json_object_new_int64(mgw_sum_sat(p->prompt, completion)));
    mgw_jset(pd, "cached_tokens", json_object_new_int64(p->cached));
    mgw_jset(u, "prompt_tokens_details", pd);
    mgw_jset(cd, "reasoning_tokens", json_object_new_int64(reasoning));
    mgw_jset(u, "completion_tokens_details", cd);
    return mgw_usage_shaped(p->f, u, true);
}

static json_object *envelope(const chat_reply_t *p, const char *object)
{
    json_object *o = json_object_new_object();
    char id[64];

    snprintf(id, sizeof id, "chatcmpl-mock-%lu", p->n);
    mgw_jset(o, "id", json_object_new_string(id));
    mgw_jset(o, "object", json_object_new_string(object));
    mgw_jset(o, "created", json_object_new_int64(p->created));
    mgw_jset(o, "model", json_object_new_string(p->model));
    return o;
}

/* Returns {["index":0,]"id","type":"function","function":{"name","arguments"}};
 * a streamed tool call carries its index. */
static json_object *tool_call(const chat_reply_t *p, const char *args, size_t len,
                              bool indexed)
{
    json_object *tc = json_object_new_object(), *fn = json_object_new_object();
    char id[64];

    if (indexed)
        mgw_jset(tc, "index", json_object_new_int(0));
    snprintf(id, sizeof id, "call_mock_%lu", p->n);
    mgw_jset(tc, "id", json_object_new_string(id));
    mgw_jset(tc, "type", json_object_new_string("function"));
    mgw_jset(fn, "name", json_object_new_string(p->tool_name));
    mgw_jset(fn, "arguments", json_object_new_string_len(args, (int)len));
    mgw_jset(tc, "function", fn);
    return tc;
}

static json_object *completion(const chat_reply_t *p)
{
    json_object *o = envelope(p, "chat.completion");
    json_object *choices = json_object_new_array();

    for (long i = 0; i < p->choices; i++) {
        json_object *c = json_object_new_object(), *msg = json_object_new_object();
        mgw_jset(msg, "role", json_object_new_string("assistant"));
        if (p->tool_name) {
            json_object *calls = json_object_new_array();
            json_object_array_add(calls, tool_call(p, p->out.p, p->out.len, false));
            mgw_jset(msg, "content", NULL);
            mgw_jset(msg, "tool_calls", calls);
        } else {
            mgw_jset(msg, "content", json_object_new_string_len(p->out.p,
                                                                (int)p->out.len));
        }
        mgw_jset(c, "index", json_object_new_int((int)i));
        mgw_jset(c, "message", msg);
        mgw_jset(c, "finish_reason",
                 json_object_new_string(p->tool_name ? "tool_calls" : "stop"));
        json_object_array_add(choices, c);
    }
    mgw_jset(o, "choices", choices);
    if (!p->f->no_usage)
        mgw_jset(o, "usage", usage_json(p, p->completion, p->reasoning));
    return o;
}

/* Returns a chat.completion.chunk with one choice; takes ownership of delta. */
static json_object *chunk(const chat_reply_t *p, long index, json_object *delta,
                          const char *finish)
{
    json_object *o = envelope(p, "chat.completion.chunk");
    json_object *choices = json_object_new_array(), *c = json_object_new_object();

    mgw_jset(c, "index", json_object_new_int((int)index));
    mgw_jset(c, "delta", delta);
    mgw_jset(c, "finish_reason", finish ? json_object_new_string(finish) : NULL);
    json_object_array_add(choices, c);
    mgw_jset(o, "choices", choices);
    return o;
}

/* The chunks of one choice: the role delta (carrying early, if not NULL, as
 * its usage), the pieces, the finish. */
static void choice_events(const chat_reply_t *p, long index, json_object *early,
                          mgw_events_t *e)
{
    json_object *d = json_object_new_object(), *o;
    const char *s = p->out.p;
    size_t len = p->out.len, off = 0, first = e->n + 1;

    mgw_jset(d, "role", json_object_new_string("assistant"));
    if (p->tool_name) {
        json_object *calls = json_object_new_array();
        json_object_array_add(calls, tool_call(p, "", 0, true));
        mgw_jset(d, "content", NULL);
        mgw_jset(d, "tool_calls", calls);
    } else {
        mgw_jset(d, "content", json_object_new_string(""));
    }
    o = chunk(p, index, d, NULL);
    if (early)
        mgw_jset(o, "usage", early);
    mgw_events_add(e, NULL, o);

    while (off < len) {
        size_t n = mgw_utf8_piece(s + off, len - off, p->piece);
        json_object *piece = json_object_new_string_len(s + off, (int)n);
        d = json_object_new_object();
        if (p->tool_name) {
            json_object *calls = json_object_new_array();
            json_object *tc = json_object_new_object(), *fn = json_object_new_object();
            mgw_jset(tc, "index", json_object_new_int(0));
            mgw_jset(fn, "arguments", piece);
            mgw_jset(tc, "function", fn);
            json_object_array_add(calls, tc);
            mgw_jset(d, "tool_calls", calls);
        } else {
            mgw_jset(d, "content", piece);
        }
        mgw_events_add(e, NULL, chunk(p, index, d, NULL));
        off += n;
    }
    if (index == 0) {
        e->first_piece = first;
        e->npieces = e->n - first;
    }
    mgw_events_add(e, NULL, chunk(p, index, json_object_new_object(),
                                  p->tool_name ? "tool_calls" : "stop"));
}

static void stream_events(const chat_reply_t *p, bool include_usage,
                          mgw_events_t *e)
{
    const mgw_fault_t *f = p->f;

    for (long i = 0; i < p->choices; i++)
        choice_events(p, i, i == 0 && f->early_usage && !f->no_usage
                      ? usage_json(p, 0, 0) : NULL, e);
    if (include_usage && !f->no_usage && !f->early_usage) {
        json_object *o = envelope(p, "chat.completion.chunk");
        mgw_jset(o, "choices", json_object_new_array());
        mgw_jset(o, "usage", usage_json(p, p->completion, p->reasoning));
        mgw_events_add(e, NULL, o);
    }
    if (f->after_delta) {
        json_object *d = json_object_new_object();
        mgw_buf_t late = { 0 };
        mgw_buf_puts(&late, "late");
        mgw_pad_to(&late, MGW_LATE_BYTES);
        mgw_jset(d, "content", json_object_new_string_len(late.p, (int)late.len));
        mgw_events_add(e, NULL, chunk(p, 0, d, NULL));
        mgw_buf_free(&late);
    }
    mgw_events_add_raw(e, "data: [DONE]\n\n");
}

/* Reads "n" into p->choices and the greedy cap into *greedy (-1: off).
 * Returns NULL, or the message of a 400. */
static const char *plan_choices(chat_reply_t *p, const mgw_ctx_t *x, long *greedy)
{
    json_object *n;

    p->choices = 1;
    if (json_object_object_get_ex(x->body, "n", &n) && n) {
        if (!json_object_is_type(n, json_type_int) || json_object_get_int64(n) < 1
            || json_object_get_int64(n) > MGW_MAX_CHOICES)
            return "n must be an integer from 1 to 128";
        p->choices = (long)json_object_get_int64(n);
    }
    *greedy = x->fault.greedy >= 0 ? mgw_greedy_cap(&x->fault, x->body, true) : -1;
    if (*greedy > MGW_MAX_GREEDY_BYTES / p->choices)
        return "mockgw greedy: n x the output cap passes 16 MiB";
    return NULL;
}

static int reply(mgw_ctx_t *x, chat_reply_t *p)
{
    json_object *stream = mgw_json_get(x->body, "stream", json_type_boolean);
    json_object *so = mgw_json_get(x->body, "stream_options", json_type_object);
    json_object *iu = mgw_json_get(so, "include_usage", json_type_boolean);
    mgw_events_t e = { 0 };
    int ret;

    if (!stream || !json_object_get_boolean(stream))
        return mgw_send_json(x, 200, completion(p));
    stream_events(p, iu && json_object_get_boolean(iu), &e);
    if (x->fault.kind == MGW_FAULT_ERROR_EVENT)
        mgw_events_fail(x, &e, MGW_FAMILY_OPENAI);
    ret = mgw_http_stream(x->conn, &e, &x->fault);
    mgw_events_free(&e);
    return ret;
}

int mgw_openai_chat(mgw_ctx_t *x)
{
    json_object *messages = mgw_json_get(x->body, "messages", json_type_array);
    chat_reply_t p;
    const char *bad;
    long greedy;
    int ret;

    memset(&p, 0, sizeof p);
    p.f = &x->fault;
    p.model = mgw_json_str(x->body, "model");
    if (!p.model)
        return mgw_send_openai_error(x, 400, "invalid_request_error",
                                     "invalid_request", "model is required", NULL);
    if (!messages)
        return mgw_send_openai_error(x, 400, "invalid_request_error",
                                     "invalid_request",
                                     "messages must be an array", NULL);
    if ((bad = plan_choices(&p, x, &greedy)) != NULL)
        return mgw_send_openai_error(x, 400, "invalid_request_error",
                                     "invalid_request", bad, NULL);
    p.n = mgw_next_id();
    p.created = (int64_t)time(NULL);
    p.piece = mgw_piece_bytes(&x->fault, greedy);
    plan_usage(&p, x, plan_reply(&p, x->body, messages), greedy);
    if (greedy >= 0)
        mgw_pad_to(&p.out, (size_t)greedy);
    else if (!p.tool_name && x->fault.pieces > 0)
        mgw_pad_pieces(&p.out, x->fault.pieces);
    ret = reply(x, &p);
    mgw_buf_free(&p.out);
    return ret;
}
