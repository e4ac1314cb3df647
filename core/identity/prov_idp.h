/* prov_idp.h: an external identity provider as the configuration describes
 * it (one `ProviderIdentityProvider NAME key=value...` directive): an OpenID
 * Connect provider found by its issuer, or a plain OAuth 2.0 provider given
 * by its three endpoints and the userinfo field that holds the user's id.
 * Parsing checks every key and value and reads the client secret file; the
 * list of configured providers holds at most PROV_IDP_MAX, by unique name.
 * A provider also carries its per-process cache of the discovery document
 * and the JWKS (prov_idp_meta.c, declared in prov_signin.h). */
#ifndef PROV_IDP_H
#define PROV_IDP_H

#include "prov_common.h"
#include "prov_idp_http.h"   /* prov_idp_url_ok */

#define PROV_IDP_MAX       4     /* providers per server (the specification's four) */
#define PROV_IDP_NAME_MAX  32
#define PROV_IDP_DEFAULT_OIDC_SCOPE "openid email profile"
/* timeout=: the seconds a sign-in step (a login start, a callback) may
 * spend on the provider's answers, all its calls together. */
#define PROV_IDP_TIMEOUT_DEFAULT 15
#define PROV_IDP_TIMEOUT_MAX     120

typedef enum {
    PROV_IDP_AUTH_BASIC = 0,     /* client_secret_basic (the default) */
    PROV_IDP_AUTH_POST           /* client_secret_post */
} prov_idp_auth_e;

typedef struct prov_idp_cache_t prov_idp_cache_t;

typedef struct prov_idp_t {
    const char *name;            /* the {NAME} path segment: letters, digits, '-' */
    const char *display;         /* "Sign in with <display>"; the name when not given */
    int oidc;                    /* 1: OpenID Connect (issuer=), 0: plain OAuth 2.0 */
    const char *issuer;          /* OIDC: exactly as configured (no trailing '/' added) */
    const char *client_id;
    const char *client_secret;   /* the file's content, trailing white space cut */
    const char *client_secret_file;
    const char *scope;           /* OIDC: contains "openid"; plain: may be NULL (not sent) */
    prov_idp_auth_e auth;
    int timeout;                 /* timeout=: seconds per sign-in step (see above) */
    int emails_verified;         /* emails_verified=on: an email the provider gives
                                  * without saying email_verified is verified */
    /* endpoint_origins=: where OIDC discovery may send us besides the
     * issuer's own origin (prov_idp_origin's form); NULL: nowhere else */
    apr_array_header_t *endpoint_origins;
    int endpoint_origins_any;    /* endpoint_origins=any */
    /* plain OAuth 2.0 only (OIDC's come from discovery) */
    const char *authorization_endpoint;
    const char *token_endpoint;
    const char *userinfo_endpoint;
    const char *subject_field;   /* the userinfo member holding the user id */
    prov_idp_cache_t *cache;     /* discovery + JWKS, per process (prov_idp_meta.c) */
} prov_idp_t;

/* Parses one directive: name and its key=value arguments (quotes already
 * taken off by httpd). A relative client_secret_file is taken from root
 * (the server root; NULL: as it is); the file is read now (as root at
 * start-up, like the gateway token). On failure returns APR_EINVAL (or the
 * file's error) with *err a sentence naming the directive, the provider and
 * the bad key or value. The provider lives in p. */
apr_status_t prov_idp_parse(prov_idp_t **idp, const char **err, const char *name, int argc,
                            const char *const *argv, const char *root, apr_pool_t *p);

/* The same from the directive's whole argument line ("NAME key=value
 * ..."), for a RAW_ARGS directive: httpd's own word splitting takes quotes
 * only at a word's start, so display="Shown name" would come apart. A
 * quoted run may start anywhere in a word; a backslash in it escapes the
 * quote or a backslash. An unclosed quote is APR_EINVAL. */
apr_status_t prov_idp_parse_line(prov_idp_t **idp, const char **err, const char *line,
                                 const char *root, apr_pool_t *p);

/* Appends idp to list (an array of prov_idp_t *): APR_EEXIST with *err when
 * the name is taken, APR_ENOSPC when the list holds PROV_IDP_MAX already. */
apr_status_t prov_idp_add(apr_array_header_t *list, prov_idp_t *idp, const char **err,
                          apr_pool_t *p);
/* The provider of that name in list, or NULL. */
prov_idp_t *prov_idp_find(const apr_array_header_t *list, const char *name);

/* The end of a sign-in step's time with the provider: idp->timeout
 * seconds (PROV_IDP_TIMEOUT_DEFAULT when unset) from now, on
 * apr_time_now()'s clock (prov_idp_http's deadline). */
apr_time_t prov_idp_deadline(const prov_idp_t *idp);

/* The redirect URI registered at the provider:
 * {public_url}/v1/auth/{name}/callback (public_url's trailing '/' dropped). */
const char *prov_idp_redirect_uri(const prov_idp_t *idp, const char *public_url,
                                  apr_pool_t *p);

#endif
