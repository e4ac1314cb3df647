/* prov_replay.c: the billing engine's side of the settlement
 * journal (prov_journal.c keeps the files). The database's identity,
 * which a journal names so that it is only ever replayed where it belongs;
 * and the replay of dead processes' journals: their records, a chunk per
 * billing batch (PROV_OP_REPLAY, run by prov_batch_expire.c), each
 * settlement applied exactly once, then the latest progress of each request
 * the process died under, and with the last chunk the floors of its holds
 * that no record named and the leases the process held, returned. Above the queues (it submits batches), below the
 * writer thread, whose upkeep (prov_writer.c) calls this every second;
 * providerctl and the tests may call it too. */
#include <string.h>
#include "prov_billing_int.h"
#include "prov_log.h"

apr_status_t prov_replay_database_id(const char **id, const prov_store_source_t *src,
                                     apr_pool_t *p)
{
    prov_store_t *s = NULL;
    apr_dbd_row_t *row = NULL;
    const char *v;
    apr_status_t rv = src->open(&s, src->baton, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_select_one(&row, s, "bill_database_id", PROV_NOARGS, p);
    if (rv == APR_SUCCESS) {
        if ((v = prov_store_get(s, row, 0)) != NULL && *v)
            *id = apr_pstrdup(p, v);
        else
            rv = APR_EGENERAL;
    }
    src->close(s, src->baton);
    return rv;
}

typedef struct replay_ctx_t {
    const prov_store_source_t *src;
    int rows;                       /* of the journal being replayed */
    int progressed;                 /* ... of them, requests in flight at their progress */
} replay_ctx_t;

static apr_status_t replay_chunk(void *baton, const char *owner, const prov_journal_rec_t *recs,
                                 int n, int last, apr_pool_t *p)
{
    replay_ctx_t *x = baton;
    prov_op_t op;
    apr_status_t rv;
    memset(&op, 0, sizeof(op));
    op.kind = PROV_OP_REPLAY;
    op.p = p;
    op.now = 0;                      /* each record carries its own times */
    op.recs = recs;
    op.nrecs = n;
    op.owner = last ? owner : NULL;
    if ((rv = prov_queue_submit(&op, x->src, p)) != APR_SUCCESS)
        return rv;
    x->rows += op.swept;
    x->progressed += op.progressed;
    if (last) {
        if (x->rows || op.returned)
            prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00384: replayed the journal of "
                     "process %s, which died: %d settlement(s) written, %d lease(s) returned",
                     owner, x->rows, op.returned);
        if (x->progressed || op.floors)
            prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00386: process %s died under %d "
                     "request(s): %d charged what its journal last saw them deliver, %d the "
                     "estimate of their input (status estimated)", owner,
                     x->progressed + op.floors, x->progressed, op.floors);
        x->rows = x->progressed = 0;
    }
    return APR_SUCCESS;
}

apr_status_t prov_replay_journals_db(int *journals, const prov_store_source_t *src,
                                     const char *dir, const char *db_id, apr_pool_t *p)
{
    replay_ctx_t x;
    memset(&x, 0, sizeof(x));
    x.src = src;
    return prov_journal_recover(journals, dir, db_id, replay_chunk, &x, p);
}

apr_status_t prov_replay_journals(int *journals, const prov_store_source_t *src, const char *dir,
                                  apr_pool_t *p)
{
    const char *id = NULL;
    apr_status_t rv;
    if (journals)
        *journals = 0;
    if ((rv = prov_replay_database_id(&id, src, p)) != APR_SUCCESS)
        return rv;
    return prov_replay_journals_db(journals, src, dir, id, p);
}
