/* mod_provider_audit.c: the glue's side of the audit trail
 * (core/store/prov_audit.h, docs/internals/audit.md): a row's actor and
 * client address from the request (r->useragent_ip: mod_remoteip's client
 * address when it is loaded and trusts the proxy, else the peer's), a
 * refused sign-in's row, and the cabinet's GET /v1/account/activity, a
 * signed-in user's own security activity (core/cabinet). The handlers that
 * change something arm their row before the core call and settle it after
 * (prov_audit_arm, prov_audit_settle): it is written in the change's
 * transaction when the change has one. A row that cannot be written is
 * logged by core; the answer is not changed by it. */
#include "mod_provider_audit.h"
#include "mod_provider_api.h"
#include "mod_provider_db.h"
#include "prov_cabinet_activity.h"
#include "util_script.h"

APLOG_USE_MODULE(provider);

void provider_audit_init(prov_audit_t *a, request_rec *r, prov_audit_actor_e actor,
                         apr_int64_t user_id, const char *action)
{
    memset(a, 0, sizeof(*a));
    a->actor = actor;
    a->actor_id = actor == PROV_AUDIT_USER && user_id ? prov_i64(user_id, r->pool) : NULL;
    a->action = action;
    a->user_id = user_id;
    a->address = r->useragent_ip;
}

void provider_audit_user(prov_audit_t *a, request_rec *r, apr_int64_t user_id,
                         const char *action, const char *target_kind, const char *target_id)
{
    provider_audit_init(a, r, PROV_AUDIT_USER, user_id, action);
    a->target_kind = target_kind;
    a->target_id = target_id;
}

void provider_audit_signin_refused(request_rec *r, const char *provider, const char *reason)
{
    prov_error_t *err = NULL;
    prov_audit_t a;
    prov_store_t *store = provider_db_open(r, &err);
    if (!store)
        return;
    provider_audit_init(&a, r, PROV_AUDIT_SYSTEM, 0, "signin.refused");
    a.target_kind = "identity_provider";
    a.target_id = provider;
    a.detail = prov_audit_detail(r->pool, "reason", reason, NULL);
    prov_audit_write(store, &a, r->pool);
    provider_db_close(r, store);
}

/* GET /v1/account/activity */
int provider_activity_handler(request_rec *r)
{
    provider_api_t api;
    prov_error_t *err = NULL;
    apr_table_t *q = NULL;
    json_object *o = NULL;
    apr_int64_t before = 0;
    apr_status_t rv;
    int limit = 0;
    provider_step_t st = provider_api_begin(&api, r, M_GET, "GET, HEAD");
    if (st != PROVIDER_GO)
        return st;
    ap_args_to_table(r, &q);
    if (prov_cabinet_activity_args(&limit, &before, &err, q ? apr_table_get(q, "limit") : NULL,
                                   q ? apr_table_get(q, "before") : NULL, r->pool)
        != APR_SUCCESS)
        return provider_api_error(&api, err);
    rv = prov_cabinet_activity(&o, api.store, api.sess->user_id, limit, before, r->pool);
    if (rv != APR_SUCCESS)
        return provider_api_failed(&api, rv, "reading the activity");
    return provider_api_send(&api, HTTP_OK, o);
}
