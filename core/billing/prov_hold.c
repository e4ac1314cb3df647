/* prov_hold.c: the holds in flight as an operator sees them
 * (`providerctl hold list`): requests' reservations (reserved ledger rows)
 * and processes' leases, with their user, key, model, amount and age; and
 * giving one back by hand (`providerctl hold release`), as a billing batch
 * (PROV_OP_DROP) that restores the balance or the plan's windows exactly
 * as the expiry of a stale hold does. */
#include <string.h>
#include "prov_billing_int.h"

apr_status_t prov_hold_list(apr_array_header_t **holds, prov_store_t *s, apr_int64_t user_id,
                            apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    const char *uid = prov_i64(user_id, p);
    apr_array_header_t *out = apr_array_make(p, 8, sizeof(prov_hold_t));
    apr_status_t rv = prov_store_select(s, &res, "bill_hold_list", PROV_ARGS(uid, uid, uid, uid),
                                        p);
    if (rv != APR_SUCCESS)
        return rv;
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        prov_hold_t *h = apr_array_push(out);
        const char *kind = prov_store_get(s, row, 1), *source = prov_store_get(s, row, 7);
        memset(h, 0, sizeof(*h));
        h->id = prov_store_get(s, row, 0);
        h->lease = kind && !strcmp(kind, "lease");
        h->user_id = prov_store_get_i64(s, row, 2, 0);
        h->email = prov_store_get(s, row, 3);
        h->key_id = prov_store_get_i64(s, row, 4, 0);
        h->model = prov_store_get(s, row, 5);
        h->amount = prov_store_get_i64(s, row, 6, 0);
        h->from_plan = source && !strcmp(source, "plan");
        h->since = prov_store_get_i64(s, row, 8, 0);
    }
    if (rv != APR_EOF)
        return rv;
    *holds = out;
    return APR_SUCCESS;
}

apr_status_t prov_hold_release(int *found, const prov_store_source_t *src, const char *id,
                               prov_status_e status, apr_int64_t now, apr_pool_t *p)
{
    prov_op_t op;
    apr_status_t rv;
    memset(&op, 0, sizeof(op));
    op.kind = PROV_OP_DROP;
    op.p = p;
    op.request_id = id;
    op.status = status;
    op.at = now;
    if ((rv = prov_queue_submit(&op, src, p)) != APR_SUCCESS)
        return rv;
    *found = op.swept;
    return APR_SUCCESS;
}
