/* prov_oauth_client.c: the authorization server's public face and its
 * clients. Form parsing (one value per parameter, as RFC 6749 wants), the
 * two metadata documents, the redirect URI rules (https anywhere, http
 * only on a loopback address, where any port matches: RFC 8252 7.3 and
 * 8.3), and dynamic registration of public clients (RFC 7591: no secret,
 * token_endpoint_auth_method "none"). */
#include <string.h>
#include <apr_uri.h>
#include "prov_oauth.h"
#include "prov_json.h"
#include "prov_secret.h"
#include "prov_log.h"

#define URI_MAX 2000

/* ---- forms -------------------------------------------------------------------- */

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes n bytes of s ('+' is a space); NULL on a bad escape or a NUL. */
static char *decode(const char *s, apr_size_t n, apr_pool_t *p)
{
    char *out = apr_palloc(p, n + 1), *o = out;
    apr_size_t i;
    for (i = 0; i < n; i++) {
        if (s[i] == '+')
            *o++ = ' ';
        else if (s[i] == '%') {
            int h, l;
            if (i + 2 >= n || (h = hex(s[i + 1])) < 0 || (l = hex(s[i + 2])) < 0
                || (h == 0 && l == 0))
                return NULL;
            *o++ = (char)(h * 16 + l);
            i += 2;
        }
        else
            *o++ = s[i];
    }
    *o = '\0';
    return out;
}

apr_status_t prov_oauth_form(apr_table_t **form, prov_oauth_err_t *err, const char *text,
                             apr_pool_t *p)
{
    apr_table_t *t = apr_table_make(p, 12);
    const char *c = text ? text : "";
    while (*c) {
        const char *end = strchr(c, '&'), *eq;
        apr_size_t n = end ? (apr_size_t)(end - c) : strlen(c);
        char *key, *value;
        eq = memchr(c, '=', n);
        if (n) {
            key = decode(c, eq ? (apr_size_t)(eq - c) : n, p);
            value = eq ? decode(eq + 1, n - (apr_size_t)(eq - c) - 1, p) : apr_pstrdup(p, "");
            if (!key || !value) {
                err->error = "invalid_request";
                err->description = "A parameter is not properly URL-encoded.";
                return APR_EINVAL;
            }
            if (apr_table_get(t, key)) {
                err->error = "invalid_request";
                err->description = apr_psprintf(p, "The parameter %.40s is given more than "
                                                "once.", key);
                return APR_EINVAL;
            }
            apr_table_setn(t, key, value);
        }
        c = end ? end + 1 : c + n;
    }
    *form = t;
    return APR_SUCCESS;
}

/* ---- metadata ------------------------------------------------------------------ */

const char *prov_oauth_resource(const char *issuer, apr_pool_t *p)
{
    return apr_pstrcat(p, issuer, PROV_OAUTH_RESOURCE_PATH, NULL);
}

static json_object *strings(const char *const *v)
{
    json_object *a = json_object_new_array();
    for (; *v; v++)
        json_object_array_add(a, json_object_new_string(*v));
    return a;
}

static const char *const scopes[] = { PROV_OAUTH_SCOPE, NULL };
static const char *const grants[] = { "authorization_code", "refresh_token", NULL };
static const char *const codes[] = { "code", NULL };
static const char *const none[] = { "none", NULL };

const char *prov_oauth_as_metadata(const char *issuer, apr_pool_t *p)
{
    static const char *const s256[] = { "S256", NULL };
    static const char *const query[] = { "query", NULL };
    json_object *o = prov_json_own(json_object_new_object(), p);
    json_object_object_add(o, "issuer", json_object_new_string(issuer));
    json_object_object_add(o, "authorization_endpoint", json_object_new_string(
        apr_pstrcat(p, issuer, "/oauth/authorize", NULL)));
    json_object_object_add(o, "token_endpoint", json_object_new_string(
        apr_pstrcat(p, issuer, "/oauth/token", NULL)));
    json_object_object_add(o, "registration_endpoint", json_object_new_string(
        apr_pstrcat(p, issuer, "/oauth/register", NULL)));
    json_object_object_add(o, "revocation_endpoint", json_object_new_string(
        apr_pstrcat(p, issuer, "/oauth/revoke", NULL)));
    json_object_object_add(o, "scopes_supported", strings(scopes));
    json_object_object_add(o, "response_types_supported", strings(codes));
    json_object_object_add(o, "response_modes_supported", strings(query));
    json_object_object_add(o, "grant_types_supported", strings(grants));
    json_object_object_add(o, "token_endpoint_auth_methods_supported", strings(none));
    json_object_object_add(o, "revocation_endpoint_auth_methods_supported", strings(none));
    json_object_object_add(o, "code_challenge_methods_supported", strings(s256));
    json_object_object_add(o, "authorization_response_iss_parameter_supported",
                           json_object_new_boolean(1));
    return prov_json_dump(o, p);
}

const char *prov_oauth_resource_metadata(const char *issuer, apr_pool_t *p)
{
    static const char *const header[] = { "header", NULL };
    json_object *o = prov_json_own(json_object_new_object(), p), *as = json_object_new_array();
    json_object_object_add(o, "resource", json_object_new_string(prov_oauth_resource(issuer, p)));
    json_object_array_add(as, json_object_new_string(issuer));
    json_object_object_add(o, "authorization_servers", as);
    json_object_object_add(o, "scopes_supported", strings(scopes));
    json_object_object_add(o, "bearer_methods_supported", strings(header));
    json_object_object_add(o, "resource_name", json_object_new_string(
        "Account limits and usage (MCP)"));
    return prov_json_dump(o, p);
}

/* ---- redirect URIs ---------------------------------------------------------------- */

static int loopback(const char *host)
{
    return host && (!strcmp(host, "127.0.0.1") || !strcmp(host, "::1")
                    || !strcasecmp(host, "localhost"));
}

/* uri parsed when it is absolute, printable ASCII, without userinfo or a
 * fragment; NULL otherwise. */
static apr_uri_t *parse(const char *uri, apr_pool_t *p)
{
    apr_uri_t *u = apr_pcalloc(p, sizeof(*u));
    const char *c;
    if (!uri || strlen(uri) > URI_MAX)
        return NULL;
    for (c = uri; *c; c++) {
        if (*c <= 0x20 || *c >= 0x7f)
            return NULL;
    }
    if (apr_uri_parse(p, uri, u) != APR_SUCCESS || !u->scheme || !u->hostname || !*u->hostname
        || u->user || u->password || u->fragment || strchr(uri, '#'))
        return NULL;
    return u;
}

int prov_oauth_redirect_uri_ok(const char *uri)
{
    apr_pool_t *p;
    apr_uri_t *u;
    int ok = 0;
    if (apr_pool_create(&p, NULL) != APR_SUCCESS)
        return 0;
    if ((u = parse(uri, p)) != NULL)
        ok = !strcasecmp(u->scheme, "https")
             || (!strcasecmp(u->scheme, "http") && loopback(u->hostname));
    apr_pool_destroy(p);
    return ok;
}

static int same(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

/* Non-zero when a and b are loopback http URIs that differ only in port. */
static int loopback_match(const char *a, const char *b, apr_pool_t *p)
{
    apr_uri_t *x = parse(a, p), *y = parse(b, p);
    return x && y && !strcmp(x->scheme, "http") && !strcmp(y->scheme, "http")
           && loopback(x->hostname) && !strcmp(x->hostname, y->hostname)
           && same(x->path, y->path) && same(x->query, y->query);
}

int prov_oauth_redirect_registered(const prov_oauth_client_t *c, const char *uri)
{
    apr_pool_t *p;
    int i, ok = 0;
    if (!uri)
        return 0;
    for (i = 0; i < c->redirect_uris->nelts; i++) {
        if (!strcmp(APR_ARRAY_IDX(c->redirect_uris, i, const char *), uri))
            return 1;
    }
    if (apr_pool_create(&p, NULL) != APR_SUCCESS)
        return 0;
    for (i = 0; i < c->redirect_uris->nelts && !ok; i++)
        ok = loopback_match(APR_ARRAY_IDX(c->redirect_uris, i, const char *), uri, p);
    apr_pool_destroy(p);
    return ok;
}

/* ---- registration ------------------------------------------------------------------ */

static apr_status_t refuse(prov_oauth_err_t *err, const char *error, const char *description)
{
    err->error = error;
    err->description = description;
    return APR_EINVAL;
}

/* Non-zero when member key of o is absent, or an array of strings each in allowed. */
static int subset(json_object *o, const char *key, const char *const *allowed)
{
    json_object *a = NULL;
    apr_size_t i;
    if (!json_object_object_get_ex(o, key, &a))
        return 1;
    if (!json_object_is_type(a, json_type_array))
        return 0;
    for (i = 0; i < json_object_array_length(a); i++) {
        json_object *v = json_object_array_get_idx(a, i);
        const char *const *k;
        int found = 0;
        if (!json_object_is_type(v, json_type_string))
            return 0;
        for (k = allowed; *k; k++)
            found |= !strcmp(*k, json_object_get_string(v));
        if (!found)
            return 0;
    }
    return 1;
}

static apr_status_t read_redirects(apr_array_header_t **out, prov_oauth_err_t *err,
                                   json_object *o, apr_pool_t *p)
{
    json_object *a = prov_json_get(o, "redirect_uris", json_type_array);
    apr_size_t i, n = a ? json_object_array_length(a) : 0;
    if (!n || n > PROV_OAUTH_REDIRECTS_MAX)
        return refuse(err, "invalid_redirect_uri", "redirect_uris must list 1 to 10 URIs.");
    *out = apr_array_make(p, (int)n, sizeof(const char *));
    for (i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(a, i);
        if (!json_object_is_type(v, json_type_string)
            || !prov_oauth_redirect_uri_ok(json_object_get_string(v)))
            return refuse(err, "invalid_redirect_uri", "Each redirect URI must be an https "
                          "URI, or an http URI on a loopback address (127.0.0.1, [::1], "
                          "localhost), without a fragment.");
        APR_ARRAY_PUSH(*out, const char *) = apr_pstrdup(p, json_object_get_string(v));
    }
    return APR_SUCCESS;
}

/* The client's metadata other than its redirect URIs. */
static apr_status_t read_metadata(const char **name, prov_oauth_err_t *err, json_object *o)
{
    json_object *v = NULL;
    const char *auth = prov_json_get_str(o, "token_endpoint_auth_method");
    const char *scope = prov_json_get_str(o, "scope");
    if (json_object_object_get_ex(o, "token_endpoint_auth_method", &v) && (!auth
        || strcmp(auth, "none")))
        return refuse(err, "invalid_client_metadata", "Only public clients are registered: "
                      "token_endpoint_auth_method must be \"none\".");
    if (!subset(o, "grant_types", grants))
        return refuse(err, "invalid_client_metadata", "grant_types may hold only "
                      "authorization_code and refresh_token.");
    if (!subset(o, "response_types", codes))
        return refuse(err, "invalid_client_metadata", "response_types may hold only code.");
    if (json_object_object_get_ex(o, "scope", &v) && (!scope || strcmp(scope, PROV_OAUTH_SCOPE)))
        return refuse(err, "invalid_client_metadata", "scope may only be account:read.");
    *name = NULL;
    if (json_object_object_get_ex(o, "client_name", &v)) {
        *name = prov_json_get_str(o, "client_name");
        if (!*name || !**name || strlen(*name) > PROV_OAUTH_NAME_MAX)
            return refuse(err, "invalid_client_metadata",
                          "client_name must be a string of 1 to 100 characters.");
    }
    return APR_SUCCESS;
}

apr_status_t prov_oauth_register(prov_oauth_client_t **c, prov_oauth_err_t *err,
                                 prov_store_t *s, const char *body, apr_size_t len,
                                 apr_int64_t now, apr_pool_t *p)
{
    const char *why = NULL, *id = NULL, *name = NULL;
    json_object *o = prov_json_parse_body(body, len, &why, p);
    apr_array_header_t *uris = NULL;
    prov_oauth_client_t *cl;
    apr_status_t rv;
    if (!o)
        return refuse(err, "invalid_client_metadata", why);
    if ((rv = read_redirects(&uris, err, o, p)) != APR_SUCCESS
        || (rv = read_metadata(&name, err, o)) != APR_SUCCESS)
        return rv;
    if ((rv = prov_secret_token(&id, 24, p)) != APR_SUCCESS)
        return rv;
    id = apr_pstrcat(p, "mcp-", id, NULL);
    rv = prov_store_exec(s, NULL, "oauth_client_add", PROV_ARGS(id, name ? apr_pstrdup(p, name)
                         : NULL, apr_array_pstrcat(p, uris, '\n'), prov_i64(now, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    cl = apr_pcalloc(p, sizeof(*cl));
    cl->client_id = id;
    cl->name = name ? apr_pstrdup(p, name) : NULL;
    cl->redirect_uris = uris;
    cl->created_at = now;
    prov_log(PROV_LOG_INFO, 0, "PROV00710: OAuth client %s registered", id);
    *c = cl;
    return APR_SUCCESS;
}

const char *prov_oauth_client_json(const prov_oauth_client_t *c, apr_pool_t *p)
{
    json_object *o = prov_json_own(json_object_new_object(), p), *u = json_object_new_array();
    int i;
    json_object_object_add(o, "client_id", json_object_new_string(c->client_id));
    json_object_object_add(o, "client_id_issued_at", json_object_new_int64(c->created_at));
    if (c->name)
        json_object_object_add(o, "client_name", json_object_new_string(c->name));
    for (i = 0; i < c->redirect_uris->nelts; i++)
        json_object_array_add(u, json_object_new_string(APR_ARRAY_IDX(c->redirect_uris, i,
                                                                      const char *)));
    json_object_object_add(o, "redirect_uris", u);
    json_object_object_add(o, "grant_types", strings(grants));
    json_object_object_add(o, "response_types", strings(codes));
    json_object_object_add(o, "token_endpoint_auth_method", json_object_new_string("none"));
    json_object_object_add(o, "scope", json_object_new_string(PROV_OAUTH_SCOPE));
    return prov_json_dump(o, p);
}

apr_status_t prov_oauth_client_get(prov_oauth_client_t **c, prov_store_t *s,
                                   const char *client_id, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    prov_oauth_client_t *cl;
    char *uris, *last = NULL, *u;
    apr_status_t rv;
    if (!client_id || !*client_id || strlen(client_id) > 100)
        return APR_NOTFOUND;
    rv = prov_store_select_one(&row, s, "oauth_client_get", PROV_ARGS(client_id), p);
    if (rv != APR_SUCCESS)
        return rv;
    cl = apr_pcalloc(p, sizeof(*cl));
    cl->client_id = prov_store_get(s, row, 0);
    cl->name = prov_store_get(s, row, 1);
    uris = apr_pstrdup(p, prov_store_get(s, row, 2) ? prov_store_get(s, row, 2) : "");
    cl->created_at = prov_store_get_i64(s, row, 3, 0);
    cl->redirect_uris = apr_array_make(p, 2, sizeof(const char *));
    for (u = apr_strtok(uris, "\n", &last); u; u = apr_strtok(NULL, "\n", &last))
        APR_ARRAY_PUSH(cl->redirect_uris, const char *) = u;
    *c = cl;
    return APR_SUCCESS;
}
