/* mod_provider_account.c: two of the cabinet API's reads: GET /v1/account
 * (balance, held, the plan's windows, what a credit is worth and where to
 * get more), GET /v1/usage?days=N&by=day|key|model and GET /v1/requests
 * (the recent requests one by one). */
#include "mod_provider_account.h"
#include "mod_provider_api.h"
#include "mod_provider_config.h"
#include "util_script.h"

APLOG_USE_MODULE(provider);

/* GET /v1/account */
int provider_account_handler(request_rec *r)
{
    provider_api_t api;
    json_object *o = NULL;
    apr_status_t rv;
    provider_step_t st = provider_api_begin(&api, r, M_GET, "GET, HEAD");
    if (st != PROVIDER_GO)
        return st;
    rv = prov_cabinet_account(&o, api.store, api.sess->user_id, prov_now(), r->pool);
    if (rv != APR_SUCCESS)
        return provider_api_failed(&api, rv, "reading the account");
    {
        const prov_credit_offer_t *credit = &provider_conf(r)->credit;
        json_object_object_add(o, "credit", prov_credit_json(credit));
        json_object_object_add(o, "top_up_url", credit->top_up_url
                               ? json_object_new_string(credit->top_up_url) : NULL);
    }
    return provider_api_send(&api, HTTP_OK, o);
}

/* GET /v1/usage?days=1..30&by=day|key|model */
int provider_usage_handler(request_rec *r)
{
    provider_api_t api;
    prov_error_t *err = NULL;
    prov_usage_by_e by;
    apr_table_t *q = NULL;
    json_object *o = NULL;
    apr_status_t rv;
    int days;
    provider_step_t st = provider_api_begin(&api, r, M_GET, "GET, HEAD");
    if (st != PROVIDER_GO)
        return st;
    ap_args_to_table(r, &q);
    if (prov_cabinet_usage_args(&days, &by, &err, q ? apr_table_get(q, "days") : NULL,
                                q ? apr_table_get(q, "by") : NULL, r->pool) != APR_SUCCESS)
        return provider_api_error(&api, err);
    rv = prov_cabinet_usage(&o, api.store, api.sess->user_id, days, by, prov_now(), r->pool);
    if (rv != APR_SUCCESS)
        return provider_api_failed(&api, rv, "reading the usage");
    return provider_api_send(&api, HTTP_OK, o);
}

/* GET /v1/requests?key=ID&status=NAME&limit=N&before=NEXT */
int provider_requests_handler(request_rec *r)
{
    provider_api_t api;
    prov_cabinet_requests_q_t q;
    prov_error_t *err = NULL;
    apr_table_t *t = NULL;
    json_object *o = NULL;
    apr_status_t rv;
    provider_step_t st = provider_api_begin(&api, r, M_GET, "GET, HEAD");
    if (st != PROVIDER_GO)
        return st;
    ap_args_to_table(r, &t);
    if (prov_cabinet_requests_args(&q, &err, t ? apr_table_get(t, "key") : NULL,
                                   t ? apr_table_get(t, "status") : NULL,
                                   t ? apr_table_get(t, "limit") : NULL,
                                   t ? apr_table_get(t, "before") : NULL, r->pool)
        != APR_SUCCESS)
        return provider_api_error(&api, err);
    rv = prov_cabinet_requests(&o, api.store, api.sess->user_id, &q, r->pool);
    if (rv != APR_SUCCESS)
        return provider_api_failed(&api, rv, "reading the recent requests");
    return provider_api_send(&api, HTTP_OK, o);
}
