/* mod_provider_session.c: the cabinet's cookies and session check. Two
 * cookies carry a session (the active token: 5 minutes, extended by each
 * successful cabinet request; the refresh token: 30 days, never extended)
 * and a third binds a sign-in under way to the browser that started it.
 * All are HttpOnly, SameSite=Lax, host-only, Path=/, and Secure with
 * __Host- names unless ProviderCookieSecure is Off (loopback development
 * only). The tokens are core/identity's (prov_session.h); this file only
 * moves them between cookies and the database, and checks that a
 * state-changing request comes from this site (Origin, else Referer). */
#include <string.h>
#include "mod_provider_config.h"
#include "mod_provider_session.h"

static const char *const names[] = { "provider-session", "provider-refresh", "provider-signin" };

static int secure(request_rec *r)
{
    return provider_conf(r)->cookie_secure != 0;
}

const char *provider_cookie_name(request_rec *r, provider_cookie_e which)
{
    return secure(r) ? apr_pstrcat(r->pool, "__Host-", names[which], NULL) : names[which];
}

/* The value of name in one Cookie header, or NULL. */
static const char *cookie_in(const char *header, const char *name, apr_pool_t *p)
{
    apr_size_t n = strlen(name);
    const char *c = header;
    while (c && *c) {
        const char *end;
        while (*c == ' ' || *c == '\t' || *c == ';')
            c++;
        end = strchr(c, ';');
        if (!strncmp(c, name, n) && c[n] == '=') {
            c += n + 1;
            return end ? apr_pstrndup(p, c, (apr_size_t)(end - c)) : apr_pstrdup(p, c);
        }
        c = end;
    }
    return NULL;
}

typedef struct {
    const char *name;
    const char *value;
    apr_pool_t *p;
} cookie_find_t;

static int cookie_header(void *baton, const char *key, const char *value)
{
    cookie_find_t *f = baton;
    (void)key;
    f->value = cookie_in(value, f->name, f->p);
    return f->value == NULL;    /* stop at the first found */
}

const char *provider_cookie_get(request_rec *r, provider_cookie_e which)
{
    cookie_find_t f = { provider_cookie_name(r, which), NULL, r->pool };
    apr_table_do(cookie_header, &f, r->headers_in, "Cookie", NULL);
    return f.value && *f.value ? f.value : NULL;
}

void provider_cookie_set(request_rec *r, provider_cookie_e which, const char *value,
                         apr_int64_t max_age)
{
    if (max_age < 0)
        max_age = 0;
    apr_table_addn(r->err_headers_out, "Set-Cookie",
                   apr_psprintf(r->pool, "%s=%s; Max-Age=%" APR_INT64_T_FMT
                                "; Path=/; HttpOnly; SameSite=Lax%s",
                                provider_cookie_name(r, which), max_age ? value : "",
                                max_age, secure(r) ? "; Secure" : ""));
    /* An answer that sets a cookie is nobody else's. */
    apr_table_setn(r->err_headers_out, "Cache-Control", "no-store");
}

void provider_session_cookies(request_rec *r, const prov_session_t *sess, const char *active,
                              const char *refresh, apr_int64_t now)
{
    provider_cookie_set(r, PROVIDER_COOKIE_ACTIVE, active, sess->active_expires - now);
    provider_cookie_set(r, PROVIDER_COOKIE_REFRESH, refresh, sess->refresh_expires - now);
}

apr_status_t provider_session_check(prov_session_t **sess, request_rec *r, prov_store_t *store)
{
    const char *active = provider_cookie_get(r, PROVIDER_COOKIE_ACTIVE);
    const char *refresh = provider_cookie_get(r, PROVIDER_COOKIE_REFRESH);
    apr_int64_t now = prov_now();
    apr_status_t rv;
    if (active) {
        rv = prov_session_lookup(sess, store, active, now, r->pool);
        if (rv == APR_SUCCESS) {
            provider_cookie_set(r, PROVIDER_COOKIE_ACTIVE, active, (*sess)->active_expires - now);
            return rv;
        }
        if (rv != APR_NOTFOUND)
            return rv;
    }
    if (refresh) {
        const char *fresh = NULL;
        rv = prov_session_renew(sess, &fresh, store, refresh, now, r->pool);
        if (rv == APR_SUCCESS) {
            provider_cookie_set(r, PROVIDER_COOKIE_ACTIVE, fresh, (*sess)->active_expires - now);
            return rv;
        }
        if (rv != APR_NOTFOUND)
            return rv;
    }
    if (active)
        provider_cookie_set(r, PROVIDER_COOKIE_ACTIVE, NULL, 0);
    if (refresh)
        provider_cookie_set(r, PROVIDER_COOKIE_REFRESH, NULL, 0);
    return APR_NOTFOUND;
}

/* Non-zero when url is the origin public (scheme://host[:port]), followed
 * by nothing (exact) or by a '/' (prefix). */
static int of_origin(const char *url, const char *public_url, int exact)
{
    apr_size_t n = strlen(public_url);
    if (strncasecmp(url, public_url, n))
        return 0;
    return exact ? url[n] == '\0' : url[n] == '/';
}

int provider_same_site(request_rec *r)
{
    const char *public_url = provider_conf(r)->public_url;
    const char *origin = apr_table_get(r->headers_in, "Origin");
    const char *referer;
    if (!public_url)
        return 0;
    if (origin)
        return of_origin(origin, public_url, 1);
    referer = apr_table_get(r->headers_in, "Referer");
    return referer && of_origin(referer, public_url, 0);
}
