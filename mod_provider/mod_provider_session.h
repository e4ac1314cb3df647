/* mod_provider_session.h: the API of mod_provider_session.c: the cabinet's
 * cookies, the session check every cabinet request makes and the same-site
 * check of state-changing requests. core/identity does the work
 * (docs/internals/identity.md); this file speaks HTTP for it. */
#ifndef MOD_PROVIDER_SESSION_H
#define MOD_PROVIDER_SESSION_H

#include "mod_provider.h"
#include "prov_store.h"
#include "prov_session.h"

/* The three cookies: the active session, the refresh token and the
 * pre-login binding of a sign-in under way. */
typedef enum {
    PROVIDER_COOKIE_ACTIVE = 0,
    PROVIDER_COOKIE_REFRESH,
    PROVIDER_COOKIE_BINDING
} provider_cookie_e;

/* The cookie's name under r's server's ProviderCookieSecure (__Host- when On). */
const char *provider_cookie_name(request_rec *r, provider_cookie_e which);
/* The value r carries for the cookie, or NULL. */
const char *provider_cookie_get(request_rec *r, provider_cookie_e which);
/* Sets the cookie for max_age seconds (0: removes it): HttpOnly,
 * SameSite=Lax, host-only, Path=/, Secure unless ProviderCookieSecure Off. */
void provider_cookie_set(request_rec *r, provider_cookie_e which, const char *value,
                         apr_int64_t max_age);

/* The pair of a new session (a sign-in). */
void provider_session_cookies(request_rec *r, const prov_session_t *sess, const char *active,
                              const char *refresh, apr_int64_t now);
/* The cabinet session of r: its active cookie (extended, the cookie set
 * again), else a new active token from its refresh cookie (without the
 * identity provider). APR_NOTFOUND when there is none (stale cookies are
 * removed); another status when the database failed. */
apr_status_t provider_session_check(prov_session_t **sess, request_rec *r, prov_store_t *store);
/* Non-zero when r's Origin (or, without one, its Referer) is this site
 * (ProviderPublicURL): what a state-changing cabinet request needs. */
int provider_same_site(request_rec *r);

#endif
