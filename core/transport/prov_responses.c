/* prov_responses.c: the Responses transport without httpd. The request half
 * (this part of the file) validates a /v1/responses body and translates it
 * into the gateway's Chat Completions: instructions and system/developer
 * messages become system messages, message items keep their text,
 * function_call / custom_tool_call items become assistant tool calls and
 * their outputs tool messages, reasoning items are dropped; function tools
 * pass, custom (freeform) tools become a function with one string argument
 * "input", namespace groups are flattened to "<namespace>__<name>", hosted
 * tools are dropped and named; top-level members outside prov_resp_fields
 * (prov_fields.c) are refused by name (the json-c path, which judges; the fast
 * path and the body's text are in prov_responses_request.c). Codex's quota
 * headers are here too; the answer half (the response object and the
 * response.* event stream) is in prov_responses_answer.c. */
#include <string.h>
#include "prov_responses.h"
#include "prov_chat.h"
#include "prov_fields.h"
#include "prov_header.h"
#include "prov_money.h"
#include "prov_sse.h"

#define BAD(param, ...) \
    do { *err = prov_error_make(p, PROV_E_INVALID_REQUEST, param, __VA_ARGS__); \
         return APR_EINVAL; } while (0)

/* What a tool output says instead of content this service cannot pass on. */
#define NOTE_IMAGE "[image omitted: this service does not support image content]"
#define NOTE_FILE  "[file omitted: this service does not support file content]"

/* Input items that only record a hosted tool's work: dropped with the tools. */
static const char *const hosted_items[] = {
    "web_search_call", "file_search_call", "image_generation_call", "code_interpreter_call",
    "tool_search_call", "tool_search_output", "mcp_list_tools", NULL
};

typedef struct build_t {
    prov_resp_req_t *req;
    prov_error_t **err;
    apr_pool_t *p;
    json_object *msgs;       /* the upstream messages (owned by req->upstream) */
} build_t;

static int is_one_of(const char *s, const char *const *list)
{
    for (; s && *list; list++)
        if (!strcmp(s, *list))
            return 1;
    return 0;
}

static const char *flat_name(const char *ns, const char *name, apr_pool_t *p)
{
    return ns && *ns ? apr_pstrcat(p, ns, "__", name, NULL) : name;
}

const prov_resp_tool_t *prov_resp_tool_by_flat(const prov_resp_req_t *req, const char *flat)
{
    int i;
    for (i = 0; flat && req->tools && i < req->tools->nelts; i++) {
        const prov_resp_tool_t *t = &APR_ARRAY_IDX(req->tools, i, prov_resp_tool_t);
        if (!strcmp(t->flat, flat))
            return t;
    }
    return NULL;
}

/* ---- tools ------------------------------------------------------------ */

static json_object *chat_tool(const char *flat, json_object *def, int custom, apr_pool_t *p)
{
    json_object *tool = json_object_new_object(), *fn = json_object_new_object();
    json_object *params = NULL;
    const char *desc = prov_json_get_str(def, "description");

    if (custom) {
        json_object *format = prov_json_get(def, "format", json_type_object);
        const char *syntax = prov_json_get_str(format, "syntax");
        const char *grammar = prov_json_get_str(format, "definition");
        json_object *props = json_object_new_object(), *input = json_object_new_object();
        json_object *required = json_object_new_array();
        if (grammar)
            desc = apr_psprintf(p, "%s\n\nThe input is raw text (not JSON) that follows this "
                                "%s grammar:\n%s", desc ? desc : "", syntax ? syntax : "",
                                grammar);
        json_object_object_add(input, "type", json_object_new_string("string"));
        json_object_object_add(input, "description",
                               json_object_new_string("The tool's raw input text."));
        json_object_object_add(props, "input", input);
        json_object_array_add(required, json_object_new_string("input"));
        params = json_object_new_object();
        json_object_object_add(params, "type", json_object_new_string("object"));
        json_object_object_add(params, "properties", props);
        json_object_object_add(params, "required", required);
        json_object_object_add(params, "additionalProperties", json_object_new_boolean(0));
    }
    else if (json_object_object_get_ex(def, "parameters", &params) && params) {
        params = json_object_get(params);
    }
    else {
        params = json_object_new_object();
        json_object_object_add(params, "type", json_object_new_string("object"));
        json_object_object_add(params, "properties", json_object_new_object());
    }
    json_object_object_add(fn, "name", json_object_new_string(flat));
    if (desc)
        json_object_object_add(fn, "description", json_object_new_string(desc));
    json_object_object_add(fn, "parameters", params);
    if (!custom && prov_json_get(def, "strict", json_type_boolean))
        json_object_object_add(fn, "strict",
                               json_object_get(prov_json_get(def, "strict", json_type_boolean)));
    json_object_object_add(tool, "type", json_object_new_string("function"));
    json_object_object_add(tool, "function", fn);
    return tool;
}

static apr_status_t add_tool(build_t *b, json_object *out, json_object *def, const char *ns,
                             const char *param, apr_array_header_t *dropped)
{
    apr_pool_t *p = b->p;
    prov_error_t **err = b->err;
    const char *type = prov_json_get_str(def, "type");
    const char *name = prov_json_get_str(def, "name");
    prov_resp_tool_t *t;

    if (!type)
        BAD(param, "%s.type is required", param);
    if (!strcmp(type, "namespace") && !ns) {
        json_object *tools = prov_json_get(def, "tools", json_type_array);
        size_t i;
        if (!name || !*name || !tools)
            BAD(param, "%s: a namespace tool needs 'name' and 'tools'", param);
        for (i = 0; i < json_object_array_length(tools); i++) {
            apr_status_t rv = add_tool(b, out, json_object_array_get_idx(tools, i), name,
                                       apr_psprintf(p, "%s.tools[%d]", param, (int)i), dropped);
            if (rv != APR_SUCCESS)
                return rv;
        }
        return APR_SUCCESS;
    }
    if (strcmp(type, "function") && strcmp(type, "custom")) {
        /* A hosted tool: the gateway's models cannot run it here. */
        APR_ARRAY_PUSH(dropped, const char *) = ns ? apr_pstrcat(p, ns, ".", type, NULL) : type;
        return APR_SUCCESS;
    }
    if (!name || !*name)
        BAD(param, "%s.name is required", param);
    t = apr_array_push(b->req->tools);
    t->name = apr_pstrdup(p, name);
    t->ns = ns ? apr_pstrdup(p, ns) : NULL;
    t->flat = flat_name(t->ns, t->name, p);
    t->custom = !strcmp(type, "custom");
    json_object_array_add(out, chat_tool(t->flat, def, t->custom, p));
    return APR_SUCCESS;
}

/* tool_choice: the Chat Completions form, or NULL when none applies. */
static apr_status_t tool_choice(json_object **out, build_t *b, json_object *choice)
{
    apr_pool_t *p = b->p;
    prov_error_t **err = b->err;
    const char *type, *name;
    const prov_resp_tool_t *t;

    *out = NULL;
    if (!choice)
        return APR_SUCCESS;
    if (json_object_is_type(choice, json_type_string)) {
        const char *s = json_object_get_string(choice);
        if (strcmp(s, "auto") && strcmp(s, "none") && strcmp(s, "required"))
            BAD("tool_choice", "'tool_choice' must be auto, none, required or a tool");
        if (b->req->tools->nelts)
            *out = json_object_new_string(s);
        return APR_SUCCESS;
    }
    type = prov_json_get_str(choice, "type");
    if (!type)
        BAD("tool_choice", "'tool_choice' must be a string or an object with a type");
    if (!strcmp(type, "allowed_tools")) {
        const char *mode = prov_json_get_str(choice, "mode");
        if (b->req->tools->nelts)
            *out = json_object_new_string(mode && !strcmp(mode, "required") ? "required" : "auto");
        return APR_SUCCESS;
    }
    if (strcmp(type, "function") && strcmp(type, "custom"))
        BAD("tool_choice", "'tool_choice' forces the hosted tool '%s', which this service "
            "does not offer (hosted tools are not supported on /v1/responses)", type);
    name = prov_json_get_str(choice, "name");
    t = name ? prov_resp_tool_by_flat(b->req, flat_name(prov_json_get_str(choice, "namespace"),
                                                        name, p)) : NULL;
    if (!t)
        BAD("tool_choice", "'tool_choice' names the tool '%s', which is not in 'tools'",
            name ? name : "");
    *out = json_object_new_object();
    json_object_object_add(*out, "type", json_object_new_string("function"));
    json_object_object_add(*out, "function", json_object_new_object());
    json_object_object_add(json_object_object_get(*out, "function"), "name",
                           json_object_new_string(t->flat));
    return APR_SUCCESS;
}

/* ---- input items -------------------------------------------------------- */

/* The text of a message's content: string, or text parts. With for_tool,
 * images and files become a note instead of a refusal. */
static apr_status_t content_text(json_object **out, build_t *b, json_object *content,
                                 const char *param, int for_tool)
{
    apr_pool_t *p = b->p;
    prov_error_t **err = b->err;
    json_object *parts;
    size_t i, n;

    if (json_object_is_type(content, json_type_string)) {
        b->req->prompt_bytes += (apr_size_t)json_object_get_string_len(content);
        *out = json_object_get(content);
        return APR_SUCCESS;
    }
    if (!json_object_is_type(content, json_type_array))
        BAD(param, "%s must be a string or an array of content parts", param);
    parts = json_object_new_array();
    n = json_object_array_length(content);
    for (i = 0; i < n; i++) {
        json_object *part = json_object_array_get_idx(content, i);
        const char *type = prov_json_get_str(part, "type");
        const char *text = NULL;
        if (type && (!strcmp(type, "input_text") || !strcmp(type, "output_text")
                     || !strcmp(type, "text")))
            text = prov_json_get_str(part, "text");
        else if (type && !strcmp(type, "refusal"))
            text = prov_json_get_str(part, "refusal");
        else if (type && for_tool && !strcmp(type, "input_image"))
            text = NOTE_IMAGE;
        else if (type && for_tool && (!strcmp(type, "input_file") || !strcmp(type, "input_audio")))
            text = NOTE_FILE;
        else if (type && (!strcmp(type, "input_image") || !strcmp(type, "input_file")
                          || !strcmp(type, "input_audio"))) {
            json_object_put(parts);
            BAD(apr_psprintf(p, "%s[%d]", param, (int)i), "%s[%d]: '%s' content is not "
                "supported on /v1/responses (images and files cannot be sent here)",
                param, (int)i, type);
        }
        else {
            json_object_put(parts);
            BAD(apr_psprintf(p, "%s[%d]", param, (int)i), "%s[%d] has an unsupported part "
                "type '%s'", param, (int)i, type ? type : "(none)");
        }
        if (!text) {
            json_object_put(parts);
            BAD(apr_psprintf(p, "%s[%d].text", param, (int)i), "%s[%d].text is required",
                param, (int)i);
        }
        b->req->prompt_bytes += strlen(text);
        json_object_array_add(parts, json_object_new_string(text));
    }
    if (json_object_array_length(parts) == 1) {
        *out = json_object_get(json_object_array_get_idx(parts, 0));
    }
    else {
        /* Several parts join into one string: every gateway model takes that. */
        struct printbuf *pb = printbuf_new();
        for (i = 0; i < json_object_array_length(parts); i++) {
            if (i)
                printbuf_memappend(pb, "\n", 1);
            printbuf_memappend(pb, json_object_get_string(json_object_array_get_idx(parts, i)),
                               json_object_get_string_len(json_object_array_get_idx(parts, i)));
        }
        *out = json_object_new_string_len(pb->buf, pb->bpos);
        printbuf_free(pb);
    }
    json_object_put(parts);
    return APR_SUCCESS;
}

static void add_message(build_t *b, const char *role, json_object *content)
{
    json_object *m = json_object_new_object();
    json_object_object_add(m, "role", json_object_new_string(role));
    json_object_object_add(m, "content", content);
    json_object_array_add(b->msgs, m);
    b->req->n_messages++;
}

/* An assistant tool call: joins the assistant message just before it. */
static void add_tool_call(build_t *b, const char *call_id, const char *flat, json_object *args)
{
    size_t n = json_object_array_length(b->msgs);
    json_object *last = n ? json_object_array_get_idx(b->msgs, n - 1) : NULL;
    const char *role = prov_json_get_str(last, "role");
    json_object *calls, *tc = json_object_new_object(), *fn = json_object_new_object();

    if (!role || strcmp(role, "assistant")) {
        last = json_object_new_object();
        json_object_object_add(last, "role", json_object_new_string("assistant"));
        json_object_object_add(last, "content", NULL);
        json_object_array_add(b->msgs, last);
        b->req->n_messages++;
    }
    calls = prov_json_get(last, "tool_calls", json_type_array);
    if (!calls) {
        calls = json_object_new_array();
        json_object_object_add(last, "tool_calls", calls);
    }
    json_object_object_add(fn, "name", json_object_new_string(flat));
    json_object_object_add(fn, "arguments", args);
    json_object_object_add(tc, "id", json_object_new_string(call_id));
    json_object_object_add(tc, "type", json_object_new_string("function"));
    json_object_object_add(tc, "function", fn);
    json_object_array_add(calls, tc);
}

static apr_status_t add_item(build_t *b, json_object *item, int i)
{
    apr_pool_t *p = b->p;
    prov_error_t **err = b->err;
    const char *param = apr_psprintf(p, "input[%d]", i);
    const char *type = prov_json_get_str(item, "type");
    const char *call_id = prov_json_get_str(item, "call_id");
    json_object *content = NULL;
    apr_status_t rv;

    if (!json_object_is_type(item, json_type_object))
        BAD(param, "%s must be an object", param);
    if (!type && prov_json_get_str(item, "role"))
        type = "message";
    if (!type)
        BAD(apr_pstrcat(p, param, ".type", NULL), "%s.type is required", param);
    if (!strcmp(type, "message")) {
        const char *role = prov_json_get_str(item, "role");
        if (!role || (strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "system")
                      && strcmp(role, "developer")))
            BAD(apr_pstrcat(p, param, ".role", NULL), "%s.role must be user, assistant, "
                "system or developer", param);
        if (!json_object_object_get_ex(item, "content", &content) || !content)
            BAD(apr_pstrcat(p, param, ".content", NULL), "%s.content is required", param);
        rv = content_text(&content, b, content, apr_pstrcat(p, param, ".content", NULL), 0);
        if (rv != APR_SUCCESS)
            return rv;
        add_message(b, !strcmp(role, "developer") ? "system" : role, content);
        return APR_SUCCESS;
    }
    if (!strcmp(type, "function_call") || !strcmp(type, "custom_tool_call")) {
        int custom = type[0] == 'c';
        const char *name = prov_json_get_str(item, "name");
        const char *val = prov_json_get_str(item, custom ? "input" : "arguments");
        json_object *args;
        if (!call_id || !name || !val)
            BAD(param, "%s: a %s needs call_id, name and %s", param, type,
                custom ? "input" : "arguments");
        b->req->prompt_bytes += strlen(val);
        if (custom) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "input", json_object_new_string(val));
            args = json_object_new_string(json_object_to_json_string_ext(
                o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
            json_object_put(o);
        }
        else {
            args = json_object_new_string(val);
        }
        add_tool_call(b, call_id, flat_name(prov_json_get_str(item, "namespace"), name, p), args);
        return APR_SUCCESS;
    }
    if (!strcmp(type, "function_call_output") || !strcmp(type, "custom_tool_call_output")) {
        json_object *m;
        if (!call_id || !json_object_object_get_ex(item, "output", &content) || !content)
            BAD(param, "%s: a %s needs call_id and output", param, type);
        rv = content_text(&content, b, content, apr_pstrcat(p, param, ".output", NULL), 1);
        if (rv != APR_SUCCESS)
            return rv;
        m = json_object_new_object();
        json_object_object_add(m, "role", json_object_new_string("tool"));
        json_object_object_add(m, "tool_call_id", json_object_new_string(call_id));
        json_object_object_add(m, "content", content);
        json_object_array_add(b->msgs, m);
        b->req->n_messages++;
        return APR_SUCCESS;
    }
    if (!strcmp(type, "reasoning") || is_one_of(type, hosted_items))
        return APR_SUCCESS;
    if (!strcmp(type, "item_reference"))
        BAD(param, "%s: item references need stored responses; /v1/responses is stateless "
            "here, so send the items themselves", param);
    BAD(apr_pstrcat(p, param, ".type", NULL), "%s.type '%s' is not supported on /v1/responses",
        param, type);
}

/* ---- the request -------------------------------------------------------- */

static apr_status_t read_options(build_t *b, json_object *root, json_object *up)
{
    apr_pool_t *p = b->p;
    prov_error_t **err = b->err;
    json_object *v = NULL, *fmt;
    const char *ftype;
    static const char *const numbers[] = { "temperature", "top_p", NULL };
    const char *const *f;

    if (json_object_object_get_ex(root, "max_output_tokens", &v) && v) {
        apr_status_t rv = prov_fields_output_cap(&b->req->max_output_tokens, err, v,
                                               "max_output_tokens", p);
        if (rv != APR_SUCCESS)
            return rv;              /* max_tokens: prov_resp_upstream_body's */
    }
    for (f = numbers; *f; f++) {
        if (!json_object_object_get_ex(root, *f, &v) || !v)
            continue;
        if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
            BAD(*f, "'%s' must be a number", *f);
        json_object_object_add(up, *f, json_object_get(v));
    }
    if (json_object_object_get_ex(root, "background", &v) && v && json_object_get_boolean(v))
        BAD("background", "background responses are not supported (the transport is stateless)");
    /* text.format: structured output maps onto response_format. */
    fmt = prov_json_get(prov_json_get(root, "text", json_type_object), "format",
                        json_type_object);
    ftype = prov_json_get_str(fmt, "type");
    if (ftype && !strcmp(ftype, "json_object")) {
        json_object *rf = json_object_new_object();
        json_object_object_add(rf, "type", json_object_new_string("json_object"));
        json_object_object_add(up, "response_format", rf);
    }
    else if (ftype && !strcmp(ftype, "json_schema")) {
        json_object *rf = json_object_new_object(), *js = json_object_new_object();
        static const char *const keys[] = { "name", "schema", "strict", "description", NULL };
        const char *const *k;
        for (k = keys; *k; k++)
            if (json_object_object_get_ex(fmt, *k, &v) && v)
                json_object_object_add(js, *k, json_object_get(v));
        json_object_object_add(rf, "type", json_object_new_string("json_schema"));
        json_object_object_add(rf, "json_schema", js);
        json_object_object_add(up, "response_format", rf);
    }
    return APR_SUCCESS;
}

static apr_status_t read_tools(build_t *b, json_object *root, json_object *up)
{
    apr_pool_t *p = b->p;
    prov_error_t **err = b->err;
    json_object *tools = NULL, *out, *choice = NULL, *v = NULL;
    apr_array_header_t *dropped = apr_array_make(p, 4, sizeof(const char *));
    apr_status_t rv;
    size_t i;

    if (json_object_object_get_ex(root, "tools", &tools) && tools
        && !json_object_is_type(tools, json_type_array))
        BAD("tools", "'tools' must be an array");
    out = json_object_new_array();
    json_object_object_add(up, "tools", out);
    for (i = 0; tools && i < json_object_array_length(tools); i++) {
        rv = add_tool(b, out, json_object_array_get_idx(tools, i), NULL,
                      apr_psprintf(p, "tools[%d]", (int)i), dropped);
        if (rv != APR_SUCCESS)
            return rv;
    }
    if (b->req->tools->nelts) {
        size_t n = 0;
        json_object_to_json_string_length(out, JSON_C_TO_STRING_PLAIN, &n);
        b->req->prompt_bytes += n;     /* tool definitions are prompt tokens too */
    }
    json_object_object_get_ex(root, "tool_choice", &choice);
    if ((rv = tool_choice(&choice, b, choice)) != APR_SUCCESS)
        return rv;
    if (choice)
        json_object_object_add(up, "tool_choice", choice);
    if (!b->req->tools->nelts) {
        json_object_object_del(up, "tools");
    }
    else if (json_object_object_get_ex(root, "parallel_tool_calls", &v) && v
             && json_object_is_type(v, json_type_boolean)) {
        b->req->parallel_tool_calls = json_object_get_boolean(v);
        json_object_object_add(up, "parallel_tool_calls", json_object_get(v));
    }
    /* Named in a response header: only token characters, and a bounded list. */
    b->req->dropped_tools = prov_header_token_list(dropped, PROV_RESP_DROPPED_MAX, p);
    return APR_SUCCESS;
}

apr_status_t prov_resp_parse_json(prov_resp_req_t **preq, prov_error_t **err,
                                  const char *body, apr_size_t len, apr_pool_t *p)
{
    const char *perr = NULL;
    json_object *root = prov_json_parse_body(body, len, &perr, p);
    json_object *v = NULL, *input = NULL, *up;
    const prov_field_t *f;
    prov_resp_req_t *req;
    build_t b;
    apr_status_t rv;
    size_t i;

    if (!root)
        BAD(NULL, "%s", perr);
    if ((rv = prov_fields_check(err, prov_resp_fields, root, 0, p)) != APR_SUCCESS)
        return rv;
    req = apr_pcalloc(p, sizeof(*req));
    req->max_output_tokens = -1;
    req->parallel_tool_calls = 1;
    req->tools = apr_array_make(p, 8, sizeof(prov_resp_tool_t));
    req->upstream = up = prov_json_own(json_object_new_object(), p);
    b.req = req;
    b.err = err;
    b.p = p;
    b.msgs = json_object_new_array();
    json_object_object_add(up, "messages", b.msgs);

    req->model = prov_json_get_str(root, "model");
    if (!req->model || !*req->model)
        BAD("model", "'model' is required (a public model id from GET /v1/models)");
    for (f = prov_resp_fields; f->name; f++) {
        if ((f->how & PROV_FIELD_REFUSE) && json_object_object_get_ex(root, f->name, &v) && v)
            BAD(f->name, "'%s' is not supported: /v1/responses is stateless here, so send the "
                "whole conversation in 'input'", f->name);
    }
    if (json_object_object_get_ex(root, "stream", &v) && v) {
        if (!json_object_is_type(v, json_type_boolean))
            BAD("stream", "'stream' must be a boolean");
        req->stream = json_object_get_boolean(v);
    }
    if (json_object_object_get_ex(root, "instructions", &v) && v) {
        if (!json_object_is_type(v, json_type_string))
            BAD("instructions", "'instructions' must be a string");
        req->instructions = json_object_get_string(v);
        req->prompt_bytes += strlen(req->instructions);
        add_message(&b, "system", json_object_get(v));
    }
    if (!json_object_object_get_ex(root, "input", &input) || !input)
        BAD("input", "'input' is required (a string or an array of items)");
    if (json_object_is_type(input, json_type_string)) {
        req->prompt_bytes += (apr_size_t)json_object_get_string_len(input);
        add_message(&b, "user", json_object_get(input));
    }
    else if (json_object_is_type(input, json_type_array)) {
        for (i = 0; i < json_object_array_length(input); i++)
            if ((rv = add_item(&b, json_object_array_get_idx(input, i), (int)i)) != APR_SUCCESS)
                return rv;
    }
    else {
        BAD("input", "'input' must be a string or an array of items");
    }
    if (json_object_array_length(b.msgs) == 0)
        BAD("input", "'input' has no message the model could answer");
    if ((rv = read_tools(&b, root, up)) != APR_SUCCESS
        || (rv = read_options(&b, root, up)) != APR_SUCCESS)
        return rv;
    *preq = req;
    *err = NULL;
    return APR_SUCCESS;
}

/* ---- Codex's quota headers ------------------------------------------------ */

/* used/quota as a percentage with one decimal, integers only. */
static const char *percent(prov_micro_t used, prov_micro_t quota, apr_pool_t *p)
{
    apr_int64_t tenths;
    if (used <= 0)
        tenths = 0;
    else if (quota <= 0 || used >= quota)
        tenths = 1000;
    else if (used <= APR_INT64_MAX / 1000)
        tenths = used * 1000 / quota;
    else
        tenths = used / (quota / 1000 > 0 ? quota / 1000 : 1);
    if (tenths > 1000)
        tenths = 1000;
    return tenths % 10 ? apr_psprintf(p, "%" APR_INT64_T_FMT ".%d", tenths / 10, (int)(tenths % 10))
                       : apr_psprintf(p, "%" APR_INT64_T_FMT, tenths / 10);
}

static void window(apr_table_t *h, const char *which, prov_micro_t used, prov_micro_t quota,
                   apr_int64_t minutes, apr_int64_t reset, apr_int64_t now, apr_pool_t *p)
{
    apr_table_setn(h, apr_psprintf(p, "x-codex-%s-used-percent", which), percent(used, quota, p));
    apr_table_setn(h, apr_psprintf(p, "x-codex-%s-window-minutes", which), prov_i64(minutes, p));
    apr_table_setn(h, apr_psprintf(p, "x-codex-%s-reset-at", which),
                   prov_i64(now + (reset > 0 ? reset : 0), p));
}

void prov_resp_quota_headers(apr_table_t *headers, const prov_plan_windows_t *w,
                             apr_int64_t now, apr_pool_t *p)
{
    if (!w || !w->has_plan)
        return;
    window(headers, "primary", w->used_5h, w->quota_5h, 5 * 60, w->reset_5h, now, p);
    window(headers, "secondary", w->used_7d, w->quota_7d, 7 * 24 * 60, w->reset_7d, now, p);
}
