/* mod_provider_audit.h: the API of mod_provider_audit.c: the audit rows of
 * the glue's changes (core/store/prov_audit.h) with the request's client
 * address, and the cabinet's GET /v1/account/activity. */
#ifndef MOD_PROVIDER_AUDIT_H
#define MOD_PROVIDER_AUDIT_H

#include "mod_provider.h"
#include "prov_audit.h"

/* Fills *a for a change by actor (user: actor_id is user_id's) concerning
 * user_id (0: none known), from r's client address as mod_remoteip sets
 * it; the caller adds the target and the detail. */
void provider_audit_init(prov_audit_t *a, request_rec *r, prov_audit_actor_e actor,
                         apr_int64_t user_id, const char *action);
/* The same for a change by the signed-in user user_id on a target. */
void provider_audit_user(prov_audit_t *a, request_rec *r, apr_int64_t user_id,
                         const char *action, const char *target_kind, const char *target_id);
/* Writes a sign-in refusal's row on a connection of its own (the callers
 * hold none, or one they keep): provider (the identity provider's name)
 * and reason (a word, never the provider's own text). */
void provider_audit_signin_refused(request_rec *r, const char *provider, const char *reason);
/* GET /v1/account/activity?limit=N&before=ID */
int provider_activity_handler(request_rec *r);

#endif
