/* mod_provider_consent.c: /oauth/authorize, the authorization server's
 * browser part. GET checks the request: every fault (a wrong client or
 * redirect URI, PKCE, resource, scope, response type) is answered on a page
 * of ours, never redirected, since anyone can register a client with any
 * redirect URI and a redirect before the user has seen the client on our
 * page would make this origin an open redirector (RFC 9700 4.11.2); only
 * the user's Deny goes back to the client, with state and iss. Then it
 * needs a cabinet session: without one, a page
 * of "Sign in with <display>" buttons that come back here; with one, the
 * consent page naming the client and the scope with Allow and Deny. The
 * page's POST must come from this site (Origin, else Referer) and carry
 * the form's anti-forgery token, an HMAC under the session's refresh
 * cookie of every parameter shown; Allow answers with a one-time code,
 * Deny with access_denied. Pages cannot be framed; their referrer policy
 * is same-origin (no-referrer would make a browser send "Origin: null"
 * with the form, which the same-site check refuses). */
#include <string.h>
#include "mod_provider_audit.h"
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "mod_provider_http.h"
#include "mod_provider_consent.h"
#include "mod_provider_session.h"
#include "prov_oauth.h"
#include "prov_signin.h"

APLOG_USE_MODULE(provider);

#define SCOPE_TEXT "read your balance, your plan's limits, your keys' weekly budgets and " \
                   "your usage (never a key, a payment or anything else)"

static void page_headers(request_rec *r)
{
    ap_set_content_type(r, "text/html; charset=utf-8");
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    apr_table_setn(r->err_headers_out, "X-Content-Type-Options", "nosniff");
    apr_table_setn(r->err_headers_out, "X-Frame-Options", "DENY");
    apr_table_setn(r->err_headers_out, "Content-Security-Policy",
                   "default-src 'none'; style-src 'self'; frame-ancestors 'none'");
    apr_table_setn(r->err_headers_out, "Referrer-Policy", "same-origin");
}

/* The page's start: a phone's viewport, the /docs pages' style sheet
 * (ProviderDocsRoot's style.css) and their navigation's look, with links to
 * the account and the MCP guide, so that it reads as this site's page. */
static void page_head(request_rec *r, const char *title)
{
    ap_rprintf(r, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
               "<title>%s</title><link rel=\"stylesheet\" href=\"/docs/style.css\"></head>\n"
               "<body class=\"consent\"><nav><a href=\"/cabinet/\">Your account</a> "
               "<a href=\"/docs/mcp\">About applications (MCP)</a></nav>\n"
               "<main><h1>%s</h1>\n", title, title);
}

/* A failure the user sees (the client is not told). */
static int fail_page(request_rec *r, int status, const char *title, const char *reason)
{
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00720: authorization request refused "
                  "(%d): %s", status, reason);
    r->status = status;
    page_headers(r);
    if (r->header_only)
        return OK;
    page_head(r, title);
    ap_rprintf(r, "<p id=\"reason\">%s</p>\n</main></body></html>\n", ap_escape_html(r->pool, reason));
    return OK;
}

static int redirect(request_rec *r, const char *url)
{
    apr_table_setn(r->headers_out, "Location", url);
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    return HTTP_MOVED_TEMPORARILY;
}

/* The error response to the client's redirect URI. */
static int redirect_error(request_rec *r, const prov_oauth_authz_t *a,
                          const prov_oauth_err_t *err)
{
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00721: authorization request of client "
                  "%s answered %s", a->client_id, err->error);
    return redirect(r, prov_oauth_redirect(a->redirect_uri, NULL, err, a->state,
                                           provider_conf(r)->public_url, r->pool));
}

/* A request of a registered client that this server cannot take: the
 * error code and our words on our page, nothing sent to the client. */
static int refused_page(request_rec *r, const prov_oauth_client_t *client,
                        const prov_oauth_err_t *err)
{
    const char *name = client->name ? client->name : client->client_id;
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00723: authorization request of client "
                  "%s refused on our page: %s", client->client_id, err->error);
    r->status = HTTP_BAD_REQUEST;
    page_headers(r);
    if (r->header_only)
        return OK;
    page_head(r, "Authorization failed");
    ap_rprintf(r, "<p id=\"reason\">The application %s (a name it gave itself) sent an "
               "authorization request this site cannot take: %s</p>\n<p>Error: <code "
               "id=\"error\">%s</code>. Nothing was shared with it. Go back to the "
               "application and start again.</p>\n</main></body></html>\n",
               ap_escape_html(r->pool, name), ap_escape_html(r->pool, err->description),
               ap_escape_html(r->pool, err->error));
    return OK;
}

/* Without a session: a button per identity provider, each back to this URL. */
static int signin_page(request_rec *r)
{
    const apr_array_header_t *idps = provider_conf(r)->idps;
    const char *back = prov_signin_return_ok(r->unparsed_uri);
    int i;
    if (!back)
        return fail_page(r, HTTP_BAD_REQUEST, "Authorization failed",
                         "This authorization request is too long to come back to after a "
                         "sign-in.");
    if (!idps || !idps->nelts)
        return fail_page(r, HTTP_FORBIDDEN, "Authorization failed",
                         "Sign-in is not available on this server.");
    page_headers(r);
    if (r->header_only)
        return OK;
    page_head(r, "Sign in to continue");
    ap_rputs("<p id=\"signin-needed\">An application asks to use your account: sign in "
             "first.</p>\n", r);
    for (i = 0; i < idps->nelts; i++) {
        const prov_idp_t *idp = APR_ARRAY_IDX(idps, i, const prov_idp_t *);
        ap_rprintf(r, "<form id=\"signin-%s\" method=\"get\" action=\"/v1/auth/%s/login\">"
                   "<input type=\"hidden\" name=\"return\" value=\"%s\">"
                   "<button type=\"submit\">Sign in with %s</button></form>\n", idp->name,
                   idp->name, ap_escape_html(r->pool, back),
                   ap_escape_html(r->pool, idp->display));
    }
    ap_rputs("</main></body></html>\n", r);
    return OK;
}

static void hidden(request_rec *r, const char *name, const char *value)
{
    if (value)
        ap_rprintf(r, "<input type=\"hidden\" name=\"%s\" value=\"%s\">\n", name,
                   ap_escape_html(r->pool, value));
}

static int consent_page(request_rec *r, const prov_oauth_client_t *client,
                        const prov_oauth_authz_t *a, const prov_user_t *user, const char *csrf)
{
    const char *name = client->name ? client->name : client->client_id;
    page_headers(r);
    if (r->header_only)
        return OK;
    page_head(r, "Allow access to your account?");
    ap_rprintf(r, "<p id=\"client\"><strong>%s</strong> <span id=\"unverified\">(a name "
               "the application gave itself: this site has not verified it)</span> asks to "
               "%s.</p>\n", ap_escape_html(r->pool, name), SCOPE_TEXT);
    ap_rprintf(r, "<p>Scope: <code id=\"scope\">%s</code>. It will be sent back to "
               "<code id=\"redirect\">%s</code>.</p>\n", ap_escape_html(r->pool, a->scope),
               ap_escape_html(r->pool, a->redirect_uri));
    ap_rprintf(r, "<p id=\"who\">Signed in as %s.</p>\n",
               ap_escape_html(r->pool, user->name ? user->name : user->email));
    ap_rputs("<form id=\"consent\" method=\"post\" action=\"/oauth/authorize\">\n", r);
    hidden(r, "response_type", a->response_type);
    hidden(r, "client_id", a->client_id);
    hidden(r, "redirect_uri", a->redirect_uri);
    hidden(r, "code_challenge", a->code_challenge);
    hidden(r, "code_challenge_method", a->code_challenge_method);
    hidden(r, "scope", a->scope);
    hidden(r, "state", a->state);
    hidden(r, "resource", a->resource);
    hidden(r, "csrf", csrf);
    ap_rputs("<button type=\"submit\" id=\"allow\" name=\"decision\" value=\"allow\">Allow"
             "</button>\n<button type=\"submit\" id=\"deny\" name=\"decision\" value=\"deny\">"
             "Deny</button>\n</form>\n</main></body></html>\n", r);
    return OK;
}

/* The request's parameters: the query (GET) or the form (POST). */
static provider_step_t read_params(apr_table_t **form, request_rec *r)
{
    const char *text = r->args;
    prov_oauth_err_t err;
    apr_size_t len = 0;
    if (r->method_number == M_POST) {
        const char *type = apr_table_get(r->headers_in, "Content-Type");
        if (!type || strncasecmp(type, "application/x-www-form-urlencoded", 33)
            || provider_read_body(r, 16384, &text, &len) != APR_SUCCESS || strlen(text) != len)
            return fail_page(r, HTTP_BAD_REQUEST, "Authorization failed",
                             "The form could not be read.");
    }
    if (prov_oauth_form(form, &err, text, r->pool) != APR_SUCCESS)
        return fail_page(r, HTTP_BAD_REQUEST, "Authorization failed", err.description);
    return PROVIDER_GO;
}

/* Allow or Deny, from the consent page. */
static int decide(request_rec *r, prov_store_t *store, const prov_oauth_authz_t *a,
                  const prov_session_t *sess, const char *decision)
{
    const char *code = NULL;
    prov_audit_t row;
    apr_status_t rv;
    if (decision && !strcmp(decision, "deny")) {
        prov_oauth_err_t denied = { "access_denied", "The user denied the request." };
        return redirect_error(r, a, &denied);
    }
    if (!decision || strcmp(decision, "allow"))
        return fail_page(r, HTTP_BAD_REQUEST, "Authorization failed", "Choose Allow or Deny.");
    provider_audit_user(&row, r, sess->user_id, "oauth.authorize", "oauth_client",
                        a->client_id);
    prov_audit_arm(store, &row, r->pool);
    rv = prov_oauth_code_issue(&code, store, a, sess->user_id, prov_now(), r->pool);
    prov_audit_settle(store, rv, r->pool);
    if (rv != APR_SUCCESS)
        return fail_page(r, HTTP_SERVICE_UNAVAILABLE, "Authorization failed",
                         "The service could not answer right now; try again later.");
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00722: user %" APR_INT64_T_FMT
                  " authorized client %s", sess->user_id, a->client_id);
    return redirect(r, prov_oauth_redirect(a->redirect_uri, code, NULL, a->state,
                                           provider_conf(r)->public_url, r->pool));
}

/* With the request checked and the store open: the session's step. */
static int with_session(request_rec *r, prov_store_t *store, const prov_oauth_client_t *client,
                        const prov_oauth_authz_t *a, const apr_table_t *form)
{
    prov_session_t *sess = NULL;
    prov_user_t *user = NULL;
    const char *key;
    apr_status_t rv = provider_session_check(&sess, r, store);
    if (rv == APR_SUCCESS)
        rv = prov_user_find(&user, store, prov_i64(sess->user_id, r->pool), r->pool);
    if (APR_STATUS_IS_NOTFOUND(rv))
        return r->method_number == M_POST
               ? fail_page(r, HTTP_UNAUTHORIZED, "Authorization failed", "Your session has "
                           "ended: start again from the application.")
               : signin_page(r);
    if (rv != APR_SUCCESS)
        return fail_page(r, HTTP_SERVICE_UNAVAILABLE, "Authorization failed",
                         "The service could not answer right now; try again later.");
    key = provider_cookie_get(r, PROVIDER_COOKIE_REFRESH);
    if (!key)
        return fail_page(r, HTTP_UNAUTHORIZED, "Authorization failed",
                         "Your session has no refresh cookie: sign in again.");
    if (r->method_number != M_POST)
        return consent_page(r, client, a, user, prov_oauth_consent_token(key, a, r->pool));
    if (!prov_oauth_consent_ok(apr_table_get(form, "csrf"), key, a, r->pool))
        return fail_page(r, HTTP_FORBIDDEN, "Authorization failed",
                         "This form was not the one this site showed you.");
    return decide(r, store, a, sess, apr_table_get(form, "decision"));
}

int provider_consent_handler(request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    apr_table_t *form = NULL;
    prov_oauth_client_t *client = NULL;
    prov_oauth_authz_t a;
    prov_oauth_err_t err;
    prov_error_t *e = NULL;
    prov_store_t *store;
    apr_status_t rv;
    provider_step_t go;
    int status;
    if (r->method_number != M_GET && r->method_number != M_POST) {
        apr_table_setn(r->err_headers_out, "Allow", "GET, POST");
        return fail_page(r, HTTP_METHOD_NOT_ALLOWED, "Authorization failed", "Use GET.");
    }
    if (r->method_number == M_POST && !provider_same_site(r))
        return fail_page(r, HTTP_FORBIDDEN, "Authorization failed",
                         "This request must come from this site.");
    if ((go = read_params(&form, r)) != PROVIDER_GO)
        return go;
    prov_oauth_authz_read(&a, form);
    if (!(store = provider_db_open(r, &e)))
        return fail_page(r, HTTP_SERVICE_UNAVAILABLE, "Authorization failed",
                         "The service could not answer right now; try again later.");
    rv = prov_oauth_authz_client(&client, &err, store, &a, r->pool);
    if (rv == APR_SUCCESS) {
        rv = prov_oauth_authz_check(&err, &a, prov_oauth_resource(c->public_url, r->pool));
        status = rv == APR_SUCCESS ? with_session(r, store, client, &a, form)
                                   : refused_page(r, client, &err);
    }
    else if (rv == APR_EINVAL || rv == APR_NOTFOUND)
        status = fail_page(r, HTTP_BAD_REQUEST, "Authorization failed", err.description);
    else
        status = fail_page(r, HTTP_SERVICE_UNAVAILABLE, "Authorization failed",
                           "The service could not answer right now; try again later.");
    provider_db_close(r, store);
    return status;
}
