/* mod_provider_oauth.h: what the MCP and OAuth glue files share: MCP's
 * Streamable HTTP transport (mod_provider_mcp.c) and the service's own
 * OAuth 2.1 authorization server with the protected account endpoint
 * (mod_provider_oauth.c). core/mcp and core/oauth do the work
 * (docs/internals/mcp-oauth.md); these files speak HTTP for them. */
#ifndef MOD_PROVIDER_OAUTH_H
#define MOD_PROVIDER_OAUTH_H

#include "mod_provider_auth.h"
#include "prov_mcp.h"
#include "prov_oauth.h"

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

/* mod_provider_oauth.c */
/* An RFC 6749 error answer (JSON, no-store). */
int provider_oauth_error(request_rec *r, int status, const prov_oauth_err_t *err);
/* /.well-known/oauth-authorization-server, /.well-known/oauth-protected-resource/v1/mcp/account
 * and /oauth/... */
int provider_oauth_handler(request_rec *r);
/* POST /v1/mcp/account: the bearer token checked, then MCP. */
int provider_mcp_account_handler(request_rec *r);
/* GET /v1/mcp/clients, DELETE /v1/mcp/clients/{client_id}: the cabinet's
 * authorized MCP clients. */
int provider_mcp_clients_handler(request_rec *r);

/* mod_provider_consent.c: GET and POST /oauth/authorize. */
int provider_consent_handler(request_rec *r);

#endif
