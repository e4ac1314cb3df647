/* prov_signin.c: both ends of a pre-login record (prov_signin.h). Begin
 * draws the state, the nonce, the PKCE verifier and the binding, seals the
 * verifier and the nonce under a key only the state and the binding give,
 * stores the record by the state's SHA-256 and builds the authorization
 * URL from the endpoints that prov_signin_endpoints found beforehand (the
 * network half, which the glue calls with no database connection held);
 * take deletes the record by that hash in one statement and opens it.
 * The record's provider, return path and link session are authenticated
 * with the seal, so a changed row does not open. No secret reaches a log. */
#include <string.h>
#include "prov_signin.h"
#include "prov_signin_int.h"
#include "prov_secret.h"
#include "prov_log.h"

#define SECRET_BYTES 32          /* 256 bits: state, nonce, verifier, binding */

const char *prov_signin_return_ok(const char *r)
{
    const char *c;
    if (!r || r[0] != '/' || r[1] == '/' || r[1] == '\\' || strlen(r) > PROV_SIGNIN_RETURN_MAX)
        return NULL;
    for (c = r; *c; c++) {
        if (*c < 0x21 || *c > 0x7e || *c == '\\')
            return NULL;
    }
    return r;
}

/* The record's fields that the seal authenticates. */
static const char *seal_aad(const char *provider, const char *return_path,
                            apr_int64_t link_session, apr_pool_t *p)
{
    return apr_psprintf(p, "%s\n%s\n%" APR_INT64_T_FMT, provider,
                        return_path ? return_path : "", link_session);
}

static const char *authorize_url(const prov_idp_t *idp, const char *endpoint,
                                 const char *public_url, const char *state, const char *nonce,
                                 const char *verifier, apr_pool_t *p)
{
    const char *url = apr_pstrcat(p, endpoint, strchr(endpoint, '?') ? "&" : "?",
        "response_type=code&client_id=", prov_signin_urlencode(idp->client_id, p),
        "&redirect_uri=", prov_signin_urlencode(prov_idp_redirect_uri(idp, public_url, p), p),
        "&state=", state,
        "&code_challenge=", prov_signin_challenge(verifier, p),
        "&code_challenge_method=S256", NULL);
    if (idp->scope)
        url = apr_pstrcat(p, url, "&scope=", prov_signin_urlencode(idp->scope, p), NULL);
    if (idp->oidc)
        url = apr_pstrcat(p, url, "&nonce=", nonce, NULL);
    return url;
}

/* The four secrets of a new record. */
static apr_status_t draw(const char **state, const char **nonce, const char **verifier,
                         const char **binding, apr_pool_t *p)
{
    apr_status_t rv;
    if ((rv = prov_secret_token(state, SECRET_BYTES, p)) != APR_SUCCESS
        || (rv = prov_secret_token(nonce, SECRET_BYTES, p)) != APR_SUCCESS
        || (rv = prov_secret_token(verifier, SECRET_BYTES, p)) != APR_SUCCESS)
        return rv;
    return prov_secret_token(binding, SECRET_BYTES, p);
}

apr_status_t prov_signin_endpoints(prov_idp_endpoints_t **ep, const char **reason,
                                  prov_idp_t *idp, apr_int64_t now, apr_pool_t *p)
{
    apr_status_t rv = prov_idp_endpoints(ep, idp, now, prov_idp_deadline(idp), p);
    *reason = rv == APR_SUCCESS ? NULL : PROV_SIGNIN_R_UNREACHABLE;
    return rv;
}

/* Stores a new pre-login record. The expired ones go first, so the table
 * holds the last ten minutes of starts; and an address (client) keeps only
 * its newest PROV_SIGNIN_PER_CLIENT, so that a flood from one address
 * replaces its own records instead of adding rows. */
static apr_status_t store_record(prov_store_t *s, const char *state, const char *provider,
                                 const char *sealed, const char *return_path,
                                 apr_int64_t link_session, const char *client, apr_int64_t now,
                                 apr_pool_t *p)
{
    apr_status_t rv;
    int n = 0;
    if ((rv = prov_store_exec(s, &n, "signin_state_purge", PROV_ARGS(prov_i64(now, p)), p))
        != APR_SUCCESS)
        return rv;
    if (client && (rv = prov_store_exec(s, &n, "signin_state_cap",
                                        PROV_ARGS(client, client,
                                                  apr_itoa(p, PROV_SIGNIN_PER_CLIENT - 1)), p))
                  != APR_SUCCESS)
        return rv;
    return prov_store_exec(s, &n, "signin_state_add",
                           PROV_ARGS(prov_secret_hash(state, p), provider, sealed, return_path,
                                     link_session ? prov_i64(link_session, p) : NULL,
                                     prov_i64(now, p), prov_i64(now + PROV_SIGNIN_TTL, p),
                                     client), p);
}

apr_status_t prov_signin_begin(prov_signin_start_t **start, const char **reason,
                               prov_store_t *s, prov_idp_t *idp,
                               const prov_idp_endpoints_t *ep, const char *public_url,
                               const char *return_path, apr_int64_t link_session,
                               const char *client, apr_int64_t now, apr_pool_t *p)
{
    const char *state, *nonce, *verifier, *binding, *sealed = NULL;
    prov_signin_start_t *st;
    apr_status_t rv;

    *reason = PROV_SIGNIN_R_INTERNAL;
    if (!return_path)
        return_path = PROV_SIGNIN_DEFAULT_RETURN;
    if (!prov_signin_return_ok(return_path) || link_session < 0 || !ep || !ep->authorization)
        return APR_EINVAL;
    if ((rv = draw(&state, &nonce, &verifier, &binding, p)) != APR_SUCCESS
        || (rv = prov_signin_seal(&sealed, state, binding,
                                  seal_aad(idp->name, return_path, link_session, p),
                                  apr_pstrcat(p, verifier, " ", nonce, NULL), p))
           != APR_SUCCESS)
        return rv;
    if ((rv = store_record(s, state, idp->name, sealed, return_path, link_session, client,
                           now, p)) != APR_SUCCESS) {
        prov_log(PROV_LOG_ERR, rv, "PROV00510: identity provider %s: cannot store a "
                 "pre-login record", idp->name);
        return rv;
    }
    st = apr_pcalloc(p, sizeof(*st));
    st->url = authorize_url(idp, ep->authorization, public_url, state, nonce, verifier, p);
    st->binding = binding;
    st->expires = now + PROV_SIGNIN_TTL;
    *start = st;
    *reason = NULL;
    prov_log(PROV_LOG_DEBUG, 0, "PROV00511: identity provider %s: %s started", idp->name,
             link_session ? "a link" : "a sign-in");
    return APR_SUCCESS;
}

/* Opens a taken record's row; APR_EACCES when it does not open. */
static apr_status_t open_row(prov_prelogin_t *pl, const char *state, const char *binding,
                             const char *sealed, apr_pool_t *p)
{
    const char *plain = NULL, *sp;
    if (prov_signin_unseal(&plain, state, binding,
                           seal_aad(pl->provider, pl->return_path, pl->link_session, p),
                           sealed, p) != APR_SUCCESS
        || !(sp = strchr(plain, ' ')))
        return APR_EACCES;
    pl->verifier = apr_pstrndup(p, plain, (apr_size_t)(sp - plain));
    pl->nonce = sp + 1;
    return APR_SUCCESS;
}

apr_status_t prov_signin_take(prov_prelogin_t **out, const char **reason, prov_store_t *s,
                              const char *provider, const char *state, const char *binding,
                              apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    prov_prelogin_t *pl;
    const char *sealed;
    apr_int64_t expires;
    apr_status_t rv;

    *reason = PROV_SIGNIN_R_EXPIRED;
    if (!prov_signin_token_ok(state))
        return APR_NOTFOUND;
    rv = prov_store_select_one(&row, s, "signin_state_take", PROV_ARGS(prov_secret_hash(state, p)),
                               p);
    if (rv == APR_NOTFOUND) {
        prov_log(PROV_LOG_INFO, 0, "PROV00512: identity provider %s: a callback with an "
                 "unknown or used state", provider);
        return rv;
    }
    if (rv != APR_SUCCESS) {
        *reason = PROV_SIGNIN_R_INTERNAL;
        return rv;
    }
    pl = apr_pcalloc(p, sizeof(*pl));
    pl->provider = apr_pstrdup(p, prov_store_get(s, row, 0));
    sealed = apr_pstrdup(p, prov_store_get(s, row, 1));
    pl->return_path = prov_store_get(s, row, 2) ? apr_pstrdup(p, prov_store_get(s, row, 2))
                                                : PROV_SIGNIN_DEFAULT_RETURN;
    pl->link_session = prov_store_get_i64(s, row, 3, 0);
    expires = prov_store_get_i64(s, row, 4, 0);
    if (expires <= now) {
        prov_log(PROV_LOG_INFO, 0, "PROV00514: identity provider %s: a callback with an "
                 "expired state", provider);
        return APR_NOTFOUND;
    }
    if (strcmp(pl->provider, provider) || !prov_signin_token_ok(binding)
        || open_row(pl, state, binding, sealed, p) != APR_SUCCESS) {
        *reason = PROV_SIGNIN_R_BROWSER;
        prov_log(PROV_LOG_WARN, 0, "PROV00513: identity provider %s: a callback whose state "
                 "was started %s", provider, strcmp(pl->provider, provider)
                 ? "for another provider" : "with another binding cookie");
        return APR_EACCES;
    }
    *out = pl;
    *reason = NULL;
    return APR_SUCCESS;
}
