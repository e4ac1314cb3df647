/* prov_batch_int.h: what the files of the batch writer share (not for the
 * layers above: they see prov_batch.h). One batch's books: the accounts,
 * keys and models it has read, with its own holds added to their windows
 * and balances, and the bucket and balance changes it writes once at the
 * end. The files, bottom up: prov_batch_books.c (reading the books, adding
 * to them, writing them, settling a row); prov_batch_reserve.c (checking
 * and holding a reservation); prov_batch_lease.c (a lease's rows: writing
 * what was drawn, renewing, granting, returning); prov_batch_expire.c
 * (holds given back without their request: expiry, a dead process's
 * journal, by hand); prov_batch.c (the batch: its order of work and its
 * transaction). Each calls only the files before it. */
#ifndef PROV_BATCH_INT_H
#define PROV_BATCH_INT_H

#include "prov_batch.h"
#include "prov_window.h"

typedef struct acct_t {
    apr_int64_t user_id;
    int loaded;                     /* balance and plan read in this batch */
    int blocked;
    prov_micro_t balance;           /* including this batch's holds */
    prov_plan_windows_t plan;
    prov_window_t w5, w7;           /* including this batch's plan holds */
} acct_t;

typedef struct keyw_t {
    prov_window_t w;                /* including this batch's holds */
    const char *hash;               /* the key as the database has it now */
    int live;
    int has_budget;
    prov_micro_t budget;
} keyw_t;

typedef struct batch_t {
    prov_store_t *s;
    apr_pool_t *p;
    apr_int64_t now;
    apr_hash_t *accts;              /* user id -> acct_t */
    apr_hash_t *keys;               /* key id -> keyw_t */
    apr_hash_t *models;             /* model id -> int enabled */
    apr_hash_t *deltas;             /* (scope, id, bucket) -> prov_bucket_delta_t */
    apr_hash_t *balances;           /* user id -> prov_micro_t* delta */
} batch_t;

/* ---- prov_batch_books.c ---------------------------------------------------- */

/* One request's usage (credits, plan: funded by the plan, requests: rows
 * counted) at the buckets of time at, the time its hold was taken. */
void prov_batch_usage(batch_t *b, apr_int64_t user_id, apr_int64_t key_id, apr_int64_t at,
                      prov_micro_t credits, int plan, int requests);
/* Adds amount to user's balance (written by prov_batch_flush). */
void prov_batch_balance(batch_t *b, apr_int64_t user_id, prov_micro_t amount);
/* Writes the bucket and balance changes summed so far, and starts anew. */
apr_status_t prov_batch_flush(batch_t *b);
/* Completes r's reserved row with tokens t, charge and status at b->now,
 * and gives back hold - charge. A row the sweep expired meanwhile (its hold
 * given back) is completed too, its whole charge applied as a charge
 * (PROV00058). *moved: 0 when the row was neither (settled or released
 * before: nothing moved), so that a settlement lands exactly once. */
apr_status_t prov_batch_settle(batch_t *b, const prov_reservation_t *r, const prov_tokens_t *t,
                               prov_micro_t charge, prov_status_e status, int *moved);
/* Gives r's reserved row back with status and no charge (an expiry, a hold
 * released by hand); *moved: 0 when it was no longer reserved. */
apr_status_t prov_batch_release_row(batch_t *b, const prov_reservation_t *r, prov_status_e status,
                                    int *moved);
/* The account (balance, blocked, plan windows), key (secret, budget, week)
 * and model (enabled) as this batch sees them, read once per batch. */
apr_status_t prov_batch_account(acct_t **pa, batch_t *b, apr_int64_t user_id);
apr_status_t prov_batch_key(keyw_t **pk, batch_t *b, apr_int64_t key_id);
apr_status_t prov_batch_model(int *enabled, batch_t *b, apr_int64_t model_id);
/* The ledger's and leases' source column: "plan" or "balance". */
const char *prov_batch_source(int from_plan);

/* ---- prov_batch_reserve.c -------------------------------------------------- */

/* Checks op (a reservation) against the books and holds it: op->out, or
 * op->err (a refusal), or op->retry (refused while this process holds a
 * lease of the account: asked again once it is returned). */
apr_status_t prov_batch_reserve(batch_t *b, prov_op_t *op);

/* ---- prov_batch_lease.c ---------------------------------------------------- */

/* Writes the entries a slot handed over and returns its lease (w->closing),
 * or takes what they hold out of it (a kept lease). */
apr_status_t prov_batch_lease_write(batch_t *b, prov_slot_t *w);
/* A kept lease after the batch's reservations: written with what is left,
 * checked again and topped up when due (w->renew). */
apr_status_t prov_batch_lease_keep(batch_t *b, prov_slot_t *w);
/* Grants a reserved op a lease (op->granted) when the limits have room. */
apr_status_t prov_batch_lease_grant(batch_t *b, prov_op_t *op);
/* Returns the leases that label (one argument, arg) selects; *count counts
 * them. */
apr_status_t prov_batch_lease_release(batch_t *b, const char *label, const char *arg,
                                      int *count);
/* Returns the leases not renewed for hold_timeout. */
apr_status_t prov_batch_lease_sweep(batch_t *b, apr_int64_t hold_timeout);

/* ---- prov_batch_expire.c --------------------------------------------------- */

/* Releases the holds older than hold_timeout (PROV_STATUS_EXPIRED). */
apr_status_t prov_batch_sweep(batch_t *b, apr_int64_t hold_timeout, int *count);
/* A dead process's journal records, each settlement once, then its leases. */
apr_status_t prov_batch_replay(batch_t *b, prov_op_t *op);
/* One hold or lease given back by hand. */
apr_status_t prov_batch_drop(batch_t *b, prov_op_t *op);

#endif
