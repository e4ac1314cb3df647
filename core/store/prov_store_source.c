/* prov_store_source.c: the fixed store source (prov_store_source.h): one
 * connection opened by the caller, handed to one thread at a time. */
#include <pthread.h>
#include "prov_store_source.h"

/* The one connection of a fixed source is shared by the threads that use
 * it (a writer thread and the caller's, in the unit tests): one at a time,
 * a batch or a read between its open and close (recursive: a batch's
 * thread may open it again). */
typedef struct fixed_t {
    prov_store_t *s;
    pthread_mutex_t mu;
} fixed_t;

static apr_status_t fixed_open(prov_store_t **s, void *baton, apr_pool_t *p)
{
    fixed_t *f = baton;
    (void)p;
    pthread_mutex_lock(&f->mu);
    *s = f->s;
    return APR_SUCCESS;
}

static void fixed_close(prov_store_t *s, void *baton)
{
    fixed_t *f = baton;
    (void)s;
    pthread_mutex_unlock(&f->mu);
}

static apr_status_t fixed_cleanup(void *data)
{
    pthread_mutex_destroy(&((fixed_t *)data)->mu);
    return APR_SUCCESS;
}

prov_store_source_t *prov_store_source_fixed(prov_store_t *s, apr_pool_t *p)
{
    prov_store_source_t *src = apr_pcalloc(p, sizeof(*src));
    fixed_t *f = apr_pcalloc(p, sizeof(*f));
    pthread_mutexattr_t attr;
    f->s = s;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&f->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    apr_pool_cleanup_register(p, f, fixed_cleanup, apr_pool_cleanup_null);
    src->open = fixed_open;
    src->close = fixed_close;
    src->baton = f;
    src->channel = s;
    return src;
}
