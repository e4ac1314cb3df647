/* prov_session.h: cabinet sessions, as the specification's lifecycle table
 * has them. A sign-in creates a pair of tokens, 256 random bits each: the
 * active one (5 minutes, extended by 5 minutes by every successful lookup)
 * and the refresh one (30 days from the sign-in, never extended). When the
 * active one has expired, the refresh one gets a new active token without
 * the identity provider. Logout revokes one device's pair, blocking a user
 * revokes all of theirs (core/account), and a blocked user's sessions are
 * refused even before that. Only the tokens' SHA-256 is stored. Times are the caller's
 * "now", so tests use a clock. */
#ifndef PROV_SESSION_H
#define PROV_SESSION_H

#include "prov_common.h"
#include "prov_store.h"

#define PROV_SESSION_ACTIVE_TTL   300                 /* 5 minutes */
#define PROV_SESSION_REFRESH_TTL  (30 * 24 * 3600)    /* 30 days, absolute */

typedef struct prov_session_t {
    apr_int64_t id;
    apr_int64_t user_id;
    apr_int64_t active_expires;  /* never later than refresh_expires */
    apr_int64_t refresh_expires;
    apr_int64_t created_at;      /* the sign-in */
} prov_session_t;

/* A new session of user_id (a sign-in): *active and *refresh are the only
 * copies of the tokens ever made (for the two cookies). APR_NOTFOUND for
 * no such user, APR_EACCES for a blocked one. Sessions past their refresh
 * term are purged on the way. */
apr_status_t prov_session_create(prov_session_t **sess, const char **active,
                                 const char **refresh, prov_store_t *s, apr_int64_t user_id,
                                 apr_int64_t now, apr_pool_t *p);

/* The session of an active token, extended by PROV_SESSION_ACTIVE_TTL (up
 * to its refresh term). APR_NOTFOUND when the token is malformed, unknown,
 * expired or revoked, or its user is blocked. */
apr_status_t prov_session_lookup(prov_session_t **sess, prov_store_t *s, const char *active,
                                 apr_int64_t now, apr_pool_t *p);

/* A new active token for the session of a refresh token that is within its
 * term, not revoked and whose user is not blocked; the refresh term stays
 * as it was and the old active token stops working. APR_NOTFOUND else. */
apr_status_t prov_session_renew(prov_session_t **sess, const char **active, prov_store_t *s,
                                const char *refresh, apr_int64_t now, apr_pool_t *p);

/* Logout: revokes the session with this id, or the one this token (active
 * or refresh) belongs to. APR_NOTFOUND when there is no live such session. */
apr_status_t prov_session_revoke(prov_store_t *s, apr_int64_t session_id, apr_int64_t now,
                                 apr_pool_t *p);
apr_status_t prov_session_revoke_token(prov_store_t *s, const char *token, apr_int64_t now,
                                       apr_pool_t *p);

/* Listing a user's live sessions and revoking all of them (a block,
 * `providerctl user sessions revoke`) are core/account's
 * (prov_user_access.h: prov_user_sessions, prov_user_sessions_revoke;
 * prov_user_set_blocked revokes in the block's transaction). */

#endif
