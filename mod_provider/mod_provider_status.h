/* mod_provider_status.h: the API of mod_provider_status.c, what the
 * inference path counts into the server's shared counters, and their
 * section of mod_status's /server-status. */
#ifndef MOD_PROVIDER_STATUS_H
#define MOD_PROVIDER_STATUS_H

#include "mod_provider.h"
#include "prov_common.h"

/* Registers the section with mod_status (an optional hook: nothing when
 * mod_status is not loaded). */
void provider_status_hooks(apr_pool_t *p);
/* An inference request of transport (the ledger's name) begins: counted,
 * in flight until r's pool goes, then counted by model, status and the
 * check that refused it. */
void provider_status_request(request_rec *r, const char *transport);
/* A hold of amount micro-credits taken: drawn from this process's lease
 * (leased) or in the database; in flight until r's pool goes. */
void provider_status_hold(request_rec *r, int leased, apr_int64_t amount);
/* A settlement committed: charge micro-credits to the plan (from_plan) or
 * the balance, for tokens t. */
void provider_status_charge(int from_plan, apr_int64_t charge, const prov_tokens_t *t);
/* A stream to a client opens (delta 1) or ends (delta -1). */
void provider_status_stream(int delta);
/* This child started a billing writer thread (child_init); it counts
 * until pchild goes. */
void provider_status_writer(apr_pool_t *pchild);

#endif
