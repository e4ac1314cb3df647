/* prov_refusal.h: the refusals of a known key before its reservation (402,
 * 429, 404, 403, 401 of an expired key, ...), kept so that GET /v1/requests
 * can list them beside the ledger (migration 018). A refusal never costs a
 * write of its own: each process queues them in memory (prov_refusals_t),
 * folding those of one key and error code within one second into one row
 * with a count, up to a fixed number of rows (the rest is counted as
 * dropped), and a writer writes the queue in one transaction a second. */
#ifndef PROV_REFUSAL_H
#define PROV_REFUSAL_H

#include "prov_common.h"
#include "prov_store.h"

#define PROV_REFUSALS_CAP 64            /* rows queued (one batch) at most */
#define PROV_REFUSAL_RETENTION_DAYS 30  /* or ProviderLedgerRetention when shorter */

typedef struct prov_refusal_t {
    const void *where;                  /* the server whose database gets it (opaque) */
    apr_int64_t created_at;             /* seconds */
    apr_int64_t user_id, key_id;
    apr_int64_t count;                  /* refusals folded into the row (>= 1) */
    int http_status;
    char transport[16];
    char code[48];                      /* the wire error code */
    char model[96];                     /* as the client sent it, cut; "" unknown */
    char request_id[64];                /* the first one's x-request-id */
    apr_int64_t gen;                    /* the queue's take it was queued in */
} prov_refusal_t;

typedef struct prov_refusals_t prov_refusals_t;

/* A queue of at most cap (1..PROV_REFUSALS_CAP) rows, with its own mutex,
 * living as long as p. */
apr_status_t prov_refusals_create(prov_refusals_t **q, int cap, apr_pool_t *p);
/* Fills r from the refusal's fields (strings cut to their fields, NULL as
 * ""); count 1. */
void prov_refusal_make(prov_refusal_t *r, const void *where, apr_int64_t at,
                       apr_int64_t user_id, apr_int64_t key_id, int http_status,
                       const char *transport, const char *code, const char *model,
                       const char *request_id);
/* Queues r: folded into the queued row of the same where, key, code and
 * second (1), queued as a row of its own (2), or dropped and counted
 * because the queue is full (0). */
int prov_refusals_add(prov_refusals_t *q, const prov_refusal_t *r);
/* Moves the queued rows into out (room for the queue's cap): their number;
 * *dropped the refusals dropped since the last take. A row of the second
 * now is kept for the next take (more of its second fold into it), unless
 * an earlier take kept it already (a clock that stands still): so a second
 * makes one row, written within about two takes. */
int prov_refusals_take(prov_refusals_t *q, prov_refusal_t *out, apr_int64_t now,
                       apr_int64_t *dropped);
/* Writes n rows in one transaction. */
apr_status_t prov_refusals_write(prov_store_t *s, const prov_refusal_t *rows, int n,
                                 apr_pool_t *p);
/* Removes at most batch rows older than before: *removed. */
apr_status_t prov_refusals_purge(int *removed, prov_store_t *s, apr_int64_t before, int batch,
                                 apr_pool_t *p);
/* The oldest time kept: PROV_REFUSAL_RETENTION_DAYS, or retention_days
 * (ProviderLedgerRetention, 0 = for ever) when shorter. */
apr_int64_t prov_refusals_cut(apr_int64_t now, int retention_days);

#endif
