/* prov_purge.h: the removal of what anonymous and finished flows leave in
 * the database: pre-login records past their ten minutes, sessions past
 * their refresh term (or revoked a day ago), OAuth codes a day past their
 * expiry, tokens a day past their expiry or revocation (or their grant's),
 * grants a day old with no token left, and registered clients a day old
 * with no grant and no code (never used, or every grant over). A round
 * removes at most batch rows of each table, one short statement each, so
 * that it never holds the database long (SQLite: one writer at a time);
 * the server runs one round every ProviderPurgeInterval in one child
 * (mod_provider_purge.c), again at once while a table had a full batch,
 * and `providerctl oauth purge` runs rounds until nothing is left. What is
 * live is never touched: a record before its expiry, a session in its
 * term, a grant with a token, a client with a grant or a code. */
#ifndef PROV_PURGE_H
#define PROV_PURGE_H

#include "prov_store.h"

#define PROV_PURGE_GRACE 86400       /* a day: what ended is kept that long */
#define PROV_PURGE_BATCH 200         /* rows of one table in one statement */

/* The rows a round removed, table by table. */
typedef struct prov_purge_counts_t {
    int signin_states;
    int sessions;
    int codes;
    int tokens;
    int grants;
    int clients;
} prov_purge_counts_t;

/* One round at now (seconds) of at most batch rows a table; *out holds
 * what it removed (also on failure: what came before it). */
apr_status_t prov_purge_round(prov_purge_counts_t *out, prov_store_t *s, apr_int64_t now,
                              int batch, apr_pool_t *p);
/* Non-zero when a table had a full batch (more may be left). */
int prov_purge_more(const prov_purge_counts_t *c, int batch);
/* The sum of c's counts. */
int prov_purge_total(const prov_purge_counts_t *c);
/* Adds c to sum. */
void prov_purge_add(prov_purge_counts_t *sum, const prov_purge_counts_t *c);

#endif
