/* prov_oauth_admin.h: the operator's view of the authorization server
 * (providerctl oauth): the registered clients with how many live grants
 * each holds and when one was last used, and ending every grant of a
 * client at once (all its users' tokens stop working on every node). The
 * purge of what is over is core/store/prov_purge.h's. */
#ifndef PROV_OAUTH_ADMIN_H
#define PROV_OAUTH_ADMIN_H

#include "prov_common.h"
#include "prov_store.h"

/* A registered client as the operator sees it. */
typedef struct prov_oauth_client_row_t {
    const char *client_id;
    const char *name;            /* the name it registered with; may be NULL */
    apr_int64_t created_at;
    int live_grants;             /* not revoked, with a live refresh token */
    apr_int64_t last_used;       /* the newest token's time; 0: never */
} prov_oauth_client_row_t;

/* Every registered client, oldest first (prov_oauth_client_row_t *). */
apr_status_t prov_oauth_clients(apr_array_header_t **out, prov_store_t *s, apr_int64_t now,
                                apr_pool_t *p);
/* Revokes every grant of client_id at now; *revoked: how many were live.
 * APR_NOTFOUND when no such client is registered. */
apr_status_t prov_oauth_client_revoke(int *revoked, prov_store_t *s, const char *client_id,
                                      apr_int64_t now, apr_pool_t *p);

#endif
