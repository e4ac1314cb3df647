/* test_prov_credit.c: unit tests of what a credit is worth and where to get
 * more (ProviderCreditValue, ProviderTopUpURL): the checks that stop a bad
 * value at start-up, the JSON GET /v1/account shows, and the words of a
 * refusal and of the documentation. */
#include <string.h>
#include "unit_tests.h"
#include "prov_credit.h"

static void test_value_check(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *good[][2] = { { "0.01", "USD" }, { "12", "EUR" }, { "0.000001", "JPY" },
                              { "999999999999.5", "GBP" } };
    const char *bad[][2] = { { "0", "USD" }, { "0.00", "USD" }, { "1,5", "EUR" }, { "-1", "USD" },
                             { "0.0000001", "USD" }, { "1.", "USD" }, { ".5", "USD" },
                             { "1e3", "USD" }, { "1000000000000", "USD" }, { "1", "usd" },
                             { "1", "US" }, { "1", "DOLLARS" }, { "", "USD" } };
    size_t i;
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CU_ASSERT_PTR_NULL(prov_credit_value_check(good[i][0], good[i][1], p));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *err = prov_credit_value_check(bad[i][0], bad[i][1], p);
        CU_ASSERT_PTR_NOT_NULL(err);
    }
}

static void test_url_check(void)
{
    apr_pool_t *p = prov_test_pool();
    CU_ASSERT_PTR_NULL(prov_credit_url_check("https://billing.example.com/top-up?a=1&b=2", p));
    CU_ASSERT_PTR_NULL(prov_credit_url_check("mailto:billing@example.com", p));
    CU_ASSERT_PTR_NULL(prov_credit_url_check("http://127.0.0.1:8080/top-up", p));
    CU_ASSERT_PTR_NOT_NULL(prov_credit_url_check("http://example.com/", p));
    CU_ASSERT_PTR_NOT_NULL(prov_credit_url_check("javascript:alert(1)", p));
    CU_ASSERT_PTR_NOT_NULL(prov_credit_url_check("https://", p));
    CU_ASSERT_PTR_NOT_NULL(prov_credit_url_check("https://x/<script>", p));
    CU_ASSERT_PTR_NOT_NULL(prov_credit_url_check("https://x/a b", p));
    CU_ASSERT_PTR_NOT_NULL(prov_credit_url_check("https://x/\"", p));
    CU_ASSERT_PTR_NOT_NULL(prov_credit_url_check("mailto:nobody", p));
}

static void test_words(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_credit_offer_t none = { NULL, NULL, NULL };
    prov_credit_offer_t set = { "0.01", "USD", "https://example.test/top-up" };
    json_object *j;
    CU_ASSERT_PTR_NULL(prov_credit_json(&none));
    j = prov_credit_json(&set);
    CU_ASSERT_STRING_EQUAL(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN),
                           "{\"value\":\"0.01\",\"currency\":\"USD\"}");
    json_object_put(j);
    CU_ASSERT_STRING_EQUAL(prov_credit_remedy(&set, p),
                           " Get more credits at https://example.test/top-up");
    CU_ASSERT_STRING_EQUAL(prov_credit_remedy(&none, p),
                           " Ask the service's administrator for more credits.");
    CU_ASSERT_STRING_EQUAL(prov_credit_value_words(&set, p), "One credit is worth 0.01 USD.");
    CU_ASSERT_PTR_NOT_NULL(strstr(prov_credit_value_words(NULL, p), "has not stated"));
}

void prov_test_suite_credit(void)
{
    PROV_SUITE("credit", PROV_TEST(test_value_check), PROV_TEST(test_url_check),
               PROV_TEST(test_words));
}
