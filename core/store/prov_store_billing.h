/* prov_store_billing.h: the billing engine's writes that are not one
 * labelled statement, and so need SQL built at run time or a dialect
 * branch: the transaction's start with the account row locks, every usage
 * bucket a batch changes in one upsert, every balance in one update, and
 * complete ledger rows in one insert. On PostgreSQL, where each round trip
 * counts, the writes are deferred (prov_store_defer) and so share the
 * string of the batch's next statement, the last ones its COMMIT's. The
 * engine (core/billing) calls these and holds no SQL text of its own; its
 * single statements are labels of the statement table (prov_sql.c). */
#ifndef PROV_STORE_BILLING_H
#define PROV_STORE_BILLING_H

#include "prov_store.h"
#include "prov_ledger.h"

/* What one batch adds to one usage bucket. */
typedef struct prov_bucket_delta_t {
    const char *scope;              /* "key:h", "user:h", "user:m" */
    apr_int64_t id, bucket;
    prov_micro_t credits, plan;     /* credits, and of them funded by the plan */
    apr_int64_t requests;
} prov_bucket_delta_t;


/* Adds the n deltas to their buckets (made when missing) in one statement
 * (PostgreSQL: deferred); each bucket appears once in d, as ON CONFLICT
 * needs. n 0: nothing. */
apr_status_t prov_store_bill_buckets_add(prov_store_t *s, const prov_bucket_delta_t *d, int n,
                                         apr_pool_t *p);
/* Adds amounts[i] to the balance of user ids[i], each id once: PostgreSQL
 * one deferred statement, SQLite one prepared statement a user. */
apr_status_t prov_store_bill_balances_add(prov_store_t *s, const apr_int64_t *ids,
                                          const prov_micro_t *amounts, int n, apr_pool_t *p);
/* Inserts the n rows, in order, written whole (a request drawn from a
 * lease and settled before its row was written): PostgreSQL one deferred statement (the
 * columns as arrays, unnested); SQLite one prepared statement a row
 * (no round trips, and cheaper than parsing a long one). */
apr_status_t prov_store_bill_ledger_insert(prov_store_t *s, const prov_ledger_row_t *rows, int n,
                                           apr_pool_t *p);
/* Begins a billing transaction holding the accounts ids (n of them, any
 * order, repeats allowed) until it ends: on PostgreSQL their rows are
 * locked in id order, so that the batches of different processes or nodes
 * queue instead of deadlocking, by one SELECT sent with the BEGIN (one
 * round trip); SQLite: prov_store_begin (BEGIN IMMEDIATE holds the whole
 * database). ids may be reordered. */
apr_status_t prov_store_bill_begin(prov_store_t *s, apr_int64_t *ids, int n, apr_pool_t *p);

#endif
