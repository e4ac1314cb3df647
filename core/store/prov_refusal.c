/* prov_refusal.c: the bounded record of refusals before a reservation
 * (prov_refusal.h): the in-memory queue that folds and caps them, its
 * batch write and the retention purge of the refusals table. */
#include <string.h>
#include <apr_thread_mutex.h>
#include "prov_refusal.h"

struct prov_refusals_t {
    apr_thread_mutex_t *mu;
    int cap, n;
    apr_int64_t dropped;
    apr_int64_t gen;                    /* takes so far */
    prov_refusal_t rows[PROV_REFUSALS_CAP];
};

apr_status_t prov_refusals_create(prov_refusals_t **q, int cap, apr_pool_t *p)
{
    prov_refusals_t *nq;
    apr_status_t rv;
    if (cap < 1 || cap > PROV_REFUSALS_CAP)
        return APR_EINVAL;
    nq = apr_pcalloc(p, sizeof(*nq));
    nq->cap = cap;
    if ((rv = apr_thread_mutex_create(&nq->mu, APR_THREAD_MUTEX_DEFAULT, p)) != APR_SUCCESS)
        return rv;
    *q = nq;
    return APR_SUCCESS;
}

static void copy(char *to, apr_size_t size, const char *from)
{
    apr_cpystrn(to, from ? from : "", size);
}

void prov_refusal_make(prov_refusal_t *r, const void *where, apr_int64_t at,
                       apr_int64_t user_id, apr_int64_t key_id, int http_status,
                       const char *transport, const char *code, const char *model,
                       const char *request_id)
{
    memset(r, 0, sizeof(*r));
    r->where = where;
    r->created_at = at;
    r->user_id = user_id;
    r->key_id = key_id;
    r->http_status = http_status;
    r->count = 1;
    copy(r->transport, sizeof(r->transport), transport);
    copy(r->code, sizeof(r->code), code);
    copy(r->model, sizeof(r->model), model);
    copy(r->request_id, sizeof(r->request_id), request_id);
}

int prov_refusals_add(prov_refusals_t *q, const prov_refusal_t *r)
{
    int i, how = 0;
    apr_thread_mutex_lock(q->mu);
    for (i = 0; i < q->n; i++) {
        prov_refusal_t *o = &q->rows[i];
        if (o->where == r->where && o->key_id == r->key_id && o->created_at == r->created_at
            && !strcmp(o->code, r->code)) {
            o->count += r->count;
            how = 1;
            break;
        }
    }
    if (!how && q->n < q->cap) {
        q->rows[q->n] = *r;
        q->rows[q->n++].gen = q->gen;
        how = 2;
    }
    if (!how)
        q->dropped += r->count;
    apr_thread_mutex_unlock(q->mu);
    return how;
}

int prov_refusals_take(prov_refusals_t *q, prov_refusal_t *out, apr_int64_t now,
                       apr_int64_t *dropped)
{
    int i, n = 0, kept = 0;
    apr_thread_mutex_lock(q->mu);
    for (i = 0; i < q->n; i++) {
        if (q->rows[i].created_at < now || q->rows[i].gen < q->gen)
            out[n++] = q->rows[i];
        else
            q->rows[kept++] = q->rows[i];
    }
    q->n = kept;
    q->gen++;
    *dropped = q->dropped;
    q->dropped = 0;
    apr_thread_mutex_unlock(q->mu);
    return n;
}

apr_status_t prov_refusals_write(prov_store_t *s, const prov_refusal_t *rows, int n,
                                 apr_pool_t *p)
{
    apr_status_t rv;
    int i;
    if (n <= 0)
        return APR_SUCCESS;
    if ((rv = prov_store_begin(s, p)) != APR_SUCCESS)
        return rv;
    for (i = 0; i < n && rv == APR_SUCCESS; i++) {
        const prov_refusal_t *r = &rows[i];
        rv = prov_store_exec(s, NULL, "refusal_insert",
                             PROV_ARGS(prov_i64(r->created_at, p), prov_i64(r->user_id, p),
                                       prov_i64(r->key_id, p), r->transport,
                                       r->model[0] ? r->model : NULL,
                                       apr_itoa(p, r->http_status), r->code, r->request_id,
                                       prov_i64(r->count, p)), p);
    }
    if (rv != APR_SUCCESS) {
        prov_store_rollback(s, p);
        return rv;
    }
    return prov_store_commit(s, p);
}

apr_status_t prov_refusals_purge(int *removed, prov_store_t *s, apr_int64_t before, int batch,
                                 apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "refusal_purge",
                                      PROV_ARGS(prov_i64(before, p), apr_itoa(p, batch)), p);
    if (rv == APR_SUCCESS)
        *removed = n;
    return rv;
}

apr_int64_t prov_refusals_cut(apr_int64_t now, int retention_days)
{
    int days = PROV_REFUSAL_RETENTION_DAYS;
    if (retention_days > 0 && retention_days < days)
        days = retention_days;
    return now - (apr_int64_t)days * 86400;
}
