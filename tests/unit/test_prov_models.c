/* test_prov_models.c: unit tests of the model catalog on an in-memory SQLite
 * database: public id rules, adding (defaults, duplicates, invalid fields),
 * changing fields and flags, setting and clearing rates, and listing with or
 * without the disabled models. */
#include <stdlib.h>
#include <string.h>
#include "unit_tests.h"
#include "prov_models.h"

static apr_pool_t *tpool(void)
{
    apr_pool_t *p = NULL;
    apr_pool_create(&p, prov_test_pool());
    return p;
}

static void test_id_valid(void)
{
    char big[140];
    CU_ASSERT_TRUE(prov_model_id_valid("gpt-4o"));
    CU_ASSERT_TRUE(prov_model_id_valid("claude-sonnet-4.5"));
    CU_ASSERT_TRUE(prov_model_id_valid("vendor/model:free"));
    CU_ASSERT_TRUE(prov_model_id_valid("7b_instruct"));
    CU_ASSERT_FALSE(prov_model_id_valid(NULL));
    CU_ASSERT_FALSE(prov_model_id_valid(""));
    CU_ASSERT_FALSE(prov_model_id_valid("-gpt"));
    CU_ASSERT_FALSE(prov_model_id_valid(".hidden"));
    CU_ASSERT_FALSE(prov_model_id_valid("/abs"));
    CU_ASSERT_FALSE(prov_model_id_valid("has space"));
    CU_ASSERT_FALSE(prov_model_id_valid("quote\"d"));
    CU_ASSERT_FALSE(prov_model_id_valid("caf\xc3\xa9"));
    memset(big, 'm', sizeof(big));
    big[128] = '\0';
    CU_ASSERT_TRUE(prov_model_id_valid(big));
    big[128] = 'm';
    big[129] = '\0';
    CU_ASSERT_FALSE(prov_model_id_valid(big));
}

static void test_add_find(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_model_t *m = NULL, *f = NULL;

    CU_ASSERT_EQUAL(prov_model_add(&m, s, "gpt-4o", "openai/gpt-4o", NULL, NULL, p),
                    APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_TRUE(m->id > 0);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "gpt-4o", p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->id, m->id);
    CU_ASSERT_STRING_EQUAL(f->display_name, "gpt-4o");
    CU_ASSERT_STRING_EQUAL(f->upstream_id, "openai/gpt-4o");
    CU_ASSERT_STRING_EQUAL(f->family, "");
    CU_ASSERT_TRUE(f->enabled);
    CU_ASSERT_FALSE(f->messages_enabled);
    CU_ASSERT_EQUAL(f->rates.input, PROV_RATE_UNSET);
    CU_ASSERT_EQUAL(f->rates.output, PROV_RATE_UNSET);
    CU_ASSERT_EQUAL(f->rates.cache, PROV_RATE_UNSET);
    CU_ASSERT_EQUAL(f->rates.reasoning, PROV_RATE_UNSET);

    CU_ASSERT_EQUAL(prov_model_add(&m, s, "sonnet", "anthropic/claude-sonnet", "Sonnet 4.5",
                                   "anthropic", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "sonnet", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(f->display_name, "Sonnet 4.5");
    CU_ASSERT_STRING_EQUAL(f->family, "anthropic");

    f = NULL;
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "nope", p), APR_NOTFOUND);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "bad id", p), APR_NOTFOUND);
    CU_ASSERT_PTR_NULL(f);
    apr_pool_destroy(p);
}

static void test_add_refused(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_model_t *m = NULL;
    apr_array_header_t *all = NULL;

    CU_ASSERT_EQUAL(prov_model_add(&m, s, "gpt-4o", "u1", NULL, NULL, p), APR_SUCCESS);
    m = NULL;
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "gpt-4o", "u2", NULL, NULL, p), APR_EEXIST);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "-bad", "u", NULL, NULL, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "ok", "has space", NULL, NULL, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "ok", "", NULL, NULL, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "ok", NULL, NULL, NULL, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "ok", "u", "tab\there", NULL, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "ok", "u", NULL, "Upper Case", p), APR_EINVAL);
    CU_ASSERT_PTR_NULL(m);
    /* Nothing was added by the refusals, and no transaction was left open. */
    CU_ASSERT_EQUAL(prov_model_list(&all, s, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(all->nelts, 1);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "ok", "u", NULL, NULL, p), APR_SUCCESS);
    apr_pool_destroy(p);
}

static void test_set(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_model_t *m = NULL, *f = NULL;
    prov_model_change_t c = { NULL, NULL, NULL, -1, -1 };

    CU_ASSERT_EQUAL_FATAL(prov_model_add(&m, s, "m1", "up-1", "One", "fam", p), APR_SUCCESS);

    c.display_name = "Model One";
    c.messages_enabled = 1;
    CU_ASSERT_EQUAL(prov_model_set(s, "m1", &c, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "m1", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(f->display_name, "Model One");
    CU_ASSERT_STRING_EQUAL(f->upstream_id, "up-1");     /* untouched */
    CU_ASSERT_STRING_EQUAL(f->family, "fam");
    CU_ASSERT_TRUE(f->messages_enabled);
    CU_ASSERT_TRUE(f->enabled);

    memset(&c, 0, sizeof(c));
    c.upstream_id = "up-2";
    c.family = "";
    c.enabled = 0;
    c.messages_enabled = -1;
    CU_ASSERT_EQUAL(prov_model_set(s, "m1", &c, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "m1", p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(f->upstream_id, "up-2");
    CU_ASSERT_STRING_EQUAL(f->family, "");
    CU_ASSERT_FALSE(f->enabled);
    CU_ASSERT_TRUE(f->messages_enabled);
    CU_ASSERT_STRING_EQUAL(f->display_name, "Model One");

    c.upstream_id = NULL;
    c.family = NULL;
    c.enabled = 1;
    CU_ASSERT_EQUAL(prov_model_set(s, "m2", &c, p), APR_NOTFOUND);
    c.upstream_id = "bad id";
    CU_ASSERT_EQUAL(prov_model_set(s, "m1", &c, p), APR_EINVAL);
    c.upstream_id = NULL;
    c.enabled = 2;
    CU_ASSERT_EQUAL(prov_model_set(s, "m1", &c, p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "m1", p), APR_SUCCESS);
    CU_ASSERT_FALSE(f->enabled);
    apr_pool_destroy(p);
}

static void test_price(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_model_t *m = NULL, *f = NULL;
    prov_rate_change_t c;

    CU_ASSERT_EQUAL_FATAL(prov_model_add(&m, s, "priced", "up", NULL, NULL, p), APR_SUCCESS);
    memset(&c, 0, sizeof(c));
    c.set_input = c.set_output = 1;
    c.rates.input = 2500000;       /* 2.5 credits per 1M */
    c.rates.output = 10000000;
    CU_ASSERT_EQUAL(prov_model_price(s, "priced", &c, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "priced", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(f->rates.input, 2500000);
    CU_ASSERT_EQUAL(f->rates.output, 10000000);
    CU_ASSERT_EQUAL(f->rates.cache, PROV_RATE_UNSET);
    CU_ASSERT_EQUAL(f->rates.reasoning, PROV_RATE_UNSET);

    /* Only the touched rates change; a touched UNSET clears. */
    memset(&c, 0, sizeof(c));
    c.set_cache = 1;
    c.rates.cache = 1250000;
    c.set_input = 1;
    c.rates.input = PROV_RATE_UNSET;
    CU_ASSERT_EQUAL(prov_model_price(s, "priced", &c, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "priced", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(f->rates.input, PROV_RATE_UNSET);
    CU_ASSERT_EQUAL(f->rates.output, 10000000);
    CU_ASSERT_EQUAL(f->rates.cache, 1250000);

    /* Zero is a configured rate (free), distinct from unset. */
    memset(&c, 0, sizeof(c));
    c.set_reasoning = 1;
    c.rates.reasoning = 0;
    CU_ASSERT_EQUAL(prov_model_price(s, "priced", &c, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "priced", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(f->rates.reasoning, 0);

    c.rates.reasoning = -5;
    CU_ASSERT_EQUAL(prov_model_price(s, "priced", &c, p), APR_EINVAL);
    c.rates.reasoning = PROV_RATE_MAX + 1;
    CU_ASSERT_EQUAL(prov_model_price(s, "priced", &c, p), APR_EINVAL);
    c.rates.reasoning = PROV_RATE_MAX;
    CU_ASSERT_EQUAL(prov_model_price(s, "missing", &c, p), APR_NOTFOUND);
    /* The refusals left the card alone and no transaction open. */
    CU_ASSERT_EQUAL(prov_model_price(s, "priced", &c, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_find(&f, s, "priced", p), APR_SUCCESS);
    CU_ASSERT_EQUAL(f->rates.reasoning, PROV_RATE_MAX);
    CU_ASSERT_EQUAL(f->rates.output, 10000000);
    apr_pool_destroy(p);
}

static void test_list(void)
{
    apr_pool_t *p = tpool();
    prov_store_t *s = prov_test_store(p);
    prov_model_t *m = NULL;
    prov_model_change_t off = { NULL, NULL, NULL, 0, -1 };
    apr_array_header_t *all = NULL;

    CU_ASSERT_EQUAL(prov_model_list(&all, s, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(all->nelts, 0);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "zeta", "u", NULL, NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "alpha", "u", NULL, NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_add(&m, s, "mid", "u", NULL, NULL, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_model_set(s, "mid", &off, p), APR_SUCCESS);

    CU_ASSERT_EQUAL(prov_model_list(&all, s, 0, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(all->nelts, 3);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(all, 0, prov_model_t *)->public_id, "alpha");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(all, 1, prov_model_t *)->public_id, "mid");
    CU_ASSERT_FALSE(APR_ARRAY_IDX(all, 1, prov_model_t *)->enabled);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(all, 2, prov_model_t *)->public_id, "zeta");

    CU_ASSERT_EQUAL(prov_model_list(&all, s, 1, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(all->nelts, 2);
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(all, 0, prov_model_t *)->public_id, "alpha");
    CU_ASSERT_STRING_EQUAL(APR_ARRAY_IDX(all, 1, prov_model_t *)->public_id, "zeta");
    apr_pool_destroy(p);
}

void prov_test_suite_models(void)
{
    PROV_SUITE("models",
               PROV_TEST(test_id_valid), PROV_TEST(test_add_find), PROV_TEST(test_add_refused),
               PROV_TEST(test_set), PROV_TEST(test_price), PROV_TEST(test_list));
}
