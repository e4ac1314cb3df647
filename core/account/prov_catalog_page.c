/* prov_catalog_page.c: the model catalog in Anthropic's list shape, for the
 * Anthropic SDK's models.list() and Claude Code's model picker: the query's
 * page arguments (limit, after_id, before_id) checked, the Messages models
 * the catalog offers sorted by id and cut to the page, with has_more,
 * first_id and last_id; and one model by itself (GET /v1/models/{id}) in
 * either family's shape. The entries themselves are prov_catalog.c's. */
#include <stdlib.h>
#include <string.h>
#include "prov_catalog.h"

static apr_status_t bad(prov_error_t **err, const char *param, const char *msg, apr_pool_t *p)
{
    *err = prov_error_make(p, PROV_E_INVALID_REQUEST, param, "%s", msg);
    return APR_EINVAL;
}

static int id_ok(const char *s)
{
    apr_size_t n = strlen(s);
    return n >= 1 && n <= 256;
}

apr_status_t prov_catalog_page_args(prov_catalog_page_t *page, prov_error_t **err,
                                    const char *limit, const char *after_id,
                                    const char *before_id, apr_pool_t *p)
{
    page->limit = PROV_CATALOG_PAGE_DEFAULT;
    page->after_id = NULL;
    page->before_id = NULL;
    if (limit) {
        apr_size_t n = strlen(limit);
        if (n < 1 || n > 4 || strspn(limit, "0123456789") != n || atoi(limit) < 1
            || atoi(limit) > PROV_CATALOG_PAGE_MAX)
            return bad(err, "limit", apr_psprintf(p, "limit must be a whole number from 1 to %d.",
                                                  PROV_CATALOG_PAGE_MAX), p);
        page->limit = atoi(limit);
    }
    if (after_id && before_id)
        return bad(err, "before_id", "Give after_id or before_id, not both.", p);
    if (after_id && !id_ok(after_id))
        return bad(err, "after_id", "after_id must be a model id (1 to 256 characters).", p);
    if (before_id && !id_ok(before_id))
        return bad(err, "before_id", "before_id must be a model id (1 to 256 characters).", p);
    page->after_id = after_id;
    page->before_id = before_id;
    return APR_SUCCESS;
}

static int by_id(const void *a, const void *b)
{
    const prov_model_t *x = *(const prov_model_t *const *)a;
    const prov_model_t *y = *(const prov_model_t *const *)b;
    return strcmp(x->public_id, y->public_id);
}

/* The offered models sorted by id: [*from, *to) is the page's slice. */
static void slice(int *from, int *to, const prov_model_t **v, int n,
                  const prov_catalog_page_t *page)
{
    int i;
    if (page->before_id) {
        for (i = 0; i < n && strcmp(v[i]->public_id, page->before_id) < 0; i++)
            ;
        *to = i;
        *from = i > page->limit ? i - page->limit : 0;
        return;
    }
    i = 0;
    if (page->after_id)
        while (i < n && strcmp(v[i]->public_id, page->after_id) <= 0)
            i++;
    *from = i;
    *to = n - i > page->limit ? i + page->limit : n;
}

const char *prov_catalog_page_render(const apr_array_header_t *models, apr_hash_t *available,
                                     apr_int64_t default_max_output,
                                     const prov_catalog_page_t *page, apr_pool_t *p)
{
    json_object *root = prov_json_own(json_object_new_object(), p);
    json_object *data = json_object_new_array();
    const prov_model_t **v = apr_palloc(p, sizeof(*v) * (models->nelts + 1));
    int i, n = 0, from, to;

    for (i = 0; i < models->nelts; i++) {
        const prov_model_t *m = APR_ARRAY_IDX(models, i, const prov_model_t *);
        if (prov_catalog_offers(m, available, 1))
            v[n++] = m;
    }
    qsort(v, (size_t)n, sizeof(*v), by_id);
    slice(&from, &to, v, n, page);
    for (i = from; i < to; i++)
        json_object_array_add(data, prov_catalog_entry(v[i], default_max_output, 1, p));
    json_object_object_add(root, "data", data);
    json_object_object_add(root, "has_more",
                           json_object_new_boolean(page->before_id ? from > 0 : to < n));
    json_object_object_add(root, "first_id",
                           to > from ? json_object_new_string(v[from]->public_id) : NULL);
    json_object_object_add(root, "last_id",
                           to > from ? json_object_new_string(v[to - 1]->public_id) : NULL);
    return prov_json_dump(root, p);
}

const char *prov_catalog_render_one(const prov_model_t *m, apr_int64_t default_max_output,
                                    int anthropic, apr_pool_t *p)
{
    return prov_json_dump(prov_json_own(prov_catalog_entry(m, default_max_output, anthropic, p),
                                        p), p);
}
