/* mod_provider_keys.c: a signed-in user's API keys: GET /v1/keys, POST
 * /v1/keys, POST /v1/keys/{id}/reissue, PUT /v1/keys/{id}/budget, PATCH
 * /v1/keys/{id} (its controls), DELETE /v1/keys/{id}. core/cabinet checks the bodies and that a key is the
 * user's own (another user's id is 404 KEY_NOT_FOUND, as an unknown one);
 * a new or reissued secret is in that one answer and nowhere else, never
 * in a log line. */
#include <string.h>
#include "mod_provider_api.h"
#include "mod_provider_audit.h"
#include "mod_provider_config.h"
#include "mod_provider_http.h"
#include "mod_provider_keys.h"

APLOG_USE_MODULE(provider);

#define KEY_NOT_FOUND "No such key."

/* What a key path names: the collection, a key, or an action on one. */
typedef enum { KEYS_ALL, KEYS_ONE, KEYS_REISSUE, KEYS_BUDGET, KEYS_NONE } keys_path_e;

/* /v1/keys[/ID[/reissue|/budget]]; *id is the ID segment. */
static keys_path_e keys_path(const char *uri, const char **id, apr_pool_t *p)
{
    const char *rest = uri + strlen("/v1/keys"), *slash;
    if (!*rest)
        return KEYS_ALL;
    if (*rest++ != '/' || !*rest)
        return KEYS_NONE;
    slash = strchr(rest, '/');
    *id = slash ? apr_pstrndup(p, rest, (apr_size_t)(slash - rest)) : rest;
    if (!slash)
        return KEYS_ONE;
    if (!strcmp(slash, "/reissue"))
        return KEYS_REISSUE;
    if (!strcmp(slash, "/budget"))
        return KEYS_BUDGET;
    return KEYS_NONE;
}

/* After a reissue, a deletion or a change of controls: this child's lookup cache forgets the key,
 * so that its old secret is read from the database (and refused) by the
 * next request here, even one that a lease of the key would have served
 * from memory. Other children and nodes find out in their reservation's
 * transaction, or at the latest when their cached entry's
 * ProviderLookupCacheTTL runs out. */
static void forget(request_rec *r, apr_int64_t key_id, apr_status_t rv)
{
    prov_cache_t *lookups = provider_lookups(r);
    if (rv == APR_SUCCESS && lookups)
        prov_cache_forget_key(lookups, key_id);
}

/* A core call's answer: the key's object (status), or the 404 or 503. */
static int answer(provider_api_t *api, apr_status_t rv, int status, json_object *o,
                  const char *what)
{
    if (APR_STATUS_IS_NOTFOUND(rv))
        return provider_api_fail(api, PROV_E_KEY_NOT_FOUND, KEY_NOT_FOUND);
    if (rv != APR_SUCCESS)
        return provider_api_failed(api, rv, what);
    return provider_api_send(api, status, o);
}

/* The key's budget as the detail of its audit row (credits). */
static const char *budget_detail(const prov_cabinet_key_req_t *req, apr_pool_t *p)
{
    return prov_audit_detail(p, "budget", req->has_budget ? prov_money_format(req->budget, p)
                                                          : "none", NULL);
}

/* A key made: one statement, its row written after it with the new id. */
static void audit_created(request_rec *r, prov_store_t *store, apr_int64_t user_id,
                          json_object *key, const prov_cabinet_key_req_t *req)
{
    prov_audit_t a;
    provider_audit_user(&a, r, user_id, "key.create", "key", prov_json_get_str(key, "id"));
    a.detail = prov_audit_detail(r->pool, "name", req->name, "budget", req->has_budget
                                 ? prov_money_format(req->budget, r->pool) : NULL, NULL);
    prov_audit_write(store, &a, r->pool);
}

/* Arms the audit row of a change to key id (settled after the core call). */
static void audit_arm(request_rec *r, provider_api_t *api, const char *action, apr_int64_t id,
                      const char *detail)
{
    prov_audit_t a;
    provider_audit_user(&a, r, api->sess->user_id, action, "key", prov_i64(id, r->pool));
    a.detail = detail;
    prov_audit_arm(api->store, &a, r->pool);
}

static int keys_all(request_rec *r)
{
    provider_api_t api;
    prov_cabinet_key_req_t req;
    prov_error_t *err = NULL;
    const char *body = NULL;
    apr_size_t len = 0;
    json_object *o = NULL;
    apr_status_t rv;
    int post = r->method_number == M_POST;
    provider_step_t st = provider_api_begin(&api, r, post ? M_POST : M_GET, "GET, HEAD, POST");
    if (st != PROVIDER_GO)
        return st;
    if (!post) {
        rv = prov_cabinet_keys(&o, api.store, api.sess->user_id, prov_now(), r->pool);
        return answer(&api, rv, HTTP_OK, o, "listing the keys");
    }
    if ((st = provider_api_body(&api, &body, &len)) != PROVIDER_GO)
        return st;
    if (prov_cabinet_key_parse(&req, &err, body, len, r->pool) != APR_SUCCESS)
        return provider_api_error(&api, err);
    rv = prov_cabinet_key_create(&o, api.store, api.sess->user_id, &req, prov_now(), r->pool);
    if (rv == APR_SUCCESS)
        audit_created(r, api.store, api.sess->user_id, o, &req);
    if (rv == APR_EEXIST)
        return provider_api_fail(&api, PROV_E_KEY_NAME_TAKEN, "You already have a key with "
                                 "this name; choose another name.");
    if (rv == APR_EINVAL)
        return provider_api_fail(&api, PROV_E_INVALID_REQUEST, "The key could not be made "
                                 "with these values.");
    return answer(&api, rv, HTTP_CREATED, o, "making a key");
}

/* PATCH /v1/keys/{id}: the key's controls. */
static int key_patch(provider_api_t *api, apr_int64_t id)
{
    request_rec *r = api->r;
    prov_key_change_t ch;
    prov_error_t *err = NULL;
    const char *body = NULL, *bad_model = NULL;
    apr_size_t len = 0;
    json_object *o = NULL;
    apr_status_t rv;
    provider_step_t st = provider_api_body(api, &body, &len);
    if (st != PROVIDER_GO)
        return st;
    if (prov_cabinet_controls_parse(&ch, &err, body, len, r->pool) != APR_SUCCESS)
        return provider_api_error(api, err);
    rv = prov_cabinet_key_controls(&o, &bad_model, api->store, api->sess->user_id, id, &ch,
                                   prov_now(), r->pool);
    if (rv == APR_ENOENT)
        return provider_api_error(api, prov_error_make(r->pool, PROV_E_INVALID_REQUEST,
                                  "models", "models: there is no model '%s'; GET /v1/models "
                                  "lists them.", ap_escape_html(r->pool, bad_model)));
    forget(r, id, rv);
    return answer(api, rv, HTTP_OK, o, "setting a key's controls");
}

static int keys_one(request_rec *r, keys_path_e what, const char *segment)
{
    int methods[] = { 0, r->method_number == M_PATCH ? M_PATCH : M_DELETE, M_POST, M_PUT };
    static const char *const allowed[] = { "", "DELETE, PATCH", "POST", "PUT" };
    provider_api_t api;
    prov_cabinet_key_req_t req;
    prov_error_t *err = NULL;
    const char *body = NULL;
    apr_size_t len = 0;
    apr_int64_t id = 0;
    json_object *o = NULL;
    apr_status_t rv;
    provider_step_t st = provider_api_begin(&api, r, methods[what], allowed[what]);
    if (st != PROVIDER_GO)
        return st;
    if (prov_cabinet_key_id(&id, segment) != APR_SUCCESS)
        return provider_api_fail(&api, PROV_E_KEY_NOT_FOUND, KEY_NOT_FOUND);
    if (what == KEYS_ONE && r->method_number == M_PATCH)
        return key_patch(&api, id);
    if (what == KEYS_ONE) {
        audit_arm(r, &api, "key.delete", id, NULL);
        rv = prov_cabinet_key_delete(api.store, api.sess->user_id, id, r->pool);
        prov_audit_settle(api.store, rv, r->pool);
        forget(r, id, rv);
        return answer(&api, rv, HTTP_NO_CONTENT, NULL, "deleting a key");
    }
    if (what == KEYS_REISSUE) {
        audit_arm(r, &api, "key.reissue", id, NULL);
        rv = prov_cabinet_key_reissue(&o, api.store, api.sess->user_id, id, prov_now(), r->pool);
        prov_audit_settle(api.store, rv, r->pool);
        forget(r, id, rv);
        return answer(&api, rv, HTTP_OK, o, "reissuing a key");
    }
    if ((st = provider_api_body(&api, &body, &len)) != PROVIDER_GO)
        return st;
    if (prov_cabinet_budget_parse(&req, &err, body, len, r->pool) != APR_SUCCESS)
        return provider_api_error(&api, err);
    audit_arm(r, &api, "key.budget", id, budget_detail(&req, r->pool));
    rv = prov_cabinet_key_budget(&o, api.store, api.sess->user_id, id, &req, prov_now(),
                                 r->pool);
    prov_audit_settle(api.store, rv, r->pool);
    return answer(&api, rv, HTTP_OK, o, "setting a key's budget");
}

int provider_keys_handler(request_rec *r)
{
    const char *id = NULL;
    keys_path_e what = keys_path(r->uri, &id, r->pool);
    if (what == KEYS_NONE) {
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_NOT_FOUND, NULL,
                             "No such endpoint: %s %s", r->method,
                             ap_escape_html(r->pool, r->uri));
    }
    return what == KEYS_ALL ? keys_all(r) : keys_one(r, what, id);
}
