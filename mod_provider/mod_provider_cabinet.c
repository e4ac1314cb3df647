/* mod_provider_cabinet.c: the cabinet's static files and the public list of
 * sign-in methods. /cabinet/ is web/index.html and /cabinet/NAME.EXT the
 * other files of ProviderWebRoot (web/ of the tree, installed under the
 * module's data directory): one flat folder, names of [a-z0-9-] with a
 * known extension only, so that no request names anything else (no '/',
 * no dot segment, no hidden file). Every answer carries a strict
 * Content-Security-Policy (scripts, styles and fetches from this site only;
 * forms to this site and to the identity providers a sign-in or link form
 * is redirected to), nosniff and no framing; the page is no-store, the
 * assets are revalidated by ETag and Last-Modified. The page itself asks
 * the JSON API for everything (web/app.js): GET /v1/auth/providers, served
 * here, lists the configured identity providers for its sign-in and link
 * buttons. */
#include <string.h>
#include "apr_uri.h"
#include "mod_provider_config.h"
#include "mod_provider_http.h"
#include "mod_provider_cabinet.h"
#include "prov_json.h"
#include "prov_idp.h"

APLOG_USE_MODULE(provider);

#define CABINET_PREFIX "/cabinet/"
#define CABINET_INDEX  "index.html"
#define NAME_MAX_LEN   64

typedef struct {
    const char *ext;
    const char *type;
    int page;              /* an HTML page: no-store */
} file_type_t;

static const file_type_t file_types[] = {
    { ".html", "text/html; charset=utf-8", 1 },
    { ".css", "text/css; charset=utf-8", 0 },
    { ".js", "text/javascript; charset=utf-8", 0 },
    { ".svg", "image/svg+xml", 0 },
    { ".png", "image/png", 0 },
    { NULL, NULL, 0 }
};

/* The type of a file name the cabinet serves ([a-z0-9-]+ and a known
 * extension), or NULL for any other name. */
static const file_type_t *file_type(const char *name)
{
    const char *dot = strchr(name, '.');
    const char *c;
    int i;
    if (!dot || dot == name || dot - name > NAME_MAX_LEN)
        return NULL;
    for (c = name; c < dot; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-'))
            return NULL;
    for (i = 0; file_types[i].ext; i++)
        if (!strcmp(dot, file_types[i].ext))
            return &file_types[i];
    return NULL;
}

/* ---- headers ----------------------------------------------------------------- */

/* scheme://host[:port] of url, or NULL when it has none. */
static const char *origin_of(const char *url, apr_pool_t *p)
{
    apr_uri_t u;
    if (!url || apr_uri_parse(p, url, &u) != APR_SUCCESS || !u.scheme || !u.hostname)
        return NULL;
    return apr_pstrcat(p, u.scheme, "://", u.hostname, u.port_str ? ":" : "",
                       u.port_str ? u.port_str : "", NULL);
}

/* form-action: this site, and where a sign-in or link form's GET is
 * redirected to (browsers check a form's redirects against it too): each
 * provider's issuer (OpenID Connect: its authorization endpoint is on the
 * issuer's origin with every provider we know of) or its configured
 * authorization endpoint (plain OAuth 2.0). */
static const char *form_action(request_rec *r)
{
    const apr_array_header_t *idps = provider_conf(r)->idps;
    const char *list = "'self'";
    int i;
    for (i = 0; idps && i < idps->nelts; i++) {
        const prov_idp_t *idp = APR_ARRAY_IDX(idps, i, const prov_idp_t *);
        const char *o = origin_of(idp->oidc ? idp->issuer : idp->authorization_endpoint,
                                  r->pool);
        /* An origin is plain URL characters: nothing can end the directive. */
        if (o && !strpbrk(o, " ;,'\"") && !strstr(list, o))
            list = apr_pstrcat(r->pool, list, " ", o, NULL);
    }
    return list;
}

static void security_headers(request_rec *r)
{
    apr_table_t *h = r->err_headers_out;
    apr_table_setn(h, "Content-Security-Policy",
                   apr_pstrcat(r->pool, "default-src 'none'; script-src 'self'; "
                               "style-src 'self'; connect-src 'self'; img-src 'self' data:; "
                               "form-action ", form_action(r), "; frame-ancestors 'none'; "
                               "base-uri 'none'", NULL));
    apr_table_setn(h, "X-Content-Type-Options", "nosniff");
    apr_table_setn(h, "X-Frame-Options", "DENY");
    /* same-origin keeps Origin on the page's own POSTs (the CSRF check). */
    apr_table_setn(h, "Referrer-Policy", "same-origin");
    apr_table_setn(h, "Cross-Origin-Opener-Policy", "same-origin");
    apr_table_setn(h, "Cross-Origin-Resource-Policy", "same-origin");
}

/* ---- files --------------------------------------------------------------------- */

static int not_found(request_rec *r)
{
    return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_NOT_FOUND, NULL,
                         "No such cabinet file.");
}

/* Opens path as a regular file with its information in r->finfo. */
static apr_status_t open_file(apr_file_t **f, request_rec *r, const char *path)
{
    apr_status_t rv = apr_file_open(f, path, APR_FOPEN_READ | APR_FOPEN_BINARY, APR_OS_DEFAULT,
                                    r->pool);
    if (rv == APR_SUCCESS)
        rv = apr_file_info_get(&r->finfo, APR_FINFO_NORM, *f);
    if (rv == APR_SUCCESS && r->finfo.filetype != APR_REG)
        rv = APR_ENOENT;
    return rv;
}

/* Answers the file name of the web root with its type's headers. */
static int send_file(request_rec *r, const char *name, const file_type_t *t)
{
    const char *root = provider_conf(r)->web_root;
    const char *path = apr_pstrcat(r->pool, root, "/", name, NULL);
    apr_bucket_brigade *bb;
    apr_file_t *f = NULL;
    apr_status_t rv = open_file(&f, r, path);
    int status;
    if (rv != APR_SUCCESS) {
        if (!APR_STATUS_IS_ENOENT(rv) && !APR_STATUS_IS_ENOTDIR(rv))
            ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, r, "PROV00631: cannot read the "
                          "cabinet's file %s", path);
        return not_found(r);
    }
    ap_set_content_type(r, t->type);
    if (t->page) {
        apr_table_setn(r->headers_out, "Cache-Control", "no-store");
    } else {
        apr_table_setn(r->headers_out, "Cache-Control", "no-cache");
        ap_update_mtime(r, r->finfo.mtime);
        ap_set_last_modified(r);
        ap_set_etag(r);
        if ((status = ap_meets_conditions(r)) != OK) {
            apr_file_close(f);
            return status;
        }
    }
    ap_set_content_length(r, r->finfo.size);
    bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    if (!r->header_only)
        apr_brigade_insert_file(bb, f, 0, r->finfo.size, r->pool);
    APR_BRIGADE_INSERT_TAIL(bb, apr_bucket_eos_create(r->connection->bucket_alloc));
    return provider_pass(r, bb) == PROVIDER_WRITE_FAILED ? AP_FILTER_ERROR : OK;
}

int provider_cabinet_handler(request_rec *r)
{
    const char *name;
    const file_type_t *t;
    security_headers(r);
    if (!strcmp(r->uri, "/cabinet")) {
        apr_table_setn(r->headers_out, "Location", CABINET_PREFIX);
        return HTTP_MOVED_PERMANENTLY;
    }
    if (r->method_number != M_GET) {
        apr_table_setn(r->err_headers_out, "Allow", "GET, HEAD");
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_METHOD_NOT_ALLOWED, NULL,
                             "Use GET.");
    }
    name = r->uri + strlen(CABINET_PREFIX);
    if (!*name)
        name = CABINET_INDEX;
    if (!(t = file_type(name)))
        return not_found(r);
    return send_file(r, name, t);
}

void provider_cabinet_check(server_rec *s, const provider_srv_conf *c, apr_pool_t *ptemp)
{
    apr_finfo_t fi;
    const char *index = apr_pstrcat(ptemp, c->web_root, "/" CABINET_INDEX, NULL);
    if (apr_stat(&fi, index, APR_FINFO_TYPE, ptemp) != APR_SUCCESS || fi.filetype != APR_REG)
        ap_log_error(APLOG_MARK, APLOG_WARNING, 0, s, "PROV00630: ProviderWebRoot %s has no "
                     CABINET_INDEX ": /cabinet/ answers 404 (make install puts the cabinet's "
                     "files in %s)", c->web_root, PROVIDER_WEB_ROOT_DEFAULT);
}

/* ---- GET /v1/auth/providers ----------------------------------------------------- */

int provider_cabinet_providers(request_rec *r)
{
    const apr_array_header_t *idps = provider_conf(r)->idps;
    json_object *o = prov_json_own(json_object_new_object(), r->pool);
    json_object *a = json_object_new_array();
    int i;
    json_object_object_add(o, "data", a);
    for (i = 0; idps && i < idps->nelts; i++) {
        const prov_idp_t *idp = APR_ARRAY_IDX(idps, i, const prov_idp_t *);
        json_object *e = json_object_new_object();
        json_object_object_add(e, "name", json_object_new_string(idp->name));
        json_object_object_add(e, "display", json_object_new_string(idp->display));
        json_object_object_add(e, "login", json_object_new_string(
                                   apr_pstrcat(r->pool, "/v1/auth/", idp->name, "/login", NULL)));
        json_object_object_add(e, "link", json_object_new_string(
                                   apr_pstrcat(r->pool, "/v1/auth/", idp->name, "/link", NULL)));
        json_object_array_add(a, e);
    }
    return provider_send_json(r, HTTP_OK, prov_json_dump(o, r->pool));
}
