/* prov_oauth_admin.c: the registered clients listed for the operator, and
 * every grant of one revoked (prov_oauth_admin.h). */
#include "prov_oauth_admin.h"
#include "prov_log.h"

static void *client_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_oauth_client_row_t *c = apr_pcalloc(p, sizeof(*c));
    const char *name = prov_store_get(s, row, 1);
    c->client_id = apr_pstrdup(p, prov_store_get(s, row, 0));
    c->name = name ? apr_pstrdup(p, name) : NULL;
    c->created_at = prov_store_get_i64(s, row, 2, 0);
    c->live_grants = (int)prov_store_get_i64(s, row, 3, 0);
    c->last_used = prov_store_get_i64(s, row, 4, 0);
    return c;
}

apr_status_t prov_oauth_clients(apr_array_header_t **out, prov_store_t *s, apr_int64_t now,
                                apr_pool_t *p)
{
    return prov_store_list_args(out, s, "oauth_clients_list", PROV_ARGS(prov_i64(now, p)),
                                client_row, p);
}

apr_status_t prov_oauth_client_revoke(int *revoked, prov_store_t *s, const char *client_id,
                                      apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    int n = 0;
    apr_status_t rv = prov_store_select_one(&row, s, "oauth_client_get", PROV_ARGS(client_id),
                                            p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_exec(s, &n, "oauth_client_revoke", PROV_ARGS(prov_i64(now, p), client_id),
                         p);
    if (rv != APR_SUCCESS)
        return rv;
    *revoked = n;
    prov_log(PROV_LOG_INFO, 0, "PROV00786: OAuth client %s: %d grant(s) revoked by the "
             "operator", client_id, n);
    return APR_SUCCESS;
}
