/* prov_catalog.c: GET /v1/models without httpd. Which upstream models the
 * gateway offers (its /v1/models list, cached per process for a short time,
 * the last known list kept when the gateway fails) and the catalog JSON that
 * both our own clients (publicId, display_name, pricing) and OpenAI-style SDKs
 * (object:"list", data[].id) read; one catalog entry in either family's
 * shape (prov_catalog_page.c pages the Anthropic list). */
#include <string.h>
#include <apr_thread_mutex.h>
#include "prov_catalog.h"
#include "prov_json.h"
#include "prov_models.h"
#include "prov_log.h"

/* After a failed refresh, wait this long before asking the gateway again. */
#define RETRY_AFTER_FAILURE 5

struct prov_catalog_cache_t {
    apr_thread_mutex_t *mutex;
    apr_pool_t *pool;          /* parent of the list's pool */
    apr_pool_t *list_pool;     /* holds ids; replaced on each refresh */
    apr_hash_t *ids;           /* NULL until the first successful fetch */
    apr_int64_t ttl;
    apr_int64_t fetched_at;
    apr_int64_t next_attempt;
};

apr_status_t prov_catalog_cache_create(prov_catalog_cache_t **pc, apr_int64_t ttl, apr_pool_t *p)
{
    prov_catalog_cache_t *c = apr_pcalloc(p, sizeof(*c));
    apr_status_t rv = apr_thread_mutex_create(&c->mutex, APR_THREAD_MUTEX_DEFAULT, p);
    if (rv != APR_SUCCESS)
        return rv;
    c->pool = p;
    c->ttl = ttl > 0 ? ttl : 0;
    *pc = c;
    return APR_SUCCESS;
}

apr_status_t prov_catalog_parse_list(apr_hash_t **pids, const char *body, apr_size_t len,
                                     apr_pool_t *p)
{
    const char *err = NULL;
    json_object *root = prov_json_parse(body, len, &err, p);
    json_object *data = prov_json_get(root, "data", json_type_array);
    apr_hash_t *ids;
    size_t i, n;
    if (!data)
        return APR_EINVAL;
    ids = apr_hash_make(p);
    n = json_object_array_length(data);
    for (i = 0; i < n; i++) {
        const char *id = prov_json_get_str(json_object_array_get_idx(data, i), "id");
        if (id) {
            id = apr_pstrdup(p, id);
            apr_hash_set(ids, id, APR_HASH_KEY_STRING, id);
        }
    }
    *pids = ids;
    return APR_SUCCESS;
}

static apr_hash_t *copy_ids(apr_hash_t *ids, apr_pool_t *p)
{
    apr_hash_t *out = apr_hash_make(p);
    apr_hash_index_t *hi;
    for (hi = apr_hash_first(p, ids); hi; hi = apr_hash_next(hi)) {
        const char *id = apr_pstrdup(p, apr_hash_this_key(hi));
        apr_hash_set(out, id, APR_HASH_KEY_STRING, id);
    }
    return out;
}

static apr_status_t fetch(apr_hash_t **ids, prov_gateway_t *gateway, apr_pool_t *p)
{
    prov_gateway_response_t *answer = NULL;
    apr_status_t rv = prov_gateway_request(&answer, gateway, "/v1/models", NULL, 0, NULL, p);
    if (rv != APR_SUCCESS)
        return rv;
    if (answer->status != 200) {
        prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00040: the gateway's model list answered "
                 "HTTP %d", answer->status);
        return APR_EGENERAL;
    }
    if ((rv = prov_catalog_parse_list(ids, answer->body, answer->len, p)) != APR_SUCCESS)
        prov_log(PROV_LOG_WARN, rv, "PROV00041: the gateway's model list is malformed");
    return rv;
}

apr_status_t prov_catalog_available(apr_hash_t **out, int *stale, prov_catalog_cache_t *c,
                                    prov_gateway_t *gateway, apr_pool_t *p)
{
    apr_int64_t now = prov_now();
    apr_hash_t *fresh = NULL;
    apr_status_t rv;
    int need;

    apr_thread_mutex_lock(c->mutex);
    need = (!c->ids || now - c->fetched_at >= c->ttl) && now >= c->next_attempt;
    if (!need) {
        rv = c->ids ? APR_SUCCESS : APR_EGENERAL;
        if (c->ids)
            *out = copy_ids(c->ids, p);
        *stale = c->ids && now - c->fetched_at >= c->ttl;
        apr_thread_mutex_unlock(c->mutex);
        return rv;
    }
    apr_thread_mutex_unlock(c->mutex);

    /* Asked without the lock: a slow gateway must not stall every reader. */
    rv = fetch(&fresh, gateway, p);

    apr_thread_mutex_lock(c->mutex);
    if (rv == APR_SUCCESS) {
        apr_pool_t *np = NULL;
        apr_pool_create(&np, c->pool);
        c->ids = copy_ids(fresh, np);
        if (c->list_pool)
            apr_pool_destroy(c->list_pool);
        c->list_pool = np;
        c->fetched_at = now;
        c->next_attempt = 0;
        *out = fresh;
        *stale = 0;
    }
    else {
        c->next_attempt = now + RETRY_AFTER_FAILURE;
        if (c->ids) {
            *out = copy_ids(c->ids, p);
            *stale = 1;
            rv = APR_SUCCESS;
        }
        else {
            rv = APR_EGENERAL;
        }
    }
    apr_thread_mutex_unlock(c->mutex);
    return rv;
}

static json_object *rate_json(prov_micro_t rate)
{
    return rate >= 0 ? prov_json_credits(rate) : NULL;
}

/* RFC 3339 in UTC, as Anthropic's created_at. */
static json_object *rfc3339(apr_int64_t t, apr_pool_t *p)
{
    apr_time_exp_t x;
    apr_time_exp_gmt(&x, apr_time_from_sec(t > 0 ? t : 0));
    return json_object_new_string(apr_psprintf(p, "%04d-%02d-%02dT%02d:%02d:%02dZ",
                                               x.tm_year + 1900, x.tm_mon + 1, x.tm_mday,
                                               x.tm_hour, x.tm_min, x.tm_sec));
}

json_object *prov_catalog_entry(const prov_model_t *m, apr_int64_t default_max_output,
                                int anthropic, apr_pool_t *p)
{
    json_object *item = json_object_new_object(), *pricing;
    if (anthropic)
        json_object_object_add(item, "type", json_object_new_string("model"));
    json_object_object_add(item, "id", json_object_new_string(m->public_id));
    if (anthropic) {
        json_object_object_add(item, "created_at", rfc3339(m->created_at, p));
    }
    else {
        json_object_object_add(item, "object", json_object_new_string("model"));
        json_object_object_add(item, "created", json_object_new_int64(m->created_at));
        json_object_object_add(item, "owned_by",
                               json_object_new_string(*m->family ? m->family : "provider"));
    }
    json_object_object_add(item, "publicId", json_object_new_string(m->public_id));
    json_object_object_add(item, "display_name", json_object_new_string(m->display_name));
    pricing = json_object_new_object();
    json_object_object_add(pricing, "input", rate_json(m->rates.input));
    json_object_object_add(pricing, "output", rate_json(m->rates.output));
    json_object_object_add(pricing, "cache", rate_json(m->rates.cache));
    json_object_object_add(pricing, "reasoning", rate_json(m->rates.reasoning));
    json_object_object_add(item, "pricing", pricing);
    json_object_object_add(item, "max_output_tokens", json_object_new_int64(
                               prov_model_max_output(m, default_max_output)));
    return item;
}

int prov_catalog_offers(const prov_model_t *m, apr_hash_t *available, int anthropic)
{
    return m->enabled && (!anthropic || m->messages_enabled)
           && apr_hash_get(available, m->upstream_id, APR_HASH_KEY_STRING) != NULL;
}

const char *prov_catalog_render(const apr_array_header_t *models, apr_hash_t *available,
                                apr_int64_t default_max_output, apr_pool_t *p)
{
    json_object *root = prov_json_own(json_object_new_object(), p);
    json_object *data = json_object_new_array();
    int i;

    json_object_object_add(root, "object", json_object_new_string("list"));
    json_object_object_add(root, "data", data);
    for (i = 0; i < models->nelts; i++) {
        const prov_model_t *m = APR_ARRAY_IDX(models, i, const prov_model_t *);
        if (prov_catalog_offers(m, available, 0))
            json_object_array_add(data, prov_catalog_entry(m, default_max_output, 0, p));
    }
    return prov_json_dump(root, p);
}
