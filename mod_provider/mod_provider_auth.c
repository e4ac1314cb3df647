/* mod_provider_auth.c: the /v1/auth routes of sign-in: login (302 to the
 * identity provider, with the binding cookie), callback (the code
 * exchanged and checked by core/identity, the user found or made, a new
 * session's cookies, 302 back to the return path), session (who is signed
 * in), logout (that device's pair revoked; same-site requests only),
 * the identities of the session's owner and unlinking one (same-site).
 * A browser's failures land on a small HTML page with one of core's fixed
 * reasons (PROV_SIGNIN_R_*), never a provider's text; an API caller's get
 * the JSON error shape. The flow is docs/internals/identity.md's. */
#include <string.h>
#include "mod_provider_audit.h"
#include "mod_provider_auth.h"
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "mod_provider_http.h"
#include "mod_provider_limit.h"
#include "mod_provider_cabinet.h"
#include "mod_provider_session.h"
#include "util_script.h"
#include "prov_user_access.h"
#include "prov_metrics.h"
#include "prov_json.h"
#include "prov_signin.h"
#include "prov_identity.h"
#include "prov_idp.h"

APLOG_USE_MODULE(provider);

#define PAGE_BLOCKED "This account is blocked. Please contact support."
#define PAGE_NO_PROVIDER "There is no such sign-in method."
#define PAGE_NOT_SERVED "Sign-in is not available on this server."
#define PAGE_SIGN_IN_FIRST "Please sign in first, then link another sign-in method."
#define PAGE_LINK_SESSION \
    "This link was started from another session. Please start it again."
#define PAGE_LINKED "This sign-in method already belongs to another account."

/* seconds since the epoch as RFC 3339 UTC ("2025-01-31T12:00:00Z"). */
static const char *rfc3339(apr_int64_t t, apr_pool_t *p)
{
    apr_time_exp_t x;
    apr_time_exp_gmt(&x, apr_time_from_sec(t));
    return apr_psprintf(p, "%04d-%02d-%02dT%02d:%02d:%02dZ", x.tm_year + 1900, x.tm_mon + 1,
                        x.tm_mday, x.tm_hour, x.tm_min, x.tm_sec);
}

/* ---- answers ------------------------------------------------------------ */

/* A small page with a reason (one of ours: no markup in it, escaped all
 * the same) and a way back to the cabinet. */
static int page(request_rec *r, int status, const char *title, const char *reason)
{
    r->status = status;
    ap_set_content_type(r, "text/html; charset=utf-8");
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    apr_table_setn(r->err_headers_out, "X-Content-Type-Options", "nosniff");
    apr_table_setn(r->err_headers_out, "Content-Security-Policy",
                   "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    apr_table_setn(r->err_headers_out, "X-Frame-Options", "DENY");
    if (r->header_only)
        return OK;
    ap_rprintf(r, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
               "<title>%s</title></head>\n<body><h1>%s</h1>\n<p id=\"reason\">%s</p>\n"
               "<p><a href=\"/cabinet/\">Back to the cabinet</a></p></body></html>\n",
               ap_escape_html(r->pool, title), ap_escape_html(r->pool, title),
               ap_escape_html(r->pool, reason));
    return OK;
}

/* Non-zero when a sign-in step failed because the provider was out of reach. */
static int unreachable(apr_status_t rv, const char *reason)
{
    return APR_STATUS_IS_TIMEUP(rv) || APR_STATUS_IS_ECONNREFUSED(rv)
        || (reason && !strcmp(reason, PROV_SIGNIN_R_UNREACHABLE));
}

/* The status of a sign-in step's failure: the user's problem (an expired
 * or replayed state, another browser, a refusal, an answer that did not
 * verify) is 400, our own (the database) 500. A provider out of reach is
 * not our failure and the page is the answer: 200, because a front (a
 * load balancer's or a reverse proxy's error pages, httpd's
 * ProxyErrorOverride) puts its own page in place of a 5xx one and the
 * user would not read the reason; the warning line tells the operator. */
static int failed_status(apr_status_t rv, const char *reason)
{
    if (unreachable(rv, reason))
        return HTTP_OK;
    if (reason && !strcmp(reason, PROV_SIGNIN_R_INTERNAL))
        return HTTP_INTERNAL_SERVER_ERROR;
    return HTTP_BAD_REQUEST;
}

static int signin_failed(request_rec *r, const prov_idp_t *idp, const char *step,
                         apr_status_t rv, const char *reason)
{
    int status = failed_status(rv, reason);
    ap_log_rerror(APLOG_MARK, status >= 500 || unreachable(rv, reason) ? APLOG_WARNING
                  : APLOG_INFO, rv, r, "PROV00570: sign-in through %s failed at %s (%d%s)",
                  idp->name, step, status, unreachable(rv, reason) ? ": the provider is "
                  "out of reach" : "");
    if (unreachable(rv, reason))
        reason = PROV_SIGNIN_R_UNREACHABLE;
    else if (status == HTTP_BAD_REQUEST)
        provider_audit_signin_refused(r, idp->name, step);
    return page(r, status, "Sign-in failed", reason ? reason : PROV_SIGNIN_R_INTERNAL);
}

static int redirect(request_rec *r, const char *location)
{
    apr_table_setn(r->headers_out, "Location", location);
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    return HTTP_MOVED_TEMPORARILY;
}

static int redirect_see_other(request_rec *r, const char *location)
{
    apr_table_setn(r->headers_out, "Location", location);
    return HTTP_SEE_OTHER;
}

/* Non-zero when r is an HTML form's POST. */
static int form_post(request_rec *r)
{
    const char *type = apr_table_get(r->headers_in, "Content-Type");
    return type && !strncasecmp(type, "application/x-www-form-urlencoded", 33);
}

static int json_fail(request_rec *r, prov_errcode_e code, const char *msg)
{
    return provider_fail(r, PROVIDER_FAMILY_OPENAI, code, NULL, "%s", msg);
}

/* ---- login and callback -------------------------------------------------- */

/* A query parameter of r, decoded; NULL when absent. */
static const char *arg(request_rec *r, const char *name)
{
    apr_table_t *t = NULL;
    ap_args_to_table(r, &t);
    return t ? apr_table_get(t, name) : NULL;
}

/* GET /v1/auth/NAME/login[?return=PATH]: a sign-in (link_session 0) or,
 * from a session, a link begins. */
static int auth_begin(request_rec *r, prov_idp_t *idp, apr_int64_t link_session)
{
    provider_srv_conf *c = provider_conf(r);
    const char *ret = prov_signin_return_ok(arg(r, "return")), *reason = NULL;
    prov_signin_start_t *start = NULL;
    prov_idp_endpoints_t *ep = NULL;
    prov_error_t *err = NULL;
    apr_int64_t now = prov_now();
    prov_store_t *store;
    /* the provider first, with no database connection held: one that hangs
     * must not take the connections cabinet, OAuth and billing need */
    apr_status_t rv = prov_signin_endpoints(&ep, &reason, idp, now, r->pool);
    if (rv != APR_SUCCESS)
        return signin_failed(r, idp, "begin", rv, reason);
    if (!(store = provider_db_open(r, &err)))
        return page(r, HTTP_SERVICE_UNAVAILABLE, "Sign-in failed", PROV_SIGNIN_R_INTERNAL);
    rv = prov_signin_begin(&start, &reason, store, idp, ep, c->public_url,
                           ret ? ret : PROV_SIGNIN_DEFAULT_RETURN, link_session,
                           provider_client_key(r), now, r->pool);
    provider_db_close(r, store);
    if (rv != APR_SUCCESS)
        return signin_failed(r, idp, "begin", rv, reason);
    provider_cookie_set(r, PROVIDER_COOKIE_BINDING, start->binding, start->expires - now);
    return redirect(r, start->url);
}

/* The session whose cookies a new sign-in replaces ends with it: its
 * tokens would otherwise stay live, unseen, until they expire. */
static void replaced_session_end(request_rec *r, prov_store_t *store, apr_int64_t now)
{
    const char *refresh = provider_cookie_get(r, PROVIDER_COOKIE_REFRESH);
    const char *active = provider_cookie_get(r, PROVIDER_COOKIE_ACTIVE);
    apr_status_t rv = APR_NOTFOUND;
    if (refresh)
        rv = prov_session_revoke_token(store, refresh, now, r->pool);
    if (rv == APR_NOTFOUND && active)
        rv = prov_session_revoke_token(store, active, now, r->pool);
    if (rv == APR_SUCCESS)
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00577: the session this browser had "
                      "was ended by its new sign-in");
}

/* The sign-in's end: the user of the identity, a new session, 302 back. */
/* A sign-in's audit row (never the provider's subject). */
static void audit_signin(request_rec *r, prov_store_t *store, const prov_idp_t *idp,
                         apr_int64_t user_id, int created)
{
    prov_audit_t a;
    provider_audit_user(&a, r, user_id, "signin", "identity_provider", idp->name);
    a.detail = prov_audit_detail(r->pool, "new_user", created ? "true" : NULL, NULL);
    prov_audit_write(store, &a, r->pool);
}

/* Arms the audit row of a link or an unlink at provider. */
static void audit_identity(request_rec *r, prov_store_t *store, apr_int64_t user_id,
                           const char *action, const char *provider)
{
    prov_audit_t a;
    provider_audit_user(&a, r, user_id, action, "identity_provider", provider);
    prov_audit_arm(store, &a, r->pool);
}

static int auth_signin(request_rec *r, prov_store_t *store, prov_idp_t *idp,
                       const prov_prelogin_t *pl, const prov_claims_t *claims)
{
    prov_user_t *user = NULL;
    prov_session_t *sess = NULL;
    const char *active = NULL, *refresh = NULL;
    apr_int64_t now = prov_now();
    int created = 0;
    apr_status_t rv = prov_identity_signin(&user, &created, store, idp->name, claims, now,
                                           r->pool);
    if (rv == APR_SUCCESS)
        rv = prov_session_create(&sess, &active, &refresh, store, user->id, now, r->pool);
    if (APR_STATUS_IS_EACCES(rv)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00571: sign-in through %s refused: "
                      "the user is blocked", idp->name);
        provider_audit_signin_refused(r, idp->name, "blocked");
        return page(r, HTTP_FORBIDDEN, "Sign-in refused", PAGE_BLOCKED);
    }
    if (rv != APR_SUCCESS)
        return signin_failed(r, idp, "the session", rv, PROV_SIGNIN_R_INTERNAL);
    prov_metrics_add(prov_metrics_current(), PROV_MX_SIGNINS, 1);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00572: user %" APR_INT64_T_FMT
                  " signed in through %s%s", user->id, idp->name, created ? " (new user)" : "");
    audit_signin(r, store, idp, user->id, created);
    replaced_session_end(r, store, now);
    provider_session_cookies(r, sess, active, refresh, now);
    return redirect(r, pl->return_path);
}

/* ---- link (started from a session) --------------------------------------- */

/* Non-zero when the caller asked for JSON (an API caller, not a browser). */
static int wants_json(request_rec *r)
{
    const char *accept = apr_table_get(r->headers_in, "Accept");
    return accept && strstr(accept, "application/json") && !strstr(accept, "text/html");
}

/* The link's end: the callback's own session must be the one the link
 * started from; the identity joins its user, or 409 when it is another's.
 * No new session. */
static int auth_link(request_rec *r, prov_store_t *store, prov_idp_t *idp,
                     const prov_prelogin_t *pl, const prov_claims_t *claims)
{
    prov_session_t *sess = NULL;
    int added = 0;
    apr_status_t rv = provider_session_check(&sess, r, store);
    if (rv == APR_SUCCESS && sess->id != pl->link_session)
        rv = APR_EACCES;
    if (rv != APR_SUCCESS)
        return signin_failed(r, idp, "the link's session", rv, APR_STATUS_IS_NOTFOUND(rv)
                             || APR_STATUS_IS_EACCES(rv) ? PAGE_LINK_SESSION
                             : PROV_SIGNIN_R_INTERNAL);
    audit_identity(r, store, sess->user_id, "identity.link", idp->name);
    rv = prov_identity_link(&added, store, sess->user_id, idp->name, claims->subject,
                            prov_now(), r->pool);
    prov_audit_settle(store, added ? rv : APR_EEXIST, r->pool);
    if (APR_STATUS_IS_EEXIST(rv)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00573: user %" APR_INT64_T_FMT
                      ": the identity at %s belongs to another user", sess->user_id, idp->name);
        if (wants_json(r))
            return json_fail(r, PROV_E_IDENTITY_ALREADY_LINKED, PAGE_LINKED);
        return page(r, HTTP_CONFLICT, "Link refused (IDENTITY_ALREADY_LINKED)", PAGE_LINKED);
    }
    if (rv != APR_SUCCESS)
        return signin_failed(r, idp, "the link", rv, PROV_SIGNIN_R_INTERNAL);
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00574: user %" APR_INT64_T_FMT
                  " %s an identity at %s", sess->user_id, added ? "linked" : "already had",
                  idp->name);
    return redirect(r, pl->return_path);
}

/* POST /v1/auth/NAME/link[?return=PATH]: from a session, a link begins:
 * a state change like any other, so from this site only (a GET would let
 * another site start a link with the Lax session cookie). The answer is
 * {"url": the provider's authorization URL} with the binding cookie, for
 * the cabinet to go to (a form's redirect could not follow a provider that
 * sends the browser on to another origin of its own). */
static int auth_link_begin(request_rec *r, prov_idp_t *idp)
{
    prov_error_t *err = NULL;
    prov_store_t *store;
    prov_session_t *sess = NULL;
    const char *url;
    json_object *o;
    apr_status_t rv;
    int status;
    if (!provider_same_site(r))
        return json_fail(r, PROV_E_CROSS_SITE, "This request must come from this site.");
    if (!(store = provider_db_open(r, &err)))
        return provider_send_error(r, PROVIDER_FAMILY_OPENAI, err);
    rv = provider_session_check(&sess, r, store);
    provider_db_close(r, store);
    if (APR_STATUS_IS_NOTFOUND(rv))
        return json_fail(r, PROV_E_NOT_SIGNED_IN, PAGE_SIGN_IN_FIRST);
    if (rv != APR_SUCCESS)
        return json_fail(r, PROV_E_SERVICE_UNAVAILABLE, "The link could not be started.");
    status = auth_begin(r, idp, sess->id);
    url = apr_table_get(r->headers_out, "Location");
    if (status != HTTP_MOVED_TEMPORARILY || !url)
        return status;  /* its failure page was answered */
    apr_table_unset(r->headers_out, "Location");
    o = prov_json_own(json_object_new_object(), r->pool);
    json_object_object_add(o, "url", json_object_new_string(url));
    return provider_send_json(r, HTTP_OK, prov_json_dump(o, r->pool));
}

/* GET /v1/auth/identities: the session owner's identities, provider and
 * createdAt only. */
static int auth_identities(request_rec *r)
{
    prov_error_t *err = NULL;
    prov_store_t *store = provider_db_open(r, &err);
    prov_session_t *sess = NULL;
    apr_array_header_t *ids = NULL;
    json_object *o, *a;
    apr_status_t rv;
    int i;
    if (!store)
        return provider_send_error(r, PROVIDER_FAMILY_OPENAI, err);
    rv = provider_session_check(&sess, r, store);
    if (rv == APR_SUCCESS)
        rv = prov_user_identities(&ids, store, sess->user_id, r->pool);
    provider_db_close(r, store);
    if (APR_STATUS_IS_NOTFOUND(rv))
        return json_fail(r, PROV_E_NOT_SIGNED_IN, "Not signed in.");
    if (rv != APR_SUCCESS)
        return json_fail(r, PROV_E_SERVICE_UNAVAILABLE, "The identities could not be read.");
    o = prov_json_own(json_object_new_object(), r->pool);
    a = json_object_new_array();
    for (i = 0; i < ids->nelts; i++) {
        const prov_user_identity_t *id = APR_ARRAY_IDX(ids, i, prov_user_identity_t *);
        json_object *e = json_object_new_object();
        json_object_object_add(e, "provider", json_object_new_string(id->provider));
        json_object_object_add(e, "createdAt", json_object_new_string(rfc3339(id->created_at,
                                                                              r->pool)));
        json_object_array_add(a, e);
    }
    json_object_object_add(o, "identities", a);
    return provider_send_json(r, HTTP_OK, prov_json_dump(o, r->pool));
}

/* DELETE /v1/auth/identities/NAME: the session owner's identity at NAME
 * unlinked (204). Same-site requests only, like logout; 404 when the user
 * has none there; core refuses the last one (409 LAST_IDENTITY). A
 * provider no longer configured can still be unlinked. */
static int auth_unlink(request_rec *r, const char *provider)
{
    prov_error_t *err = NULL;
    prov_store_t *store;
    prov_session_t *sess = NULL;
    apr_status_t rv;
    if (!provider_same_site(r))
        return json_fail(r, PROV_E_CROSS_SITE, "This request must come from this site.");
    if (!(store = provider_db_open(r, &err)))
        return provider_send_error(r, PROVIDER_FAMILY_OPENAI, err);
    rv = provider_session_check(&sess, r, store);
    if (rv == APR_SUCCESS) {
        audit_identity(r, store, sess->user_id, "identity.unlink", provider);
        rv = prov_identity_unlink(store, sess->user_id, provider, r->pool);
        prov_audit_settle(store, rv, r->pool);
        if (APR_STATUS_IS_NOTFOUND(rv)) {
            provider_db_close(r, store);
            return json_fail(r, PROV_E_NOT_FOUND, "You have no sign-in method of that name.");
        }
    }
    provider_db_close(r, store);
    if (APR_STATUS_IS_NOTFOUND(rv))
        return json_fail(r, PROV_E_NOT_SIGNED_IN, "Not signed in.");
    if (APR_STATUS_IS_EBUSY(rv))
        return json_fail(r, PROV_E_LAST_IDENTITY,
                         "This is your last sign-in method: link another one first.");
    if (rv != APR_SUCCESS)
        return json_fail(r, PROV_E_SERVICE_UNAVAILABLE, "The sign-in method could not be "
                         "unlinked.");
    ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV00576: user %" APR_INT64_T_FMT
                  " unlinked their identity at %s", sess->user_id, provider);
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    r->status = HTTP_NO_CONTENT;
    return OK;
}

/* GET /v1/auth/NAME/callback?code=...&state=... (or ?error=...&state=...). */
static int auth_callback(request_rec *r, prov_idp_t *idp)
{
    provider_srv_conf *c = provider_conf(r);
    const char *state = arg(r, "state"), *code = arg(r, "code"), *reason = NULL;
    const char *binding = provider_cookie_get(r, PROVIDER_COOKIE_BINDING);
    prov_prelogin_t *pl = NULL;
    prov_claims_t *claims = NULL;
    prov_error_t *err = NULL;
    prov_store_t *store;
    apr_status_t rv;
    int status;
    if (binding)
        provider_cookie_set(r, PROVIDER_COOKIE_BINDING, NULL, 0);
    if (!state)
        return signin_failed(r, idp, "the callback (no state)", APR_NOTFOUND,
                             PROV_SIGNIN_R_EXPIRED);
    if (!(store = provider_db_open(r, &err)))
        return page(r, HTTP_SERVICE_UNAVAILABLE, "Sign-in failed", PROV_SIGNIN_R_INTERNAL);
    rv = prov_signin_take(&pl, &reason, store, idp->name, state, binding, prov_now(), r->pool);
    /* The provider's own words are never shown: a refusal is a refusal. */
    if (rv == APR_SUCCESS && (!code || arg(r, "error")))
        rv = APR_EACCES, reason = PROV_SIGNIN_R_REFUSED;
    /* No connection is held while the provider is asked. */
    provider_db_close(r, store);
    if (rv != APR_SUCCESS)
        return signin_failed(r, idp, "the callback", rv, reason);
    rv = prov_signin_exchange(&claims, &reason, idp, pl, c->public_url, code, prov_now(),
                              r->pool);
    if (rv != APR_SUCCESS)
        return signin_failed(r, idp, "the exchange", rv, reason);
    if (!(store = provider_db_open(r, &err)))
        return page(r, HTTP_SERVICE_UNAVAILABLE, "Sign-in failed", PROV_SIGNIN_R_INTERNAL);
    status = pl->link_session ? auth_link(r, store, idp, pl, claims)
                              : auth_signin(r, store, idp, pl, claims);
    provider_db_close(r, store);
    return status;
}

/* ---- session and logout --------------------------------------------------- */

/* GET /v1/auth/session: who is signed in, or 401. */
static int auth_session(request_rec *r)
{
    prov_error_t *err = NULL;
    prov_store_t *store = provider_db_open(r, &err);
    prov_session_t *sess = NULL;
    prov_user_t *user = NULL;
    json_object *o;
    apr_status_t rv;
    if (!store)
        return provider_send_error(r, PROVIDER_FAMILY_OPENAI, err);
    rv = provider_session_check(&sess, r, store);
    if (rv == APR_SUCCESS)
        rv = prov_user_find(&user, store, prov_i64(sess->user_id, r->pool), r->pool);
    provider_db_close(r, store);
    if (APR_STATUS_IS_NOTFOUND(rv))
        return json_fail(r, PROV_E_NOT_SIGNED_IN, "Not signed in.");
    if (rv != APR_SUCCESS)
        return json_fail(r, PROV_E_SERVICE_UNAVAILABLE, "The session could not be checked.");
    o = prov_json_own(json_object_new_object(), r->pool);
    json_object_object_add(o, "userId", json_object_new_int64(user->id));
    json_object_object_add(o, "email", prov_identity_email_is_placeholder(user->email) ? NULL
                           : json_object_new_string(user->email));
    json_object_object_add(o, "name", user->name ? json_object_new_string(user->name) : NULL);
    return provider_send_json(r, HTTP_OK, prov_json_dump(o, r->pool));
}

/* POST /v1/auth/logout: this device's pair revoked, its cookies removed. */
static int auth_logout(request_rec *r)
{
    const char *active = provider_cookie_get(r, PROVIDER_COOKIE_ACTIVE);
    const char *refresh = provider_cookie_get(r, PROVIDER_COOKIE_REFRESH);
    prov_error_t *err = NULL;
    prov_store_t *store;
    apr_status_t rv = APR_NOTFOUND;
    if (!provider_same_site(r))
        return json_fail(r, PROV_E_CROSS_SITE, "This request must come from this site.");
    if (active || refresh) {
        if (!(store = provider_db_open(r, &err)))
            return provider_send_error(r, PROVIDER_FAMILY_OPENAI, err);
        if (refresh)
            rv = prov_session_revoke_token(store, refresh, prov_now(), r->pool);
        if (active && (rv == APR_NOTFOUND || !refresh))
            rv = prov_session_revoke_token(store, active, prov_now(), r->pool);
        provider_db_close(r, store);
        if (rv != APR_SUCCESS && !APR_STATUS_IS_NOTFOUND(rv))
            return json_fail(r, PROV_E_SERVICE_UNAVAILABLE, "The session could not be ended.");
        provider_cookie_set(r, PROVIDER_COOKIE_ACTIVE, NULL, 0);
        provider_cookie_set(r, PROVIDER_COOKIE_REFRESH, NULL, 0);
    }
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    /* The cabinet's form goes back to the cabinet; an API caller gets 204. */
    if (form_post(r))
        return redirect_see_other(r, "/cabinet/");
    r->status = HTTP_NO_CONTENT;
    return OK;
}

/* ---- routing ------------------------------------------------------------- */

static int method_only(request_rec *r, int method)
{
    if (r->method_number == method || (method == M_GET && r->header_only))
        return 1;
    return 0;
}

int provider_auth_handler(request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    const char *rest = r->uri + strlen("/v1/auth/"), *slash;
    prov_idp_t *idp;
    if (!strcmp(rest, "session"))
        return method_only(r, M_GET) ? auth_session(r)
               : json_fail(r, PROV_E_METHOD_NOT_ALLOWED, "Use GET.");
    if (!strcmp(rest, "providers"))
        return method_only(r, M_GET) ? provider_cabinet_providers(r)
               : json_fail(r, PROV_E_METHOD_NOT_ALLOWED, "Use GET.");
    if (!strcmp(rest, "identities"))
        return method_only(r, M_GET) ? auth_identities(r)
               : json_fail(r, PROV_E_METHOD_NOT_ALLOWED, "Use GET.");
    if (!strncmp(rest, "identities/", 11)) {
        const char *name = rest + 11;
        if (!*name || strchr(name, '/') || strlen(name) > PROV_IDP_NAME_MAX)
            return json_fail(r, PROV_E_NOT_FOUND, "No such endpoint.");
        return method_only(r, M_DELETE) ? auth_unlink(r, name)
               : json_fail(r, PROV_E_METHOD_NOT_ALLOWED, "Use DELETE.");
    }
    if (!strcmp(rest, "logout"))
        return method_only(r, M_POST) ? auth_logout(r)
               : json_fail(r, PROV_E_METHOD_NOT_ALLOWED, "Use POST.");
    slash = strchr(rest, '/');
    idp = slash && c->idps
          ? prov_idp_find(c->idps, apr_pstrndup(r->pool, rest, (apr_size_t)(slash - rest))) : NULL;
    if (!slash || (strcmp(slash, "/login") && strcmp(slash, "/callback")
                   && strcmp(slash, "/link")))
        return json_fail(r, PROV_E_NOT_FOUND, "No such endpoint.");
    if (!method_only(r, strcmp(slash, "/link") ? M_GET : M_POST))
        return json_fail(r, PROV_E_METHOD_NOT_ALLOWED, strcmp(slash, "/link") ? "Use GET."
                                                                               : "Use POST.");
    if (!idp)
        return page(r, HTTP_NOT_FOUND, "Sign-in failed", PAGE_NO_PROVIDER);
    if (!c->public_url)
        return page(r, HTTP_NOT_FOUND, "Sign-in failed", PAGE_NOT_SERVED);
    if (!strcmp(slash, "/link"))
        return auth_link_begin(r, idp);
    return !strcmp(slash, "/login") ? auth_begin(r, idp, 0) : auth_callback(r, idp);
}
