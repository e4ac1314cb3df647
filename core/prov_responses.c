/* prov_responses.c: the Responses transport without httpd. The request half
 * (this part of the file) validates a /v1/responses body and translates it
 * into the gateway's Chat Completions: instructions and system/developer
 * messages become system messages, message items keep their text,
 * function_call / custom_tool_call items become assistant tool calls and
 * their outputs tool messages, reasoning items are dropped; function tools
 * pass, custom (freeform) tools become a function with one string argument
 * "input", namespace groups are flattened to "<namespace>__<name>", hosted
 * tools are dropped and named. The answer half (non-streamed response object,
 * the response.* event stream, Codex's quota headers) follows below. */
#include <string.h>
#include "prov_responses.h"
#include "prov_chat.h"
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

static const char *const refused_fields[] = { "previous_response_id", "conversation", "prompt",
                                              NULL };

static apr_status_t read_options(build_t *b, json_object *root, json_object *up)
{
    apr_pool_t *p = b->p;
    prov_error_t **err = b->err;
    json_object *v = NULL, *fmt;
    const char *ftype;
    static const char *const numbers[] = { "temperature", "top_p", NULL };
    const char *const *f;

    if (json_object_object_get_ex(root, "max_output_tokens", &v) && v) {
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1)
            BAD("max_output_tokens", "'max_output_tokens' must be a positive integer");
        b->req->max_output_tokens = json_object_get_int64(v);
        json_object_object_add(up, "max_tokens", json_object_new_int64(json_object_get_int64(v)));
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
    if (dropped->nelts)
        b->req->dropped_tools = apr_array_pstrcat(p, dropped, ',');
    return APR_SUCCESS;
}

apr_status_t prov_resp_parse(prov_resp_req_t **preq, prov_error_t **err, const char *body,
                             apr_size_t len, apr_pool_t *p)
{
    const char *perr = NULL;
    json_object *root = prov_json_parse(body, len, &perr, p);
    json_object *v = NULL, *input = NULL, *up;
    const char *const *f;
    prov_resp_req_t *req;
    build_t b;
    apr_status_t rv;
    size_t i;

    if (!root)
        BAD(NULL, "The request body is not valid JSON: %s", perr);
    if (!json_object_is_type(root, json_type_object))
        BAD(NULL, "The request body must be a JSON object");
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
    for (f = refused_fields; *f; f++) {
        if (json_object_object_get_ex(root, *f, &v) && v)
            BAD(*f, "'%s' is not supported: /v1/responses is stateless here, so send the "
                "whole conversation in 'input'", *f);
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

const char *prov_resp_upstream_body(const prov_resp_req_t *req, const char *upstream_id,
                                    apr_pool_t *p)
{
    json_object_object_add(req->upstream, "model", json_object_new_string(upstream_id));
    if (req->stream) {
        json_object *so = json_object_new_object();
        json_object_object_add(so, "include_usage", json_object_new_boolean(1));
        json_object_object_add(req->upstream, "stream", json_object_new_boolean(1));
        json_object_object_add(req->upstream, "stream_options", so);
    }
    return prov_json_dump(req->upstream, p);
}

/* ---- the answer: items, usage, the response object ------------------------ */

static json_object *jstr(const char *s)
{
    return json_object_new_string(s ? s : "");
}

static json_object *text_part(const char *text, apr_size_t len, int refusal)
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

static json_object *message_item(const char *id, const char *status, json_object *content)
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
static json_object *call_item(const prov_resp_req_t *req, const char *id, const char *status,
                              const char *call_id, const char *flat, const char *args,
                              apr_size_t len, int *custom)
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

typedef struct usage_t {
    int have;
    apr_int64_t input, cached, output, reasoning;
} usage_t;

static apr_int64_t int_at(json_object *o, const char *a, const char *b)
{
    json_object *v = b ? prov_json_get(prov_json_get(o, a, json_type_object), b, json_type_int)
                       : prov_json_get(o, a, json_type_int);
    apr_int64_t n = v ? json_object_get_int64(v) : 0;
    return n > 0 ? n : 0;
}

static void usage_read(usage_t *u, json_object *usage)
{
    if (!usage || !json_object_is_type(usage, json_type_object))
        return;
    u->have = 1;
    u->input = int_at(usage, "prompt_tokens", NULL);
    u->output = int_at(usage, "completion_tokens", NULL);
    u->cached = int_at(usage, "prompt_tokens_details", "cached_tokens");
    u->reasoning = int_at(usage, "completion_tokens_details", "reasoning_tokens");
}

static json_object *usage_json(const usage_t *u, prov_micro_t charge)
{
    json_object *o = json_object_new_object(), *id = json_object_new_object();
    json_object *od = json_object_new_object();
    json_object_object_add(o, "input_tokens", json_object_new_int64(u->input));
    json_object_object_add(id, "cached_tokens", json_object_new_int64(u->cached));
    json_object_object_add(o, "input_tokens_details", id);
    json_object_object_add(o, "output_tokens", json_object_new_int64(u->output));
    json_object_object_add(od, "reasoning_tokens", json_object_new_int64(u->reasoning));
    json_object_object_add(o, "output_tokens_details", od);
    json_object_object_add(o, "total_tokens", json_object_new_int64(u->input + u->output));
    if (charge >= 0)
        json_object_object_add(o, "credits", prov_json_credits(charge));
    return o;
}

/* "length" and "content_filter" end a response as incomplete. */
static const char *incomplete_reason(const char *finish)
{
    if (finish && !strcmp(finish, "length"))
        return "max_output_tokens";
    if (finish && !strcmp(finish, "content_filter"))
        return "content_filter";
    return NULL;
}

static json_object *response_object(const prov_resp_req_t *req, const char *resp_id,
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

static void set_incomplete(json_object *resp, const char *reason)
{
    json_object *d = json_object_new_object();
    json_object_object_add(d, "reason", jstr(reason));
    json_object_object_add(resp, "status", jstr("incomplete"));
    json_object_object_add(resp, "incomplete_details", d);
}

/* "resp_X" -> "<prefix>_X_<n>": item ids that belong to their response. */
static const char *item_id(const char *resp_id, const char *prefix, int n, apr_pool_t *p)
{
    const char *tail = strchr(resp_id, '_');
    return apr_psprintf(p, "%s_%s_%d", prefix, tail ? tail + 1 : resp_id, n);
}

const char *prov_resp_render(const prov_resp_req_t *req, json_object *answer,
                             const char *resp_id, const char *public_id,
                             apr_int64_t created_at, prov_micro_t charge, apr_pool_t *p)
{
    json_object *choice = json_object_array_get_idx(
        prov_json_get(answer, "choices", json_type_array), 0);
    json_object *msg = prov_json_get(choice, "message", json_type_object);
    json_object *calls = prov_json_get(msg, "tool_calls", json_type_array);
    json_object *content = NULL, *output = json_object_new_array(), *resp;
    const char *text = prov_json_get_str(msg, "content");
    const char *refusal = prov_json_get_str(msg, "refusal");
    const char *reason = incomplete_reason(prov_json_get_str(choice, "finish_reason"));
    usage_t u = { 0, 0, 0, 0, 0 };
    size_t i;
    int n = 0, custom;

    if (text && *text)
        content = json_object_new_array(), json_object_array_add(content,
                                                                 text_part(text, strlen(text), 0));
    if (refusal && *refusal) {
        if (!content)
            content = json_object_new_array();
        json_object_array_add(content, text_part(refusal, strlen(refusal), 1));
    }
    if (content)
        json_object_array_add(output, message_item(item_id(resp_id, "msg", n++, p), "completed",
                                                   content));
    for (i = 0; calls && i < json_object_array_length(calls); i++) {
        json_object *tc = json_object_array_get_idx(calls, i);
        json_object *fn = prov_json_get(tc, "function", json_type_object);
        const char *args = prov_json_get_str(fn, "arguments");
        json_object_array_add(output, call_item(req, item_id(resp_id, "fc", n++, p), "completed",
                                                prov_json_get_str(tc, "id"),
                                                prov_json_get_str(fn, "name"), args ? args : "",
                                                args ? strlen(args) : 0, &custom));
    }
    resp = prov_json_own(response_object(req, resp_id, public_id, created_at, "completed",
                                         output), p);
    if (reason)
        set_incomplete(resp, reason);
    usage_read(&u, prov_json_get(answer, "usage", json_type_object));
    json_object_object_add(resp, "usage", usage_json(&u, charge));
    return prov_json_dump(resp, p);
}

/* ---- the streamed answer: chat.completion.chunk -> response.* ------------- */

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
    usage_t usage;
    int n_items;
    json_object *items;       /* finished items by output_index (owned by p) */
    /* the open message item: msg_index < 0 when none */
    int msg_index, part_index, part_refusal;
    const char *msg_id;
    json_object *parts;       /* finished parts of the open message */
    sbuf_t text;
    apr_array_header_t *calls;  /* call_t by the gateway's tool-call index */
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
    json_object_object_add(ev, "response", response_object(s->req, s->resp_id, s->public_id,
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
    json_object_object_add(ev, "part", text_part(s->text.p, s->text.len, r));
    json_object_array_add(s->parts, text_part(s->text.p, s->text.len, r));
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
    item = message_item(s->msg_id, "completed", s->parts);
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
        s->msg_id = item_id(s->resp_id, "msg", s->msg_index, s->p);
        s->parts = json_object_new_array();
        s->part_index = -1;
        ev = ev_new();
        ev_int(ev, "output_index", s->msg_index);
        json_object_object_add(ev, "item", message_item(s->msg_id, "in_progress", NULL));
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
        json_object_object_add(ev, "part", text_part("", 0, refusal));
        if ((rv = emit(s, "response.content_part.added", ev)) != APR_SUCCESS)
            return rv;
    }
    sbuf_add(&s->text, t, n);
    ev = part_event(s);
    json_object_object_add(ev, "delta", json_object_new_string_len(t, (int)n));
    if (!refusal)
        json_object_object_add(ev, "logprobs", json_object_new_array());
    return emit(s, refusal ? "response.refusal.delta" : "response.output_text.delta", ev);
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
        c->id = item_id(s->resp_id, "fc", c->index, s->p);
        c->call_id = apr_pstrdup(s->p, id ? id : c->id);
        c->flat = apr_pstrdup(s->p, name ? name : "");
        sbuf_init(&c->args, s->p);
        ev = ev_new();
        ev_int(ev, "output_index", c->index);
        json_object_object_add(ev, "item", call_item(s->req, c->id, "in_progress", c->call_id,
                                                     c->flat, "", 0, &c->custom));
        if ((rv = emit(s, "response.output_item.added", ev)) != APR_SUCCESS)
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
        return emit(s, "response.function_call_arguments.delta", ev);
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
    item = call_item(s->req, c->id, "completed", c->call_id, c->flat, args, c->args.len, &custom);
    if (custom) {
        json_object *input = json_object_object_get(item, "input");
        ev = call_event(c);
        json_object_object_add(ev, "delta", json_object_get(input));
        if ((rv = emit(s, "response.custom_tool_call_input.delta", ev)) != APR_SUCCESS)
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
    json_object *choice, *delta, *calls, *v;
    const char *finish;
    apr_status_t rv;
    size_t i;

    if (!json_object_is_type(chunk, json_type_object) || prov_json_get(chunk, "error",
                                                                       json_type_object))
        return APR_EINVAL;
    if ((rv = start(s)) != APR_SUCCESS)
        return rv;
    usage_read(&s->usage, prov_json_get(chunk, "usage", json_type_object));
    choice = json_object_array_get_idx(prov_json_get(chunk, "choices", json_type_array), 0);
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
    json_tokener *tok;
    json_object *chunk;
    apr_status_t rv;

    (void)name;
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        s->finished = 1;
        return APR_SUCCESS;
    }
    tok = json_tokener_new();
    chunk = json_tokener_parse_ex(tok, data, (int)len);
    json_tokener_free(tok);
    if (!chunk)
        return APR_EINVAL;
    rv = on_chunk(s, chunk);
    json_object_put(chunk);
    return rv;
}

/* The parts of a message still open when the stream's pool goes. */
static apr_status_t put_parts(void *data)
{
    prov_resp_stream_t *s = data;
    json_object_put(s->parts);
    s->parts = NULL;
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

apr_status_t prov_resp_stream_tokens(const prov_resp_stream_t *s, prov_tokens_t *t)
{
    if (!s->usage.have)
        return APR_ENOENT;
    t->cache = s->usage.cached;
    t->input = s->usage.input > s->usage.cached ? s->usage.input - s->usage.cached : 0;
    t->reasoning = s->usage.reasoning;
    t->output = s->usage.output > s->usage.reasoning ? s->usage.output - s->usage.reasoning : 0;
    return APR_SUCCESS;
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
    const char *reason = incomplete_reason(s->finish_reason);
    json_object *resp, *ev;
    apr_status_t rv;
    int i;

    apr_pool_clear(s->scratch);
    if ((rv = start(s)) != APR_SUCCESS || (rv = close_message(s)) != APR_SUCCESS)
        return rv;
    for (i = 0; i < s->calls->nelts; i++)
        if ((rv = close_call(s, &APR_ARRAY_IDX(s->calls, i, call_t))) != APR_SUCCESS)
            return rv;
    resp = response_object(s->req, s->resp_id, s->public_id, s->created_at, "completed",
                           finished_output(s));
    if (reason)
        set_incomplete(resp, reason);
    json_object_object_add(resp, "usage", usage_json(&s->usage, charge));
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
    resp = response_object(s->req, s->resp_id, s->public_id, s->created_at, "failed",
                           finished_output(s));
    json_object_object_add(e, "code", jstr(code));
    json_object_object_add(e, "message", jstr(message));
    json_object_object_add(resp, "error", e);
    if (s->usage.have || charge >= 0)
        json_object_object_add(resp, "usage", usage_json(&s->usage, charge));
    ev = ev_new();
    json_object_object_add(ev, "response", resp);
    return emit(s, "response.failed", ev);
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
