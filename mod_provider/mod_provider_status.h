/* mod_provider_status.h: the API of mod_provider_status.c, this process's
 * counters and their section of mod_status's /server-status. */
#ifndef MOD_PROVIDER_STATUS_H
#define MOD_PROVIDER_STATUS_H

#include "mod_provider.h"

/* Registers the section with mod_status (an optional hook: nothing when
 * mod_status is not loaded). */
void provider_status_hooks(apr_pool_t *p);
/* An inference request begins: counted, and in flight until r's pool goes. */
void provider_status_request(request_rec *r);
/* A hold taken: drawn from this process's lease (leased) or in the database. */
void provider_status_hold(int leased);
/* A stream to a client opens (delta 1) or ends (delta -1). */
void provider_status_stream(int delta);
/* This child started a billing writer thread (child_init). */
void provider_status_writer(void);

#endif
