/* prov_responses_answer.c: the Responses transport's answer, without httpd:
 * the gateway's chat completion turned into a response object (message,
 * function_call and custom_tool_call items with the caller's own names back,
 * usage with the credits), and the pieces of a response object that the
 * streamed answer (prov_responses_stream.c) builds its events from. The
 * request half is in prov_responses.c. */
#include <string.h>
#include "prov_responses_int.h"
#include "prov_money.h"

static json_object *jstr(const char *s)
{
    return json_object_new_string(s ? s : "");
}

json_object *prov_resp_text_part(const char *text, apr_size_t len, int refusal)
{
    json_object *part = json_object_new_object();
    json_object_object_add(part, "type", jstr(refusal ? "refusal" : "output_text"));
    json_object_object_add(part, refusal ? "refusal" : "text",
                           json_object_new_string_len(text ? text : "", (int)len));
    if (!refusal) {
        json_object_object_add(part, "annotations", json_object_new_array());
        json_object_object_add(part, "logprobs", json_object_new_array());
    }
    return part;
}

json_object *prov_resp_message_item(const char *id, const char *status, json_object *content)
{
    json_object *item = json_object_new_object();
    json_object_object_add(item, "id", jstr(id));
    json_object_object_add(item, "type", jstr("message"));
    json_object_object_add(item, "status", jstr(status));
    json_object_object_add(item, "role", jstr("assistant"));
    json_object_object_add(item, "content", content ? content : json_object_new_array());
    return item;
}

/* A custom tool's input from the arguments of its function form. */
static json_object *custom_input(const char *args, apr_size_t len)
{
    json_object *o = json_tokener_parse(args), *in = NULL;
    json_object *res;
    if (o && json_object_object_get_ex(o, "input", &in) && json_object_is_type(in, json_type_string))
        res = json_object_get(in);
    else
        res = json_object_new_string_len(args, (int)len);
    json_object_put(o);
    return res;
}

/* The output item of a tool call by the gateway's (flat) name; *custom says
 * whether it is a custom_tool_call. status "in_progress" gives empty input. */
json_object *prov_resp_call_item(const prov_resp_req_t *req, const char *id,
                                 const char *status, const char *call_id, const char *flat,
                                 const char *args, apr_size_t len, int *custom)
{
    const prov_resp_tool_t *t = prov_resp_tool_by_flat(req, flat);
    int done = !strcmp(status, "completed");
    json_object *item = json_object_new_object();

    *custom = t && t->custom;
    json_object_object_add(item, "id", jstr(id));
    json_object_object_add(item, "type", jstr(*custom ? "custom_tool_call" : "function_call"));
    json_object_object_add(item, "status", jstr(status));
    json_object_object_add(item, "call_id", jstr(call_id));
    json_object_object_add(item, "name", jstr(t ? t->name : flat));
    if (t && t->ns)
        json_object_object_add(item, "namespace", jstr(t->ns));
    if (*custom)
        json_object_object_add(item, "input", done ? custom_input(args, len) : jstr(""));
    else
        json_object_object_add(item, "arguments",
                               done ? json_object_new_string_len(args, (int)len) : jstr(""));
    return item;
}

/* The counts as prov_chat_usage reads them; nothing (have 0) when usage
 * cannot be read. */
void prov_resp_usage_read(prov_resp_usage_t *u, json_object *usage)
{
    prov_chat_usage_t c;
    if (prov_chat_usage(&c, usage) != APR_SUCCESS)
        return;
    prov_resp_usage_set(u, &c);
}

void prov_resp_usage_set(prov_resp_usage_t *u, const prov_chat_usage_t *c)
{
    u->have = 1;
    u->input = c->prompt;
    u->output = c->completion;
    u->cached = c->cached;
    u->reasoning = c->reasoning;
}

static apr_int64_t shown(apr_int64_t n)
{
    return n > 0 ? n : 0;
}

json_object *prov_resp_usage_json(const prov_resp_usage_t *u, prov_micro_t charge)
{
    json_object *o = json_object_new_object(), *id = json_object_new_object();
    json_object *od = json_object_new_object();
    json_object_object_add(o, "input_tokens", json_object_new_int64(shown(u->input)));
    json_object_object_add(id, "cached_tokens", json_object_new_int64(shown(u->cached)));
    json_object_object_add(o, "input_tokens_details", id);
    json_object_object_add(o, "output_tokens", json_object_new_int64(shown(u->output)));
    json_object_object_add(od, "reasoning_tokens", json_object_new_int64(shown(u->reasoning)));
    json_object_object_add(o, "output_tokens_details", od);
    json_object_object_add(o, "total_tokens", json_object_new_int64(
        prov_i64_add_sat(shown(u->input), shown(u->output))));
    if (charge >= 0)
        json_object_object_add(o, "credits", prov_json_credits(charge));
    return o;
}

/* "length" and "content_filter" end a response as incomplete. */
const char *prov_resp_incomplete_reason(const char *finish)
{
    if (finish && !strcmp(finish, "length"))
        return "max_output_tokens";
    if (finish && !strcmp(finish, "content_filter"))
        return "content_filter";
    return NULL;
}

json_object *prov_resp_object(const prov_resp_req_t *req, const char *resp_id,
                              const char *public_id, apr_int64_t created_at,
                              const char *status, json_object *output)
{
    json_object *o = json_object_new_object(), *text = json_object_new_object();
    json_object *fmt = json_object_new_object();
    json_object_object_add(o, "id", jstr(resp_id));
    json_object_object_add(o, "object", jstr("response"));
    json_object_object_add(o, "created_at", json_object_new_int64(created_at));
    json_object_object_add(o, "status", jstr(status));
    json_object_object_add(o, "background", json_object_new_boolean(0));
    json_object_object_add(o, "error", NULL);
    json_object_object_add(o, "incomplete_details", NULL);
    json_object_object_add(o, "instructions", req->instructions ? jstr(req->instructions) : NULL);
    json_object_object_add(o, "max_output_tokens", req->max_output_tokens > 0
                           ? json_object_new_int64(req->max_output_tokens) : NULL);
    json_object_object_add(o, "model", jstr(public_id));
    json_object_object_add(o, "output", output ? output : json_object_new_array());
    json_object_object_add(o, "parallel_tool_calls",
                           json_object_new_boolean(req->parallel_tool_calls));
    json_object_object_add(o, "previous_response_id", NULL);
    json_object_object_add(o, "store", json_object_new_boolean(0));
    json_object_object_add(fmt, "type", jstr("text"));
    json_object_object_add(text, "format", fmt);
    json_object_object_add(o, "text", text);
    json_object_object_add(o, "usage", NULL);
    return o;
}

void prov_resp_set_incomplete(json_object *resp, const char *reason)
{
    json_object *d = json_object_new_object();
    json_object_object_add(d, "reason", jstr(reason));
    json_object_object_add(resp, "status", jstr("incomplete"));
    json_object_object_add(resp, "incomplete_details", d);
}

/* "resp_X" -> "<prefix>_X_<n>": item ids that belong to their response. */
const char *prov_resp_item_id(const char *resp_id, const char *prefix, int n, apr_pool_t *p)
{
    const char *tail = strchr(resp_id, '_');
    return apr_psprintf(p, "%s_%s_%d", prefix, tail ? tail + 1 : resp_id, n);
}

const char *prov_resp_render(const prov_resp_req_t *req, json_object *answer,
                             const char *resp_id, const char *public_id,
                             apr_int64_t created_at, prov_micro_t charge, apr_pool_t *p)
{
    json_object *choices = prov_json_get(answer, "choices", json_type_array);
    json_object *choice = choices ? json_object_array_get_idx(choices, 0) : NULL;
    json_object *msg = prov_json_get(choice, "message", json_type_object);
    json_object *calls = prov_json_get(msg, "tool_calls", json_type_array);
    json_object *content = NULL, *output = json_object_new_array(), *resp;
    const char *text = prov_json_get_str(msg, "content");
    const char *refusal = prov_json_get_str(msg, "refusal");
    const char *reason = prov_resp_incomplete_reason(prov_json_get_str(choice, "finish_reason"));
    prov_resp_usage_t u = { 0, 0, 0, 0, 0 };
    size_t i;
    int n = 0, custom;

    if (text && *text) {
        content = json_object_new_array();
        json_object_array_add(content, prov_resp_text_part(text, strlen(text), 0));
    }
    if (refusal && *refusal) {
        if (!content)
            content = json_object_new_array();
        json_object_array_add(content, prov_resp_text_part(refusal, strlen(refusal), 1));
    }
    if (content)
        json_object_array_add(output, prov_resp_message_item(
            prov_resp_item_id(resp_id, "msg", n++, p), "completed", content));
    for (i = 0; calls && i < json_object_array_length(calls); i++) {
        json_object *tc = json_object_array_get_idx(calls, i);
        json_object *fn = prov_json_get(tc, "function", json_type_object);
        const char *args = prov_json_get_str(fn, "arguments");
        json_object_array_add(output, prov_resp_call_item(
            req, prov_resp_item_id(resp_id, "fc", n++, p), "completed",
            prov_json_get_str(tc, "id"), prov_json_get_str(fn, "name"), args ? args : "",
            args ? strlen(args) : 0, &custom));
    }
    resp = prov_json_own(prov_resp_object(req, resp_id, public_id, created_at, "completed",
                                          output), p);
    if (reason)
        prov_resp_set_incomplete(resp, reason);
    prov_resp_usage_read(&u, prov_json_get(answer, "usage", json_type_object));
    json_object_object_add(resp, "usage", prov_resp_usage_json(&u, charge));
    return prov_json_dump(resp, p);
}

