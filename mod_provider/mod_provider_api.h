/* mod_provider_api.h: the API of mod_provider_api.c, the cabinet's JSON API
 * glue that the handlers of /v1/account and /v1/usage
 * (mod_provider_account.c), /v1/keys... (mod_provider_keys.c) and the
 * favorites under /v1/models/ (mod_provider_favorites.c) begin and end with.
 * Every request is a signed-in user's (mod_provider_session.c: the active
 * cookie, renewed from the refresh cookie when it has run out), every answer
 * is Cache-Control: no-store, a state-changing one must come from this site,
 * and core/cabinet does the work; these files speak HTTP for it. */
#ifndef MOD_PROVIDER_API_H
#define MOD_PROVIDER_API_H

#include "mod_provider.h"
#include "prov_error.h"
#include "prov_json.h"
#include "prov_session.h"
#include "prov_cabinet.h"

/* A cabinet API request under way. */
typedef struct provider_api_t {
    request_rec *r;
    prov_store_t *store;          /* open from begin until the answer */
    prov_session_t *sess;
} provider_api_t;

/* Checks the method (405 with Allow naming allowed otherwise; GET allows
 * HEAD), the site of a state-changing method (403 CROSS_SITE_REQUEST),
 * opens the database (503) and checks the session (401 NOT_SIGNED_IN).
 * PROVIDER_GO with api filled, or what the handler returns. */
provider_step_t provider_api_begin(provider_api_t *api, request_rec *r, int method,
                                   const char *allowed);
/* Reads the body (413 over PROV_CABINET_BODY_MAX, 400 when unreadable):
 * PROVIDER_GO, or answered. */
provider_step_t provider_api_body(provider_api_t *api, const char **body, apr_size_t *len);
/* Releases the database connection early (idempotent). */
void provider_api_close(provider_api_t *api);
/* Closes the database and answers: json with status (json NULL: 204). */
int provider_api_send(provider_api_t *api, int status, json_object *json);
/* Closes the database and answers the error code (its JSON shape). */
int provider_api_fail(provider_api_t *api, prov_errcode_e code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Closes the database and answers e (a 400 from core's checks). */
int provider_api_error(provider_api_t *api, const prov_error_t *e);
/* A core call's failure other than those the handler knows: 503 when the
 * database failed, logged with what. */
int provider_api_failed(provider_api_t *api, apr_status_t rv, const char *what);

#endif
