/* mod_provider_models.c: GET /v1/models, the public catalog: the enabled
 * catalog models that the gateway lists right now, with their rate card;
 * and that rendering for a list of models (a user's favorites too). */
#include "mod_provider.h"
#include "mod_provider_models.h"
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "mod_provider_http.h"

APLOG_USE_MODULE(provider);
#include "prov_models.h"

int provider_models_handler(request_rec *r)
{
    prov_error_t *err = NULL;
    apr_array_header_t *models = NULL;
    prov_store_t *store;
    apr_status_t rv;

    if (r->method_number != M_GET) {
        apr_table_setn(r->err_headers_out, "Allow", "GET, HEAD");
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_METHOD_NOT_ALLOWED, NULL,
                             "Use GET on /v1/models");
    }
    if (!(store = provider_db_open(r, &err)))
        return provider_send_error(r, PROVIDER_FAMILY_OPENAI, err);
    rv = prov_model_list(&models, store, 1, r->pool);
    provider_db_close(r, store);
    if (rv != APR_SUCCESS)
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_SERVICE_UNAVAILABLE, NULL,
                             "The model catalog is unavailable right now; try again later.");

    return provider_catalog_send(r, models);
}

int provider_catalog_send(request_rec *r, const apr_array_header_t *models)
{
    provider_srv_conf *c = provider_conf(r);
    apr_hash_t *available = NULL;
    int stale = 0;
    apr_status_t rv = c->catalog
        ? prov_catalog_available(&available, &stale, c->catalog, c->gateway, r->pool)
        : APR_EGENERAL;
    if (rv != APR_SUCCESS)
        return provider_fail(r, PROVIDER_FAMILY_OPENAI, PROV_E_GATEWAY_ERROR, NULL,
                             "The list of available models cannot be fetched right now; "
                             "try again later.");
    if (stale)
        apr_table_setn(r->headers_out, "x-provider-catalog", "stale");
    return provider_send_json(r, HTTP_OK, prov_catalog_render(models, available, c->default_max_tokens,
                                                             r->pool));
}
