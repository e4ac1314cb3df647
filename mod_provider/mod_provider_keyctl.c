/* mod_provider_keyctl.c: an API key's own controls on the inference path
 * (prov_key_controls.h; the order in docs/reference/api.md, "The order of
 * the checks"): right after the key, its expiry (401 API_KEY_EXPIRED), the
 * client address (403 ADDRESS_NOT_ALLOWED; r->useragent_ip, which
 * mod_remoteip makes the real client behind a proxy), its request rate and
 * requests in flight (429 API_KEY_RATE_LIMITED and API_KEY_IN_FLIGHT_LIMIT,
 * with Retry-After); the model list once the model is read (403
 * MODEL_NOT_ALLOWED). The rate and in-flight counts live in one table in
 * shared memory that every child of the server sees (prov_keylimit.h; made
 * by the parent at post_config and taken under a global mutex of the
 * "provider-keys" type, both made by mod_provider_shm.c as for the
 * anonymous endpoints' limits), so they are exact within one server; each server of several
 * counts its own. An in-flight count is given back when the driver is done
 * with the request, and by a cleanup of the request's pool whatever way it
 * ended. */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_keyctl.h"
#include "mod_provider_config.h"
#include "mod_provider_shm.h"
#include "prov_cidr.h"
#include "prov_keylimit.h"

APLOG_USE_MODULE(provider);

#define MUTEX_TYPE "provider-keys"

struct provider_keyctl_slot_t {
    int slot;                    /* the table's slot; -1 once given back */
    apr_int64_t key_id;
};

static provider_shm_t shm = { MUTEX_TYPE, NULL, NULL };
static prov_keylimit_t *table;
static apr_time_t full_logged;   /* per process: when a full set was last told */

static int pre_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp)
{
    (void)plog, (void)ptemp;
    provider_shm_register(&shm, pconf);
    return OK;
}

static int post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s)
{
    apr_status_t rv;
    (void)plog, (void)ptemp;
    provider_shm_reset(&shm);
    table = NULL;
    if (!provider_shm_conf(s))
        return OK;
    rv = provider_shm_create(&shm, prov_keylimit_size(PROV_KL_SLOTS), s, pconf);
    if (rv == APR_SUCCESS)
        rv = prov_keylimit_init(&table, shm.mem, PROV_KL_SLOTS);
    if (rv != APR_SUCCESS) {
        ap_log_error(APLOG_MARK, APLOG_CRIT, rv, s, "PROV01301: cannot make the shared "
                     "memory and mutex of the keys' rate and in-flight limits");
        return HTTP_INTERNAL_SERVER_ERROR;
    }
    return OK;
}

static void child_init(apr_pool_t *pchild, server_rec *s)
{
    apr_status_t rv = provider_shm_child(&shm, pchild);
    if (rv != APR_SUCCESS)
        ap_log_error(APLOG_MARK, APLOG_ERR, rv, s, "PROV01302: this child cannot use the "
                     "mutex of the keys' limits: it does not enforce rpm and max_in_flight");
}

void provider_keyctl_hooks(apr_pool_t *p)
{
    (void)p;
    ap_hook_pre_config(pre_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_post_config(post_config, NULL, NULL, APR_HOOK_MIDDLE);
    ap_hook_child_init(child_init, NULL, NULL, APR_HOOK_MIDDLE);
}

void provider_keyctl_release(provider_keyctl_slot_t *slot)
{
    if (!slot || slot->slot < 0 || !shm.mutex || !table)
        return;
    if (apr_global_mutex_lock(shm.mutex) != APR_SUCCESS)
        return;
    prov_keylimit_release(table, slot->slot, slot->key_id, prov_now());
    apr_global_mutex_unlock(shm.mutex);
    slot->slot = -1;
}

static apr_status_t release_cleanup(void *data)
{
    provider_keyctl_release(data);
    return APR_SUCCESS;
}

static prov_error_t *refuse(request_rec *r, prov_errcode_e code, int retry_after,
                            const char *msg)
{
    prov_error_t *e = prov_error_make(r->pool, code, NULL, "%s", msg);
    e->retry_after = retry_after;
    return e;
}

/* The rate and in-flight limits: NULL with *slot set, or the 429. */
static prov_error_t *take(provider_keyctl_slot_t **slot, request_rec *r, const prov_auth_t *a)
{
    const prov_key_controls_t *c = &a->controls;
    prov_kl_verdict_t v;
    if (!shm.mutex || !table || apr_global_mutex_lock(shm.mutex) != APR_SUCCESS)
        return NULL;
    prov_keylimit_take(&v, table, a->key_id, c->rpm, c->max_in_flight, prov_now());
    apr_global_mutex_unlock(shm.mutex);
    if ((v.evicted || v.untracked) && apr_time_now() - full_logged > apr_time_from_sec(60)) {
        full_logged = apr_time_now();
        ap_log_rerror(APLOG_MARK, APLOG_NOTICE, 0, r, "PROV01303: the keys' limits table "
                      "has a full set: %s", v.untracked ? "a request went through uncounted"
                      : "a key's last minute was forgotten");
    }
    if (v.result == PROV_KL_RATE) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "PROV01304: key %" APR_INT64_T_FMT
                      " over its rate (%" APR_INT64_T_FMT " a minute): 429 for %d s",
                      a->key_id, c->rpm, v.retry_after);
        return refuse(r, PROV_E_KEY_RATE_LIMITED, v.retry_after, apr_psprintf(r->pool,
                      "This API key allows %" APR_INT64_T_FMT " requests a minute; try again "
                      "in %d s.", c->rpm, v.retry_after));
    }
    if (v.result == PROV_KL_IN_FLIGHT) {
        ap_log_rerror(APLOG_MARK, APLOG_DEBUG, 0, r, "PROV01305: key %" APR_INT64_T_FMT
                      " has %" APR_INT64_T_FMT " requests in flight, its limit: 429",
                      a->key_id, c->max_in_flight);
        return refuse(r, PROV_E_KEY_IN_FLIGHT_LIMIT, v.retry_after, apr_psprintf(r->pool,
                      "This API key allows %" APR_INT64_T_FMT " requests at once; try again "
                      "when one has finished.", c->max_in_flight));
    }
    if (v.slot >= 0) {
        *slot = apr_palloc(r->pool, sizeof(**slot));
        (*slot)->slot = v.slot;
        (*slot)->key_id = a->key_id;
        apr_pool_cleanup_register(r->pool, *slot, release_cleanup, apr_pool_cleanup_null);
    }
    return NULL;
}

prov_error_t *provider_keyctl_admit(provider_keyctl_slot_t **slot, request_rec *r,
                                    const prov_auth_t *a)
{
    const prov_key_controls_t *c = &a->controls;
    *slot = NULL;
    if (!prov_key_controls_any(c))
        return NULL;
    if (c->expires_at > 0 && prov_now() >= c->expires_at)
        return refuse(r, PROV_E_KEY_EXPIRED, 0, apr_psprintf(r->pool, "This API key expired "
                      "at %s.", prov_key_time_text(c->expires_at, r->pool)));
    if (c->addresses && !prov_cidr_list_match(c->addresses, r->useragent_ip)) {
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r, "PROV01306: key %" APR_INT64_T_FMT
                      " used from %s, outside its addresses: 403", a->key_id,
                      r->useragent_ip);
        return refuse(r, PROV_E_ADDRESS_NOT_ALLOWED, 0, "This API key may not be used from "
                      "this address.");
    }
    if (c->rpm > 0 || c->max_in_flight > 0)
        return take(slot, r, a);
    return NULL;
}

prov_error_t *provider_keyctl_model(request_rec *r, const prov_auth_t *a,
                                    const char *public_id)
{
    prov_error_t *e;
    if (prov_key_model_allowed(a->controls.models, public_id))
        return NULL;
    e = prov_error_make(r->pool, PROV_E_MODEL_NOT_ALLOWED, "model", "This API key may not use "
                        "the model '%s'.", ap_escape_html(r->pool, public_id ? public_id : ""));
    return e;
}
