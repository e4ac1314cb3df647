/* test_prov_error.c: unit tests of the error table and the two error body
 * shapes (OpenAI and Anthropic), including the service's code in both. */
#include <string.h>
#include "unit_tests.h"
#include "prov_error.h"
#include "prov_json.h"

static void test_table(void)
{
    int i;
    CU_ASSERT_EQUAL(prov_error_info(PROV_E_KEY_BUDGET_EXCEEDED)->status, 429);
    CU_ASSERT_STRING_EQUAL(prov_error_info(PROV_E_KEY_BUDGET_EXCEEDED)->code,
                           "API_KEY_CREDIT_BUDGET_EXCEEDED");
    CU_ASSERT_EQUAL(prov_error_info(PROV_E_INSUFFICIENT_CREDITS)->status, 402);
    CU_ASSERT_EQUAL(prov_error_info(PROV_E_IDENTITY_ALREADY_LINKED)->status, 409);
    CU_ASSERT_STRING_EQUAL(prov_error_info(PROV_E_LAST_IDENTITY)->code, "LAST_IDENTITY");
    CU_ASSERT_EQUAL(prov_error_info(PROV_E_LAST_IDENTITY)->status, 409);
    CU_ASSERT_EQUAL(prov_error_by_name("GATEWAY_TIMEOUT")->status, 504);
    CU_ASSERT_PTR_NULL(prov_error_by_name("NO_SUCH_CODE"));
    for (i = 0; i < PROV_E__COUNT; i++) {
        const prov_errinfo_t *e = prov_error_info((prov_errcode_e)i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e->code);
        CU_ASSERT_TRUE(e->status >= 400 && e->status < 600);
        CU_ASSERT_PTR_NOT_NULL(e->openai_type);
        CU_ASSERT_PTR_NOT_NULL(e->anthropic_type);
        CU_ASSERT_PTR_EQUAL(prov_error_by_name(e->code), e);
    }
}

static void test_shapes(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *perr = NULL;
    prov_error_t *e = prov_error_make(p, PROV_E_INVALID_REQUEST, "model", "bad %s", "thing");
    json_object *o;
    const char *oa = prov_error_openai_json(e, p);
    const char *an = prov_error_anthropic_json(e, p);
    json_object *err;
    o = prov_json_parse(oa, strlen(oa), &perr, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    err = prov_json_get(o, "error", json_type_object);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(err, "message"), "bad thing");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(err, "type"), "invalid_request_error");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(err, "param"), "model");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(err, "code"), "INVALID_REQUEST");
    CU_ASSERT_PTR_NULL(prov_json_get(err, "resets_at", json_type_int));
    e->retry_after = 90;
    prov_clock_set(1000);
    oa = prov_error_openai_json(e, p);
    prov_clock_set(0);
    o = prov_json_parse(oa, strlen(oa), &perr, p);
    err = prov_json_get(o, "error", json_type_object);
    CU_ASSERT_EQUAL(json_object_get_int64(prov_json_get(err, "resets_in_seconds", json_type_int)), 90);
    CU_ASSERT_EQUAL(json_object_get_int64(prov_json_get(err, "resets_at", json_type_int)), 1090);
    o = prov_json_parse(an, strlen(an), &perr, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "type"), "error");
    err = prov_json_get(o, "error", json_type_object);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(err, "type"), "invalid_request_error");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(err, "code"), "INVALID_REQUEST");
}

static void test_credits_json(void)
{
    apr_pool_t *p = prov_test_pool();
    json_object *o = prov_json_own(json_object_new_object(), p);
    json_object_object_add(o, "a", prov_json_credits(12500000));
    json_object_object_add(o, "b", prov_json_credits(1));
    json_object_object_add(o, "c", prov_json_credits(0));
    CU_ASSERT_STRING_EQUAL(prov_json_dump(o, p), "{\"a\":12.5,\"b\":0.000001,\"c\":0}");
}

void prov_test_suite_error(void)
{
    PROV_SUITE("error", PROV_TEST(test_table), PROV_TEST(test_shapes),
               PROV_TEST(test_credits_json));
}
