/* prov_store_source.h: where a thread gets a database connection when it
 * needs one for a while (the billing engine, when it leads a batch): a
 * table of two functions and a baton, one channel per database. The module
 * makes its sources over mod_dbd (mod_provider_db.c); providerctl, the unit
 * tests and bench use a fixed one over a connection they opened. */
#ifndef PROV_STORE_SOURCE_H
#define PROV_STORE_SOURCE_H

#include "prov_store.h"

/* Where the engine gets a database connection when a thread leads a batch. */
typedef struct prov_store_source_t {
    apr_status_t (*open)(prov_store_t **s, void *baton, apr_pool_t *p);
    void (*close)(prov_store_t *s, void *baton);
    void *baton;
    /* Which database the source opens: operations queue and batch per
     * channel, so a batch never carries an operation to another database
     * (two virtual hosts with their own DBDParams). NULL is a channel too. */
    const void *channel;
} prov_store_source_t;

/* A source that always hands out s (providerctl, unit tests), to one
 * thread at a time: from its open to its close, another thread's open
 * waits (a writer thread's batch and the caller's reads share s). */
prov_store_source_t *prov_store_source_fixed(prov_store_t *s, apr_pool_t *p);

#endif
