/* prov_mcp.c: one MCP message as JSON-RPC 2.0 (prov_mcp.h). The body is
 * parsed strictly; what is not a single request, notification or response
 * is refused before any method runs. Requests are answered in HTTP 200 with
 * a result or an error carrying their id; a tool's own failure to accept
 * its input is a result with isError (the 2025-11-25 revision's "tool
 * execution error"), an unknown tool or a malformed call -32602. */
#include <string.h>
#include "prov_mcp.h"
#include "prov_json.h"
#include "prov_log.h"

static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", NULL };

int prov_mcp_version_supported(const char *v)
{
    int i;
    for (i = 0; v && versions[i]; i++) {
        if (!strcmp(v, versions[i]))
            return 1;
    }
    return 0;
}

static json_object *error_object(json_object *id, int code, const char *message)
{
    json_object *o = json_object_new_object(), *e = json_object_new_object();
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(o, "id", id ? json_object_get(id) : NULL);
    json_object_object_add(e, "code", json_object_new_int(code));
    json_object_object_add(e, "message", json_object_new_string(message));
    json_object_object_add(o, "error", e);
    return o;
}

const char *prov_mcp_error_body(int code, const char *message, apr_pool_t *p)
{
    return prov_json_dump(prov_json_own(error_object(NULL, code, message), p), p);
}

static void answer_error(prov_mcp_answer_t *out, int status, json_object *id, int code,
                         const char *message, apr_pool_t *p)
{
    out->status = status;
    out->body = prov_json_dump(prov_json_own(error_object(id, code, message), p), p);
}

static void answer_result(prov_mcp_answer_t *out, json_object *id, json_object *result,
                          apr_pool_t *p)
{
    json_object *o = prov_json_own(json_object_new_object(), p);
    json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
    json_object_object_add(o, "id", json_object_get(id));
    json_object_object_add(o, "result", result);
    out->status = 200;
    out->body = prov_json_dump(o, p);
}

/* ---- methods ------------------------------------------------------------- */

static json_object *initialize(const prov_mcp_server_t *srv, json_object *params,
                               const char **bad)
{
    json_object *v = prov_json_get(params, "protocolVersion", json_type_string);
    json_object *r, *caps, *tools, *info;
    const char *asked;
    if (!v) {
        *bad = "initialize needs params.protocolVersion (a string)";
        return NULL;
    }
    asked = json_object_get_string(v);
    r = json_object_new_object();
    json_object_object_add(r, "protocolVersion", json_object_new_string(
        prov_mcp_version_supported(asked) ? asked : PROV_MCP_VERSION_LATEST));
    caps = json_object_new_object();
    tools = json_object_new_object();
    json_object_object_add(tools, "listChanged", json_object_new_boolean(0));
    json_object_object_add(caps, "tools", tools);
    json_object_object_add(r, "capabilities", caps);
    info = json_object_new_object();
    json_object_object_add(info, "name", json_object_new_string(srv->name));
    json_object_object_add(info, "version", json_object_new_string(PROV_MCP_SERVER_VERSION));
    json_object_object_add(r, "serverInfo", info);
    if (srv->instructions)
        json_object_object_add(r, "instructions", json_object_new_string(srv->instructions));
    return r;
}

static json_object *schema(const char *text)
{
    json_object *o = json_tokener_parse(text);
    return o ? o : json_object_new_object();
}

static int tool_available(const prov_mcp_tool_t *t, const prov_mcp_ctx_t *ctx)
{
    return !t->available || t->available(ctx);
}

static json_object *tools_list(const prov_mcp_server_t *srv, const prov_mcp_ctx_t *ctx)
{
    json_object *r = json_object_new_object(), *a = json_object_new_array();
    int i;
    for (i = 0; srv->tools[i]; i++) {
        const prov_mcp_tool_t *t = srv->tools[i];
        json_object *o;
        if (!tool_available(t, ctx))
            continue;
        o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(t->name));
        json_object_object_add(o, "title", json_object_new_string(t->title));
        json_object_object_add(o, "description", json_object_new_string(t->description));
        json_object_object_add(o, "inputSchema", schema(t->input_schema));
        json_object_object_add(o, "outputSchema", schema(t->output_schema));
        json_object_array_add(a, o);
    }
    json_object_object_add(r, "tools", a);
    return r;
}

static const prov_mcp_tool_t *tool_find(const prov_mcp_server_t *srv,
                                        const prov_mcp_ctx_t *ctx, const char *name)
{
    int i;
    for (i = 0; srv->tools[i]; i++) {
        if (!strcmp(srv->tools[i]->name, name) && tool_available(srv->tools[i], ctx))
            return srv->tools[i];
    }
    return NULL;
}

/* A result with one text block (and the structured content when ok). */
static json_object *tool_result(json_object *structured, const char *text, int is_error,
                                apr_pool_t *p)
{
    json_object *r = json_object_new_object(), *content = json_object_new_array();
    json_object *block = json_object_new_object();
    json_object_object_add(block, "type", json_object_new_string("text"));
    json_object_object_add(block, "text", json_object_new_string(
        structured ? prov_json_dump(structured, p) : text));
    json_object_array_add(content, block);
    json_object_object_add(r, "content", content);
    if (structured)
        json_object_object_add(r, "structuredContent", json_object_get(structured));
    json_object_object_add(r, "isError", json_object_new_boolean(is_error));
    return r;
}

/* The first member of args that t's input schema does not name, when the
 * schema says additionalProperties false (as all our tools' do), or NULL. */
static const char *unknown_argument(const prov_mcp_tool_t *t, json_object *args, apr_pool_t *p)
{
    const char *perr = NULL;
    json_object *schema, *props, *extra;
    if (!args)
        return NULL;
    schema = prov_json_parse(t->input_schema, strlen(t->input_schema), &perr, p);
    extra = schema ? prov_json_get(schema, "additionalProperties", json_type_boolean) : NULL;
    if (!extra || json_object_get_boolean(extra))
        return NULL;
    props = prov_json_get(schema, "properties", json_type_object);
    json_object_object_foreach(args, k, v) {
        (void)v;
        if (!props || !json_object_object_get_ex(props, k, NULL))
            return k;
    }
    return NULL;
}

static void tools_call(prov_mcp_answer_t *out, const prov_mcp_server_t *srv,
                       const prov_mcp_ctx_t *ctx, json_object *id, json_object *params,
                       apr_pool_t *p)
{
    json_object *name = prov_json_get(params, "name", json_type_string);
    json_object *args = NULL, *result = NULL;
    const prov_mcp_tool_t *t;
    const char *msg = NULL;
    prov_mcp_tool_rc_e rc;
    if (!name) {
        answer_error(out, 200, id, PROV_MCP_INVALID_PARAMS,
                     "tools/call needs params.name (a string)", p);
        return;
    }
    if (!(t = tool_find(srv, ctx, json_object_get_string(name)))) {
        answer_error(out, 200, id, PROV_MCP_INVALID_PARAMS, apr_psprintf(p, "Unknown tool: %s",
                     json_object_get_string(name)), p);
        return;
    }
    if (json_object_object_get_ex(params, "arguments", &args) && args
        && !json_object_is_type(args, json_type_object)) {
        answer_error(out, 200, id, PROV_MCP_INVALID_PARAMS,
                     "tools/call params.arguments must be an object", p);
        return;
    }
    if ((msg = unknown_argument(t, args, p))) {
        msg = apr_psprintf(p, "%s takes no argument \"%s\"", t->name, msg);
        answer_result(out, id, tool_result(NULL, msg, 1, p), p);
        return;
    }
    rc = t->call(&result, &msg, args, ctx, p);
    if (rc == PROV_MCP_TOOL_FAILED) {
        answer_error(out, 200, id, PROV_MCP_INTERNAL_ERROR,
                     "The service could not answer right now; try again later.", p);
        return;
    }
    if (result)
        prov_json_own(result, p);
    answer_result(out, id, rc == PROV_MCP_TOOL_OK ? tool_result(result, NULL, 0, p)
                                                  : tool_result(NULL, msg, 1, p), p);
}

static void request(prov_mcp_answer_t *out, const prov_mcp_server_t *srv,
                    const prov_mcp_ctx_t *ctx, const char *method, json_object *id,
                    json_object *params, apr_pool_t *p)
{
    const char *bad = NULL;
    json_object *r;
    if (!strcmp(method, "initialize")) {
        if (!(r = initialize(srv, params, &bad)))
            answer_error(out, 200, id, PROV_MCP_INVALID_PARAMS, bad, p);
        else
            answer_result(out, id, r, p);
    }
    else if (!strcmp(method, "ping"))
        answer_result(out, id, json_object_new_object(), p);
    else if (!strcmp(method, "tools/list"))
        answer_result(out, id, tools_list(srv, ctx), p);
    else if (!strcmp(method, "tools/call"))
        tools_call(out, srv, ctx, id, params, p);
    else
        answer_error(out, 200, id, PROV_MCP_METHOD_NOT_FOUND,
                     apr_psprintf(p, "Method not found: %s", method), p);
}

/* ---- the message ------------------------------------------------------------ */

/* Non-zero when id is what JSON-RPC allows MCP (a string or an integer). */
static int id_ok(json_object *id)
{
    return json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int);
}

void prov_mcp_handle(prov_mcp_answer_t *out, const prov_mcp_server_t *srv,
                     const prov_mcp_ctx_t *ctx, const char *body, apr_size_t len,
                     apr_pool_t *p)
{
    const char *err = NULL;
    json_object *msg = prov_json_parse(body, len, &err, p), *id = NULL, *params = NULL;
    json_object *jsonrpc = NULL, *method = NULL;
    int has_id;
    memset(out, 0, sizeof(*out));
    if (!msg) {
        answer_error(out, 400, NULL, PROV_MCP_PARSE_ERROR,
                     apr_pstrcat(p, "Parse error: ", err ? err : "not JSON", NULL), p);
        return;
    }
    if (json_object_is_type(msg, json_type_array)) {
        answer_error(out, 400, NULL, PROV_MCP_INVALID_REQUEST, "JSON-RPC batches are not "
                     "supported: send one message per POST (MCP 2025-06-18 and later)", p);
        return;
    }
    if (!json_object_is_type(msg, json_type_object)) {
        answer_error(out, 400, NULL, PROV_MCP_INVALID_REQUEST,
                     "A message must be a JSON-RPC object", p);
        return;
    }
    has_id = json_object_object_get_ex(msg, "id", &id);
    if (has_id && !id_ok(id)) {
        answer_error(out, 400, NULL, PROV_MCP_INVALID_REQUEST,
                     "id must be a string or an integer", p);
        return;
    }
    if (!json_object_object_get_ex(msg, "jsonrpc", &jsonrpc)
        || !json_object_is_type(jsonrpc, json_type_string)
        || strcmp(json_object_get_string(jsonrpc), "2.0")) {
        answer_error(out, 400, id, PROV_MCP_INVALID_REQUEST, "jsonrpc must be \"2.0\"", p);
        return;
    }
    if (!json_object_object_get_ex(msg, "method", &method)) {
        /* A client's response to a request of ours: accepted, nothing to say. */
        if (has_id && (json_object_object_get_ex(msg, "result", NULL)
                       || json_object_object_get_ex(msg, "error", NULL)))
            out->status = 202;
        else
            answer_error(out, 400, id, PROV_MCP_INVALID_REQUEST,
                         "A message needs a method (or a result or an error)", p);
        return;
    }
    if (!json_object_is_type(method, json_type_string)) {
        answer_error(out, 400, id, PROV_MCP_INVALID_REQUEST, "method must be a string", p);
        return;
    }
    out->method = apr_pstrdup(p, json_object_get_string(method));
    if (json_object_object_get_ex(msg, "params", &params)
        && !json_object_is_type(params, json_type_object)) {
        if (has_id)
            answer_error(out, 200, id, PROV_MCP_INVALID_PARAMS, "params must be an object", p);
        else
            answer_error(out, 400, NULL, PROV_MCP_INVALID_PARAMS, "params must be an object", p);
        return;
    }
    if (!has_id) {
        out->status = 202;      /* a notification: nothing to answer */
        return;
    }
    request(out, srv, ctx, out->method, id, params, p);
}
