/* mod_provider_refusal.h: the API of mod_provider_refusal.c, the refusals
 * of a known key before its reservation, queued per child and written in
 * batches (core/store/prov_refusal.h) for GET /v1/requests. */
#ifndef MOD_PROVIDER_REFUSAL_H
#define MOD_PROVIDER_REFUSAL_H

#include "mod_provider.h"
#include "prov_account.h"

/* child_init: the child's queue and its writer thread (nothing without a
 * database). */
void provider_refusal_start(server_rec *s, apr_pool_t *pchild);
/* The key of r is known (auth, which lives as long as r): should r end with
 * an error of ours (4xx, the note provider-error) and no hold (the note
 * provider-hold), the refusal is queued as r's pool goes. *model is read
 * then: the model as the client sent it, once known (NULL: none). */
void provider_refusal_watch(request_rec *r, const prov_auth_t *auth, const char *transport,
                            const char *const *model);

#endif
