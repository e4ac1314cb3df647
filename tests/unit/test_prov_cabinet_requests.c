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

/* The ledger's rows and the refusals merged newest first, by the second and
 * then by the request id; pages of two walk the same list. */
static void test_requests_merge(void)
{
    static const char *const order[] = { "req_6", "req_5", "req_4", "req_3", "req_2", "req_1" };
    apr_pool_t *p = NULL;
    prov_store_t *s;
    prov_cabinet_requests_q_t q;
    prov_error_t *err = NULL;
    json_object *o = NULL, *next;
    const char *before = NULL;
    int seen = 0, pages = 0;
    apr_pool_create(&p, prov_test_pool());
    s = prov_test_store(p);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s,
        "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, status, "
        "created_at) VALUES ('req_1', 1, 1, 1, 'chat', 'ok', 100), "
        "('req_3', 1, 1, 1, 'chat', 'ok', 200), ('req_6', 1, 1, 1, 'chat', 'ok', 300), "
        "('req_x', 2, 3, 1, 'chat', 'ok', 300)", p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_store_raw(s,
        "INSERT INTO refusals (created_at, user_id, key_id, transport, model, http_status, "
        "code, request_id, count) VALUES (150, 1, 1, 'chat', 'm', 402, "
        "'INSUFFICIENT_CREDITS', 'req_2', 1), (200, 1, 2, 'chat', NULL, 429, "
        "'API_KEY_RATE_LIMITED', 'req_4', 5), (300, 1, 1, 'chat', 'm', 404, "
        "'MODEL_NOT_FOUND', 'req_5', 1)", p), APR_SUCCESS);
    do {
        json_object *a;
        int i;
        CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests_args(&q, &err, NULL, NULL, "2", before, p),
                              APR_SUCCESS);
        CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests(&o, s, 1, &q, p), APR_SUCCESS);
        a = json_object_object_get(o, "data");
        for (i = 0; i < (int)json_object_array_length(a) && seen < 6; i++, seen++)
            CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(
                json_object_array_get_idx(a, (apr_size_t)i), "request_id")), order[seen]);
        next = json_object_object_get(o, "next");
        before = next ? apr_pstrdup(p, json_object_get_string(next)) : NULL;
    } while (before && ++pages < 10);
    CU_ASSERT_EQUAL(seen, 6);
    CU_ASSERT_EQUAL(pages, 2);
    /* by HTTP status: the refusals alone; their fields */
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests_args(&q, &err, NULL, "429", NULL, NULL, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests(&o, s, 1, &q, p), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(json_object_object_get(o, "data")), 1);
    {
        json_object *r = json_object_array_get_idx(json_object_object_get(o, "data"), 0);
        CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(r, "count")), 5);
        CU_ASSERT_EQUAL(json_object_get_int(json_object_object_get(r, "http_status")), 429);
        CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(r, "status")),
                               "refused");
        CU_ASSERT_STRING_EQUAL(json_object_get_string(json_object_object_get(r, "model")), "");
    }
    /* "ok": the ledger alone */
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests_args(&q, &err, NULL, "ok", NULL, NULL, p),
                          APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(prov_cabinet_requests(&o, s, 1, &q, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(json_object_array_length(json_object_object_get(o, "data")), 3);
    apr_pool_destroy(p);
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
               PROV_TEST(test_requests_merge),
               PROV_TEST(test_secret_last4));
}
