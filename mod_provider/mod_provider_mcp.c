/* mod_provider_mcp.c: MCP's Streamable HTTP transport for POST /v1/mcp
 * (public) and, once mod_provider_oauth.c has checked the access token,
 * POST /v1/mcp/account: stateless, every answer one JSON object (no SSE
 * stream: GET and DELETE get 405). The checks the transport asks of a
 * server come first, each refusal a JSON-RPC error without an id: an
 * Origin that is not this site's (403, against DNS rebinding), an
 * unsupported MCP-Protocol-Version (400), an Accept without JSON (406), a
 * body that is not JSON (415) or too large (413). The message itself is
 * core/mcp's (prov_mcp_handle). */
#include <string.h>
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "mod_provider_docs.h"
#include "mod_provider_http.h"
#include "mod_provider_mcp.h"
#include "prov_docs.h"

APLOG_USE_MODULE(provider);

static prov_store_t *tool_store_open(void *baton)
{
    prov_error_t *err = NULL;
    return provider_db_open(baton, &err);
}

static void tool_store_close(void *baton, prov_store_t *s)
{
    provider_db_close(baton, s);
}

/* The documentation's sections for search_docs (core/docs: the pages under
 * ProviderDocsRoot), only when a message asks: from the child's cache,
 * which reads the pages again only when one changed. */
static const apr_array_header_t *tool_docs(void *baton)
{
    request_rec *r = baton;
    provider_srv_conf *c = provider_conf(r);
    prov_docs_vars_t v = { c->public_url, NULL, NULL, NULL };
    apr_array_header_t *sections = NULL, *docs = NULL;
    apr_status_t rv;
    int i;
    apr_pool_userdata_get((void **)&docs, "provider-mcp-docs", r->pool);
    if (docs)
        return docs;
    docs = apr_array_make(r->pool, 32, sizeof(prov_mcp_doc_t *));
    rv = c->docs_cache
         ? prov_docs_cache_sections(&sections, c->docs_cache, provider_docs_root(r), &v, NULL,
                                    r->pool)
         : prov_docs_sections(&sections, provider_docs_root(r), &v, r->pool);
    if (rv != APR_SUCCESS)
        ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, r, "PROV00702: search_docs: cannot read "
                      "the documentation in %s (ProviderDocsRoot)", provider_docs_root(r));
    for (i = 0; rv == APR_SUCCESS && i < sections->nelts; i++) {
        const prov_docs_section_t *s = APR_ARRAY_IDX(sections, i, const prov_docs_section_t *);
        prov_mcp_doc_t *d = apr_pcalloc(r->pool, sizeof(*d));
        d->path = s->link;
        d->title = s->title;
        d->text = s->text;
        APR_ARRAY_PUSH(docs, prov_mcp_doc_t *) = d;
    }
    apr_pool_userdata_setn(docs, "provider-mcp-docs", NULL, r->pool);
    return docs;
}

static int refuse(request_rec *r, int status, int code, const char *message)
{
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00700: MCP request refused (%d): %s",
                  status, message);
    return provider_send_json(r, status, prov_mcp_error_body(code, message, r->pool));
}

int provider_mcp_origin_ok(request_rec *r)
{
    const char *origin = apr_table_get(r->headers_in, "Origin");
    const char *public_url = provider_conf(r)->public_url;
    return !origin || (public_url && !strcasecmp(origin, public_url));
}

/* Non-zero when an Accept header allows a JSON answer (none: anything goes). */
static int accepts_json(const char *accept)
{
    return !accept || ap_strcasestr(accept, "application/json")
           || ap_strcasestr(accept, "application/*") || strstr(accept, "*/*");
}

static int json_body(request_rec *r)
{
    const char *type = apr_table_get(r->headers_in, "Content-Type");
    apr_size_t n = strlen("application/json");
    return type && !strncasecmp(type, "application/json", n)
           && (type[n] == '\0' || type[n] == ';' || type[n] == ' ');
}

provider_step_t provider_mcp_method_check(request_rec *r)
{
    if (r->method_number == M_POST)
        return PROVIDER_GO;
    apr_table_setn(r->err_headers_out, "Allow", "POST");
    return refuse(r, HTTP_METHOD_NOT_ALLOWED, PROV_MCP_INVALID_REQUEST,
                  "Use POST: this endpoint offers no event stream");
}

int provider_mcp_serve(request_rec *r, const prov_mcp_server_t *srv, apr_int64_t user_id)
{
    provider_srv_conf *c = provider_conf(r);
    const char *version = apr_table_get(r->headers_in, "MCP-Protocol-Version");
    const char *body = NULL;
    apr_size_t len = 0;
    prov_mcp_ctx_t ctx;
    prov_mcp_answer_t out;
    apr_status_t rv;
    if (!provider_mcp_origin_ok(r))
        return refuse(r, HTTP_FORBIDDEN, PROV_MCP_INVALID_REQUEST,
                      "Origin not allowed: this endpoint answers only its own site");
    if (version && !prov_mcp_version_supported(version))
        return refuse(r, HTTP_BAD_REQUEST, PROV_MCP_INVALID_REQUEST, apr_psprintf(r->pool,
                      "Unsupported MCP-Protocol-Version; this server speaks 2025-11-25, "
                      "2025-06-18 and 2025-03-26"));
    if (!accepts_json(apr_table_get(r->headers_in, "Accept")))
        return refuse(r, HTTP_NOT_ACCEPTABLE, PROV_MCP_INVALID_REQUEST,
                      "This server answers with application/json: list it in Accept");
    if (!json_body(r))
        return refuse(r, HTTP_UNSUPPORTED_MEDIA_TYPE, PROV_MCP_INVALID_REQUEST,
                      "The body must be application/json");
    rv = provider_read_body(r, c->max_body < PROVIDER_MCP_BODY_MAX ? c->max_body
                                                                   : PROVIDER_MCP_BODY_MAX,
                            &body, &len);
    if (rv == APR_ENOSPC)
        return refuse(r, HTTP_REQUEST_ENTITY_TOO_LARGE, PROV_MCP_INVALID_REQUEST,
                      apr_psprintf(r->pool, "The message is too large (at most %d bytes)",
                                   PROVIDER_MCP_BODY_MAX));
    if (rv != APR_SUCCESS)
        return refuse(r, HTTP_BAD_REQUEST, PROV_MCP_PARSE_ERROR,
                      "The message could not be read");
    memset(&ctx, 0, sizeof(ctx));
    ctx.store_open = tool_store_open;
    ctx.store_close = tool_store_close;
    ctx.baton = r;
    ctx.docs = tool_docs;
    ctx.catalog = c->catalog;
    ctx.gateway = c->gateway;
    ctx.default_max_output = c->default_max_tokens;
    ctx.public_url = c->public_url;
    ctx.user_id = user_id;
    ctx.now = prov_now();
    prov_mcp_handle(&out, srv, &ctx, body, len, r->pool);
    if (out.status == HTTP_ACCEPTED) {
        r->status = HTTP_ACCEPTED;
        return OK;
    }
    if (out.status != HTTP_OK)
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00701: MCP message refused (%d)",
                      out.status);
    return provider_send_json(r, out.status, out.body);
}

/* POST /v1/mcp */
int provider_mcp_handler(request_rec *r)
{
    provider_step_t go = provider_mcp_method_check(r);
    return go == PROVIDER_GO ? provider_mcp_serve(r, &prov_mcp_public, 0) : go;
}
