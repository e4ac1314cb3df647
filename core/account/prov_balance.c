/* prov_balance.c: a user's prepaid balance (prov_account.h): a movement
 * and its event row, in one write transaction. */
#include <string.h>
#include "prov_account.h"
#include "prov_log.h"
#include "prov_money.h"

apr_status_t prov_balance_add(prov_micro_t *new_balance, prov_store_t *s, apr_int64_t user_id,
                              prov_micro_t amount, const char *reason, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    apr_dbd_row_t *row = NULL;
    const char *why = NULL;
    prov_micro_t after;
    int n = 0;
    apr_status_t rv;

    if (amount == 0 || amount > PROV_AMOUNT_MAX || amount < -PROV_AMOUNT_MAX)
        return APR_EINVAL;
    if (reason && *reason && strlen(reason) > 1000)
        return APR_EINVAL;
    why = (reason && *reason) ? reason : NULL;

    rv = prov_store_begin(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_user_get(&u, s, user_id, p);
    if (rv != APR_SUCCESS)
        goto fail;
    /* Both bounded by PROV_AMOUNT_MAX-sized steps, but a balance built from
     * many of them could still approach the int64 limit. */
    if (prov_i64_add(&after, u->balance, amount) != APR_SUCCESS) {
        rv = APR_ERANGE;
        goto fail;
    }
    rv = prov_store_select_one(&row, s, "balance_add",
                    PROV_ARGS(prov_i64(amount, p), prov_i64(user_id, p)), p);
    if (rv == APR_NOTFOUND)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS)
        goto fail;
    after = prov_store_get_i64(s, row, 0, 0);
    rv = prov_store_exec(s, &n, "balance_event_add",
                         PROV_ARGS(prov_i64(user_id, p), prov_i64(amount, p), why,
                                   prov_i64(prov_now(), p)), p);
    if (rv == APR_SUCCESS && n != 1)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS)
        goto fail;
    rv = prov_store_commit(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV02103: balance of user %" APR_INT64_T_FMT
             " changed by %s micro-credits", user_id, prov_i64(amount, p));
    if (new_balance)
        *new_balance = after;
    return APR_SUCCESS;

fail:
    prov_store_rollback(s, p);
    return rv;
}
