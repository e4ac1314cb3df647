/* mod_provider_keyctl.h: the API of mod_provider_keyctl.c, an API key's
 * own controls on the inference path (core/account/prov_key_controls.h):
 * expiry, client addresses, request rate and requests in flight right after
 * the key, the model list when the model is known. A refusal comes back as
 * the error to answer in the transport's shape (Retry-After in it for the
 * 429s); NULL lets the request go on. */
#ifndef MOD_PROVIDER_KEYCTL_H
#define MOD_PROVIDER_KEYCTL_H

#include "mod_provider.h"
#include "prov_account.h"
#include "prov_error.h"

/* A request's place among its key's requests in flight. */
typedef struct provider_keyctl_slot_t provider_keyctl_slot_t;

/* Registers its hooks (the mutex type, the table in shared memory, each
 * child's mutex). */
void provider_keyctl_hooks(apr_pool_t *p);
/* The key a's expiry, r's client address (r->useragent_ip, as mod_remoteip
 * sets it), then its rate and its requests in flight: NULL to go on (with
 * *slot the in-flight count taken, or NULL), else the refusal. The count
 * is given back by provider_keyctl_release or, at the latest, when r's
 * pool goes. A key without controls costs one test. */
prov_error_t *provider_keyctl_admit(provider_keyctl_slot_t **slot, request_rec *r,
                                    const prov_auth_t *a);
/* NULL when a may use the model public_id, else the 403 MODEL_NOT_ALLOWED. */
prov_error_t *provider_keyctl_model(request_rec *r, const prov_auth_t *a,
                                    const char *public_id);
/* Gives the in-flight count back (idempotent; NULL: nothing). */
void provider_keyctl_release(provider_keyctl_slot_t *slot);

#endif
