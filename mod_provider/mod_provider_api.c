/* mod_provider_api.c: what every cabinet API request does first and last
 * (provider_api_*: the method, the site, the database, the session, the
 * answer) for the handlers of mod_provider_account.c, mod_provider_keys.c
 * and mod_provider_favorites.c. */
#include <stdarg.h>
#include <string.h>
#include "mod_provider_api.h"
#include "mod_provider_db.h"
#include "mod_provider_http.h"
#include "mod_provider_session.h"

APLOG_USE_MODULE(provider);

/* Also leaves Cache-Control: no-store to the answer's own headers: a
 * session cookie set on the way put it in err_headers_out, and httpd would
 * send both copies. */
void provider_api_close(provider_api_t *api)
{
    apr_table_unset(api->r->err_headers_out, "Cache-Control");
    apr_table_setn(api->r->headers_out, "Cache-Control", "no-store");
    if (api->store)
        provider_db_close(api->r, api->store);
    api->store = NULL;
}

provider_step_t provider_api_begin(provider_api_t *api, request_rec *r, int method,
                                   const char *allowed)
{
    prov_error_t *err = NULL;
    apr_status_t rv;
    memset(api, 0, sizeof(*api));
    api->r = r;
    if (r->method_number != method) {
        apr_table_setn(r->err_headers_out, "Allow", allowed);
        return provider_api_fail(api, PROV_E_METHOD_NOT_ALLOWED, "Use %s on %s.", allowed,
                                 ap_escape_html(r->pool, r->uri));
    }
    if (method != M_GET && !provider_same_site(r))
        return provider_api_fail(api, PROV_E_CROSS_SITE, "This request must come from "
                                 "this site.");
    if (!(api->store = provider_db_open(r, &err)))
        return provider_send_error(r, PROVIDER_FAMILY_OPENAI, err);
    rv = provider_session_check(&api->sess, r, api->store);
    if (APR_STATUS_IS_NOTFOUND(rv))
        return provider_api_fail(api, PROV_E_NOT_SIGNED_IN, "Not signed in.");
    if (rv != APR_SUCCESS)
        return provider_api_failed(api, rv, "the session check");
    return PROVIDER_GO;
}

provider_step_t provider_api_body(provider_api_t *api, const char **body, apr_size_t *len)
{
    apr_status_t rv = provider_read_body(api->r, PROV_CABINET_BODY_MAX, body, len);
    if (rv == APR_ENOSPC) {
        api->r->connection->keepalive = AP_CONN_CLOSE;
        return provider_api_fail(api, PROV_E_REQUEST_TOO_LARGE, "The request body is larger "
                                 "than %d bytes.", PROV_CABINET_BODY_MAX);
    }
    if (rv != APR_SUCCESS)
        return provider_api_fail(api, PROV_E_INVALID_REQUEST, "The request body could not "
                                 "be read.");
    return PROVIDER_GO;
}

int provider_api_send(provider_api_t *api, int status, json_object *json)
{
    provider_api_close(api);
    if (!json) {
        api->r->status = status;
        return OK;
    }
    return provider_send_json(api->r, status, prov_json_dump(json, api->r->pool));
}

int provider_api_fail(provider_api_t *api, prov_errcode_e code, const char *fmt, ...)
{
    prov_error_t *e = prov_error_make(api->r->pool, code, NULL, "%s", "");
    va_list ap;
    va_start(ap, fmt);
    e->message = apr_pvsprintf(api->r->pool, fmt, ap);
    va_end(ap);
    return provider_api_error(api, e);
}

int provider_api_error(provider_api_t *api, const prov_error_t *e)
{
    provider_api_close(api);
    return provider_send_error(api->r, PROVIDER_FAMILY_OPENAI, e);
}

int provider_api_failed(provider_api_t *api, apr_status_t rv, const char *what)
{
    ap_log_rerror(APLOG_MARK, APLOG_WARNING, rv, api->r, "PROV00610: request %s: %s failed",
                  provider_request_id(api->r), what);
    return provider_api_fail(api, PROV_E_SERVICE_UNAVAILABLE, "The account could not be "
                             "read or changed right now; try again later.");
}
