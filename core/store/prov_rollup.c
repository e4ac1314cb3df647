/* prov_rollup.c: the rollup step, the retention's batches and the ledger's
 * status (prov_rollup.h). A step finds what it rolls up with reads outside
 * any transaction (the first row that stops it, the oldest row left after
 * it), then writes in one short transaction that first re-reads the state
 * (locked on PostgreSQL) and gives up if another child or node moved it
 * meanwhile: the sums of at most PROV_ROLLUP_CAP ids added to their days,
 * and the new state. The rows it rolls up are settled and never change
 * again, so a rollup equals the sum of its raw rows; a row written late
 * with an old time (a dead child's journal replayed after a long outage)
 * moves rolled_until back at the next step, and the reports read that
 * day's raw rows again. */
#include "prov_rollup.h"
#include "prov_log.h"

static apr_int64_t day_of(apr_int64_t t)
{
    return t - t % PROV_ROLLUP_DAY;
}

static apr_status_t read_state(prov_rollup_state_t *st, prov_store_t *s, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "rollup_state", PROV_NOARGS, p);
    if (rv != APR_SUCCESS)
        return rv;
    st->last_id = prov_store_get_i64(s, row, 0, 0);
    st->rolled_until = prov_store_get_i64(s, row, 1, 0);
    return APR_SUCCESS;
}

/* The last id a step from st rolls up (*capped when the cap stopped it). */
static apr_status_t step_end(apr_int64_t *hi, int *capped, prov_store_t *s,
                             const prov_rollup_state_t *st, apr_int64_t cutoff, apr_pool_t *p)
{
    apr_int64_t to = st->last_id + PROV_ROLLUP_CAP, max;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "rollup_stop",
                                            PROV_ARGS(prov_i64(st->last_id, p), prov_i64(to, p),
                                                      prov_i64(cutoff, p)), p);
    *capped = 0;
    if (rv == APR_SUCCESS) {
        *hi = prov_store_get_i64(s, row, 0, st->last_id + 1) - 1;
        return APR_SUCCESS;
    }
    if (rv != APR_NOTFOUND
        || (rv = prov_store_select_one(&row, s, "rollup_max_id", PROV_NOARGS, p)) != APR_SUCCESS)
        return rv;
    max = prov_store_get_i64(s, row, 0, 0);
    *capped = max > to;
    *hi = max > to ? to : (max > st->last_id ? max : st->last_id);
    return APR_SUCCESS;
}

/* rolled_until after a step that rolled up to hi: the day of the oldest row
 * after hi, or the cutoff; unchanged when the cap stopped the step (the
 * rows after hi are old ones: what was rolled up before stays so). */
static apr_status_t step_until(apr_int64_t *until, prov_store_t *s, apr_int64_t hi,
                               apr_int64_t cutoff, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "rollup_pending",
                                            PROV_ARGS(prov_i64(hi, p), prov_i64(cutoff, p)), p);
    apr_int64_t oldest;
    if (rv != APR_SUCCESS)
        return rv;
    oldest = prov_store_get_i64(s, row, 0, cutoff);
    *until = day_of(oldest < cutoff ? oldest : cutoff);
    return APR_SUCCESS;
}

static apr_status_t step_write(int *moved, prov_store_t *s, const prov_rollup_state_t *seen,
                               const prov_rollup_state_t *next, apr_pool_t *p)
{
    prov_rollup_state_t now;
    apr_status_t rv = prov_store_begin(s, p);
    *moved = 0;
    if (rv != APR_SUCCESS)
        return rv;
    if ((rv = read_state(&now, s, p)) != APR_SUCCESS)
        goto fail;
    if (now.last_id != seen->last_id || now.rolled_until != seen->rolled_until) {
        prov_store_rollback(s, p);      /* another child or node stepped meanwhile */
        return APR_SUCCESS;
    }
    if (next->last_id > seen->last_id
        && (rv = prov_store_exec(s, NULL, "rollup_add",
                                 PROV_ARGS(prov_i64(seen->last_id, p),
                                           prov_i64(next->last_id, p)), p)) != APR_SUCCESS)
        goto fail;
    if ((rv = prov_store_exec(s, NULL, "rollup_set",
                              PROV_ARGS(prov_i64(next->last_id, p),
                                        prov_i64(next->rolled_until, p)), p)) != APR_SUCCESS)
        goto fail;
    if ((rv = prov_store_commit(s, p)) == APR_SUCCESS)
        *moved = 1;
    return rv;
fail:
    prov_store_rollback(s, p);
    return rv;
}

apr_status_t prov_rollup_step(apr_int64_t *rolled, prov_rollup_state_t *out, prov_store_t *s,
                              apr_int64_t now, apr_int64_t grace, apr_pool_t *p)
{
    apr_int64_t cutoff = day_of(now - (grace > PROV_ROLLUP_GRACE ? grace : PROV_ROLLUP_GRACE));
    prov_rollup_state_t seen, next;
    int capped = 0, moved = 0;
    apr_status_t rv;

    *rolled = 0;
    if ((rv = read_state(&seen, s, p)) != APR_SUCCESS
        || (rv = step_end(&next.last_id, &capped, s, &seen, cutoff, p)) != APR_SUCCESS)
        goto done;
    next.rolled_until = seen.rolled_until;
    if (!capped && (rv = step_until(&next.rolled_until, s, next.last_id, cutoff, p))
                   != APR_SUCCESS)
        goto done;
    if (next.last_id == seen.last_id && next.rolled_until == seen.rolled_until) {
        *out = seen;
        return APR_SUCCESS;
    }
    if ((rv = step_write(&moved, s, &seen, &next, p)) == APR_SUCCESS) {
        *rolled = moved ? next.last_id - seen.last_id : 0;
        *out = moved ? next : seen;
    }
done:
    if (rv != APR_SUCCESS)
        prov_log(PROV_LOG_ERR, rv, "PROV00900: a step of the ledger's daily rollups failed "
                 "(it runs again later)");
    return rv;
}

apr_status_t prov_rollup_run(apr_int64_t *rolled, prov_store_t *s, apr_int64_t now,
                             apr_int64_t grace, int steps, apr_pool_t *p)
{
    prov_rollup_state_t st;
    apr_int64_t n = 0;
    apr_status_t rv = APR_SUCCESS;
    *rolled = 0;
    while (steps-- > 0 && (rv = prov_rollup_step(&n, &st, s, now, grace, p)) == APR_SUCCESS
           && n > 0)
        *rolled += n;
    return rv;
}

apr_int64_t prov_retention_cut(apr_int64_t now, int days)
{
    return days > 0 ? day_of(now) - (apr_int64_t)days * PROV_ROLLUP_DAY : 0;
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
    st.state.last_id = prov_store_get_i64(s, row, 2, 0);
    st.state.rolled_until = prov_store_get_i64(s, row, 3, 0);
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
