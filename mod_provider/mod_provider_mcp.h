/* mod_provider_mcp.h: the API of mod_provider_mcp.c, MCP's Streamable HTTP
 * transport: the public /v1/mcp, and what /v1/mcp/account
 * (mod_provider_oauth.c) serves its messages with. core/mcp does the work
 * (docs/internals/mcp-oauth.md). */
#ifndef MOD_PROVIDER_MCP_H
#define MOD_PROVIDER_MCP_H

#include "mod_provider.h"
#include "prov_mcp.h"

/* Non-zero when r has no Origin or this site's (ProviderPublicURL). */
int provider_mcp_origin_ok(request_rec *r);
/* PROVIDER_GO for a POST; else answers 405 (Allow: POST). */
provider_step_t provider_mcp_method_check(request_rec *r);
/* Serves one MCP message of r (a POST) with srv's tools for user_id (0:
 * the public endpoint). Returns what the handler returns. */
int provider_mcp_serve(request_rec *r, const prov_mcp_server_t *srv, apr_int64_t user_id);
/* The largest MCP message read (bytes; ProviderMaxBodySize when smaller): the
 * tools take a few short arguments, and /v1/mcp is open to anyone. */
#define PROVIDER_MCP_BODY_MAX 65536

/* POST /v1/mcp */
int provider_mcp_handler(request_rec *r);

#endif
