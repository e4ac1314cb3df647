/* prov_cache.c: the hot-path lookup caches. One mutex per cache, entries
 * malloc'ed as one block (struct and strings together) so that emptying the
 * cache is a walk of frees; copies handed out are made in the caller's pool.
 * An entry is read again ahead of its expiry by one lookup only: the first
 * in its last second (a second or more after it was put) is told it missed,
 * reads the database and puts the entry anew, while the others keep
 * finding it. Without that, every lookup of the key or model between the
 * expiry and the first put went to the database at once (under load on
 * PostgreSQL, a cluster of requests each waiting for a round trip). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "prov_cache.h"

typedef struct entry_t {
    apr_int64_t expires;            /* put at expires - ttl */
    int is_model;
    int claimed;                  /* a lookup was told to read it again */
    union {
        prov_auth_t auth;
        prov_model_t model;
    } u;
    char strings[];               /* the copied strings, NUL-separated */
} entry_t;

struct prov_cache_t {
    pthread_mutex_t mutex;
    apr_hash_t *map;              /* key (malloc'ed, in the entry) -> entry_t* */
    apr_pool_t *pool;             /* the hash's own nodes */
    apr_int64_t ttl;
    int max;
};

static apr_status_t cache_cleanup(void *data)
{
    prov_cache_t *c = data;
    apr_hash_index_t *hi;
    for (hi = apr_hash_first(NULL, c->map); hi; hi = apr_hash_next(hi))
        free(apr_hash_this_val(hi));
    pthread_mutex_destroy(&c->mutex);
    return APR_SUCCESS;
}

apr_status_t prov_cache_create(prov_cache_t **pc, apr_int64_t ttl, int max_entries, apr_pool_t *p)
{
    prov_cache_t *c = apr_pcalloc(p, sizeof(*c));
    pthread_mutex_init(&c->mutex, NULL);
    apr_pool_create(&c->pool, p);
    c->map = apr_hash_make(c->pool);
    c->ttl = ttl > 0 ? ttl : 0;
    c->max = max_entries > 0 ? max_entries : 1024;
    apr_pool_cleanup_register(p, c, cache_cleanup, apr_pool_cleanup_null);
    *pc = c;
    return APR_SUCCESS;
}

/* Copies n strings into the entry's tail; returns the copies in order. */
static entry_t *entry_make(const char **strs, const char **out, int n)
{
    apr_size_t total = 0, off = 0;
    entry_t *e;
    int i;
    for (i = 0; i < n; i++)
        total += (strs[i] ? strlen(strs[i]) : 0) + 1;
    e = calloc(1, sizeof(*e) + total);
    if (!e)
        return NULL;
    for (i = 0; i < n; i++) {
        apr_size_t k = strs[i] ? strlen(strs[i]) : 0;
        if (strs[i])
            memcpy(e->strings + off, strs[i], k);
        e->strings[off + k] = '\0';
        out[i] = strs[i] ? e->strings + off : NULL;
        off += k + 1;
    }
    return e;
}

static void put(prov_cache_t *c, const char *key, entry_t *e)
{
    entry_t *old;
    pthread_mutex_lock(&c->mutex);
    old = apr_hash_get(c->map, key, APR_HASH_KEY_STRING);
    if (!old && (int)apr_hash_count(c->map) >= c->max) {
        apr_hash_index_t *hi;
        for (hi = apr_hash_first(NULL, c->map); hi; hi = apr_hash_next(hi))
            free(apr_hash_this_val(hi));
        apr_pool_clear(c->pool);
        c->map = apr_hash_make(c->pool);
    }
    /* The hash keeps the key pointer of the entry it first saw: drop the old
     * entry (whose memory holds that key) before adding the new one. */
    if (old)
        apr_hash_set(c->map, key, APR_HASH_KEY_STRING, NULL);
    apr_hash_set(c->map, key, APR_HASH_KEY_STRING, e);
    free(old);
    pthread_mutex_unlock(&c->mutex);
}

/* The live entry of key (mutex held), or NULL: none, expired, or this
 * lookup is the one that reads it again ahead of its expiry. */
static const entry_t *get(prov_cache_t *c, const char *key, apr_int64_t now, int is_model)
{
    entry_t *e = apr_hash_get(c->map, key, APR_HASH_KEY_STRING);
    if (!e || e->is_model != is_model || e->expires <= now)
        return NULL;
    if (e->expires - now == 1 && e->expires - c->ttl < now && !e->claimed) {
        e->claimed = 1;
        return NULL;
    }
    return e;
}

prov_auth_t *prov_cache_get_auth(prov_cache_t *c, const char *key_hash, apr_int64_t now,
                                 apr_pool_t *p)
{
    const entry_t *e;
    prov_auth_t *a = NULL;
    if (!c->ttl || !key_hash)
        return NULL;
    pthread_mutex_lock(&c->mutex);
    if ((e = get(c, key_hash, now, 0)) != NULL) {
        a = apr_pmemdup(p, &e->u.auth, sizeof(*a));
        a->key_hash = apr_pstrdup(p, e->u.auth.key_hash);
        a->key_display = apr_pstrdup(p, e->u.auth.key_display);
        a->controls.models = e->u.auth.controls.models
            ? apr_pstrdup(p, e->u.auth.controls.models) : NULL;
        a->controls.addresses = e->u.auth.controls.addresses
            ? apr_pstrdup(p, e->u.auth.controls.addresses) : NULL;
    }
    pthread_mutex_unlock(&c->mutex);
    return a;
}

void prov_cache_put_auth(prov_cache_t *c, const prov_auth_t *a, apr_int64_t now)
{
    const char *in[4] = { a->key_hash, a->key_display, a->controls.models,
                          a->controls.addresses }, *out[4];
    entry_t *e;
    if (!c->ttl || !a->key_hash || !(e = entry_make(in, out, 4)))
        return;
    e->expires = now + c->ttl;
    e->u.auth = *a;
    e->u.auth.key_hash = out[0];
    e->u.auth.key_display = out[1];
    e->u.auth.controls.models = out[2];
    e->u.auth.controls.addresses = out[3];
    put(c, out[0], e);
}

void prov_cache_forget_key(prov_cache_t *c, apr_int64_t key_id)
{
    apr_hash_index_t *hi;
    pthread_mutex_lock(&c->mutex);
    /* Deleting the entry an iteration stands on is what APR allows. */
    for (hi = apr_hash_first(NULL, c->map); hi; hi = apr_hash_next(hi)) {
        entry_t *e = apr_hash_this_val(hi);
        if (!e->is_model && e->u.auth.key_id == key_id) {
            apr_hash_set(c->map, apr_hash_this_key(hi), APR_HASH_KEY_STRING, NULL);
            free(e);
        }
    }
    pthread_mutex_unlock(&c->mutex);
}

prov_model_t *prov_cache_get_model(prov_cache_t *c, const char *public_id, apr_int64_t now,
                                   apr_pool_t *p)
{
    const entry_t *e;
    prov_model_t *m = NULL;
    char key[160];
    if (!c->ttl || !public_id || strlen(public_id) > sizeof(key) - 3)
        return NULL;
    apr_snprintf(key, sizeof(key), "m:%s", public_id);
    pthread_mutex_lock(&c->mutex);
    if ((e = get(c, key, now, 1)) != NULL) {
        m = apr_pmemdup(p, &e->u.model, sizeof(*m));
        m->public_id = apr_pstrdup(p, e->u.model.public_id);
        m->display_name = apr_pstrdup(p, e->u.model.display_name);
        m->upstream_id = apr_pstrdup(p, e->u.model.upstream_id);
        m->family = apr_pstrdup(p, e->u.model.family);
    }
    pthread_mutex_unlock(&c->mutex);
    return m;
}

void prov_cache_put_model(prov_cache_t *c, const prov_model_t *m, apr_int64_t now)
{
    const char *in[5], *out[5];
    char kbuf[160];
    entry_t *e;
    if (!c->ttl || !m->public_id || strlen(m->public_id) > sizeof(kbuf) - 3)
        return;
    apr_snprintf(kbuf, sizeof(kbuf), "m:%s", m->public_id);
    in[0] = kbuf;
    in[1] = m->public_id;
    in[2] = m->display_name;
    in[3] = m->upstream_id;
    in[4] = m->family;
    if (!(e = entry_make(in, out, 5)))
        return;
    e->is_model = 1;
    e->expires = now + c->ttl;
    e->u.model = *m;
    e->u.model.public_id = out[1];
    e->u.model.display_name = out[2];
    e->u.model.upstream_id = out[3];
    e->u.model.family = out[4] ? out[4] : "";
    put(c, out[0], e);
}
