/* mod_provider_shm.c: a block of shared memory that every child of the
 * server sees, made by the parent at post_config in anonymous shared memory
 * (as mod_socache_shmcb makes its cache) so that the children inherit it,
 * and the global mutex that guards it, of a type registered at pre_config
 * (httpd's Mutex directive can configure it) and opened again by each child
 * at child_init. mod_provider_limit.c (the anonymous endpoints' limits and
 * the purge's turn), mod_provider_keyctl.c (the keys' limits) and
 * mod_provider_metrics.c (the counters, no mutex) make theirs here; what
 * lies in a block, and the log lines, are theirs. */
#include "apr_shm.h"
#include "util_mutex.h"
#include "mod_provider.h"
#include "mod_provider_shm.h"

APLOG_USE_MODULE(provider);

provider_srv_conf *provider_shm_conf(server_rec *s)
{
    for (; s; s = s->next) {
        provider_srv_conf *c = ap_get_module_config(s->module_config, &provider_module);
        if (c->engine == 1)
            return c;
    }
    return NULL;
}

void provider_shm_register(const provider_shm_t *sh, apr_pool_t *pconf)
{
    ap_mutex_register(pconf, sh->type, NULL, APR_LOCK_DEFAULT, 0);
}

void provider_shm_reset(provider_shm_t *sh)
{
    sh->mutex = NULL;
    sh->mem = NULL;
}

apr_status_t provider_shm_create(provider_shm_t *sh, apr_size_t size, server_rec *s,
                                 apr_pool_t *pconf)
{
    apr_shm_t *shm = NULL;
    apr_status_t rv = APR_SUCCESS;
    provider_shm_reset(sh);
    if (sh->type)
        rv = ap_global_mutex_create(&sh->mutex, NULL, sh->type, NULL, s, pconf, 0);
    if (rv == APR_SUCCESS)
        rv = apr_shm_create(&shm, size, NULL, pconf);
    if (rv == APR_SUCCESS)
        sh->mem = apr_shm_baseaddr_get(shm);
    return rv;
}

apr_status_t provider_shm_child(provider_shm_t *sh, apr_pool_t *pchild)
{
    apr_status_t rv = APR_SUCCESS;
    if (sh->mutex)
        rv = apr_global_mutex_child_init(&sh->mutex, apr_global_mutex_lockfile(sh->mutex),
                                         pchild);
    if (rv != APR_SUCCESS)
        sh->mutex = NULL;
    return rv;
}
