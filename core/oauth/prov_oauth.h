/* core/oauth/: the service's own OAuth 2.1 authorization server, for the
 * MCP account endpoint (docs/internals/mcp-oauth.md; the specification's "MCP (read-only)"
 * and "Authentication"): metadata (RFC 8414, RFC 9728), dynamic
 * registration of public clients (RFC 7591, redirect URIs as RFC 8252
 * allows), the authorization request and its consent, one-time codes bound
 * to a PKCE S256 challenge, access and refresh tokens bound to the
 * resource, refresh rotation with reuse detection, revocation (RFC 7009),
 * and the access-token check of the protected resource. Every code and
 * token is 256 random bits stored only as its SHA-256; all state is in the
 * database, so several nodes share it. It calls identity (its encoders:
 * base64url, form encoding, the S256 challenge), account (prov_secret: random
 * tokens and hashes), store and base. docs/internals/mcp-oauth.md tells
 * the flow. */
/* prov_oauth.h: what the glue calls. Times are the caller's "now". */
#ifndef PROV_OAUTH_H
#define PROV_OAUTH_H

#include "prov_common.h"
#include "prov_store.h"

#define PROV_OAUTH_SCOPE        "account:read"
#define PROV_OAUTH_CODE_TTL     60                  /* seconds */
#define PROV_OAUTH_ACCESS_TTL   3600
#define PROV_OAUTH_REFRESH_TTL  (30 * 24 * 3600)
/* A grant's absolute life: refresh tokens rotate, but none outlives its
 * grant's first 90 days; then the user authorizes the client again. */
#define PROV_OAUTH_GRANT_TTL    (90 * 24 * 3600)
#define PROV_OAUTH_RESOURCE_PATH "/v1/mcp/account"
#define PROV_OAUTH_NAME_MAX     100                 /* client_name */
#define PROV_OAUTH_REDIRECTS_MAX 10

/* An OAuth error as RFC 6749 words it: the error code and a description
 * of our own (never anything secret). */
typedef struct prov_oauth_err_t {
    const char *error;          /* "invalid_request", "invalid_grant", ... */
    const char *description;
} prov_oauth_err_t;

/* ---- forms and metadata (prov_oauth_client.c) ------------------------------ */

/* Parses application/x-www-form-urlencoded text (a body or a query
 * string) into *form. APR_EINVAL with *err (invalid_request) on a bad
 * escape or a parameter given twice (RFC 6749 3.1, 3.2). */
apr_status_t prov_oauth_form(apr_table_t **form, prov_oauth_err_t *err, const char *text,
                             apr_pool_t *p);

/* The authorization server's metadata (RFC 8414) of issuer, and the
 * protected resource's (RFC 9728), as JSON text. */
const char *prov_oauth_as_metadata(const char *issuer, apr_pool_t *p);
const char *prov_oauth_resource_metadata(const char *issuer, apr_pool_t *p);
/* The account endpoint's URL (the tokens' audience) for issuer. */
const char *prov_oauth_resource(const char *issuer, apr_pool_t *p);

/* ---- clients (prov_oauth_client.c) ----------------------------------------- */

typedef struct prov_oauth_client_t {
    const char *client_id;
    const char *name;           /* client_name, or NULL */
    apr_array_header_t *redirect_uris;   /* const char * */
    apr_int64_t created_at;
} prov_oauth_client_t;

/* Non-zero when uri may be registered: https (no fragment), or http on a
 * loopback address (127.0.0.1, [::1], localhost), absolute, at most 2000
 * bytes, no userinfo. */
int prov_oauth_redirect_uri_ok(const char *uri);
/* Non-zero when uri is one of c's: the same string, except that a
 * loopback http one may name any port (RFC 8252 7.3). */
int prov_oauth_redirect_registered(const prov_oauth_client_t *c, const char *uri);

/* Registers a public client from an RFC 7591 request body (JSON).
 * APR_EINVAL with *err (invalid_redirect_uri, invalid_client_metadata). */
apr_status_t prov_oauth_register(prov_oauth_client_t **c, prov_oauth_err_t *err,
                                 prov_store_t *s, const char *body, apr_size_t len,
                                 apr_int64_t now, apr_pool_t *p);
/* The registration's answer (RFC 7591 3.2.1). */
const char *prov_oauth_client_json(const prov_oauth_client_t *c, apr_pool_t *p);
/* The client of client_id; APR_NOTFOUND when none. */
apr_status_t prov_oauth_client_get(prov_oauth_client_t **c, prov_store_t *s,
                                   const char *client_id, apr_pool_t *p);

/* ---- the authorization request (prov_oauth_authz.c) ------------------------- */

typedef struct prov_oauth_authz_t {
    const char *response_type;
    const char *client_id;
    const char *redirect_uri;
    const char *code_challenge;
    const char *code_challenge_method;
    const char *scope;          /* after the check: the granted scope */
    const char *state;          /* may be NULL */
    const char *resource;
} prov_oauth_authz_t;

/* The request's parameters from a parsed query or form. */
void prov_oauth_authz_read(prov_oauth_authz_t *a, const apr_table_t *form);
/* First step: the client and its redirect URI. APR_NOTFOUND (unknown
 * client) or APR_EINVAL (no or unregistered redirect_uri), with *err: these
 * are shown to the user, never redirected (RFC 6749 4.1.2.1). */
apr_status_t prov_oauth_authz_client(prov_oauth_client_t **c, prov_oauth_err_t *err,
                                     prov_store_t *s, const prov_oauth_authz_t *a,
                                     apr_pool_t *p);
/* Second step: response_type code, PKCE S256 (plain and a missing
 * challenge refused), scope (default and only: account:read), resource
 * exactly resource_url. APR_EINVAL with *err, to be sent to the redirect URI. */
apr_status_t prov_oauth_authz_check(prov_oauth_err_t *err, prov_oauth_authz_t *a,
                                    const char *resource_url);
/* The consent form's anti-forgery token: HMAC-SHA-256 under key (a secret
 * of the browser's session) of every parameter the form carries. */
const char *prov_oauth_consent_token(const char *key, const prov_oauth_authz_t *a,
                                     apr_pool_t *p);
/* Non-zero when token is consent_token(key, a) (compared in constant time). */
int prov_oauth_consent_ok(const char *token, const char *key, const prov_oauth_authz_t *a,
                          apr_pool_t *p);
/* A one-time code for user_id (stored as its hash, PROV_OAUTH_CODE_TTL). */
apr_status_t prov_oauth_code_issue(const char **code, prov_store_t *s,
                                   const prov_oauth_authz_t *a, apr_int64_t user_id,
                                   apr_int64_t now, apr_pool_t *p);
/* The authorization response: redirect_uri with code (or error and
 * error_description), state when given and iss (RFC 9207). */
const char *prov_oauth_redirect(const char *redirect_uri, const char *code,
                                const prov_oauth_err_t *err, const char *state,
                                const char *issuer, apr_pool_t *p);

/* ---- tokens (prov_oauth_token.c) -------------------------------------------- */

typedef struct prov_oauth_tokens_t {
    const char *access_token;
    const char *refresh_token;
    const char *scope;
    apr_int64_t expires_in;
    apr_int64_t grant_id;
    int reused;                 /* refused as a replayed code or refresh token: the grant revoked */
} prov_oauth_tokens_t;

/* POST /oauth/token's form: authorization_code (code, redirect_uri,
 * client_id, code_verifier, resource) or refresh_token (refresh_token,
 * client_id, resource, scope). A code serves once: a second use revokes
 * what the first gave; a refresh token is rotated, and a rotated one
 * presented again revokes its grant. APR_EINVAL with *err (the RFC 6749
 * 5.2 code) on refusal (t->reused tells a replay); other statuses: the
 * database. */
apr_status_t prov_oauth_token(prov_oauth_tokens_t *t, prov_oauth_err_t *err, prov_store_t *s,
                              const apr_table_t *form, apr_int64_t now, apr_pool_t *p);
/* The token answer's JSON (RFC 6749 5.1). */
const char *prov_oauth_tokens_json(const prov_oauth_tokens_t *t, apr_pool_t *p);

/* RFC 7009: revokes token (access: that token; refresh: its whole grant)
 * when it belongs to client_id. Unknown tokens are not an error
 * (APR_SUCCESS); a token of another client is refused (APR_EACCES, nothing
 * revoked: RFC 7009 2.1, the client must be the token's). */
apr_status_t prov_oauth_revoke(prov_store_t *s, const char *token, const char *client_id,
                               apr_int64_t now, apr_pool_t *p);

/* What a valid access token says. */
typedef struct prov_oauth_access_t {
    apr_int64_t user_id;
    apr_int64_t grant_id;
    const char *client_id;
    const char *scope;
    const char *resource;       /* its audience */
} prov_oauth_access_t;

/* The access token's grant: APR_NOTFOUND when it is malformed, unknown,
 * expired or revoked, or its user is blocked. The audience and the scope
 * are the caller's to check. */
apr_status_t prov_oauth_access_check(prov_oauth_access_t **a, prov_store_t *s,
                                     const char *token, apr_int64_t now, apr_pool_t *p);
/* Non-zero when the space-separated scope holds want. */
int prov_oauth_scope_has(const char *scope, const char *want);

/* ---- a user's grants (prov_oauth_grant.c) ------------------------------------------ */

typedef struct prov_oauth_user_client_t {
    const char *client_id;
    const char *name;           /* may be NULL */
    apr_int64_t authorized_at;  /* the first live grant */
    apr_int64_t last_used_at;   /* the newest token issued */
} prov_oauth_user_client_t;

/* The clients (prov_oauth_user_client_t *) user_id has authorized whose
 * grants still hold a live refresh token, oldest first. */
apr_status_t prov_oauth_user_clients(apr_array_header_t **clients, prov_store_t *s,
                                     apr_int64_t user_id, apr_int64_t now, apr_pool_t *p);
/* Revokes every grant of client_id by user_id (*revoked counts them). */
apr_status_t prov_oauth_user_revoke(int *revoked, prov_store_t *s, apr_int64_t user_id,
                                    const char *client_id, apr_int64_t now, apr_pool_t *p);

#endif
