/* prov_user_access.h: a user's ways into the cabinet as the administrator
 * sees and ends them: the linked sign-in identities (provider and when,
 * never the subject), the live cabinet sessions (when made, until when
 * active, when the refresh term ends; never a token or its hash), and the
 * revocation of every live session at once (`providerctl user sessions
 * revoke`, and blocking a user: prov_user_set_blocked). Sign-in itself,
 * which makes identities and sessions, lives in core/identity/. */
#ifndef PROV_USER_ACCESS_H
#define PROV_USER_ACCESS_H

#include "prov_common.h"
#include "prov_store.h"

typedef struct prov_user_identity_t {
    const char *provider;        /* the identity provider's configured name */
    apr_int64_t created_at;
} prov_user_identity_t;

typedef struct prov_user_session_t {
    apr_int64_t id;
    apr_int64_t created_at;
    apr_int64_t active_expires;  /* the active credential's end (may be past: idle) */
    apr_int64_t refresh_expires; /* the refresh credential's absolute end */
} prov_user_session_t;

/* The user's identities (prov_user_identity_t*), oldest first; an empty
 * array when there are none (or no such user). */
apr_status_t prov_user_identities(apr_array_header_t **ids, prov_store_t *s, apr_int64_t user_id,
                                  apr_pool_t *p);
/* The user's live sessions (prov_user_session_t*): not revoked, refresh
 * term not over at prov_now(); oldest first. */
apr_status_t prov_user_sessions(apr_array_header_t **sessions, prov_store_t *s,
                                apr_int64_t user_id, apr_pool_t *p);
/* Revokes every live session of the user now (both credentials of each);
 * *revoked (may be NULL) counts them. Runs inside the caller's transaction
 * when there is one. */
apr_status_t prov_user_sessions_revoke(int *revoked, prov_store_t *s, apr_int64_t user_id,
                                       apr_pool_t *p);

#endif
