/* mod_provider_cabinet.c: the cabinet's first page, /cabinet/: a "Sign in
 * with <display>" button per configured identity provider when no one is
 * signed in, and who is signed in with a logout button otherwise. The
 * session check is the cabinet's (mod_provider_session.c: the active
 * cookie extended, or renewed from the refresh cookie). No script: the
 * buttons are plain forms, the logout one a same-site POST. The cabinet
 * issue fills the page in. */
#include <string.h>
#include "mod_provider_auth.h"

#define CABINET_HEAD \
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" \
    "<title>Cabinet</title></head>\n<body><h1>Cabinet</h1>\n"

static void headers(request_rec *r)
{
    ap_set_content_type(r, "text/html; charset=utf-8");
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
    apr_table_setn(r->err_headers_out, "X-Content-Type-Options", "nosniff");
    apr_table_setn(r->err_headers_out, "X-Frame-Options", "DENY");
    apr_table_setn(r->err_headers_out, "Content-Security-Policy",
                   "default-src 'none'; frame-ancestors 'none'");
}

/* The signed-in part: the user and the logout button. */
static void signed_in(request_rec *r, const prov_user_t *u)
{
    const char *email = prov_identity_email_is_placeholder(u->email) ? NULL : u->email;
    ap_rprintf(r, "<p id=\"who\">Signed in as %s%s%s%s</p>\n",
               u->name ? ap_escape_html(r->pool, u->name) : "",
               u->name ? " (" : "", email ? ap_escape_html(r->pool, email) : "no email",
               u->name ? ")" : "");
    ap_rputs("<form id=\"logout\" method=\"post\" action=\"/v1/auth/logout\">"
             "<button type=\"submit\">Log out</button></form>\n", r);
}

/* The signed-out part: a button per provider. */
static void sign_in_buttons(request_rec *r, const apr_array_header_t *idps)
{
    int i;
    ap_rputs("<p id=\"signed-out\">You are not signed in.</p>\n", r);
    for (i = 0; idps && i < idps->nelts; i++) {
        const prov_idp_t *idp = APR_ARRAY_IDX(idps, i, const prov_idp_t *);
        ap_rprintf(r, "<form id=\"signin-%s\" method=\"get\" action=\"/v1/auth/%s/login\">"
                   "<button type=\"submit\">Sign in with %s</button></form>\n",
                   idp->name, idp->name, ap_escape_html(r->pool, idp->display));
    }
}

int provider_cabinet_handler(request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    prov_error_t *err = NULL;
    prov_store_t *store;
    prov_session_t *sess = NULL;
    prov_user_t *user = NULL;
    apr_status_t rv;
    if (strcmp(r->uri, "/cabinet/")) {
        apr_table_setn(r->headers_out, "Location", "/cabinet/");
        return HTTP_MOVED_PERMANENTLY;
    }
    if (r->method_number != M_GET)
        return HTTP_METHOD_NOT_ALLOWED;
    if (!(store = provider_db_open(r, &err)))
        return HTTP_SERVICE_UNAVAILABLE;
    rv = provider_session_check(&sess, r, store);
    if (rv == APR_SUCCESS)
        rv = prov_user_find(&user, store, prov_i64(sess->user_id, r->pool), r->pool);
    provider_db_close(r, store);
    if (rv != APR_SUCCESS && !APR_STATUS_IS_NOTFOUND(rv))
        return HTTP_SERVICE_UNAVAILABLE;
    headers(r);
    if (r->header_only)
        return OK;
    ap_rputs(CABINET_HEAD, r);
    if (user)
        signed_in(r, user);
    else
        sign_in_buttons(r, c->idps);
    ap_rputs("</body></html>\n", r);
    return OK;
}
