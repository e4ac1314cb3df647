/* prov_rollup.c: the rollup step, the retention's batches and the ledger's
 * status (prov_rollup.h). A step finds the ids it rolls up with a read
 * outside any transaction (the first row that stops it), then writes in one
 * short transaction that first re-reads last_id (locked on PostgreSQL) and
 * gives up if another child or node moved it meanwhile: the sums of those
 * rows added to their days, and the new last_id. The rows it rolls up are
 * settled and never change again, so the rollups equal the sum of the raw
 * rows they replace; a row written late with an old time (a lease's entry
 * written after midnight, a dead child's journal replayed) has a higher id
 * and is read raw until a later step adds it to its day. */
#include "prov_rollup.h"
#include "prov_log.h"

static apr_int64_t day_of(apr_int64_t t)
{
    return t - t % PROV_ROLLUP_DAY;
}

static apr_status_t read_last(apr_int64_t *last, prov_store_t *s, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "rollup_state", PROV_NOARGS, p);
    if (rv == APR_SUCCESS)
        *last = prov_store_get_i64(s, row, 0, 0);
    return rv;
}

/* The last id a step from last rolls up: before the first row still
 * reserved or created since cutoff, at most PROV_ROLLUP_CAP ids on. */
static apr_status_t step_end(apr_int64_t *hi, prov_store_t *s, apr_int64_t last,
                             apr_int64_t cutoff, apr_pool_t *p)
{
    apr_int64_t to = last + PROV_ROLLUP_CAP, max;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "rollup_stop",
                                            PROV_ARGS(prov_i64(last, p), prov_i64(to, p),
                                                      prov_i64(cutoff, p)), p);
    if (rv == APR_SUCCESS) {
        *hi = prov_store_get_i64(s, row, 0, last + 1) - 1;
        return APR_SUCCESS;
    }
    if (rv != APR_NOTFOUND
        || (rv = prov_store_select_one(&row, s, "rollup_max_id", PROV_NOARGS, p)) != APR_SUCCESS)
        return rv;
    max = prov_store_get_i64(s, row, 0, 0);
    *hi = max > to ? to : (max > last ? max : last);
    return APR_SUCCESS;
}

/* Rolls up (last, hi]: *moved 0 when another child or node stepped first. */
static apr_status_t step_write(int *moved, prov_store_t *s, apr_int64_t last, apr_int64_t hi,
                               apr_pool_t *p)
{
    apr_int64_t now_last = -1;
    apr_status_t rv = prov_store_begin(s, p);
    *moved = 0;
    if (rv != APR_SUCCESS)
        return rv;
    if ((rv = read_last(&now_last, s, p)) != APR_SUCCESS)
        goto fail;
    if (now_last != last) {
        prov_store_rollback(s, p);
        return APR_SUCCESS;
    }
    if ((rv = prov_store_exec(s, NULL, "rollup_add",
                              PROV_ARGS(prov_i64(last, p), prov_i64(hi, p)), p)) != APR_SUCCESS
        || (rv = prov_store_exec(s, NULL, "rollup_set", PROV_ARGS(prov_i64(hi, p)), p))
           != APR_SUCCESS)
        goto fail;
    if ((rv = prov_store_commit(s, p)) == APR_SUCCESS)
        *moved = 1;
    return rv;
fail:
    prov_store_rollback(s, p);
    return rv;
}

apr_status_t prov_rollup_step(apr_int64_t *rolled, prov_store_t *s, apr_int64_t now,
                              apr_pool_t *p)
{
    apr_int64_t last = 0, hi = 0;
    int moved = 0;
    apr_status_t rv;

    *rolled = 0;
    if ((rv = read_last(&last, s, p)) == APR_SUCCESS
        && (rv = step_end(&hi, s, last, day_of(now), p)) == APR_SUCCESS && hi > last
        && (rv = step_write(&moved, s, last, hi, p)) == APR_SUCCESS && moved)
        *rolled = hi - last;
    if (rv != APR_SUCCESS)
        prov_log(PROV_LOG_ERR, rv, "PROV00900: a step of the ledger's daily rollups failed "
                 "(it runs again later)");
    return rv;
}

apr_status_t prov_rollup_run(apr_int64_t *rolled, prov_store_t *s, apr_int64_t now, int steps,
                             apr_pool_t *p)
{
    apr_int64_t n = 0;
    apr_status_t rv = APR_SUCCESS;
    *rolled = 0;
    while (steps-- > 0 && (rv = prov_rollup_step(&n, s, now, p)) == APR_SUCCESS && n > 0)
        *rolled += n;
    return rv;
}

apr_int64_t prov_retention_cut(apr_int64_t now, int days)
{
    return days > 0 ? day_of(now) - (apr_int64_t)days * PROV_ROLLUP_DAY : 0;
}

int prov_compact_batch(const prov_store_t *s)
{
    return s->dialect == PROV_DIALECT_PGSQL ? PROV_COMPACT_BATCH_PGSQL : PROV_COMPACT_BATCH;
}

apr_status_t prov_rollup_compact(int *removed, prov_store_t *s, apr_int64_t before,
                                 apr_int64_t now, int batch, apr_pool_t *p)
{
    apr_status_t rv;
    *removed = 0;
    if (before > day_of(now) - PROV_RETENTION_MIN * PROV_ROLLUP_DAY || batch <= 0)
        return APR_EINVAL;
    rv = prov_store_exec(s, removed, "ledger_compact",
                         PROV_ARGS(apr_itoa(p, batch), prov_i64(before, p)), p);
    if (rv != APR_SUCCESS)
        prov_log(PROV_LOG_ERR, rv, "PROV00901: the removal of old ledger rows failed (it runs "
                 "again later)");
    return rv;
}

apr_status_t prov_ledger_status(prov_ledger_status_t *out, prov_store_t *s, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    prov_ledger_status_t st;
    apr_status_t rv = prov_store_select_one(&row, s, "ledger_status", PROV_NOARGS, p);
    if (rv != APR_SUCCESS)
        return rv;
    st.rows = prov_store_get_i64(s, row, 0, 0);
    st.oldest = prov_store_get_i64(s, row, 1, 0);
    st.last_id = prov_store_get_i64(s, row, 2, 0);
    st.pending = prov_store_get_i64(s, row, 3, 0);
    st.first_day = prov_store_get_i64(s, row, 4, -1);
    st.last_day = prov_store_get_i64(s, row, 5, -1);
    st.rollup_rows = prov_store_get_i64(s, row, 6, 0);
    if (st.last_day < 0)
        st.first_day = -1;
    st.db_bytes = -1;
    if (prov_store_select_one(&row, s, "db_size", PROV_NOARGS, p) == APR_SUCCESS)
        st.db_bytes = prov_store_get_i64(s, row, 0, -1);
    *out = st;
    return APR_SUCCESS;
}
