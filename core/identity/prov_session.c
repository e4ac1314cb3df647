/* prov_session.c: cabinet sessions (prov_session.h) on the labelled
 * statements of core/store. Each check and its effect is one statement
 * (the lookup that extends, the renewal that replaces the active token),
 * so two nodes never act on a session that one of them has just revoked,
 * and no read-then-write window exists. Tokens are checked for shape before
 * they are hashed and looked up; none is ever logged. */
#include "prov_session.h"
#include "prov_account.h"
#include "prov_secret.h"
#include "prov_signin_int.h"
#include "prov_log.h"

#define TOKEN_BYTES 32

/* SESSION_COLS: id, user_id, active_expires, refresh_expires, created_at */
static prov_session_t *from_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_session_t *x = apr_pcalloc(p, sizeof(*x));
    x->id = prov_store_get_i64(s, row, 0, 0);
    x->user_id = prov_store_get_i64(s, row, 1, 0);
    x->active_expires = prov_store_get_i64(s, row, 2, 0);
    x->refresh_expires = prov_store_get_i64(s, row, 3, 0);
    x->created_at = prov_store_get_i64(s, row, 4, 0);
    return x;
}

apr_status_t prov_session_create(prov_session_t **sess, const char **active,
                                 const char **refresh, prov_store_t *s, apr_int64_t user_id,
                                 apr_int64_t now, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    apr_dbd_row_t *row = NULL;
    const char *a, *r;
    prov_session_t *x;
    int n = 0;
    apr_status_t rv = prov_user_find(&u, s, prov_i64(user_id, p), p);

    if (rv != APR_SUCCESS)
        return rv;
    if (u->blocked)
        return APR_EACCES;
    if ((rv = prov_secret_token(&a, TOKEN_BYTES, p)) != APR_SUCCESS
        || (rv = prov_secret_token(&r, TOKEN_BYTES, p)) != APR_SUCCESS)
        return rv;
    if ((rv = prov_store_exec(s, &n, "session_purge", PROV_ARGS(prov_i64(now, p)), p))
        != APR_SUCCESS)
        return rv;
    x = apr_pcalloc(p, sizeof(*x));
    x->user_id = user_id;
    x->active_expires = now + PROV_SESSION_ACTIVE_TTL;
    x->refresh_expires = now + PROV_SESSION_REFRESH_TTL;
    x->created_at = now;
    rv = prov_store_select_one(&row, s, "session_add",
                               PROV_ARGS(prov_i64(user_id, p), prov_secret_hash(a, p),
                                         prov_secret_hash(r, p), prov_i64(x->active_expires, p),
                                         prov_i64(x->refresh_expires, p), prov_i64(now, p)), p);
    if (rv == APR_NOTFOUND)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS)
        return rv;
    x->id = prov_store_get_i64(s, row, 0, 0);
    prov_log(PROV_LOG_INFO, 0, "PROV00530: session %" APR_INT64_T_FMT " of user %"
             APR_INT64_T_FMT " created", x->id, user_id);
    *sess = x;
    *active = a;
    *refresh = r;
    return APR_SUCCESS;
}

apr_status_t prov_session_lookup(prov_session_t **sess, prov_store_t *s, const char *active,
                                 apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    const char *until = prov_i64(now + PROV_SESSION_ACTIVE_TTL, p), *at = prov_i64(now, p);
    apr_status_t rv;

    if (!prov_signin_token_ok(active))
        return APR_NOTFOUND;
    rv = prov_store_select_one(&row, s, "session_touch",
                               PROV_ARGS(until, until, prov_secret_hash(active, p), at, at), p);
    if (rv == APR_SUCCESS)
        *sess = from_row(s, row, p);
    return rv;
}

apr_status_t prov_session_renew(prov_session_t **sess, const char **active, prov_store_t *s,
                                const char *refresh, apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    const char *until = prov_i64(now + PROV_SESSION_ACTIVE_TTL, p), *at = prov_i64(now, p);
    const char *a;
    apr_status_t rv;

    if (!prov_signin_token_ok(refresh))
        return APR_NOTFOUND;
    if ((rv = prov_secret_token(&a, TOKEN_BYTES, p)) != APR_SUCCESS)
        return rv;
    rv = prov_store_select_one(&row, s, "session_renew",
                               PROV_ARGS(prov_secret_hash(a, p), until, until,
                                         prov_secret_hash(refresh, p), at), p);
    if (rv != APR_SUCCESS)
        return rv;
    *sess = from_row(s, row, p);
    *active = a;
    prov_log(PROV_LOG_DEBUG, 0, "PROV00531: session %" APR_INT64_T_FMT " renewed from its "
             "refresh token", (*sess)->id);
    return APR_SUCCESS;
}

/* Runs a revoking statement; APR_NOTFOUND when it touched no session. */
static apr_status_t revoke_rows(prov_store_t *s, const char *label, int nargs,
                                const char *const *args, apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, label, nargs, args, p);
    if (rv != APR_SUCCESS)
        return rv;
    return n ? APR_SUCCESS : APR_NOTFOUND;
}

apr_status_t prov_session_revoke(prov_store_t *s, apr_int64_t session_id, apr_int64_t now,
                                 apr_pool_t *p)
{
    apr_status_t rv = revoke_rows(s, "session_revoke",
                             PROV_ARGS(prov_i64(now, p), prov_i64(session_id, p)), p);
    if (rv == APR_SUCCESS)
        prov_log(PROV_LOG_INFO, 0, "PROV00532: session %" APR_INT64_T_FMT " revoked",
                 session_id);
    return rv;
}

apr_status_t prov_session_revoke_token(prov_store_t *s, const char *token, apr_int64_t now,
                                       apr_pool_t *p)
{
    const char *h;
    apr_status_t rv;
    if (!prov_signin_token_ok(token))
        return APR_NOTFOUND;
    h = prov_secret_hash(token, p);
    rv = revoke_rows(s, "session_revoke_token", PROV_ARGS(prov_i64(now, p), h, h), p);
    if (rv == APR_SUCCESS)
        prov_log(PROV_LOG_INFO, 0, "PROV00533: a session revoked (logout)");
    return rv;
}
