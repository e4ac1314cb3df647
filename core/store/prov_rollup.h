/* prov_rollup.h: the ledger's daily rollups and its retention (migration
 * 012; docs/internals/billing.md, "Rollups and retention"). A step adds the
 * settled ledger rows after ledger_rollup_state.last_id, in id order, to
 * ledger_rollup (one row per UTC day, user, key, model and transport) and
 * moves last_id past them, in one transaction: the rollups always hold
 * exactly the rows up to last_id. It stops at the first row still reserved
 * (its figures may change) or created today (today is read raw), and after
 * PROV_ROLLUP_CAP ids. The reports (prov_usage.c) sum the rollups of whole
 * days and the raw rows after last_id, so that they always give the raw
 * rows' totals. Retention removes raw rows older than a number of days
 * (never fewer than PROV_RETENTION_MIN), only rolled-up ones, a batch at a
 * time, each batch its own short statement. The server runs both in the
 * purge thread (mod_provider_purge.c); providerctl ledger compact and
 * status by hand. */
#ifndef PROV_ROLLUP_H
#define PROV_ROLLUP_H

#include "prov_store.h"

#define PROV_ROLLUP_DAY 86400
#define PROV_ROLLUP_CAP 2500          /* ledger ids one step rolls up (its write
                                       * transaction stays ~10-16 ms) */
#define PROV_RETENTION_MIN 8          /* days: the 7-day window and budgets, and a day */
#define PROV_RETENTION_DEFAULT 400    /* days (ProviderLedgerRetention) */
#define PROV_COMPACT_BATCH 100        /* rows a compaction statement removes
                                       * on SQLite (~10 ms: each row is in
                                       * several indexes; the paid path's
                                       * writers wait for it) */
#define PROV_COMPACT_BATCH_PGSQL 1000 /* on PostgreSQL, where it holds up no
                                       * writer (the statement's cost counts) */

/* One step at now: *rolled the ledger ids it passed (0: nothing to do). */
apr_status_t prov_rollup_step(apr_int64_t *rolled, prov_store_t *s, apr_int64_t now,
                              apr_pool_t *p);
/* Steps until nothing is left (at most steps of them): the ids rolled. */
apr_status_t prov_rollup_run(apr_int64_t *rolled, prov_store_t *s, apr_int64_t now, int steps,
                             apr_pool_t *p);

/* The first time retention keeps at now with days of it (0: none kept back,
 * 0 returned: keep for ever). */
apr_int64_t prov_retention_cut(apr_int64_t now, int days);
/* The rows one compaction statement removes on s's database. */
int prov_compact_batch(const prov_store_t *s);
/* One compaction batch: removes at most batch raw rows created before
 * before (and rolled up); *removed says how many. APR_EINVAL when before
 * is within PROV_RETENTION_MIN days of now. */
apr_status_t prov_rollup_compact(int *removed, prov_store_t *s, apr_int64_t before,
                                 apr_int64_t now, int batch, apr_pool_t *p);

typedef struct prov_ledger_status_t {
    apr_int64_t rows;                 /* raw ledger rows */
    apr_int64_t oldest;               /* the first row's created_at (0: none) */
    apr_int64_t last_id;              /* the last ledger id rolled up */
    apr_int64_t pending;              /* raw rows after it */
    apr_int64_t first_day, last_day;  /* days in the rollups (-1: none) */
    apr_int64_t rollup_rows;
    apr_int64_t db_bytes;             /* the database's size (-1: unknown) */
} prov_ledger_status_t;

apr_status_t prov_ledger_status(prov_ledger_status_t *out, prov_store_t *s, apr_pool_t *p);

#endif
