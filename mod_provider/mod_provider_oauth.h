/* mod_provider_oauth.h: the API of mod_provider_oauth.c, the service's own
 * OAuth 2.1 authorization server with the protected account endpoint and
 * the cabinet's list of authorized clients. core/oauth does the work
 * (docs/internals/mcp-oauth.md). */
#ifndef MOD_PROVIDER_OAUTH_H
#define MOD_PROVIDER_OAUTH_H

#include "mod_provider.h"
#include "prov_oauth.h"

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

#endif
