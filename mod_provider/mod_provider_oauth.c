/* mod_provider_oauth.c: the authorization server's machine-facing paths
 * and the protected account endpoint. The two metadata documents (RFC
 * 8414 at /.well-known/oauth-authorization-server, RFC 9728 at
 * /.well-known/oauth-protected-resource/v1/mcp/account), /oauth/register
 * (RFC 7591), /oauth/token and /oauth/revoke (RFC 7009), answered in RFC
 * 6749's error shape with Cache-Control: no-store; and POST
 * /v1/mcp/account, whose bearer token must be live, for this resource and
 * with account:read (else 401 or 403 with a WWW-Authenticate that leads a
 * client to the metadata). The browser's part, /oauth/authorize, is
 * mod_provider_consent.c's. Issuer and resource come from
 * ProviderPublicURL: without it none of this is served (404). */
#include <string.h>
#include "mod_provider_audit.h"
#include "mod_provider_oauth.h"
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "mod_provider_http.h"
#include "mod_provider_consent.h"
#include "mod_provider_mcp.h"
#include "mod_provider_session.h"
#include "util_script.h"
#include "prov_cabinet.h"
#include "prov_metrics.h"

APLOG_USE_MODULE(provider);

#define REGISTER_MAX 16384
#define FORM_MAX     16384

/* ---- answers ---------------------------------------------------------------- */

int provider_oauth_error(request_rec *r, int status, const prov_oauth_err_t *err)
{
    json_object *o = prov_json_own(json_object_new_object(), r->pool);
    json_object_object_add(o, "error", json_object_new_string(err->error));
    json_object_object_add(o, "error_description", json_object_new_string(err->description));
    apr_table_setn(r->err_headers_out, "Pragma", "no-cache");
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00715: %s %s refused: %s", r->method,
                  r->uri, err->error);
    return provider_send_json(r, status, prov_json_dump(o, r->pool));
}

static int oauth_fail(request_rec *r, int status, const char *error, const char *description)
{
    prov_oauth_err_t e = { error, description };
    return provider_oauth_error(r, status, &e);
}

static int metadata(request_rec *r, const char *json)
{
    if (r->method_number != M_GET) {
        apr_table_setn(r->err_headers_out, "Allow", "GET, HEAD");
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_METHOD_NOT_ALLOWED, NULL,
                             "Use GET.");
    }
    apr_table_setn(r->err_headers_out, "Access-Control-Allow-Origin", "*");
    return provider_send_json(r, HTTP_OK, json);
}

/* Reads a form body (application/x-www-form-urlencoded) into *form, or answers. */
static provider_step_t read_form(apr_table_t **form, request_rec *r)
{
    const char *type = apr_table_get(r->headers_in, "Content-Type"), *body = NULL;
    apr_size_t len = 0;
    prov_oauth_err_t err;
    apr_status_t rv;
    if (r->method_number != M_POST) {
        apr_table_setn(r->err_headers_out, "Allow", "POST");
        return oauth_fail(r, HTTP_METHOD_NOT_ALLOWED, "invalid_request", "Use POST.");
    }
    if (!type || strncasecmp(type, "application/x-www-form-urlencoded", 33))
        return oauth_fail(r, HTTP_BAD_REQUEST, "invalid_request",
                          "The body must be application/x-www-form-urlencoded.");
    rv = provider_read_body(r, FORM_MAX, &body, &len);
    if (rv != APR_SUCCESS)
        return oauth_fail(r, rv == APR_ENOSPC ? HTTP_REQUEST_ENTITY_TOO_LARGE : HTTP_BAD_REQUEST,
                          "invalid_request", "The body could not be read.");
    if (strlen(body) != len)
        return oauth_fail(r, HTTP_BAD_REQUEST, "invalid_request", "The body holds a NUL byte.");
    if (prov_oauth_form(form, &err, body, r->pool) != APR_SUCCESS)
        return provider_oauth_error(r, HTTP_BAD_REQUEST, &err);
    return PROVIDER_GO;
}

/* ---- /oauth/register, /oauth/token, /oauth/revoke ------------------------------------ */

static int oauth_register(request_rec *r)
{
    const char *body = NULL;
    apr_size_t len = 0;
    prov_oauth_client_t *client = NULL;
    prov_oauth_err_t err;
    prov_error_t *e = NULL;
    prov_store_t *store;
    apr_status_t rv;
    if (r->method_number != M_POST) {
        apr_table_setn(r->err_headers_out, "Allow", "POST");
        return oauth_fail(r, HTTP_METHOD_NOT_ALLOWED, "invalid_request", "Use POST.");
    }
    rv = provider_read_body(r, REGISTER_MAX, &body, &len);
    if (rv != APR_SUCCESS)
        return oauth_fail(r, rv == APR_ENOSPC ? HTTP_REQUEST_ENTITY_TOO_LARGE : HTTP_BAD_REQUEST,
                          "invalid_client_metadata", "The body could not be read.");
    if (!(store = provider_db_open(r, &e)))
        return oauth_fail(r, HTTP_SERVICE_UNAVAILABLE, "temporarily_unavailable",
                          "Try again later.");
    rv = prov_oauth_register(&client, &err, store, body, len, prov_now(), r->pool);
    provider_db_close(r, store);
    if (rv == APR_EINVAL)
        return provider_oauth_error(r, HTTP_BAD_REQUEST, &err);
    if (rv != APR_SUCCESS)
        return oauth_fail(r, HTTP_SERVICE_UNAVAILABLE, "temporarily_unavailable",
                          "Try again later.");
    return provider_send_json(r, HTTP_CREATED, prov_oauth_client_json(client, r->pool));
}

static int oauth_token(request_rec *r)
{
    apr_table_t *form = NULL;
    prov_oauth_tokens_t t;
    prov_oauth_err_t err;
    prov_error_t *e = NULL;
    prov_store_t *store;
    apr_status_t rv;
    provider_step_t go = read_form(&form, r);
    if (go != PROVIDER_GO)
        return go;
    if (!(store = provider_db_open(r, &e)))
        return oauth_fail(r, HTTP_SERVICE_UNAVAILABLE, "temporarily_unavailable",
                          "Try again later.");
    rv = prov_oauth_token(&t, &err, store, form, prov_now(), r->pool);
    provider_db_close(r, store);
    if (rv == APR_EINVAL)
        return provider_oauth_error(r, !strcmp(err.error, "invalid_client")
                                       ? HTTP_UNAUTHORIZED : HTTP_BAD_REQUEST, &err);
    if (rv != APR_SUCCESS)
        return oauth_fail(r, HTTP_SERVICE_UNAVAILABLE, "temporarily_unavailable",
                          "Try again later.");
    prov_metrics_add(prov_metrics_current(), PROV_MX_OAUTH_TOKENS, 1);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00716: OAuth tokens issued (%s) for "
                  "grant %" APR_INT64_T_FMT, apr_table_get(form, "grant_type"), t.grant_id);
    apr_table_setn(r->err_headers_out, "Pragma", "no-cache");
    return provider_send_json(r, HTTP_OK, prov_oauth_tokens_json(&t, r->pool));
}

static int oauth_revoke(request_rec *r)
{
    apr_table_t *form = NULL;
    prov_error_t *e = NULL;
    prov_store_t *store;
    apr_status_t rv;
    provider_step_t go = read_form(&form, r);
    if (go != PROVIDER_GO)
        return go;
    if (!apr_table_get(form, "token"))
        return oauth_fail(r, HTTP_BAD_REQUEST, "invalid_request", "token is required.");
    /* A public client identifies itself by its id (RFC 7009 2.1): without
     * it nothing could be revoked, and a silent 200 would say it was. */
    if (!apr_table_get(form, "client_id"))
        return oauth_fail(r, HTTP_BAD_REQUEST, "invalid_request", "client_id is required.");
    if (!(store = provider_db_open(r, &e)))
        return oauth_fail(r, HTTP_SERVICE_UNAVAILABLE, "temporarily_unavailable",
                          "Try again later.");
    rv = prov_oauth_revoke(store, apr_table_get(form, "token"),
                           apr_table_get(form, "client_id"), prov_now(), r->pool);
    provider_db_close(r, store);
    if (rv == APR_EACCES)
        return oauth_fail(r, HTTP_BAD_REQUEST, "invalid_request", "This token was not issued "
                          "to this client_id: nothing was revoked.");
    if (rv != APR_SUCCESS)
        return oauth_fail(r, HTTP_SERVICE_UNAVAILABLE, "temporarily_unavailable",
                          "Try again later.");
    return provider_send_json(r, HTTP_OK, "{}");
}

/* ---- the protected resource ----------------------------------------------------------- */

/* 401 or 403 with the challenge that sends a client to the metadata. */
static int challenge(request_rec *r, int status, const char *error, const char *description)
{
    const char *issuer = provider_conf(r)->public_url;
    const char *h = apr_psprintf(r->pool, "Bearer resource_metadata=\"%s"
                                 "/.well-known/oauth-protected-resource" PROV_OAUTH_RESOURCE_PATH
                                 "\", scope=\"" PROV_OAUTH_SCOPE "\"", issuer);
    if (error)
        h = apr_psprintf(r->pool, "%s, error=\"%s\", error_description=\"%s\"", h, error,
                         description);
    apr_table_setn(r->err_headers_out, "WWW-Authenticate", h);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00717: /v1/mcp/account refused (%d%s%s)",
                  status, error ? ": " : "", error ? error : "");
    return provider_send_json(r, status, prov_mcp_error_body(PROV_MCP_INVALID_REQUEST,
                              description ? description : "Authorization required: an OAuth "
                              "access token with scope account:read", r->pool));
}

/* The bearer token of r, NULL when none; *other set when r carries another
 * scheme or a token outside the header (RFC 6750 2.3 is not served). */
static const char *bearer(request_rec *r, int *other)
{
    const char *h = apr_table_get(r->headers_in, "Authorization");
    apr_table_t *q = NULL;
    *other = 0;
    if (r->args) {
        ap_args_to_table(r, &q);
        if (q && apr_table_get(q, "access_token"))
            *other = 1;
    }
    if (!h)
        return NULL;
    if (strncasecmp(h, "Bearer ", 7)) {
        *other = 1;
        return NULL;
    }
    for (h += 7; *h == ' '; h++)
        ;
    return *h ? h : NULL;
}

int provider_mcp_account_handler(request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    prov_oauth_access_t *a = NULL;
    prov_error_t *e = NULL;
    prov_store_t *store;
    const char *token;
    apr_status_t rv;
    provider_step_t go;
    int other = 0;
    if (!c->public_url)
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_NOT_FOUND, NULL,
                             "The MCP account endpoint needs ProviderPublicURL.");
    if ((go = provider_mcp_method_check(r)) != PROVIDER_GO)
        return go;
    token = bearer(r, &other);
    if (other)
        return challenge(r, HTTP_BAD_REQUEST, "invalid_request",
                         "Send the access token in the Authorization header as a Bearer token, "
                         "never in the URL.");
    if (!token)
        return challenge(r, HTTP_UNAUTHORIZED, NULL, NULL);
    if (!(store = provider_db_open(r, &e)))
        return provider_send_json(r, HTTP_SERVICE_UNAVAILABLE, prov_mcp_error_body(
                                  PROV_MCP_INTERNAL_ERROR, "Try again later.", r->pool));
    rv = prov_oauth_access_check(&a, store, token, prov_now(), r->pool);
    provider_db_close(r, store);
    if (rv == APR_NOTFOUND)
        return challenge(r, HTTP_UNAUTHORIZED, "invalid_token",
                         "The access token is unknown, expired or revoked.");
    if (rv != APR_SUCCESS)
        return provider_send_json(r, HTTP_SERVICE_UNAVAILABLE, prov_mcp_error_body(
                                  PROV_MCP_INTERNAL_ERROR, "Try again later.", r->pool));
    if (strcmp(a->resource, prov_oauth_resource(c->public_url, r->pool)))
        return challenge(r, HTTP_UNAUTHORIZED, "invalid_token",
                         "The access token was issued for another resource.");
    if (!prov_oauth_scope_has(a->scope, PROV_OAUTH_SCOPE))
        return challenge(r, HTTP_FORBIDDEN, "insufficient_scope",
                         "The access token lacks the scope account:read.");
    return provider_mcp_serve(r, &prov_mcp_account, a->user_id);
}

/* ---- the cabinet's list of authorized clients ------------------------------------------- */

/* RFC 3339 UTC for t, or JSON null for 0. */
static json_object *time_json(apr_int64_t t, apr_pool_t *p)
{
    return t ? json_object_new_string(prov_cabinet_time(t, p)) : NULL;
}

static int clients_list(request_rec *r, prov_store_t *store, const prov_session_t *sess)
{
    apr_array_header_t *list = NULL;
    json_object *o, *a;
    int i;
    apr_status_t rv = prov_oauth_user_clients(&list, store, sess->user_id, prov_now(), r->pool);
    provider_db_close(r, store);
    if (rv != APR_SUCCESS)
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_SERVICE_UNAVAILABLE, NULL,
                             "The authorized applications could not be read.");
    o = prov_json_own(json_object_new_object(), r->pool);
    a = json_object_new_array();
    for (i = 0; i < list->nelts; i++) {
        const prov_oauth_user_client_t *c = APR_ARRAY_IDX(list, i, prov_oauth_user_client_t *);
        json_object *e = json_object_new_object();
        json_object_object_add(e, "client_id", json_object_new_string(c->client_id));
        json_object_object_add(e, "name", c->name ? json_object_new_string(c->name) : NULL);
        json_object_object_add(e, "scope", json_object_new_string(PROV_OAUTH_SCOPE));
        json_object_object_add(e, "authorized_at", time_json(c->authorized_at, r->pool));
        json_object_object_add(e, "last_used_at", time_json(c->last_used_at, r->pool));
        json_object_array_add(a, e);
    }
    json_object_object_add(o, "data", a);
    return provider_send_json(r, HTTP_OK, prov_json_dump(o, r->pool));
}

static int clients_revoke(request_rec *r, prov_store_t *store, const prov_session_t *sess,
                          const char *client_id)
{
    int n = 0;
    prov_audit_t a;
    apr_status_t rv;
    provider_audit_user(&a, r, sess->user_id, "oauth.revoke", "oauth_client", client_id);
    prov_audit_arm(store, &a, r->pool);
    rv = prov_oauth_user_revoke(&n, store, sess->user_id, client_id, prov_now(), r->pool);
    prov_audit_settle(store, rv == APR_SUCCESS && n ? APR_SUCCESS : APR_NOTFOUND, r->pool);
    provider_db_close(r, store);
    if (rv != APR_SUCCESS)
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_SERVICE_UNAVAILABLE, NULL,
                             "The application's access could not be revoked.");
    if (!n)
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_NOT_FOUND, NULL,
                             "No such authorized application.");
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00718: user %" APR_INT64_T_FMT " revoked "
                  "client %s (%d grants)", sess->user_id, client_id, n);
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    r->status = HTTP_NO_CONTENT;
    return OK;
}

/* GET /v1/mcp/clients and DELETE /v1/mcp/clients/{client_id}: the cabinet
 * session's authorized MCP clients (Cache-Control: no-store; a DELETE
 * only from this site). */
int provider_mcp_clients_handler(request_rec *r)
{
    const char *id = r->uri[strlen("/v1/mcp/clients")] == '/'
                     ? r->uri + strlen("/v1/mcp/clients/") : NULL;
    int del = r->method_number == M_DELETE;
    prov_session_t *sess = NULL;
    prov_error_t *e = NULL;
    prov_store_t *store;
    apr_status_t rv;
    if ((id && (!*id || !del)) || (!id && r->method_number != M_GET)) {
        apr_table_setn(r->err_headers_out, "Allow", id ? "DELETE" : "GET, HEAD");
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_METHOD_NOT_ALLOWED, NULL,
                             id ? "Use DELETE on an application." : "Use GET.");
    }
    if (del && !provider_same_site(r))
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_CROSS_SITE, NULL,
                             "This request must come from this site.");
    if (!(store = provider_db_open(r, &e)))
        return provider_send_error(r, PROVIDER_FAMILY_OPENAI, e);
    rv = provider_session_check(&sess, r, store);
    if (rv != APR_SUCCESS) {
        provider_db_close(r, store);
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, APR_STATUS_IS_NOTFOUND(rv)
                             ? PROV_E_NOT_SIGNED_IN : PROV_E_SERVICE_UNAVAILABLE, NULL,
                             APR_STATUS_IS_NOTFOUND(rv) ? "Not signed in."
                             : "The session could not be checked.");
    }
    return del ? clients_revoke(r, store, sess, id) : clients_list(r, store, sess);
}

/* ---- routing ------------------------------------------------------------------------ */

int provider_oauth_handler(request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    if (!c->public_url)
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_NOT_FOUND, NULL,
                             "OAuth is not served here: ProviderPublicURL is not set.");
    if (!strcmp(r->uri, "/.well-known/oauth-authorization-server"))
        return metadata(r, prov_oauth_as_metadata(c->public_url, r->pool));
    if (!strcmp(r->uri, "/.well-known/oauth-protected-resource" PROV_OAUTH_RESOURCE_PATH))
        return metadata(r, prov_oauth_resource_metadata(c->public_url, r->pool));
    if (!strcmp(r->uri, "/oauth/register"))
        return oauth_register(r);
    if (!strcmp(r->uri, "/oauth/token"))
        return oauth_token(r);
    if (!strcmp(r->uri, "/oauth/revoke"))
        return oauth_revoke(r);
    if (!strcmp(r->uri, "/oauth/authorize"))
        return provider_consent_handler(r);
    return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_NOT_FOUND, NULL, "No such endpoint.");
}
