/* core/mcp/: the MCP endpoints' protocol and tools (docs/internals/mcp-oauth.md, the
 * specification's "MCP (read-only)"). JSON-RPC 2.0 as MCP's Streamable HTTP
 * transport carries it, stateless and answered with single JSON objects
 * (prov_mcp, this header): one POST body in, an HTTP status and a body out.
 * The tools (prov_mcp_tools: search_docs and list_models, public;
 * prov_mcp_account: account_limits and account_usage, for the user an
 * access token names) read through core/cabinet (the cabinet's account and
 * usage answers), core/billing and core/account. It calls cabinet, billing,
 * account, store and base; never oauth (the glue checks the token and
 * gives the user) or transport. docs/internals/mcp-oauth.md
 * tells the whole flow. */
/* prov_mcp.h: one MCP message handled. prov_mcp_handle takes a POST body
 * and says what to answer: 200 with a JSON-RPC response, 202 with nothing
 * (a notification, or a client's response), or 400 with an error that has
 * no id (unparsable JSON, an invalid request, a batch: the 2025-06-18
 * revision removed JSON-RPC batching). Methods: initialize (version
 * negotiation), ping, tools/list, tools/call; anything else -32601. Nothing
 * a client sends makes an HTTP 5xx. */
#ifndef PROV_MCP_H
#define PROV_MCP_H

#include "prov_common.h"
#include "prov_store.h"
#include "prov_catalog.h"
#include <json-c/json.h>

#define PROV_MCP_VERSION_LATEST "2025-11-25"
/* serverInfo.version: the release (configure.ac's AC_INIT; core sees no config.h). */
#define PROV_MCP_SERVER_VERSION "0.1.0"

/* JSON-RPC error codes. */
#define PROV_MCP_PARSE_ERROR      (-32700)
#define PROV_MCP_INVALID_REQUEST  (-32600)
#define PROV_MCP_METHOD_NOT_FOUND (-32601)
#define PROV_MCP_INVALID_PARAMS   (-32602)
#define PROV_MCP_INTERNAL_ERROR   (-32603)

/* A section of the public documentation, as the docs room gives them:
 * its path under this site ("/docs/codex#install"), its title and its
 * plain text. search_docs ranks these. */
typedef struct prov_mcp_doc_t {
    const char *path;
    const char *title;
    const char *text;
} prov_mcp_doc_t;

/* What a tool may use, filled by the caller for one request. */
typedef struct prov_mcp_ctx_t {
    /* A database connection for a tool (the glue's), and its release. */
    prov_store_t *(*store_open)(void *baton);
    void (*store_close)(void *baton, prov_store_t *s);
    void *baton;
    prov_catalog_cache_t *catalog;   /* list_models: the gateway's model list */
    prov_gateway_t *gateway;
    apr_int64_t default_max_output;  /* list_models: ProviderDefaultMaxTokens */
    /* search_docs' sections (prov_mcp_doc_t *), read when a message needs
     * them (the glue's: the docs room's pages); NULL, or an empty list: none. */
    const apr_array_header_t *(*docs)(void *baton);
    const char *public_url;          /* the site's origin, for the docs' links */
    apr_int64_t user_id;             /* the account tools' user; 0 on the public endpoint */
    apr_int64_t now;
} prov_mcp_ctx_t;

/* A tool's outcome. */
typedef enum {
    PROV_MCP_TOOL_OK = 0,        /* *result is its structured content */
    PROV_MCP_TOOL_BAD_INPUT,     /* *msg says what is wrong (an isError result) */
    PROV_MCP_TOOL_FAILED         /* the service failed: -32603 */
} prov_mcp_tool_rc_e;

typedef struct prov_mcp_tool_t {
    const char *name;
    const char *title;
    const char *description;
    const char *input_schema;    /* JSON Schema text */
    const char *output_schema;   /* JSON Schema text: structured results conform */
    prov_mcp_tool_rc_e (*call)(json_object **result, const char **msg, json_object *args,
                               const prov_mcp_ctx_t *ctx, apr_pool_t *p);
    /* Non-zero when the tool can serve with ctx (NULL: always): a tool
     * without its data is neither listed nor called. */
    int (*available)(const prov_mcp_ctx_t *ctx);
} prov_mcp_tool_t;

/* One endpoint: its name in serverInfo, its instructions and its tools. */
typedef struct prov_mcp_server_t {
    const char *name;
    const char *instructions;
    const prov_mcp_tool_t *const *tools;   /* NULL-terminated */
} prov_mcp_server_t;

typedef struct prov_mcp_answer_t {
    int status;                  /* 200, 202 or 400 */
    const char *body;            /* JSON text; NULL with 202 */
    const char *method;          /* the request's method when it had one (for logs) */
} prov_mcp_answer_t;

/* Non-zero when v is a protocol revision this server speaks. */
int prov_mcp_version_supported(const char *v);

/* Handles one POST body (len bytes) for srv's tools with ctx. */
void prov_mcp_handle(prov_mcp_answer_t *out, const prov_mcp_server_t *srv,
                     const prov_mcp_ctx_t *ctx, const char *body, apr_size_t len,
                     apr_pool_t *p);

/* A JSON-RPC error response without an id (for refusals made before the
 * body is read: a foreign Origin, an unsupported MCP-Protocol-Version). */
const char *prov_mcp_error_body(int code, const char *message, apr_pool_t *p);

/* The public endpoint (/v1/mcp): search_docs, list_models (prov_mcp_tools.c). */
extern const prov_mcp_server_t prov_mcp_public;

/* The account endpoint (/v1/mcp/account): account_limits, account_usage
 * for ctx->user_id (prov_mcp_account.c). */
extern const prov_mcp_server_t prov_mcp_account;

/* search_docs' ranking on its own: the sections of docs (prov_mcp_doc_t *)
 * that match query, best first, at most limit, as an array of
 * {title, path, url, excerpt, score}. */
json_object *prov_mcp_docs_search(const apr_array_header_t *docs, const char *query, int limit,
                                  const char *public_url, apr_pool_t *p);

/* A hit's excerpt: about PROV_MCP_EXCERPT_LEN bytes of text around offset at
 * (whole UTF-8 sequences, whitespace folded, "... " before and " ..." after
 * when cut), written with its NUL into out, which holds
 * PROV_MCP_EXCERPT_MAX bytes. Returns its length. */
#define PROV_MCP_EXCERPT_BEFORE 80
#define PROV_MCP_EXCERPT_LEN 240
#define PROV_MCP_EXCERPT_MAX (sizeof("... ") - 1 + PROV_MCP_EXCERPT_LEN + sizeof(" ..."))
apr_size_t prov_mcp_excerpt(char *out, const char *text, apr_size_t at);

#endif
