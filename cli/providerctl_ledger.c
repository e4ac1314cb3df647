/* providerctl_ledger.c: the `ledger` group: `ledger status` (raw rows, the
 * oldest, the daily rollups' coverage, the database's size) and `ledger
 * compact` (the server's retention run by hand to the end: the ledger rolled
 * up first, then the raw rows of rolled-up days before --before removed in
 * batches of PROV_COMPACT_BATCH, each its own short statement; never a date
 * within the last PROV_RETENTION_MIN days). core/store/prov_rollup.h says
 * what is kept. */
#include <stdio.h>
#include "providerctl.h"
#include "prov_rollup.h"

static const char *day_text(apr_int64_t day, apr_pool_t *p)
{
    const char *t = ctl_time(day, 1, p);
    return day >= 0 && t ? apr_pstrndup(p, t, 10) : NULL;
}

static void status_json(const prov_ledger_status_t *st, apr_pool_t *p)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "rows", json_object_new_int64(st->rows));
    json_object_object_add(o, "oldest", ctl_json_time(st->oldest));
    json_object_object_add(o, "rolled_first_day", ctl_json_str(day_text(st->first_day, p)));
    json_object_object_add(o, "rolled_last_day", ctl_json_str(day_text(st->last_day, p)));
    json_object_object_add(o, "rolled_last_id", json_object_new_int64(st->last_id));
    json_object_object_add(o, "rows_not_rolled", json_object_new_int64(st->pending));
    json_object_object_add(o, "rollup_rows", json_object_new_int64(st->rollup_rows));
    json_object_object_add(o, "database_bytes",
                           st->db_bytes >= 0 ? json_object_new_int64(st->db_bytes) : NULL);
    ctl_json_print(o);
}

static int ledger_status(ctl_t *ctl)
{
    prov_ledger_status_t st;
    apr_pool_t *p = ctl->pool;
    apr_status_t rv = prov_ledger_status(&st, ctl->store, p);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the ledger's status");
    if (ctl->json) {
        status_json(&st, p);
        return CTL_OK;
    }
    ctl_kv("raw rows:", prov_i64(st.rows, p));
    ctl_kv("oldest row:", ctl_time(st.oldest, 0, p));
    ctl_kv("rolled days:", st.last_day >= 0 ? apr_psprintf(p, "%s to %s",
           day_text(st.first_day, p), day_text(st.last_day, p)) : "none");
    ctl_kv("rolled up to:", apr_psprintf(p, "ledger id %" APR_INT64_T_FMT " (%" APR_INT64_T_FMT
                                         " row(s) after it)", st.last_id, st.pending));
    ctl_kv("rollup rows:", prov_i64(st.rollup_rows, p));
    ctl_kv("database size:", st.db_bytes >= 0 ? apr_psprintf(p, "%" APR_INT64_T_FMT
                                                             " bytes", st.db_bytes) : "-");
    return CTL_OK;
}

static int ledger_compact(ctl_t *ctl)
{
    apr_int64_t now = prov_now(), rolled = 0, r = 0, before = 0;
    apr_int64_t removed = 0;
    apr_status_t rv;
    int rc, n = 0;

    if ((rc = ctl_parse_retention(ctl, &before, now, "the rolling 7-day window and the "
                                  "weekly budgets still read those rows")) != CTL_OK)
        return rc;
    do {
        rv = prov_rollup_run(&r, ctl->store, now, 1000, ctl->pool);
        rolled += r;
    } while (rv == APR_SUCCESS && r >= (apr_int64_t)1000 * PROV_ROLLUP_CAP);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "roll the ledger up");
    do {
        if ((rv = prov_rollup_compact(&n, ctl->store, before, now,
                                      prov_compact_batch(ctl->store), ctl->pool)) != APR_SUCCESS)
            return ctl_db_fail(ctl, rv, "remove old ledger rows");
        removed += n;
    } while (n > 0);
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "before", ctl_json_time(before));
        json_object_object_add(o, "rolled_ids", json_object_new_int64(rolled));
        json_object_object_add(o, "removed", json_object_new_int64(removed));
        ctl_json_print(o);
    }
    else
        printf("rolled up %" APR_INT64_T_FMT " ledger id(s); removed %" APR_INT64_T_FMT
               " raw row(s) created before %s\n", rolled, removed, ctl_time(before, 1, ctl->pool));
    return CTL_OK;
}

static const ctl_opt_t compact_opts[] = {
    { "before", "DATE", 0, "remove rows created before DATE (default: 400 days ago; never "
      "within the last 8 days)" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_ledger_cmds[] = {
    { "status", "", 0, 0, NULL, CTL_DB_READY, ledger_status,
      "show raw ledger rows, the oldest, the daily rollups' coverage and the database size",
      NULL },
    { "compact", "", 0, 0, compact_opts, CTL_DB_READY, ledger_compact,
      "roll the ledger up, then remove raw rows of rolled-up days before a date",
      "Rolls every closed day of the ledger up into daily usage (the reports read\n"
      "it), then removes the raw ledger rows of rolled-up days created before DATE,\n"
      "1,000 rows a statement, as the server's ProviderLedgerRetention does. A row\n"
      "still held, or of a day not rolled up, is kept; DATE may not be within the\n"
      "last 8 days (the rolling windows and weekly budgets read them)." },
    { NULL }
};
