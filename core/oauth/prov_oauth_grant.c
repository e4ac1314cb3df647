/* prov_oauth_grant.c: a user's grants as the cabinet shows them: the MCP
 * clients the user has authorized and that still hold a live refresh token
 * (one line per client, however many grants), and the revocation of every
 * grant of one client (its tokens die with them, on every node). */
#include "prov_oauth.h"

static void *grant_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_oauth_user_client_t *c = apr_pcalloc(p, sizeof(*c));
    c->client_id = prov_store_get(s, row, 0);
    c->name = prov_store_get(s, row, 1);
    c->authorized_at = prov_store_get_i64(s, row, 2, 0);
    c->last_used_at = prov_store_get_i64(s, row, 3, 0);
    return c;
}

apr_status_t prov_oauth_user_clients(apr_array_header_t **clients, prov_store_t *s,
                                     apr_int64_t user_id, apr_int64_t now, apr_pool_t *p)
{
    return prov_store_list_args(clients, s, "oauth_user_clients",
                                PROV_ARGS(prov_i64(user_id, p), prov_i64(now, p)), grant_row, p);
}

apr_status_t prov_oauth_user_revoke(int *revoked, prov_store_t *s, apr_int64_t user_id,
                                    const char *client_id, apr_int64_t now, apr_pool_t *p)
{
    return prov_store_exec(s, revoked, "oauth_user_revoke",
                           PROV_ARGS(prov_i64(now, p), prov_i64(user_id, p), client_id), p);
}
