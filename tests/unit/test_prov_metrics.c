/* test_prov_metrics.c: unit tests of the server's counters and their
 * Prometheus text: histogram bucketing at and around the bounds, cumulative
 * buckets with _sum and _count in seconds, requests by transport, model and
 * status class (the bounded model table and its "other" and "none" rows),
 * credits rendered exactly from micro-credits, signed gauges, label values
 * escaped, and a NULL block that ignores every update. */
#include <stdlib.h>
#include <string.h>
#include "unit_tests.h"
#include "prov_metrics.h"

static prov_metrics_t *block(apr_pool_t *p)
{
    return prov_metrics_init(apr_palloc(p, prov_metrics_size()));
}

/* Non-zero when text has the line exactly. */
static int has_line(const char *text, const char *line)
{
    apr_size_t n = strlen(line);
    const char *at = text;
    while ((at = strstr(at, line))) {
        if ((at == text || at[-1] == '\n') && (at[n] == '\n' || at[n] == '\0'))
            return 1;
        at += n;
    }
    return 0;
}

static void test_bucket(void)
{
    static const apr_int64_t b[] = { 1, 5, 10 };
    CU_ASSERT_EQUAL(prov_metrics_bucket(b, 3, 0), 0);
    CU_ASSERT_EQUAL(prov_metrics_bucket(b, 3, 1), 0);
    CU_ASSERT_EQUAL(prov_metrics_bucket(b, 3, 2), 1);
    CU_ASSERT_EQUAL(prov_metrics_bucket(b, 3, 10), 2);
    CU_ASSERT_EQUAL(prov_metrics_bucket(b, 3, 11), 3);
    CU_ASSERT_EQUAL(prov_metrics_bucket(b, 0, 11), 0);
}

static void test_histogram_text(void)
{
    apr_pool_t *p = NULL;
    prov_metrics_t *m;
    const char *t;
    apr_pool_create(&p, prov_test_pool());
    m = block(p);
    prov_metrics_observe(m, PROV_MX_H_GATEWAY, 5000);      /* 5 ms: le 0.005 */
    prov_metrics_observe(m, PROV_MX_H_GATEWAY, 120000);    /* le 0.25 */
    prov_metrics_observe(m, PROV_MX_H_GATEWAY, 999000000); /* +Inf only */
    prov_metrics_observe(m, PROV_MX_H_BATCH, 3);
    t = prov_metrics_render(m, p);
    CU_ASSERT(has_line(t, "# TYPE provider_gateway_request_duration_seconds histogram"));
    CU_ASSERT(has_line(t, "provider_gateway_request_duration_seconds_bucket{le=\"0.005000\"} 1"));
    CU_ASSERT(has_line(t, "provider_gateway_request_duration_seconds_bucket{le=\"0.100000\"} 1"));
    CU_ASSERT(has_line(t, "provider_gateway_request_duration_seconds_bucket{le=\"0.250000\"} 2"));
    CU_ASSERT(has_line(t, "provider_gateway_request_duration_seconds_bucket{le=\"300.000000\"} 2"));
    CU_ASSERT(has_line(t, "provider_gateway_request_duration_seconds_bucket{le=\"+Inf\"} 3"));
    CU_ASSERT(has_line(t, "provider_gateway_request_duration_seconds_sum 999.125000"));
    CU_ASSERT(has_line(t, "provider_gateway_request_duration_seconds_count 3"));
    CU_ASSERT(has_line(t, "provider_billing_batch_operations_bucket{le=\"2\"} 0"));
    CU_ASSERT(has_line(t, "provider_billing_batch_operations_bucket{le=\"4\"} 1"));
    CU_ASSERT(has_line(t, "provider_billing_batch_operations_sum 3"));
    CU_ASSERT(has_line(t, "provider_db_connection_wait_seconds_count 0"));
    apr_pool_destroy(p);
}

static void test_requests_and_models(void)
{
    apr_pool_t *p = NULL;
    prov_metrics_t *m;
    const char *t;
    char id[32];
    int i;
    apr_pool_create(&p, prov_test_pool());
    m = block(p);
    CU_ASSERT_EQUAL(prov_metrics_transport("messages"), PROV_MX_MESSAGES);
    CU_ASSERT_EQUAL(prov_metrics_transport("mcp"), PROV_MX_TRANSPORTS);
    prov_metrics_request(m, PROV_MX_CHAT, "gpt-chat", 200);
    prov_metrics_request(m, PROV_MX_CHAT, "gpt-chat", 201);
    prov_metrics_request(m, PROV_MX_CHAT, NULL, 401);
    prov_metrics_request(m, PROV_MX_MESSAGES, "we\"ird\\", 503);
    prov_metrics_request(m, PROV_MX_TRANSPORTS, "gpt-chat", 200);   /* ignored */
    prov_metrics_request(m, PROV_MX_CHAT, "gpt-chat", 700);         /* ignored */
    for (i = 0; i < PROV_MX_MODELS + 3; i++) {        /* fills the table: the rest is other */
        sprintf(id, "m%d", i);
        prov_metrics_request(m, PROV_MX_RESPONSES, id, 200);
    }
    t = prov_metrics_render(m, p);
    CU_ASSERT(has_line(t, "# TYPE provider_requests_total counter"));
    CU_ASSERT(has_line(t, "provider_requests_total{transport=\"chat\",model=\"gpt-chat\","
                          "code=\"2xx\"} 2"));
    CU_ASSERT(has_line(t, "provider_requests_total{transport=\"chat\",model=\"none\","
                          "code=\"4xx\"} 1"));
    CU_ASSERT(has_line(t, "provider_requests_total{transport=\"messages\","
                          "model=\"we\\\"ird\\\\\",code=\"5xx\"} 1"));
    CU_ASSERT(has_line(t, "provider_requests_total{transport=\"responses\",model=\"m0\","
                          "code=\"2xx\"} 1"));
    /* two slots went to gpt-chat and the odd one: 62 m's got their own */
    CU_ASSERT(has_line(t, "provider_requests_total{transport=\"responses\",model=\"m61\","
                          "code=\"2xx\"} 1"));
    CU_ASSERT_PTR_NULL(strstr(t, "model=\"m62\""));
    CU_ASSERT(has_line(t, "provider_requests_total{transport=\"responses\",model=\"other\","
                          "code=\"2xx\"} 5"));
    CU_ASSERT_PTR_NULL(strstr(t, "code=\"7xx\""));
    apr_pool_destroy(p);
}

static void test_scalars(void)
{
    apr_pool_t *p = NULL;
    prov_metrics_t *m;
    const char *t;
    apr_pool_create(&p, prov_test_pool());
    m = block(p);
    prov_metrics_add(m, PROV_MX_CREDITS_PLAN, 1234567);
    prov_metrics_add(m, PROV_MX_CREDITS_BALANCE, 5);
    prov_metrics_add(m, PROV_MX_TOKENS_OUTPUT, 40);
    prov_metrics_add(m, PROV_MX_HOLDS_IN_FLIGHT, 1);
    prov_metrics_add(m, PROV_MX_HOLDS_IN_FLIGHT, -3);
    prov_metrics_add(m, PROV_MX_HELD_IN_FLIGHT, -2500000);
    prov_metrics_refused(m, PROV_MX_REFUSED_BUDGET);
    prov_metrics_refused(m, (prov_mx_refusal_e)(PROV_MX_REFUSED_RATE_LIMIT + PROV_RL_SIGNIN));
    prov_metrics_gateway_error(m, PROV_MX_GW_TIMEOUT);
    CU_ASSERT_EQUAL(prov_metrics_get(m, PROV_MX_HOLDS_IN_FLIGHT), -2);
    t = prov_metrics_render(m, p);
    CU_ASSERT(has_line(t, "provider_credits_charged_total{source=\"plan\"} 1.234567"));
    CU_ASSERT(has_line(t, "provider_credits_charged_total{source=\"balance\"} 0.000005"));
    CU_ASSERT(has_line(t, "provider_tokens_total{kind=\"output\"} 40"));
    CU_ASSERT(has_line(t, "provider_tokens_total{kind=\"input\"} 0"));
    CU_ASSERT(has_line(t, "provider_holds_in_flight -2"));
    CU_ASSERT(has_line(t, "provider_credits_held_in_flight -2.500000"));
    CU_ASSERT(has_line(t, "# TYPE provider_streams_open gauge"));
    CU_ASSERT(has_line(t, "provider_refused_total{check=\"budget\"} 1"));
    CU_ASSERT(has_line(t, "provider_refused_total{check=\"rate_limit_signin\"} 1"));
    CU_ASSERT(has_line(t, "provider_refused_total{check=\"key\"} 0"));
    CU_ASSERT(has_line(t, "provider_gateway_errors_total{class=\"timeout\"} 1"));
    /* every line is a comment or "name[{labels}] value" */
    CU_ASSERT_PTR_NULL(strstr(t, "\n\n"));
    CU_ASSERT_EQUAL(t[strlen(t) - 1], '\n');
    apr_pool_destroy(p);
}

static void test_null_block(void)
{
    prov_metrics_request(NULL, PROV_MX_CHAT, "x", 200);
    prov_metrics_add(NULL, PROV_MX_SIGNINS, 1);
    prov_metrics_refused(NULL, PROV_MX_REFUSED_KEY);
    prov_metrics_gateway_error(NULL, PROV_MX_GW_AUTH);
    prov_metrics_observe(NULL, PROV_MX_H_DB_WAIT, 1);
    CU_ASSERT_EQUAL(prov_metrics_get(NULL, PROV_MX_SIGNINS), 0);
    CU_ASSERT_PTR_NULL(prov_metrics_current());
}

void prov_test_suite_metrics(void)
{
    PROV_SUITE("metrics", PROV_TEST(test_bucket), PROV_TEST(test_histogram_text),
               PROV_TEST(test_requests_and_models), PROV_TEST(test_scalars),
               PROV_TEST(test_null_block));
}
