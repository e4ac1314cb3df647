/* test_prov_mcp.c: unit tests of core/mcp's message handling (prov_mcp.c)
 * with a small server of test tools: version negotiation, what answers 202,
 * what is refused with 400 and which JSON-RPC code, tools/list hiding a
 * tool without its data, a tool's bad input as an isError result and its
 * failure as -32603; and search_docs' ranking (title above text, every word
 * above some), its excerpts (around the first match, whitespace folded,
 * never a cut UTF-8 sequence) and its links. */
#include <string.h>
#include "unit_tests.h"
#include "prov_mcp.h"
#include "prov_json.h"

static prov_mcp_tool_rc_e echo(json_object **result, const char **msg, json_object *args,
                               const prov_mcp_ctx_t *ctx, apr_pool_t *p)
{
    json_object *v = prov_json_get(args, "v", json_type_int);
    (void)ctx;
    (void)p;
    if (!v) {
        *msg = "v must be an integer";
        return PROV_MCP_TOOL_BAD_INPUT;
    }
    if (json_object_get_int(v) < 0)
        return PROV_MCP_TOOL_FAILED;
    *result = json_object_new_object();
    json_object_object_add(*result, "v", json_object_get(v));
    return PROV_MCP_TOOL_OK;
}

static int never(const prov_mcp_ctx_t *ctx)
{
    (void)ctx;
    return 0;
}

static const prov_mcp_tool_t t_echo = { "echo", "Echo", "Echoes v.",
    "{\"type\":\"object\"}", "{\"type\":\"object\"}", echo, NULL };
static const prov_mcp_tool_t t_hidden = { "hidden", "Hidden", "Never there.",
    "{\"type\":\"object\"}", "{\"type\":\"object\"}", echo, never };
static const prov_mcp_tool_t t_strict = { "strict", "Strict", "Echoes v, nothing else.",
    "{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"}},"
    "\"additionalProperties\":false}", "{\"type\":\"object\"}", echo, NULL };
static const prov_mcp_tool_t *const tools[] = { &t_echo, &t_hidden, &t_strict, NULL };
static const prov_mcp_server_t server = { "test", "Test instructions.", tools };

/* The answer to msg: its status, and the parsed body in *o (NULL when none). */
static int handle(json_object **o, const char *msg, apr_pool_t *p)
{
    prov_mcp_ctx_t ctx;
    prov_mcp_answer_t out;
    const char *err = NULL;
    memset(&ctx, 0, sizeof(ctx));
    prov_mcp_handle(&out, &server, &ctx, msg, strlen(msg), p);
    *o = out.body ? prov_json_parse(out.body, strlen(out.body), &err, p) : NULL;
    return out.status;
}

static int error_code(json_object *o)
{
    json_object *e = prov_json_get(o, "error", json_type_object);
    json_object *c = prov_json_get(e, "code", json_type_int);
    return c ? json_object_get_int(c) : 0;
}

static void test_messages(void)
{
    apr_pool_t *p;
    json_object *o = NULL, *r;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                           "\"params\":{\"protocolVersion\":\"2025-06-18\"}}", p), 200);
    r = prov_json_get(o, "result", json_type_object);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(r, "protocolVersion"), "2025-06-18");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(r, "instructions"), "Test instructions.");
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"initialize\","
                           "\"params\":{\"protocolVersion\":\"1999-01-01\"}}", p), 200);
    r = prov_json_get(o, "result", json_type_object);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(r, "protocolVersion"), PROV_MCP_VERSION_LATEST);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "id"), "a");
    /* notifications and responses: 202, nothing to say */
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}", p), 202);
    CU_ASSERT_PTR_NULL(o);
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":1,"
                           "\"message\":\"m\"}}", p), 202);
    /* refusals */
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",", p), 400);
    CU_ASSERT_EQUAL(error_code(o), PROV_MCP_PARSE_ERROR);
    CU_ASSERT_EQUAL(handle(&o, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", p), 400);
    CU_ASSERT_EQUAL(error_code(o), PROV_MCP_INVALID_REQUEST);
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", p), 400);
    CU_ASSERT_EQUAL(error_code(o), PROV_MCP_INVALID_REQUEST);
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}", p), 200);
    CU_ASSERT_EQUAL(error_code(o), PROV_MCP_METHOD_NOT_FOUND);
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
                           "\"params\":3}", p), 200);
    CU_ASSERT_EQUAL(error_code(o), PROV_MCP_INVALID_PARAMS);
    apr_pool_destroy(p);
}

static void test_tools(void)
{
    apr_pool_t *p;
    json_object *o = NULL, *r, *list;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", p),
                    200);
    list = prov_json_get(prov_json_get(o, "result", json_type_object), "tools", json_type_array);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(list), 2);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(json_object_array_get_idx(list, 0), "name"), "echo");
    CU_ASSERT_PTR_NOT_NULL(prov_json_get(json_object_array_get_idx(list, 0), "outputSchema",
                                         json_type_object));
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"echo\",\"arguments\":{\"v\":7}}}", p), 200);
    r = prov_json_get(o, "result", json_type_object);
    CU_ASSERT_EQUAL(json_object_get_int(prov_json_get(prov_json_get(r, "structuredContent",
                    json_type_object), "v", json_type_int)), 7);
    CU_ASSERT_FALSE(json_object_get_boolean(prov_json_get(r, "isError", json_type_boolean)));
    /* bad input: a result the model can read, isError */
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"echo\",\"arguments\":{}}}", p), 200);
    r = prov_json_get(o, "result", json_type_object);
    CU_ASSERT_TRUE(json_object_get_boolean(prov_json_get(r, "isError", json_type_boolean)));
    CU_ASSERT_PTR_NULL(prov_json_get(r, "structuredContent", json_type_object));
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_to_json_string(r), "v must be an integer"));
    /* the tool's failure: -32603; a hidden or unknown tool: -32602 */
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"echo\",\"arguments\":{\"v\":-1}}}", p), 200);
    CU_ASSERT_EQUAL(error_code(o), PROV_MCP_INTERNAL_ERROR);
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"hidden\",\"arguments\":{\"v\":1}}}", p), 200);
    CU_ASSERT_EQUAL(error_code(o), PROV_MCP_INVALID_PARAMS);
    /* additionalProperties false: an argument the schema does not name is
     * bad input; a schema without it takes any */
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"strict\",\"arguments\":{\"v\":1,\"w\":2}}}",
                           p), 200);
    r = prov_json_get(o, "result", json_type_object);
    CU_ASSERT_TRUE(json_object_get_boolean(prov_json_get(r, "isError", json_type_boolean)));
    CU_ASSERT_PTR_NOT_NULL(strstr(json_object_to_json_string(r), "\\\"w\\\""));
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"strict\",\"arguments\":{\"v\":1}}}", p), 200);
    r = prov_json_get(o, "result", json_type_object);
    CU_ASSERT_FALSE(json_object_get_boolean(prov_json_get(r, "isError", json_type_boolean)));
    CU_ASSERT_EQUAL(handle(&o, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"echo\",\"arguments\":{\"v\":1,\"w\":2}}}",
                           p), 200);
    r = prov_json_get(o, "result", json_type_object);
    CU_ASSERT_FALSE(json_object_get_boolean(prov_json_get(r, "isError", json_type_boolean)));
    apr_pool_destroy(p);
}

static void add_doc(apr_array_header_t *docs, const char *path, const char *title,
                    const char *text)
{
    prov_mcp_doc_t *d = apr_pcalloc(docs->pool, sizeof(*d));
    d->path = path;
    d->title = title;
    d->text = text;
    APR_ARRAY_PUSH(docs, prov_mcp_doc_t *) = d;
}

static const char *field(json_object *a, int i, const char *key)
{
    return prov_json_get_str(json_object_array_get_idx(a, (apr_size_t)i), key);
}

static void test_docs_search(void)
{
    apr_pool_t *p;
    apr_array_header_t *docs;
    json_object *a;
    char long_text[1200];
    apr_pool_create(&p, prov_test_pool());
    docs = apr_array_make(p, 4, sizeof(prov_mcp_doc_t *));
    memset(long_text, 'x', sizeof(long_text));
    memcpy(long_text + 500, " budget \xc3\xa9t\xc3\xa9 ", 14);
    long_text[sizeof(long_text) - 1] = '\0';
    add_doc(docs, "/docs#keys", "API keys", "Create a key in the cabinet.\n\n  Keys share one "
            "balance. A key may carry a weekly budget.");
    add_doc(docs, "/docs#budgets", "Weekly budgets", "A budget caps one key's spend per week.");
    add_doc(docs, "/docs/codex", "Codex setup", "Install the launcher provider-codex.");
    add_doc(docs, "/docs#long", "Long", long_text);
    a = prov_json_own(prov_mcp_docs_search(docs, "Weekly BUDGET", 10, "https://x.test", p), p);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(a), 3);
    /* the title holds both words: first */
    CU_ASSERT_STRING_EQUAL(field(a, 0, "path"), "/docs#budgets");
    CU_ASSERT_STRING_EQUAL(field(a, 0, "url"), "https://x.test/docs#budgets");
    CU_ASSERT_STRING_EQUAL(field(a, 1, "path"), "/docs#keys");
    CU_ASSERT_STRING_EQUAL(field(a, 2, "path"), "/docs#long");
    /* whitespace folded; a late match starts with "... " on a character */
    CU_ASSERT_PTR_NOT_NULL(strstr(field(a, 1, "excerpt"), "cabinet. Keys share"));
    CU_ASSERT_EQUAL(strncmp(field(a, 2, "excerpt"), "... ", 4), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(field(a, 2, "excerpt"), "budget \xc3\xa9t\xc3\xa9"));
    CU_ASSERT_TRUE(strlen(field(a, 2, "excerpt")) < 260);
    a = prov_json_own(prov_mcp_docs_search(docs, "budget", 1, NULL, p), p);
    CU_ASSERT_EQUAL(json_object_array_length(a), 1);
    a = prov_json_own(prov_mcp_docs_search(docs, "  ...  ", 5, NULL, p), p);
    CU_ASSERT_EQUAL(json_object_array_length(a), 0);
    a = prov_json_own(prov_mcp_docs_search(docs, "zebra quux", 5, NULL, p), p);
    CU_ASSERT_EQUAL(json_object_array_length(a), 0);
    apr_pool_destroy(p);
}

void prov_test_suite_mcp(void)
{
    PROV_SUITE("mcp",
               PROV_TEST(test_messages),
               PROV_TEST(test_tools),
               PROV_TEST(test_docs_search));
}
