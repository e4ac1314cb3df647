/* test_prov_catalog.c: unit tests of the catalog: parsing the gateway's model
 * list, the available-only and enabled-only rules, pricing in credits per 1M
 * tokens with null where unset, and the gateway-down behaviour of the cache
 * (last known list, or an error when there never was one); the Anthropic
 * list's page arguments, its pages both ways and its entry shape. */
#include <string.h>
#include "unit_tests.h"
#include "prov_catalog.h"
#include "prov_json.h"
#include "prov_models.h"

static prov_model_t *model(apr_pool_t *p, const char *id, const char *up, int enabled,
                           prov_micro_t in, prov_micro_t cache)
{
    prov_model_t *m = apr_pcalloc(p, sizeof(*m));
    m->public_id = id;
    m->display_name = apr_pstrcat(p, "Name of ", id, NULL);
    m->upstream_id = up;
    m->family = "";
    m->enabled = enabled;
    m->rates.input = in;
    m->rates.output = 4000000;
    m->rates.cache = cache;
    m->rates.reasoning = PROV_RATE_UNSET;
    return m;
}

static void test_parse_list(void)
{
    apr_pool_t *p = prov_test_pool();
    apr_hash_t *ids = NULL;
    const char *body = "{\"object\":\"list\",\"data\":[{\"id\":\"a\"},{\"id\":\"b\"},{}]}";
    CU_ASSERT_EQUAL(prov_catalog_parse_list(&ids, body, strlen(body), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(apr_hash_count(ids), 2);
    CU_ASSERT_PTR_NOT_NULL(apr_hash_get(ids, "a", APR_HASH_KEY_STRING));
    CU_ASSERT_EQUAL(prov_catalog_parse_list(&ids, "{}", 2, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_catalog_parse_list(&ids, "nope", 4, p), APR_EINVAL);
}

static void test_render(void)
{
    apr_pool_t *p = prov_test_pool();
    apr_array_header_t *models = apr_array_make(p, 3, sizeof(prov_model_t *));
    apr_hash_t *avail = apr_hash_make(p);
    const char *out, *perr = NULL;
    json_object *root, *data, *item, *pricing;
    APR_ARRAY_PUSH(models, prov_model_t *) = model(p, "pub-a", "up-a", 1, 2500000, PROV_RATE_UNSET);
    APR_ARRAY_PUSH(models, prov_model_t *) = model(p, "pub-b", "up-b", 0, 1, 1);
    APR_ARRAY_PUSH(models, prov_model_t *) = model(p, "pub-c", "up-missing", 1, 1, 1);
    apr_hash_set(avail, "up-a", APR_HASH_KEY_STRING, "up-a");
    apr_hash_set(avail, "up-b", APR_HASH_KEY_STRING, "up-b");
    out = prov_catalog_render(models, avail, 32768, p);
    root = prov_json_parse(out, strlen(out), &perr, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(root, "object"), "list");
    data = prov_json_get(root, "data", json_type_array);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(data), 1);
    item = json_object_array_get_idx(data, 0);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(item, "id"), "pub-a");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(item, "publicId"), "pub-a");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(item, "display_name"), "Name of pub-a");
    pricing = prov_json_get(item, "pricing", json_type_object);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pricing);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"input\":2.5"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"output\":4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"cache\":null"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"reasoning\":null"));
    /* the maximum output: the server's default, else the model's own */
    CU_ASSERT_EQUAL(json_object_get_int64(prov_json_get(item, "max_output_tokens",
                                                        json_type_int)), 32768);
    APR_ARRAY_IDX(models, 0, prov_model_t *)->max_output = 1000;
    out = prov_catalog_render(models, avail, 32768, p);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"max_output_tokens\":1000"));
    CU_ASSERT_PTR_NULL(strstr(out, "32768"));
}

static void test_cache_gateway_down(void)
{
    apr_pool_t *p = NULL;
    prov_catalog_cache_t *c = NULL;
    prov_gateway_t *gw = NULL;
    apr_hash_t *ids = NULL;
    int stale = 0;
    apr_pool_create(&p, prov_test_pool());
    /* Port 9 on loopback: nothing listens there. */
    CU_ASSERT_EQUAL_FATAL(prov_gateway_create(&gw, "http://127.0.0.1:9/", "t", 500, 1000, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_catalog_cache_create(&c, 1, p), APR_SUCCESS);
    CU_ASSERT_NOT_EQUAL(prov_catalog_available(&ids, &stale, c, gw, p), APR_SUCCESS);
    CU_ASSERT_PTR_NULL(ids);
    apr_pool_destroy(p);
}

/* Models m0..m(n-1) (ids "m-00".."), every one offered, Messages open on
 * all but "m-03"; the returned page parsed. */
static json_object *page_of(apr_pool_t *p, int n, const prov_catalog_page_t *pg)
{
    apr_array_header_t *models = apr_array_make(p, n, sizeof(prov_model_t *));
    apr_hash_t *avail = apr_hash_make(p);
    const char *out, *perr = NULL;
    int i;
    for (i = n - 1; i >= 0; i--) {   /* unsorted on purpose */
        prov_model_t *m = model(p, apr_psprintf(p, "m-%02d", i), apr_psprintf(p, "up-%d", i),
                                1, 1, 1);
        m->messages_enabled = i != 3;
        m->created_at = 1700000000 + i;
        apr_hash_set(avail, m->upstream_id, APR_HASH_KEY_STRING, m->upstream_id);
        APR_ARRAY_PUSH(models, prov_model_t *) = m;
    }
    out = prov_catalog_page_render(models, avail, 4096, pg, p);
    return prov_json_parse(out, strlen(out), &perr, p);
}

/* The ids of a page, joined by ',', and its has_more / first_id / last_id. */
static const char *page_ids(json_object *root, apr_pool_t *p)
{
    json_object *data = prov_json_get(root, "data", json_type_array);
    const char *s = "";
    size_t i;
    for (i = 0; data && i < json_object_array_length(data); i++)
        s = apr_pstrcat(p, s, i ? "," : "", prov_json_get_str(json_object_array_get_idx(data, i),
                                                              "id"), NULL);
    return apr_psprintf(p, "%s|%d|%s|%s", s, json_object_get_boolean(
                            json_object_object_get(root, "has_more")),
                        prov_json_get_str(root, "first_id") ? prov_json_get_str(root, "first_id")
                                                            : "null",
                        prov_json_get_str(root, "last_id") ? prov_json_get_str(root, "last_id")
                                                           : "null");
}

static void test_page_args(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_catalog_page_t pg;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL(prov_catalog_page_args(&pg, &err, NULL, NULL, NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(pg.limit, PROV_CATALOG_PAGE_DEFAULT);
    CU_ASSERT_EQUAL(prov_catalog_page_args(&pg, &err, "1000", "a", NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(pg.limit, 1000);
    CU_ASSERT_STRING_EQUAL(pg.after_id, "a");
    for (const char **bad = (const char *[]){ "0", "1001", "-1", "2x", "", "99999", NULL };
         *bad; bad++) {
        err = NULL;
        CU_ASSERT_EQUAL(prov_catalog_page_args(&pg, &err, *bad, NULL, NULL, p), APR_EINVAL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(err);
        CU_ASSERT_STRING_EQUAL(err->param, "limit");
    }
    CU_ASSERT_EQUAL(prov_catalog_page_args(&pg, &err, NULL, "a", "b", p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_catalog_page_args(&pg, &err, NULL, "", NULL, p), APR_EINVAL);
    CU_ASSERT_STRING_EQUAL(err->param, "after_id");
}

static void test_page_render(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_catalog_page_t pg = { 2, NULL, NULL };
    json_object *root, *item;
    /* m-03 is not open to Messages: never on the Anthropic list */
    CU_ASSERT_STRING_EQUAL(page_ids(page_of(p, 6, &pg), p), "m-00,m-01|1|m-00|m-01");
    pg.after_id = "m-01";
    CU_ASSERT_STRING_EQUAL(page_ids(page_of(p, 6, &pg), p), "m-02,m-04|1|m-02|m-04");
    pg.after_id = "m-04";
    CU_ASSERT_STRING_EQUAL(page_ids(page_of(p, 6, &pg), p), "m-05|0|m-05|m-05");
    pg.after_id = "m-05";
    CU_ASSERT_STRING_EQUAL(page_ids(page_of(p, 6, &pg), p), "|0|null|null");
    /* a cursor that left the catalog still pages */
    pg.after_id = "m-03";
    CU_ASSERT_STRING_EQUAL(page_ids(page_of(p, 6, &pg), p), "m-04,m-05|0|m-04|m-05");
    pg.after_id = NULL;
    pg.before_id = "m-05";
    CU_ASSERT_STRING_EQUAL(page_ids(page_of(p, 6, &pg), p), "m-02,m-04|1|m-02|m-04");
    pg.before_id = "m-01";
    CU_ASSERT_STRING_EQUAL(page_ids(page_of(p, 6, &pg), p), "m-00|0|m-00|m-00");
    pg.before_id = NULL;
    pg.limit = 20;
    root = page_of(p, 6, &pg);
    CU_ASSERT_STRING_EQUAL(page_ids(root, p), "m-00,m-01,m-02,m-04,m-05|0|m-00|m-05");
    item = json_object_array_get_idx(prov_json_get(root, "data", json_type_array), 1);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(item, "type"), "model");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(item, "created_at"), "2023-11-14T22:13:21Z");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(item, "display_name"), "Name of m-01");
    CU_ASSERT_PTR_NOT_NULL(prov_json_get(item, "pricing", json_type_object));
    CU_ASSERT_PTR_NULL(json_object_object_get(item, "object"));
}

static void test_render_one(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_model_t *m = model(p, "pub-a", "up-a", 1, 1, 1);
    const char *perr = NULL, *out;
    json_object *o;
    m->created_at = 86400;
    out = prov_catalog_render_one(m, 4096, 0, p);
    o = prov_json_parse(out, strlen(out), &perr, p);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "object"), "model");
    CU_ASSERT_EQUAL(json_object_get_int64(json_object_object_get(o, "created")), 86400);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "owned_by"), "provider");
    out = prov_catalog_render_one(m, 4096, 1, p);
    o = prov_json_parse(out, strlen(out), &perr, p);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "type"), "model");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "created_at"), "1970-01-02T00:00:00Z");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "publicId"), "pub-a");
}

void prov_test_suite_catalog(void)
{
    PROV_SUITE("catalog", PROV_TEST(test_parse_list), PROV_TEST(test_render),
               PROV_TEST(test_cache_gateway_down), PROV_TEST(test_page_args),
               PROV_TEST(test_page_render), PROV_TEST(test_render_one));
}
