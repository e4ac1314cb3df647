/* test_prov_cabinet_requests.c: unit tests of GET /v1/requests's query
 * checks (core/cabinet/prov_cabinet_requests.c): the defaults, each
 * parameter's accepted values and each refusal naming its parameter; and
 * the secret's last four characters (prov_secret_last4) the key list shows.
 * The query itself runs against both databases in the integration tests
 * (cabinet-requests.test.js). */
#include <string.h>
#include "unit_tests.h"
#include "prov_cabinet.h"
#include "prov_secret.h"

static void refused(const char *key, const char *status, const char *limit, const char *before,
                    const char *param)
{
    apr_pool_t *p = NULL;
    prov_cabinet_requests_q_t q;
    prov_error_t *err = NULL;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(prov_cabinet_requests_args(&q, &err, key, status, limit, before, p),
                    APR_EINVAL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INVALID_REQUEST);
    CU_ASSERT_STRING_EQUAL(err->param ? err->param : "(null)", param);
    apr_pool_destroy(p);
}

static void test_requests_defaults(void)
{
    apr_pool_t *p = NULL;
    prov_cabinet_requests_q_t q;
    prov_error_t *err = NULL;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests_args(&q, &err, NULL, NULL, NULL, NULL, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(q.key_id, 0);
    CU_ASSERT_STRING_EQUAL(q.status, "");
    CU_ASSERT_EQUAL(q.limit, PROV_CABINET_REQUESTS_DEFAULT);
    CU_ASSERT_EQUAL(q.before, 0);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests_args(&q, &err, "", "", NULL, NULL, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(q.key_id, 0);
    CU_ASSERT_STRING_EQUAL(q.status, "");
    apr_pool_destroy(p);
}

static void test_requests_values(void)
{
    apr_pool_t *p = NULL;
    prov_cabinet_requests_q_t q;
    prov_error_t *err = NULL;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests_args(&q, &err, "42", "refused", "200", "987", p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(q.key_id, 42);
    CU_ASSERT_STRING_EQUAL(q.status, "refused");
    CU_ASSERT_EQUAL(q.limit, 200);
    CU_ASSERT_EQUAL(q.before, 987);
    CU_ASSERT_EQUAL(q.before_refusal, 0);
    CU_ASSERT(q.ledger && q.refusals);     /* "refused": both tables */
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests_args(&q, &err, NULL, "ok", "1", "0.5", p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL(q.limit, 1);
    CU_ASSERT(q.ledger && !q.refusals);
    CU_ASSERT_EQUAL(q.before, 0);
    CU_ASSERT_EQUAL(q.before_refusal, 5);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests_args(&q, &err, NULL, "429", NULL, "12.34", p),
                          APR_SUCCESS);
    CU_ASSERT(!q.ledger && q.refusals);
    CU_ASSERT_EQUAL(q.http_status, 429);
    CU_ASSERT_EQUAL(q.before, 12);
    CU_ASSERT_EQUAL(q.before_refusal, 34);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests_args(&q, &err, NULL, "MODEL_NOT_ALLOWED", NULL,
                                                     NULL, p), APR_SUCCESS);
    CU_ASSERT(!q.ledger && q.refusals);
    CU_ASSERT_STRING_EQUAL(q.code, "MODEL_NOT_ALLOWED");
    CU_ASSERT_EQUAL(q.http_status, 0);
    apr_pool_destroy(p);
}

static void test_requests_refusals(void)
{
    refused("abc", NULL, NULL, NULL, "key");
    refused("0", NULL, NULL, NULL, "key");
    refused("-3", NULL, NULL, NULL, "key");
    refused("1234567890123456789", NULL, NULL, NULL, "key");
    refused(NULL, "nope", NULL, NULL, "status");
    refused(NULL, "OK", NULL, NULL, "status");
    refused(NULL, "200", NULL, NULL, "status");
    refused(NULL, "42", NULL, NULL, "status");
    refused(NULL, "NO_SUCH_CODE", NULL, NULL, "status");
    refused(NULL, NULL, NULL, "1.x", "before");
    refused(NULL, NULL, NULL, "x.1", "before");
    refused(NULL, NULL, NULL, "1.", "before");
    refused(NULL, NULL, NULL, ".1", "before");
    refused(NULL, NULL, "0", NULL, "limit");
    refused(NULL, NULL, "201", NULL, "limit");
    refused(NULL, NULL, "", NULL, "limit");
    refused(NULL, NULL, "2.5", NULL, "limit");
    refused(NULL, NULL, NULL, "x", "before");
    refused(NULL, NULL, NULL, "", "before");
    refused(NULL, NULL, NULL, "0", "before");
}

static void test_secret_last4(void)
{
    apr_pool_t *p = NULL;
    const char *sec, *hash, *display;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_secret_generate(&sec, &hash, &display, p), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(prov_secret_last4(sec, p), sec + strlen(sec) - 4);
    CU_ASSERT_STRING_EQUAL(prov_secret_last4("abc", p), "abc");
    apr_pool_destroy(p);
}

void prov_test_suite_cabinet_requests(void)
{
    PROV_SUITE("cabinet_requests",
               PROV_TEST(test_requests_defaults),
               PROV_TEST(test_requests_values),
               PROV_TEST(test_requests_refusals),
               PROV_TEST(test_secret_last4));
}
