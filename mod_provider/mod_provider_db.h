/* mod_provider_db.h: the API of mod_provider_db.c, database connections
 * through mod_dbd: one per phase of a request, and the billing engine's
 * sources of connections. */
#ifndef MOD_PROVIDER_DB_H
#define MOD_PROVIDER_DB_H

#include "mod_provider.h"
#include "prov_error.h"
#include "prov_store.h"
#include "prov_billing.h"

/* A database connection for one phase of a request (released by
 * provider_db_close, or at the latest when r ends). NULL when the database or
 * its schema is not usable; the reason is logged. */
prov_store_t *provider_db_open(request_rec *r, prov_error_t **err);
void provider_db_close(request_rec *r, prov_store_t *store);
/* A billing source for r: connections opened (from r's pool) only when the
 * billing engine needs one for a batch this request's thread leads. */
prov_store_source_t *provider_request_source(request_rec *r);
/* A billing source for the server s itself, usable from any thread (the
 * billing writer's): the same channel as s's requests. */
prov_store_source_t *provider_server_source(server_rec *s, apr_pool_t *p);
/* Non-zero when mod_dbd is loaded (its connection functions are there). */
int provider_db_available(void);

#endif
