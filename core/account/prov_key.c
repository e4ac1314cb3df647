/* prov_key.c: API keys (prov_account.h): created, reissued, deleted, given
 * a weekly budget, read and listed, on top of the labelled statements of
 * prov_sql.c. A key's secret is produced once (prov_secret) and stored as
 * its digest; it never reaches a log line: at most the display prefix does. */
#include "prov_account.h"
#include "prov_secret.h"
#include "prov_log.h"
#include "prov_money.h"

void prov_key_read_controls(prov_key_controls_t *c, prov_store_t *s, apr_dbd_row_t *row,
                            int col, apr_pool_t *p)
{
    const char *models = prov_store_get(s, row, col + 1);
    const char *addresses = prov_store_get(s, row, col + 2);
    c->expires_at = prov_store_get_i64(s, row, col, 0);
    c->models = models ? apr_pstrdup(p, models) : NULL;
    c->addresses = addresses ? apr_pstrdup(p, addresses) : NULL;
    c->rpm = prov_store_get_i64(s, row, col + 3, 0);
    c->max_in_flight = prov_store_get_i64(s, row, col + 4, 0);
}

/* KEY_COLS: id, user_id, name, display, weekly_budget, created_at, reissued_at,
 * deleted_at, then KEY_CONTROLS (prov_key_read_controls), then last4 */
static prov_key_t *key_from_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_key_t *k = apr_pcalloc(p, sizeof(*k));
    k->id = prov_store_get_i64(s, row, 0, 0);
    k->user_id = prov_store_get_i64(s, row, 1, 0);
    k->name = apr_pstrdup(p, prov_store_get(s, row, 2));
    k->display = apr_pstrdup(p, prov_store_get(s, row, 3));
    k->has_budget = prov_store_get(s, row, 4) != NULL;
    k->weekly_budget = k->has_budget ? prov_store_get_i64(s, row, 4, 0) : 0;
    k->created_at = prov_store_get_i64(s, row, 5, 0);
    k->reissued_at = prov_store_get_i64(s, row, 6, 0);
    k->deleted_at = prov_store_get_i64(s, row, 7, 0);
    prov_key_read_controls(&k->controls, s, row, 8, p);
    k->last4 = prov_store_get(s, row, 13) ? apr_pstrdup(p, prov_store_get(s, row, 13)) : NULL;
    if (!k->display)
        k->display = "";
    return k;
}

/* APR_EEXIST when another live key of the user has the name. */
static apr_status_t name_free(prov_store_t *s, apr_int64_t user_id, const char *name,
                              apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "key_name_taken",
                                            PROV_ARGS(prov_i64(user_id, p), name), p);
    if (rv != APR_SUCCESS)
        return rv;
    return prov_store_get_i64(s, row, 0, 0) > 0 ? APR_EEXIST : APR_SUCCESS;
}

apr_status_t prov_key_create(prov_key_t **k, const char **secret, prov_store_t *s,
                             apr_int64_t user_id, const char *name, int has_budget,
                             prov_micro_t weekly_budget, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    apr_dbd_row_t *row = NULL;
    const char *sec, *hash, *display, *nm = NULL;
    apr_int64_t now = prov_now();
    apr_status_t rv;

    if (prov_user_name_check(&nm, name) != APR_SUCCESS)
        return APR_EINVAL;
    if (has_budget && (weekly_budget < 0 || weekly_budget > PROV_AMOUNT_MAX))
        return APR_EINVAL;
    rv = prov_user_get(&u, s, user_id, p);
    if (rv == APR_SUCCESS && nm)
        rv = name_free(s, user_id, nm, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_secret_generate(&sec, &hash, &display, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_select_one(&row, s, "key_add",
                    PROV_ARGS(prov_i64(user_id, p), nm, hash, display,
                              has_budget ? prov_i64(weekly_budget, p) : NULL,
                              prov_i64(now, p), prov_secret_last4(sec, p)), p);
    if (rv == APR_NOTFOUND)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS)
        return rv;
    {
        prov_key_t *nk = apr_pcalloc(p, sizeof(*nk));
        nk->id = prov_store_get_i64(s, row, 0, 0);
        nk->user_id = user_id;
        nk->name = nm ? apr_pstrdup(p, nm) : NULL;
        nk->display = display;
        nk->last4 = prov_secret_last4(sec, p);
        nk->has_budget = has_budget != 0;
        nk->weekly_budget = has_budget ? weekly_budget : 0;
        nk->created_at = now;
        prov_log(PROV_LOG_INFO, 0, "PROV02104: key %" APR_INT64_T_FMT " (%s...) created for "
                 "user %" APR_INT64_T_FMT, nk->id, display, user_id);
        if (k)
            *k = nk;
    }
    *secret = sec;
    return APR_SUCCESS;
}

apr_status_t prov_key_reissue(const char **secret, prov_store_t *s, apr_int64_t key_id,
                              apr_pool_t *p)
{
    const char *sec, *hash, *display;
    int n = 0;
    apr_status_t rv = prov_secret_generate(&sec, &hash, &display, p);

    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_exec(s, &n, "key_reissue",
                         PROV_ARGS(hash, display, prov_i64(prov_now(), p),
                                   prov_secret_last4(sec, p), prov_i64(key_id, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    if (n == 0)
        return APR_NOTFOUND;
    prov_log(PROV_LOG_INFO, 0, "PROV02105: key %" APR_INT64_T_FMT " reissued (now %s...)",
             key_id, display);
    *secret = sec;
    return APR_SUCCESS;
}

apr_status_t prov_key_delete(prov_store_t *s, apr_int64_t key_id, apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "key_delete",
                                      PROV_ARGS(prov_i64(prov_now(), p), prov_i64(key_id, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    if (n == 0)
        return APR_NOTFOUND;
    prov_log(PROV_LOG_INFO, 0, "PROV02106: key %" APR_INT64_T_FMT " deleted", key_id);
    return APR_SUCCESS;
}

apr_status_t prov_key_set_budget(prov_store_t *s, apr_int64_t key_id, int has_budget,
                                 prov_micro_t weekly_budget, apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv;

    if (has_budget && (weekly_budget < 0 || weekly_budget > PROV_AMOUNT_MAX))
        return APR_EINVAL;
    rv = prov_store_exec(s, &n, "key_budget",
                         PROV_ARGS(has_budget ? prov_i64(weekly_budget, p) : NULL,
                                   prov_i64(key_id, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    return n == 0 ? APR_NOTFOUND : APR_SUCCESS;
}

apr_status_t prov_key_get(prov_key_t **k, prov_store_t *s, apr_int64_t key_id,
                          apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "key_get", PROV_ARGS(prov_i64(key_id, p)), p);
    if (rv == APR_SUCCESS)
        *k = key_from_row(s, row, p);
    return rv;
}

apr_status_t prov_key_list(apr_array_header_t **keys, prov_store_t *s, apr_int64_t user_id,
                           int include_deleted, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *arr;
    const char *uid = user_id > 0 ? prov_i64(user_id, p) : "0";
    apr_status_t rv = prov_store_select(s, &res, "key_list",
                                        PROV_ARGS(uid, uid, include_deleted ? "1" : "0"), p);
    if (rv != APR_SUCCESS)
        return rv;
    arr = apr_array_make(p, 8, sizeof(prov_key_t *));
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS)
        APR_ARRAY_PUSH(arr, prov_key_t *) = key_from_row(s, row, p);
    if (rv != APR_EOF)
        return rv;
    *keys = arr;
    return APR_SUCCESS;
}
