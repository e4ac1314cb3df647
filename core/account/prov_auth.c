/* prov_auth.c: the inference hot path's one lookup (prov_account.h): from a
 * presented key to what the checks need, a single prepared query by the
 * key's hash. The secret never reaches a log line. */
#include "prov_account.h"
#include "prov_secret.h"

apr_status_t prov_auth_lookup(prov_auth_t **a, prov_store_t *s, const char *secret,
                              apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    const char *hash;
    prov_auth_t *r;
    apr_status_t rv;

    /* A malformed value never reaches the database (and costs no hash). */
    if (!prov_secret_wellformed(secret))
        return APR_NOTFOUND;
    hash = prov_secret_hash(secret, p);
    if (!hash)
        return APR_EGENERAL;
    /* k.id, k.user_id, k.display, u.blocked, k.weekly_budget, u.balance,
     * then the key's controls: one query whether or not any is set */
    rv = prov_store_select_one(&row, s, "auth_lookup", PROV_ARGS(hash), p);
    if (rv != APR_SUCCESS)
        return rv;
    r = apr_pcalloc(p, sizeof(*r));
    r->key_hash = hash;
    r->key_id = prov_store_get_i64(s, row, 0, 0);
    r->user_id = prov_store_get_i64(s, row, 1, 0);
    r->key_display = apr_pstrdup(p, prov_store_get(s, row, 2));
    r->user_blocked = prov_store_get_i64(s, row, 3, 0) != 0;
    r->has_budget = prov_store_get(s, row, 4) != NULL;
    r->weekly_budget = r->has_budget ? prov_store_get_i64(s, row, 4, 0) : 0;
    r->balance = prov_store_get_i64(s, row, 5, 0);
    prov_key_read_controls(&r->controls, s, row, 6, p);
    if (!r->key_display)
        r->key_display = "";
    *a = r;
    return APR_SUCCESS;
}
