/* prov_signin_token.c: the callback's second half (prov_signin_exchange):
 * the authorization code exchanged at the token endpoint with the PKCE
 * verifier and the client's credentials (client_secret_basic or _post);
 * then, for OpenID Connect, the id_token verified against the provider's
 * JWKS (fetched again once for a key id it lacks) and its claims checked,
 * with the userinfo endpoint asked for an email or a name the id_token
 * left out (used only when its sub is the id_token's); for plain OAuth
 * 2.0, the userinfo endpoint with the access token and the subject from
 * subject_field. The provider's error text and its tokens never leave this
 * file: the log gets the HTTP status and a standard error code at most, the
 * caller a reason from prov_signin.h. */
#include <string.h>
#include <strings.h>
#include <apr_base64.h>
#include <apr_lib.h>
#include "prov_signin.h"
#include "prov_signin_int.h"
#include "prov_idp_meta.h"
#include "prov_idp_http.h"
#include "prov_jwt.h"
#include "prov_json.h"
#include "prov_log.h"

#define CLAIM_MAX 512            /* longest email or name taken from a provider */

/* A standard OAuth error code (RFC 6749 5.2: a short token of
 * [a-z_]), safe for a log line; anything else is left out. */
static const char *error_code(const char *body, apr_size_t len, apr_pool_t *p)
{
    const char *err = NULL, *code;
    json_object *o = prov_json_parse(body, len, &err, p);
    apr_size_t i;
    if (!o || !(code = prov_json_get_str(o, "error")) || strlen(code) > 40)
        return "";
    for (i = 0; code[i]; i++) {
        if (!apr_islower(code[i]) && code[i] != '_')
            return "";
    }
    return apr_pstrcat(p, " (", code, ")", NULL);
}

static const char *basic_auth(const prov_idp_t *idp, apr_pool_t *p)
{
    /* RFC 6749 2.3.1: each part form-encoded before base64 */
    const char *pair = apr_pstrcat(p, prov_signin_urlencode(idp->client_id, p), ":",
                                   prov_signin_urlencode(idp->client_secret, p), NULL);
    char *b64 = apr_palloc(p, (apr_size_t)apr_base64_encode_len((int)strlen(pair)));
    apr_base64_encode(b64, pair, (int)strlen(pair));
    return apr_pstrcat(p, "Basic ", b64, NULL);
}

/* POSTs the token request; *tokens is the answer's JSON object. */
static apr_status_t token_request(json_object **tokens, const char **reason, prov_idp_t *idp,
                                  const prov_idp_endpoints_t *ep, const prov_prelogin_t *pl,
                                  const char *public_url, const char *code,
                                  apr_time_t deadline, apr_pool_t *p)
{
    prov_idp_http_answer_t *r = NULL;
    const char *why = NULL, *err = NULL;
    const char *form = apr_pstrcat(p, "grant_type=authorization_code&code=",
        prov_signin_urlencode(code, p), "&redirect_uri=",
        prov_signin_urlencode(prov_idp_redirect_uri(idp, public_url, p), p),
        "&code_verifier=", prov_signin_urlencode(pl->verifier, p), NULL);
    const char *auth = NULL;
    apr_status_t rv;

    if (idp->auth == PROV_IDP_AUTH_POST)
        form = apr_pstrcat(p, form, "&client_id=", prov_signin_urlencode(idp->client_id, p),
                           "&client_secret=", prov_signin_urlencode(idp->client_secret, p),
                           NULL);
    else
        auth = basic_auth(idp, p);
    rv = prov_idp_http(&r, &why, ep->token, form, auth, deadline, p);
    if (rv != APR_SUCCESS) {
        prov_idp_meta_stale(idp);
        *reason = PROV_SIGNIN_R_UNREACHABLE;
        prov_log(PROV_LOG_WARN, rv, "PROV00520: identity provider %s: the token endpoint "
                 "cannot be reached: %s", idp->name, why);
        return rv;
    }
    if (r->status != 200) {
        *reason = PROV_SIGNIN_R_REFUSED;
        prov_log(PROV_LOG_WARN, 0, "PROV00521: identity provider %s: the token endpoint "
                 "refused the code: HTTP %d%s", idp->name, r->status,
                 error_code(r->body, r->len, p));
        return APR_EACCES;
    }
    *tokens = prov_json_parse(r->body, r->len, &err, p);
    if (!*tokens || !json_object_is_type(*tokens, json_type_object)) {
        *reason = PROV_SIGNIN_R_UNVERIFIED;
        prov_log(PROV_LOG_WARN, 0, "PROV00522: identity provider %s: the token endpoint's "
                 "answer is not a JSON object", idp->name);
        return APR_EGENERAL;
    }
    return APR_SUCCESS;
}

/* A claim's text when it is a string of a sane length. */
static const char *text_claim(json_object *o, const char *name, apr_pool_t *p)
{
    const char *v = prov_json_get_str(o, name);
    return v && *v && strlen(v) <= CLAIM_MAX ? apr_pstrdup(p, v) : NULL;
}

/* email, email_verified and name from o, where c lacks them. */
static void profile_from(prov_claims_t *c, json_object *o, apr_pool_t *p)
{
    json_object *ev = NULL;
    if (!c->email && (c->email = text_claim(o, "email", p)) != NULL
        && json_object_object_get_ex(o, "email_verified", &ev)) {
        if (json_object_is_type(ev, json_type_boolean))
            c->email_verified = json_object_get_boolean(ev) ? 1 : 0;
        else if (json_object_is_type(ev, json_type_string))
            c->email_verified = !strcmp(json_object_get_string(ev), "true");
    }
    if (!c->name)
        c->name = text_claim(o, "name", p);
    if (!c->name)
        c->name = text_claim(o, "preferred_username", p);
    if (!c->name)
        c->name = text_claim(o, "login", p);
}

/* GET userinfo with the access token; *info is its JSON object. */
static apr_status_t userinfo(json_object **info, prov_idp_t *idp, const char *url,
                             const char *access_token, apr_time_t deadline, apr_pool_t *p)
{
    prov_idp_http_answer_t *r = NULL;
    const char *why = NULL, *err = NULL;
    apr_status_t rv = prov_idp_http(&r, &why, url, NULL,
                                    apr_pstrcat(p, "Bearer ", access_token, NULL), deadline, p);
    if (rv != APR_SUCCESS) {
        prov_idp_meta_stale(idp);
        prov_log(PROV_LOG_WARN, rv, "PROV00523: identity provider %s: the userinfo endpoint "
                 "cannot be reached: %s", idp->name, why);
        return rv;
    }
    if (r->status != 200 || !(*info = prov_json_parse(r->body, r->len, &err, p))
        || !json_object_is_type(*info, json_type_object)) {
        prov_log(PROV_LOG_WARN, 0, "PROV00524: identity provider %s: the userinfo endpoint "
                 "answered HTTP %d%s", idp->name, r->status,
                 r->status == 200 ? " without a JSON object" : "");
        return APR_EACCES;
    }
    return APR_SUCCESS;
}

/* The id_token's signature (one JWKS refresh for an unknown key) and claims. */
static apr_status_t id_token_check(json_object **claims, prov_idp_t *idp,
                                   const prov_prelogin_t *pl, const char *id_token,
                                   apr_int64_t now, apr_time_t deadline, apr_pool_t *p)
{
    const char *jwks = NULL, *why = "no id_token in the token endpoint's answer";
    int refreshed = 0;
    apr_status_t rv = APR_EINVAL;

    if (id_token && (rv = prov_idp_jwks(&jwks, NULL, idp, 0, now, deadline, p)) == APR_SUCCESS) {
        rv = prov_jwt_verify(claims, &why, id_token, jwks, p);
        if (rv == APR_ENOENT && prov_idp_jwks(&jwks, &refreshed, idp, 1, now, deadline, p)
            == APR_SUCCESS && refreshed)
            rv = prov_jwt_verify(claims, &why, id_token, jwks, p);
    }
    else if (id_token) {
        why = "its JWKS cannot be fetched";
    }
    if (rv == APR_SUCCESS)
        rv = prov_jwt_check_claims(&why, *claims, idp->issuer, idp->client_id, pl->nonce, now);
    if (rv != APR_SUCCESS)
        prov_log(PROV_LOG_WARN, 0, "PROV00525: identity provider %s: id_token refused: %s",
                 idp->name, why);
    return rv;
}

static apr_status_t oidc_identity(prov_claims_t *c, const char **reason, prov_idp_t *idp,
                                  const prov_idp_endpoints_t *ep, const prov_prelogin_t *pl,
                                  json_object *tokens, apr_int64_t now, apr_time_t deadline,
                                  apr_pool_t *p)
{
    json_object *claims = NULL, *info = NULL;
    const char *access = prov_json_get_str(tokens, "access_token");
    apr_status_t rv = id_token_check(&claims, idp, pl, prov_json_get_str(tokens, "id_token"),
                                     now, deadline, p);
    if (rv != APR_SUCCESS) {
        /* the JWKS out of reach (or its fetch in flight) is not a bad token */
        *reason = APR_STATUS_IS_TIMEUP(rv) || APR_STATUS_IS_ECONNREFUSED(rv) || rv == APR_EBUSY
                  ? PROV_SIGNIN_R_UNREACHABLE : PROV_SIGNIN_R_UNVERIFIED;
        return rv;
    }
    c->subject = apr_pstrdup(p, prov_json_get_str(claims, "sub"));
    profile_from(c, claims, p);
    /* OpenID Connect Core 5.3.2: userinfo counts only for the same sub */
    if ((!c->email || !c->name) && ep->userinfo && access
        && userinfo(&info, idp, ep->userinfo, access, deadline, p) == APR_SUCCESS) {
        const char *sub = prov_json_get_str(info, "sub");
        if (sub && !strcmp(sub, c->subject))
            profile_from(c, info, p);
        else
            prov_log(PROV_LOG_WARN, 0, "PROV00526: identity provider %s: userinfo is for "
                     "another subject; not used", idp->name);
    }
    return APR_SUCCESS;
}

/* The subject_field member: a non-empty string, or a whole number. */
static const char *subject_of(json_object *info, const char *field, apr_pool_t *p)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(info, field, &v))
        return NULL;
    if (json_object_is_type(v, json_type_int))
        return apr_psprintf(p, "%" APR_INT64_T_FMT, (apr_int64_t)json_object_get_int64(v));
    if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        if (*s && strlen(s) <= PROV_JWT_SUBJECT_MAX)
            return apr_pstrdup(p, s);
    }
    return NULL;
}

static apr_status_t plain_identity(prov_claims_t *c, const char **reason, prov_idp_t *idp,
                                   const prov_idp_endpoints_t *ep, json_object *tokens,
                                   apr_time_t deadline, apr_pool_t *p)
{
    json_object *info = NULL;
    const char *access = prov_json_get_str(tokens, "access_token");
    apr_status_t rv;

    if (!access) {
        *reason = PROV_SIGNIN_R_UNVERIFIED;
        prov_log(PROV_LOG_WARN, 0, "PROV00529: identity provider %s: the token endpoint's "
                 "answer has no access_token", idp->name);
        return APR_EGENERAL;
    }
    if ((rv = userinfo(&info, idp, ep->userinfo, access, deadline, p)) != APR_SUCCESS) {
        *reason = rv == APR_EACCES ? PROV_SIGNIN_R_REFUSED : PROV_SIGNIN_R_UNREACHABLE;
        return rv;
    }
    if (!(c->subject = subject_of(info, idp->subject_field, p))) {
        *reason = PROV_SIGNIN_R_UNVERIFIED;
        prov_log(PROV_LOG_WARN, 0, "PROV00527: identity provider %s: userinfo has no usable "
                 "%s (subject_field)", idp->name, idp->subject_field);
        return APR_EGENERAL;
    }
    profile_from(c, info, p);
    return APR_SUCCESS;
}

apr_status_t prov_signin_exchange(prov_claims_t **claims, const char **reason, prov_idp_t *idp,
                                  const prov_prelogin_t *pl, const char *public_url,
                                  const char *code, apr_int64_t now, apr_pool_t *p)
{
    /* the callback's calls to the provider, all together, end by then */
    apr_time_t deadline = prov_idp_deadline(idp);
    prov_idp_endpoints_t *ep = NULL;
    json_object *tokens = NULL;
    prov_claims_t *c;
    apr_status_t rv;

    *reason = PROV_SIGNIN_R_REFUSED;
    if (!code || !*code || strlen(code) > 2048 || strcmp(pl->provider, idp->name))
        return APR_EINVAL;
    if ((rv = prov_idp_endpoints(&ep, idp, now, deadline, p)) != APR_SUCCESS) {
        *reason = PROV_SIGNIN_R_UNREACHABLE;
        return rv;
    }
    if ((rv = token_request(&tokens, reason, idp, ep, pl, public_url, code, deadline, p))
        != APR_SUCCESS)
        return rv;
    c = apr_pcalloc(p, sizeof(*c));
    c->email_verified = -1;
    rv = idp->oidc ? oidc_identity(c, reason, idp, ep, pl, tokens, now, deadline, p)
                   : plain_identity(c, reason, idp, ep, tokens, deadline, p);
    if (rv != APR_SUCCESS)
        return rv;
    /* emails_verified=on: the operator vouches for what the provider leaves unsaid */
    if (c->email && c->email_verified < 0 && idp->emails_verified)
        c->email_verified = 1;
    prov_log(PROV_LOG_DEBUG, 0, "PROV00528: identity provider %s: identity verified",
             idp->name);
    *claims = c;
    *reason = NULL;
    return APR_SUCCESS;
}
