/* prov_docs_cache.c: the documentation's sections kept in memory by a
 * process, so that a search (the public MCP search_docs, which anyone may
 * call) does not read and parse every page again. Kept with the stamp of
 * the files they came from (each page's name, size and modification time)
 * and the base URL they were rendered for; every lookup takes the stamp
 * again (one stat per page) and reads the pages anew only when it differs,
 * so an edited or installed page shows at the next search. A lookup copies
 * the sections into the caller's pool under the cache's lock: the cached
 * copy can then be replaced by another thread at any time. */
#include <string.h>
#include <apr_file_info.h>
#include <apr_thread_mutex.h>
#include "prov_docs.h"

struct prov_docs_cache_t {
    apr_thread_mutex_t *lock;
    apr_pool_t *parent;
    apr_pool_t *pool;                /* the sections' and the stamp's; NULL: none yet */
    const char *stamp;
    const apr_array_header_t *sections;
};

apr_status_t prov_docs_cache_create(prov_docs_cache_t **c, apr_pool_t *p)
{
    prov_docs_cache_t *x = apr_pcalloc(p, sizeof(*x));
    apr_status_t rv = apr_thread_mutex_create(&x->lock, APR_THREAD_MUTEX_DEFAULT, p);
    if (rv != APR_SUCCESS)
        return rv;
    x->parent = p;
    *c = x;
    return APR_SUCCESS;
}

apr_status_t prov_docs_stamp(const char **stamp, const char *root, const char *base_url,
                             apr_pool_t *p)
{
    apr_array_header_t *names = NULL;
    const char *out = base_url ? base_url : "";
    apr_status_t rv = prov_docs_pages(&names, root, p);
    int i;
    if (rv != APR_SUCCESS)
        return rv;
    for (i = 0; i < names->nelts; i++) {
        const char *name = APR_ARRAY_IDX(names, i, const char *);
        apr_finfo_t fi;
        rv = apr_stat(&fi, apr_pstrcat(p, root, "/", name, ".html", NULL),
                      APR_FINFO_SIZE | APR_FINFO_MTIME, p);
        if (rv != APR_SUCCESS)
            return rv;
        out = apr_psprintf(p, "%s|%s:%" APR_OFF_T_FMT ":%" APR_TIME_T_FMT, out, name,
                           fi.size, fi.mtime);
    }
    *stamp = out;
    return APR_SUCCESS;
}

static apr_array_header_t *copy(const apr_array_header_t *from, apr_pool_t *p)
{
    apr_array_header_t *to = apr_array_make(p, from->nelts, sizeof(prov_docs_section_t *));
    int i;
    for (i = 0; i < from->nelts; i++) {
        const prov_docs_section_t *s = APR_ARRAY_IDX(from, i, const prov_docs_section_t *);
        prov_docs_section_t *d = apr_palloc(p, sizeof(*d));
        d->page = apr_pstrdup(p, s->page);
        d->anchor = apr_pstrdup(p, s->anchor);
        d->title = apr_pstrdup(p, s->title);
        d->link = apr_pstrdup(p, s->link);
        d->text = apr_pstrdup(p, s->text);
        APR_ARRAY_PUSH(to, prov_docs_section_t *) = d;
    }
    return to;
}

/* Reads the pages again into a pool of their own, replacing the old. */
static apr_status_t refill(prov_docs_cache_t *c, const char *stamp, const char *root,
                           const prov_docs_vars_t *v)
{
    apr_pool_t *pool = NULL;
    apr_array_header_t *sections = NULL;
    apr_status_t rv = apr_pool_create(&pool, c->parent);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_docs_sections(&sections, root, v, pool);
    if (rv != APR_SUCCESS) {
        apr_pool_destroy(pool);
        return rv;
    }
    if (c->pool)
        apr_pool_destroy(c->pool);
    c->pool = pool;
    c->stamp = apr_pstrdup(pool, stamp);
    c->sections = sections;
    return APR_SUCCESS;
}

apr_status_t prov_docs_cache_sections(apr_array_header_t **sections, prov_docs_cache_t *c,
                                      const char *root, const prov_docs_vars_t *v,
                                      int *refilled, apr_pool_t *p)
{
    const char *stamp = NULL;
    apr_status_t rv = prov_docs_stamp(&stamp, root, v ? v->base_url : NULL, p);
    if (refilled)
        *refilled = 0;
    if (rv != APR_SUCCESS)
        return rv;
    if ((rv = apr_thread_mutex_lock(c->lock)) != APR_SUCCESS)
        return rv;
    if (!c->stamp || strcmp(c->stamp, stamp)) {
        rv = refill(c, stamp, root, v);
        if (refilled && rv == APR_SUCCESS)
            *refilled = 1;
    }
    if (rv == APR_SUCCESS)
        *sections = copy(c->sections, p);
    apr_thread_mutex_unlock(c->lock);
    return rv;
}
