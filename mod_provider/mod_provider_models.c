/* mod_provider_models.c: GET /v1/models, the public catalog: the enabled
 * catalog models that the gateway lists right now, with their rate card, in
 * OpenAI's list shape, or in Anthropic's paged shape when the request is the
 * Anthropic SDK's or Claude Code's (anthropic-version or x-api-key); GET
 * /v1/models/{id}, one of them, in the same two shapes; and that rendering
 * for a list of models (a user's favorites too). */
#include "mod_provider.h"
#include "util_script.h"
#include "mod_provider_models.h"
#include "mod_provider_config.h"
#include "mod_provider_db.h"
#include "mod_provider_http.h"

APLOG_USE_MODULE(provider);
#include "prov_catalog.h"
#include "prov_models.h"

/* The Anthropic family: the SDKs send anthropic-version, Claude Code with an
 * API key x-api-key (with a bearer token it sends anthropic-version too). */
static int anthropic_shape(request_rec *r)
{
    return apr_table_get(r->headers_in, "anthropic-version")
           || (apr_table_get(r->headers_in, "x-api-key")
               && !apr_table_get(r->headers_in, "Authorization"));
}

static provider_family_e family_of(int anthropic)
{
    return anthropic ? PROVIDER_FAMILY_ANTHROPIC : PROVIDER_FAMILY_OPENAI;
}

/* The models the gateway offers now (*available); NULL after answering. */
static int offered(request_rec *r, apr_hash_t **available, int anthropic)
{
    provider_srv_conf *c = provider_conf(r);
    int stale = 0;
    apr_status_t rv = c->catalog
        ? prov_catalog_available(available, &stale, c->catalog, c->gateway, r->pool)
        : APR_EGENERAL;
    if (rv != APR_SUCCESS)
        return provider_fail(r, family_of(anthropic), PROV_E_GATEWAY_ERROR, NULL,
                             "The list of available models cannot be fetched right now; "
                             "try again later.");
    if (stale)
        apr_table_setn(r->headers_out, "x-provider-catalog", "stale");
    return PROVIDER_GO;
}

/* The catalog's models (enabled ones) into *models; an answer on failure. */
static int catalog(request_rec *r, apr_array_header_t **models, int anthropic)
{
    prov_error_t *err = NULL;
    prov_store_t *store;
    apr_status_t rv;
    if (!(store = provider_db_open(r, &err)))
        return provider_send_error(r, family_of(anthropic), err);
    rv = prov_model_list(models, store, 1, r->pool);
    provider_db_close(r, store);
    if (rv != APR_SUCCESS)
        return provider_fail(r, family_of(anthropic), PROV_E_SERVICE_UNAVAILABLE, NULL,
                             "The model catalog is unavailable right now; try again later.");
    return PROVIDER_GO;
}

static int method_get(request_rec *r, int anthropic, const char *path)
{
    if (r->method_number == M_GET)
        return PROVIDER_GO;
    apr_table_setn(r->err_headers_out, "Allow", "GET, HEAD");
    return provider_fail(r, family_of(anthropic), PROV_E_METHOD_NOT_ALLOWED, NULL,
                         "Use GET on %s", path);
}

int provider_models_handler(request_rec *r)
{
    int anthropic = anthropic_shape(r), rc;
    prov_catalog_page_t page;
    prov_error_t *err = NULL;
    apr_array_header_t *models = NULL;
    apr_hash_t *available = NULL;
    apr_table_t *q = NULL;

    if ((rc = method_get(r, anthropic, "/v1/models")) != PROVIDER_GO)
        return rc;
    if (!anthropic) {
        if ((rc = catalog(r, &models, 0)) != PROVIDER_GO)
            return rc;
        return provider_catalog_send(r, models);
    }
    ap_args_to_table(r, &q);
    if (prov_catalog_page_args(&page, &err, q ? apr_table_get(q, "limit") : NULL,
                               q ? apr_table_get(q, "after_id") : NULL,
                               q ? apr_table_get(q, "before_id") : NULL, r->pool) != APR_SUCCESS)
        return provider_send_error(r, PROVIDER_FAMILY_ANTHROPIC, err);
    if ((rc = catalog(r, &models, 1)) != PROVIDER_GO || (rc = offered(r, &available, 1)) != PROVIDER_GO)
        return rc;
    return provider_send_json(r, HTTP_OK, prov_catalog_page_render(
                                  models, available, provider_conf(r)->default_max_tokens, &page,
                                  r->pool));
}

int provider_model_handler(request_rec *r, const char *public_id)
{
    int anthropic = anthropic_shape(r), rc, i;
    apr_array_header_t *models = NULL;
    apr_hash_t *available = NULL;

    if ((rc = method_get(r, anthropic, "/v1/models/{id}")) != PROVIDER_GO
        || (rc = catalog(r, &models, anthropic)) != PROVIDER_GO
        || (rc = offered(r, &available, anthropic)) != PROVIDER_GO)
        return rc;
    for (i = 0; i < models->nelts; i++) {
        const prov_model_t *m = APR_ARRAY_IDX(models, i, const prov_model_t *);
        if (!strcmp(m->public_id, public_id) && prov_catalog_offers(m, available, anthropic))
            return provider_send_json(r, HTTP_OK, prov_catalog_render_one(
                                          m, provider_conf(r)->default_max_tokens, anthropic,
                                          r->pool));
    }
    return provider_fail(r, family_of(anthropic), PROV_E_MODEL_NOT_FOUND, "model",
                         "The model '%.128s' does not exist or is not available; GET /v1/models "
                         "lists the models you can use.", public_id);
}

int provider_catalog_send(request_rec *r, const apr_array_header_t *models)
{
    apr_hash_t *available = NULL;
    int rc = offered(r, &available, 0);
    if (rc != PROVIDER_GO)
        return rc;
    return provider_send_json(r, HTTP_OK, prov_catalog_render(models, available,
                                                             provider_conf(r)->default_max_tokens,
                                                             r->pool));
}
