/* mod_provider_shm.h: the API of mod_provider_shm.c, a block of shared
 * memory that every child of the server sees, with the global mutex that
 * guards it (the anonymous endpoints' limits, the keys' limits, the
 * metrics without a mutex). */
#ifndef MOD_PROVIDER_SHM_H
#define MOD_PROVIDER_SHM_H

#include "mod_provider.h"
#include "apr_global_mutex.h"

typedef struct provider_shm_t {
    const char *type;            /* the mutex's type (httpd's Mutex directive); NULL: none */
    apr_global_mutex_t *mutex;   /* NULL: none made, or this child cannot use it */
    void *mem;                   /* the block; NULL: none made */
} provider_shm_t;

/* The first enabled server's configuration, whose directives size a block
 * (one for the whole server, as one engine); NULL when none is enabled. */
provider_srv_conf *provider_shm_conf(server_rec *s);
/* Registers sh->type with httpd's Mutex directive (pre_config). */
void provider_shm_register(const provider_shm_t *sh, apr_pool_t *pconf);
/* Forgets the last generation's block (post_config, before anything can fail). */
void provider_shm_reset(provider_shm_t *sh);
/* Makes, in pconf at post_config, the global mutex of sh->type (none when
 * NULL) and size bytes of anonymous shared memory (sh->mem) that every
 * child inherits. */
apr_status_t provider_shm_create(provider_shm_t *sh, apr_size_t size, server_rec *s,
                                 apr_pool_t *pconf);
/* A child's use of the mutex (child_init): nothing without one; on a
 * failure sh->mutex is NULL (the caller logs what goes unguarded). */
apr_status_t provider_shm_child(provider_shm_t *sh, apr_pool_t *pchild);

#endif
