/* prov_user_access.c: a user's linked identities and live cabinet sessions,
 * read and revoked for the administrator, on the labelled statements
 * user_identities, user_sessions and user_sessions_revoke of prov_sql.c.
 * Only the provider's name and times leave this file: the subject and the
 * token hashes are never selected. A revocation is logged with the user id
 * and the count, nothing else. */
#include "prov_user_access.h"
#include "prov_log.h"

static void *identity_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_user_identity_t *id = apr_pcalloc(p, sizeof(*id));
    const char *provider = prov_store_get(s, row, 0);
    id->provider = apr_pstrdup(p, provider ? provider : "");
    id->created_at = prov_store_get_i64(s, row, 1, 0);
    return id;
}

/* id, created_at, active_expires, refresh_expires */
static void *session_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_user_session_t *ses = apr_pcalloc(p, sizeof(*ses));
    ses->id = prov_store_get_i64(s, row, 0, 0);
    ses->created_at = prov_store_get_i64(s, row, 1, 0);
    ses->active_expires = prov_store_get_i64(s, row, 2, 0);
    ses->refresh_expires = prov_store_get_i64(s, row, 3, 0);
    return ses;
}

apr_status_t prov_user_identities(apr_array_header_t **ids, prov_store_t *s, apr_int64_t user_id,
                                  apr_pool_t *p)
{
    return prov_store_list_args(ids, s, "user_identities", PROV_ARGS(prov_i64(user_id, p)),
                                identity_row, p);
}

apr_status_t prov_user_sessions(apr_array_header_t **sessions, prov_store_t *s,
                                apr_int64_t user_id, apr_pool_t *p)
{
    return prov_store_list_args(sessions, s, "user_sessions",
                                PROV_ARGS(prov_i64(user_id, p), prov_i64(prov_now(), p)),
                                session_row, p);
}

apr_status_t prov_user_sessions_revoke(int *revoked, prov_store_t *s, apr_int64_t user_id,
                                       apr_pool_t *p)
{
    const char *now = prov_i64(prov_now(), p);
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "user_sessions_revoke",
                                      PROV_ARGS(now, prov_i64(user_id, p), now), p);

    if (rv != APR_SUCCESS)
        return rv;
    if (n > 0)
        prov_log(PROV_LOG_INFO, 0, "PROV00550: user %" APR_INT64_T_FMT ": %d cabinet session(s) "
                 "revoked", user_id, n);
    if (revoked)
        *revoked = n;
    return APR_SUCCESS;
}
