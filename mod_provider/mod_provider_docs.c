/* mod_provider_docs.c: the public documentation over HTTP: GET /docs (the
 * index page), /docs/NAME (a page: NAME.html under ProviderDocsRoot, served
 * in _layout.html), /docs/style.css, and GET /v1/docs, the OpenAPI 3.1
 * description (openapi.json). core/docs reads the files and puts the base URL and the
 * catalog's live model ids in place of their markers; this file picks those
 * values for the request (ProviderPublicURL, else the request's own origin;
 * the enabled models the gateway lists now) and writes the answer with its
 * headers: a strict Content-Security-Policy (no script at all, the one
 * style sheet of this site), no caching of a page that names models. */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_docs.h"
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "mod_provider_http.h"
#include "http_core.h"
#include "prov_docs.h"

APLOG_USE_MODULE(provider);

#define DOCS_CSP "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; " \
                 "form-action 'none'; frame-ancestors 'none'"

const char *provider_docs_root(request_rec *r)
{
    const char *root = provider_conf(r)->docs_root;
    return root ? root : PROVIDER_DOCS_ROOT_DEFAULT;
}

/* The origin the pages show: ProviderPublicURL, else the request's own
 * scheme, host and port when they are plain (a Host header of other
 * characters gets the neutral example origin). */
static const char *base_url(request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    const char *u;
    if (c->public_url)
        return c->public_url;
    u = ap_construct_url(r->pool, "", r);
    return u[strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.:/[]-")]
           ? NULL : u;
}

/* The live model ids: the enabled catalog models the gateway lists now (all
 * enabled ones when its list cannot be had), and those of them served on
 * /v1/messages. Left empty when the database cannot be read. */
static void live_models(prov_docs_vars_t *v, request_rec *r)
{
    provider_srv_conf *c = provider_conf(r);
    apr_array_header_t *models = NULL, *all, *msgs;
    apr_hash_t *available = NULL;
    prov_error_t *err = NULL;
    prov_store_t *store = provider_db_open(r, &err);
    apr_status_t rv = store ? prov_model_list(&models, store, 1, r->pool) : APR_EGENERAL;
    int i, stale = 0;
    if (store)
        provider_db_close(r, store);
    if (rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, rv, r, "PROV00650: docs: the catalog cannot be "
                      "read; the page shows no model ids");
        return;
    }
    if (!c->catalog || prov_catalog_available(&available, &stale, c->catalog, c->gateway,
                                              r->pool) != APR_SUCCESS)
        available = NULL;
    all = apr_array_make(r->pool, models->nelts, sizeof(const char *));
    msgs = apr_array_make(r->pool, models->nelts, sizeof(const char *));
    for (i = 0; i < models->nelts; i++) {
        const prov_model_t *m = APR_ARRAY_IDX(models, i, const prov_model_t *);
        if (available && !apr_hash_get(available, m->upstream_id, APR_HASH_KEY_STRING))
            continue;
        APR_ARRAY_PUSH(all, const char *) = m->public_id;
        if (m->messages_enabled && c->messages_family
            && !strcmp(m->family, c->messages_family))
            APR_ARRAY_PUSH(msgs, const char *) = m->public_id;
    }
    v->models = all;
    v->messages_models = msgs;
}

/* Writes body with type; the common headers of every docs answer. */
static int send_page(request_rec *r, int status, const char *type, const char *body,
                const char *cache)
{
    apr_size_t len = strlen(body);
    r->status = status;
    ap_set_content_type(r, type);
    apr_table_setn(r->headers_out, "Cache-Control", cache);
    apr_table_setn(r->headers_out, "X-Content-Type-Options", "nosniff");
    apr_table_setn(r->headers_out, "Referrer-Policy", "same-origin");
    if (!strncmp(type, "text/html", 9)) {
        apr_table_setn(r->headers_out, "Content-Security-Policy", DOCS_CSP);
        apr_table_setn(r->headers_out, "X-Frame-Options", "DENY");
    }
    ap_set_content_length(r, (apr_off_t)len);
    if (!r->header_only)
        ap_rwrite(body, (int)len, r);
    return OK;
}

/* The small page of a /docs path that names no page. */
static int not_found(request_rec *r)
{
    return send_page(r, HTTP_NOT_FOUND, "text/html; charset=utf-8",
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                "<title>No such page</title><link rel=\"stylesheet\" href=\"/docs/style.css\">"
                "</head>\n<body><main><h1 id=\"not-found\">No such page</h1>\n"
                "<p>See <a href=\"/docs\">the documentation's index</a>, or go to "
                "<a href=\"/cabinet/\">your account</a>.</p></main></body>"
                "</html>\n", "no-cache");
}

/* Reads file, puts in the request's values, sends it as type. */
static int serve_file(request_rec *r, const char *file, const char *type, int json)
{
    prov_docs_vars_t v = { NULL, NULL, NULL, NULL };
    const char *text = NULL;
    apr_size_t len = 0;
    apr_status_t rv = prov_docs_read(&text, &len, provider_docs_root(r), file, r->pool);
    int live, private = 0;
    if (rv != APR_SUCCESS) {
        if (!APR_STATUS_IS_ENOENT(rv))
            ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, "PROV00651: docs: cannot read %s/%s "
                          "(ProviderDocsRoot)", provider_docs_root(r), file);
        if (json)
            return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_SERVICE_UNAVAILABLE, NULL,
                                 "The API description is not installed on this server.");
        return APR_STATUS_IS_ENOENT(rv) ? not_found(r) : HTTP_SERVICE_UNAVAILABLE;
    }
    if (!strcmp(type, "text/css"))
        return send_page(r, HTTP_OK, type, text, "max-age=3600");
    live = prov_docs_needs_models(text);
    v.base_url = base_url(r);
    v.credit = &provider_conf(r)->credit;
    /* Without ProviderPublicURL the page shows the request's own origin: a
     * shared cache must not keep one client's Host for another. */
    if (!provider_conf(r)->public_url)
        private = 1;
    if (live)
        live_models(&v, r);
    if (json)
        return send_page(r, HTTP_OK, type, prov_docs_render(text, &v, r->pool),
                         private ? "private, max-age=300" : "max-age=300");
    rv = prov_docs_frame(&text, provider_docs_root(r), text, &v, r->pool);
    if (rv != APR_SUCCESS) {
        ap_log_rerror(APLOG_MARK, APLOG_ERR, rv, r, "PROV00652: docs: %s/_layout.html is missing "
                      "or lacks {{title}} and {{content}} (ProviderDocsRoot)",
                      provider_docs_root(r));
        return HTTP_SERVICE_UNAVAILABLE;
    }
    return send_page(r, HTTP_OK, type, text, live ? (private ? "private, no-cache" : "no-cache")
                                             : private ? "private, max-age=300" : "max-age=300");
}

int provider_docs_handler(request_rec *r)
{
    const char *name;
    if (r->method_number != M_GET) {
        apr_table_setn(r->err_headers_out, "Allow", "GET, HEAD");
        return HTTP_METHOD_NOT_ALLOWED;
    }
    if (!strcmp(r->uri, "/docs"))
        return serve_file(r, "index.html", "text/html; charset=utf-8", 0);
    name = r->uri + strlen("/docs/");
    if (!*name || !strcmp(name, "index")) {
        apr_table_setn(r->headers_out, "Location", "/docs");
        return HTTP_MOVED_PERMANENTLY;
    }
    if (!strcmp(name, "style.css"))
        return serve_file(r, "style.css", "text/css", 0);
    if (!prov_docs_name_valid(name))
        return not_found(r);
    return serve_file(r, apr_pstrcat(r->pool, name, ".html", NULL), "text/html; charset=utf-8",
                      0);
}

int provider_openapi_handler(request_rec *r)
{
    if (r->method_number != M_GET) {
        apr_table_setn(r->err_headers_out, "Allow", "GET, HEAD");
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_METHOD_NOT_ALLOWED, NULL,
                             "Use GET on /v1/docs");
    }
    apr_table_setn(r->headers_out, "Access-Control-Allow-Origin", "*");
    return serve_file(r, "openapi.json", "application/json", 1);
}
