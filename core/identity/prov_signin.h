/* prov_signin.h: the authorization-code flow with an identity provider, in
 * the two halves the glue serves. Begin (GET /v1/auth/NAME/login or /link):
 * a one-time state, a nonce and a PKCE S256 verifier, 256 random bits each,
 * kept in a pre-login record in the database (so any node can finish it),
 * and the provider's authorization URL to send the browser to, together
 * with a binding value for a short-lived cookie. Finish (GET
 * /v1/auth/NAME/callback): the record taken once by its state and opened
 * with the binding cookie (prov_signin_take), then the code exchanged and
 * the user's identity verified (prov_signin_exchange, prov_signin_token.c).
 * Every failure comes with a short reason for the cabinet's error page:
 * never the provider's own text, never a token. */
#ifndef PROV_SIGNIN_H
#define PROV_SIGNIN_H

#include "prov_common.h"
#include "prov_store.h"
#include "prov_idp.h"
#include "prov_idp_meta.h"       /* prov_idp_endpoints_t */

#define PROV_SIGNIN_TTL         600          /* a pre-login record lives 10 minutes */
#define PROV_SIGNIN_RETURN_MAX  1024
#define PROV_SIGNIN_PER_CLIENT  16           /* live records one client address keeps */
#define PROV_SIGNIN_DEFAULT_RETURN "/cabinet/"

/* The reasons a sign-in fails, for the page (the glue picks the words'
 * surroundings and the HTTP status). */
#define PROV_SIGNIN_R_EXPIRED \
    "This sign-in has expired or was already used. Please sign in again."
#define PROV_SIGNIN_R_BROWSER \
    "This sign-in was started in another browser. Please sign in again."
#define PROV_SIGNIN_R_UNREACHABLE \
    "The identity provider could not be reached. Please try again later."
#define PROV_SIGNIN_R_REFUSED \
    "The identity provider did not confirm the sign-in. Please sign in again."
#define PROV_SIGNIN_R_UNVERIFIED \
    "The identity provider's answer could not be verified. Please sign in again."
#define PROV_SIGNIN_R_INTERNAL \
    "The sign-in could not be completed because of a server error. Please try again."

/* What the glue needs to send the browser on its way. */
typedef struct prov_signin_start_t {
    const char *url;             /* the provider's authorization URL (a 302 Location) */
    const char *binding;         /* the value for the pre-login cookie (secret) */
    apr_int64_t expires;         /* when the record (and so the cookie) expires */
} prov_signin_start_t;

/* A pre-login record, opened: what the callback continues with. */
typedef struct prov_prelogin_t {
    const char *provider;
    const char *verifier;        /* the PKCE code verifier (secret) */
    const char *nonce;           /* the id_token's expected nonce */
    const char *return_path;     /* where the sign-in returns (checked at begin) */
    apr_int64_t link_session;    /* the session a link started from; 0: a sign-in */
} prov_prelogin_t;

/* Who the provider says signed in. The subject is stored, never shown
 * nor logged. */
typedef struct prov_claims_t {
    const char *subject;         /* OIDC sub, or the plain provider's subject_field */
    const char *email;           /* NULL when the provider gave none */
    int email_verified;          /* 1, 0 (the provider says not), -1 (not said) */
    const char *name;            /* name, preferred_username or login; may be NULL */
} prov_claims_t;

/* return_path when it is a path on this site (starts with one '/', no
 * "//" or '\' at its start, printable ASCII, at most PROV_SIGNIN_RETURN_MAX
 * bytes), else NULL. No open redirect: nothing else is ever stored. */
const char *prov_signin_return_ok(const char *return_path);

/* A sign-in's first step, the network half of begin: the provider's
 * endpoints (OIDC: its discovery document, cached; prov_idp_meta.h), within
 * idp->timeout seconds. Call it before taking a database connection: a
 * provider that hangs then holds no connection. Failures (reason
 * PROV_SIGNIN_R_UNREACHABLE): APR_TIMEUP, APR_ECONNREFUSED, APR_EGENERAL
 * (an unusable answer), APR_EBUSY (another request's fetch is in flight and
 * no copy is at hand: this one fails at once). */
apr_status_t prov_signin_endpoints(prov_idp_endpoints_t **ep, const char **reason,
                                   prov_idp_t *idp, apr_int64_t now, apr_pool_t *p);

/* Starts a sign-in (link_session 0) or a link from the session whose id is
 * link_session, with ep from prov_signin_endpoints (no network call), for
 * the client address client (prov_ratelimit_key's form; NULL: not
 * counted). return_path NULL means PROV_SIGNIN_DEFAULT_RETURN; one that
 * prov_signin_return_ok refuses is APR_EINVAL. Expired pre-login records
 * are purged on the way, and the client's oldest beyond
 * PROV_SIGNIN_PER_CLIENT - 1 (its callback then finds its state expired).
 * Failures: APR_EINVAL, the database's (PROV_SIGNIN_R_INTERNAL). */
apr_status_t prov_signin_begin(prov_signin_start_t **start, const char **reason,
                               prov_store_t *s, prov_idp_t *idp,
                               const prov_idp_endpoints_t *ep, const char *public_url,
                               const char *return_path, apr_int64_t link_session,
                               const char *client, apr_int64_t now, apr_pool_t *p);

/* Takes the pre-login record of state at the callback of provider: it is
 * deleted whatever comes next, so a state serves once. APR_NOTFOUND (reason
 * PROV_SIGNIN_R_EXPIRED) when unknown, used or expired; APR_EACCES (reason
 * PROV_SIGNIN_R_BROWSER) when it belongs to another provider or binding is
 * not the cookie it was started with; the database's failure
 * (PROV_SIGNIN_R_INTERNAL). */
apr_status_t prov_signin_take(prov_prelogin_t **pl, const char **reason, prov_store_t *s,
                              const char *provider, const char *state, const char *binding,
                              apr_int64_t now, apr_pool_t *p);

/* Exchanges code at idp's token endpoint for the record pl (taken for
 * idp) and verifies who signed in: for OpenID Connect the id_token in full
 * (prov_jwt.h; nonce pl->nonce), for plain OAuth 2.0 the userinfo answer.
 * Every call to the provider (discovery, token, JWKS, userinfo) ends
 * within idp->timeout seconds of the start, all together: past it the
 * callback fails with APR_TIMEUP. The email counts as verified
 * (email_verified 1) when the provider says so, or says nothing and
 * idp->emails_verified is set.
 * Failures: APR_EINVAL (no usable code; reason PROV_SIGNIN_R_REFUSED), the
 * transport's (APR_TIMEUP, APR_ECONNREFUSED, APR_EBUSY:
 * PROV_SIGNIN_R_UNREACHABLE), APR_EACCES (the provider said no:
 * PROV_SIGNIN_R_REFUSED), others (PROV_SIGNIN_R_UNVERIFIED). */
apr_status_t prov_signin_exchange(prov_claims_t **claims, const char **reason, prov_idp_t *idp,
                                  const prov_prelogin_t *pl, const char *public_url,
                                  const char *code, apr_int64_t now, apr_pool_t *p);

#endif
