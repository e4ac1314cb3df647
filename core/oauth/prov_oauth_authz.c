/* prov_oauth_authz.c: the authorization request. Checked in two steps, as
 * RFC 6749 4.1.2.1 orders them: a request whose client or redirect URI is
 * wrong is shown to the user and never redirected (an open redirector
 * otherwise); the rest of its faults go back to the client's redirect URI.
 * Then the consent form's anti-forgery token, the one-time code (its hash
 * stored with the PKCE challenge, the redirect URI, the scope and the
 * resource it was asked for, PROV_OAUTH_CODE_TTL seconds) and the
 * authorization response with state and iss (RFC 9207). */
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "prov_oauth.h"
#include "prov_secret.h"
#include "prov_signin_int.h"

#define STATE_MAX 512

void prov_oauth_authz_read(prov_oauth_authz_t *a, const apr_table_t *form)
{
    a->response_type = apr_table_get(form, "response_type");
    a->client_id = apr_table_get(form, "client_id");
    a->redirect_uri = apr_table_get(form, "redirect_uri");
    a->code_challenge = apr_table_get(form, "code_challenge");
    a->code_challenge_method = apr_table_get(form, "code_challenge_method");
    a->scope = apr_table_get(form, "scope");
    a->state = apr_table_get(form, "state");
    a->resource = apr_table_get(form, "resource");
}

static apr_status_t refuse(prov_oauth_err_t *err, const char *error, const char *description)
{
    err->error = error;
    err->description = description;
    return APR_EINVAL;
}

apr_status_t prov_oauth_authz_client(prov_oauth_client_t **c, prov_oauth_err_t *err,
                                     prov_store_t *s, const prov_oauth_authz_t *a,
                                     apr_pool_t *p)
{
    apr_status_t rv;
    if (!a->client_id || !*a->client_id)
        return refuse(err, "invalid_request", "The request has no client_id.");
    rv = prov_oauth_client_get(c, s, a->client_id, p);
    if (rv == APR_NOTFOUND) {
        refuse(err, "invalid_client", "This client is not registered here.");
        return APR_NOTFOUND;
    }
    if (rv != APR_SUCCESS)
        return rv;
    if (!a->redirect_uri || !*a->redirect_uri)
        return refuse(err, "invalid_request", "The request has no redirect_uri.");
    if (!prov_oauth_redirect_registered(*c, a->redirect_uri))
        return refuse(err, "invalid_request",
                      "The redirect_uri is not one this client registered.");
    return APR_SUCCESS;
}

/* Non-zero when the space-separated scope holds only ours (at least once). */
static int scope_ours(const char *scope)
{
    apr_size_t n = strlen(PROV_OAUTH_SCOPE);
    int words = 0;
    while (*scope) {
        const char *end = strchr(scope, ' ');
        apr_size_t len = end ? (apr_size_t)(end - scope) : strlen(scope);
        if (len && (len != n || strncmp(scope, PROV_OAUTH_SCOPE, n)))
            return 0;
        words += len > 0;
        scope += len + (end ? 1 : 0);
    }
    return words > 0;
}

int prov_oauth_scope_has(const char *scope, const char *want)
{
    apr_size_t n = strlen(want);
    const char *c = scope;
    while (c && (c = strstr(c, want)) != NULL) {
        if ((c == scope || c[-1] == ' ') && (c[n] == '\0' || c[n] == ' '))
            return 1;
        c += n;
    }
    return 0;
}

apr_status_t prov_oauth_authz_check(prov_oauth_err_t *err, prov_oauth_authz_t *a,
                                    const char *resource_url)
{
    if (!a->response_type || strcmp(a->response_type, "code"))
        return refuse(err, "unsupported_response_type", "response_type must be code.");
    if (!a->code_challenge)
        return refuse(err, "invalid_request", "PKCE is required: send code_challenge with "
                      "code_challenge_method=S256.");
    if (!a->code_challenge_method || strcmp(a->code_challenge_method, "S256"))
        return refuse(err, "invalid_request", "code_challenge_method must be S256 (plain is "
                      "not accepted).");
    if (!prov_signin_token_ok(a->code_challenge))
        return refuse(err, "invalid_request", "code_challenge must be the 43-character "
                      "base64url SHA-256 of the verifier.");
    if (a->state && strlen(a->state) > STATE_MAX)
        return refuse(err, "invalid_request", "state is too long.");
    if (!a->scope || !*a->scope)
        a->scope = PROV_OAUTH_SCOPE;
    if (!scope_ours(a->scope))
        return refuse(err, "invalid_scope", "The only scope is account:read.");
    a->scope = PROV_OAUTH_SCOPE;
    if (!a->resource || !*a->resource)
        return refuse(err, "invalid_request", "resource is required: this service's MCP "
                      "account endpoint URL.");
    if (strcmp(a->resource, resource_url))
        return refuse(err, "invalid_target", "resource must be this service's MCP account "
                      "endpoint.");
    return APR_SUCCESS;
}

/* ---- consent ----------------------------------------------------------------------- */

const char *prov_oauth_consent_token(const char *key, const prov_oauth_authz_t *a,
                                     apr_pool_t *p)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    const char *msg = apr_pstrcat(p, "oauth-consent\n", a->client_id, "\n", a->redirect_uri,
                                  "\n", a->code_challenge, "\n", a->scope, "\n",
                                  a->state ? a->state : "", "\n", a->resource, NULL);
    if (!key || !HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)msg,
                      strlen(msg), md, &n))
        return NULL;
    return prov_signin_b64url(md, n, p);
}

int prov_oauth_consent_ok(const char *token, const char *key, const prov_oauth_authz_t *a,
                          apr_pool_t *p)
{
    const char *want = prov_oauth_consent_token(key, a, p);
    return token && want && strlen(token) == strlen(want)
           && CRYPTO_memcmp(token, want, strlen(want)) == 0;
}

/* ---- the code and the response -------------------------------------------------------- */

apr_status_t prov_oauth_code_issue(const char **code, prov_store_t *s,
                                   const prov_oauth_authz_t *a, apr_int64_t user_id,
                                   apr_int64_t now, apr_pool_t *p)
{
    const char *c = NULL;
    apr_status_t rv = prov_secret_token(&c, 32, p);
    if (rv != APR_SUCCESS)
        return rv;
    /* Used codes are kept a day, so that a late replay is still caught. */
    rv = prov_store_exec(s, NULL, "oauth_code_purge", PROV_ARGS(prov_i64(now - 86400, p)), p);
    if (rv == APR_SUCCESS)
        rv = prov_store_exec(s, NULL, "oauth_code_add", PROV_ARGS(prov_secret_hash(c, p),
                             a->client_id, prov_i64(user_id, p), a->redirect_uri,
                             a->code_challenge, a->scope, a->resource, prov_i64(now, p),
                             prov_i64(now + PROV_OAUTH_CODE_TTL, p)), p);
    if (rv == APR_SUCCESS)
        *code = c;
    return rv;
}

const char *prov_oauth_redirect(const char *redirect_uri, const char *code,
                                const prov_oauth_err_t *err, const char *state,
                                const char *issuer, apr_pool_t *p)
{
    const char *url = apr_pstrcat(p, redirect_uri, strchr(redirect_uri, '?') ? "&" : "?", NULL);
    if (code)
        url = apr_pstrcat(p, url, "code=", code, NULL);
    else
        url = apr_pstrcat(p, url, "error=", err->error, "&error_description=",
                          prov_signin_urlencode(err->description, p), NULL);
    if (state)
        url = apr_pstrcat(p, url, "&state=", prov_signin_urlencode(state, p), NULL);
    return apr_pstrcat(p, url, "&iss=", prov_signin_urlencode(issuer, p), NULL);
}
