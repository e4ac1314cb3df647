/* mod_provider_favorites.c: a signed-in user's favorite models (the
 * spec's paths): GET /v1/models/favorites (their catalog entries, exactly
 * as GET /v1/models renders them: only models enabled and offered by the
 * gateway now), PUT and DELETE /v1/models/{publicId}/favorite (204, both
 * idempotent; 404 MODEL_NOT_FOUND for a model the catalog does not have).
 * A public id may itself hold a '/', so the id is what lies between
 * "/v1/models/" and the final "/favorite"; any other /v1/models/{id} is the
 * model itself (mod_provider_models.c). */
#include <string.h>
#include "mod_provider_api.h"
#include "mod_provider_http.h"
#include "mod_provider_models.h"
#include "mod_provider_favorites.h"
#include "prov_models.h"

APLOG_USE_MODULE(provider);

#define SUFFIX "/favorite"

static int favorites_list(request_rec *r)
{
    provider_api_t api;
    apr_array_header_t *models = NULL;
    apr_status_t rv;
    provider_step_t st = provider_api_begin(&api, r, M_GET, "GET, HEAD");
    if (st != PROVIDER_GO)
        return st;
    rv = prov_favorite_list(&models, api.store, api.sess->user_id, 1, r->pool);
    if (rv != APR_SUCCESS)
        return provider_api_failed(&api, rv, "reading the favorites");
    provider_api_close(&api);
    return provider_catalog_send(r, models);
}

static int favorite_change(request_rec *r, const char *public_id)
{
    provider_api_t api;
    int put = r->method_number == M_PUT;
    apr_status_t rv;
    provider_step_t st = provider_api_begin(&api, r, put ? M_PUT : M_DELETE, "PUT, DELETE");
    if (st != PROVIDER_GO)
        return st;
    rv = put ? prov_favorite_add(api.store, api.sess->user_id, public_id, r->pool)
             : prov_favorite_remove(api.store, api.sess->user_id, public_id, r->pool);
    if (APR_STATUS_IS_NOTFOUND(rv))
        return provider_api_fail(&api, PROV_E_MODEL_NOT_FOUND, "The model does not exist "
                                 "or is not available; GET /v1/models lists the models.");
    if (rv != APR_SUCCESS)
        return provider_api_failed(&api, rv, "changing a favorite");
    return provider_api_send(&api, HTTP_NO_CONTENT, NULL);
}

int provider_favorites_handler(request_rec *r)
{
    const char *rest = r->uri + strlen("/v1/models/");
    apr_size_t n = strlen(rest), k = strlen(SUFFIX);
    if (!strcmp(rest, "favorites"))
        return favorites_list(r);
    if (n > k && !strcmp(rest + n - k, SUFFIX))
        return favorite_change(r, apr_pstrndup(r->pool, rest, n - k));
    if (n > 0)
        return provider_model_handler(r, rest);
    return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_NOT_FOUND, NULL,
                         "No such endpoint: %s %s", r->method, ap_escape_html(r->pool, r->uri));
}
