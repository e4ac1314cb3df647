/* test_prov_estimate.c: unit tests of the charge of answers whose cost the
 * gateway did not report (docs/internals/broken-streams.md): the rule (final
 * usage, estimate, release) for complete, cut and abandoned answers, output
 * tokens counted as bytes / 3 rounded up, the estimate's input and output,
 * the cap at the hold, and the output text counted in Chat and Messages
 * answers and in Messages stream events (never the JSON around it). */
#include <string.h>
#include "unit_tests.h"
#include "prov_estimate.h"

static const prov_rates_t rates = { 1000000, 4000000, 100000, 8000000 };  /* per 1M tokens */

static void test_rule(void)
{
    prov_delivery_t d;
    memset(&d, 0, sizeof(d));
    /* Cut before anything was sent, or before any output: nothing. */
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_RELEASE);
    d.started = 1;
    d.usage = PROV_USAGE_PARTIAL;
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_RELEASE);
    /* Some output relayed, then cut: the estimate. */
    d.output_bytes = 1;
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_ESTIMATED);
    /* The gateway had reported the answer's usage: that. */
    d.usage = PROV_USAGE_FINAL;
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_REPORTED);
    d.output_bytes = 0;
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_REPORTED);
    /* A complete answer without usage: the estimate, even when empty. */
    memset(&d, 0, sizeof(d));
    d.started = d.complete = 1;
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_ESTIMATED);
    /* A client that leaves a started stream: the gateway did the work. */
    memset(&d, 0, sizeof(d));
    d.client_left = 1;
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_RELEASE);
    d.started = 1;
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_ESTIMATED);
    d.usage = PROV_USAGE_FINAL;
    CU_ASSERT_EQUAL(prov_estimate_rule(&d), PROV_BILL_REPORTED);
}

static void test_output_tokens(void)
{
    CU_ASSERT_EQUAL(prov_estimate_output_tokens(0), 0);
    CU_ASSERT_EQUAL(prov_estimate_output_tokens(1), 1);
    CU_ASSERT_EQUAL(prov_estimate_output_tokens(3), 1);
    CU_ASSERT_EQUAL(prov_estimate_output_tokens(4), 2);
    CU_ASSERT_EQUAL(prov_estimate_output_tokens(300), 100);
    CU_ASSERT_EQUAL(prov_estimate_output_tokens(301), 101);
    CU_ASSERT_EQUAL(prov_estimate_output_tokens(APR_UINT64_MAX), APR_INT64_C(6148914691236517205));
}

static void test_tokens_and_bill(void)
{
    prov_delivery_t d;
    prov_tokens_t t;
    prov_bill_e how;
    prov_micro_t c;

    /* No usage: our input estimate and the output relayed. */
    memset(&d, 0, sizeof(d));
    d.started = 1;
    d.output_bytes = 10;
    prov_estimate_tokens(&t, &d, 57);
    CU_ASSERT_EQUAL(t.input, 57);
    CU_ASSERT_EQUAL(t.output, 4);
    CU_ASSERT_EQUAL(t.cache, 0);
    CU_ASSERT_EQUAL(t.reasoning, 0);
    c = prov_estimate_bill(&how, &t, NULL, &d, &rates, 57, PROV_OUTPUT_TOKENS_MAX, 1000000);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);
    CU_ASSERT_EQUAL(c, 57 + 16);
    /* Never more than the hold. */
    c = prov_estimate_bill(&how, &t, NULL, &d, &rates, 57, PROV_OUTPUT_TOKENS_MAX, 70);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);
    CU_ASSERT_EQUAL(c, 70);
    CU_ASSERT_EQUAL(t.output, 4);

    /* Partial usage (a Messages stream's message_start): its input and cache,
     * and the larger output. */
    d.usage = PROV_USAGE_PARTIAL;
    d.reported.input = 20;
    d.reported.cache = 100;
    d.reported.output = 1;
    prov_estimate_tokens(&t, &d, 57);
    CU_ASSERT_EQUAL(t.input, 20);
    CU_ASSERT_EQUAL(t.cache, 100);
    CU_ASSERT_EQUAL(t.output, 4);
    d.reported.output = 9;
    prov_estimate_tokens(&t, &d, 57);
    CU_ASSERT_EQUAL(t.output, 9);
    d.reported.input = -5;
    prov_estimate_tokens(&t, &d, 57);
    CU_ASSERT_EQUAL(t.input, 0);

    /* Final usage: charged as reported, never above the hold (the worst
     * case: a report beyond it is absurd and charged the hold). */
    d.usage = PROV_USAGE_FINAL;
    d.reported.input = 20;
    c = prov_estimate_bill(&how, &t, NULL, &d, &rates, 57, PROV_OUTPUT_TOKENS_MAX, 1000000);
    CU_ASSERT_EQUAL(how, PROV_BILL_REPORTED);
    CU_ASSERT_EQUAL(t.output, 9);
    CU_ASSERT_EQUAL(c, 20 + 36 + 10);
    {
        unsigned notes = 0;
        c = prov_estimate_bill(&how, &t, &notes, &d, &rates, 57, PROV_OUTPUT_TOKENS_MAX, 30);
        CU_ASSERT_EQUAL(c, 30);
        CU_ASSERT_TRUE(notes & PROV_BILL_ABSURD);
        CU_ASSERT_EQUAL(t.input, 20);       /* the ledger keeps what was reported */
    }

    /* Nothing delivered: nothing. */
    memset(&d, 0, sizeof(d));
    d.started = 1;
    c = prov_estimate_bill(&how, &t, NULL, &d, &rates, 57, PROV_OUTPUT_TOKENS_MAX, 1000000);
    CU_ASSERT_EQUAL(how, PROV_BILL_RELEASE);
    CU_ASSERT_EQUAL(c, 0);
    CU_ASSERT_EQUAL(t.input + t.output + t.cache + t.reasoning, 0);
}

static json_object *parse(const char *s, apr_pool_t *p)
{
    const char *err = NULL;
    json_object *o = prov_json_parse(s, strlen(s), &err, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    return o;
}

static void test_count_answers(void)
{
    apr_pool_t *p;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(prov_estimate_chat_answer(parse(
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hello world\"}}]}", p)),
        11);
    CU_ASSERT_EQUAL(prov_estimate_chat_answer(parse(
        "{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"no\",\"tool_calls\":["
        "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
        "\"arguments\":\"{\\\"a\\\":1}\"}}]}},{\"message\":{\"content\":[{\"type\":\"text\","
        "\"text\":\"abc\"}]}}]}", p)), 2 + 1 + 7 + 3);
    CU_ASSERT_EQUAL(prov_estimate_chat_answer(parse("{\"choices\":[]}", p)), 0);
    CU_ASSERT_EQUAL(prov_estimate_chat_answer(parse("{}", p)), 0);

    CU_ASSERT_EQUAL(prov_estimate_messages_answer(parse(
        "{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"},"
        "{\"type\":\"thinking\",\"thinking\":\"hmm\",\"signature\":\"zzzzzzzzzz\"},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Read\",\"input\":{\"p\":\"x\"}},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"Ls\",\"input\":{}}]}", p)),
        5 + 3 + 4 + 9 + 2);
    CU_ASSERT_EQUAL(prov_estimate_messages_answer(parse("{\"content\":[]}", p)), 0);
    apr_pool_destroy(p);
}

static void test_count_events(void)
{
    apr_pool_t *p;
    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL(prov_estimate_messages_event("content_block_delta", parse(
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
        "\"text\":\"mock rep\"}}", p)), 8);
    CU_ASSERT_EQUAL(prov_estimate_messages_event("content_block_delta", parse(
        "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
        "\"partial_json\":\"{\\\"a\\\":\"}}", p)), 5);
    CU_ASSERT_EQUAL(prov_estimate_messages_event("content_block_delta", parse(
        "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\","
        "\"signature\":\"abcdef\"}}", p)), 0);
    CU_ASSERT_EQUAL(prov_estimate_messages_event("content_block_start", parse(
        "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
        "\"id\":\"toolu_1\",\"name\":\"Bash\",\"input\":{}}}", p)), 4);
    CU_ASSERT_EQUAL(prov_estimate_messages_event("content_block_start", parse(
        "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
        "\"text\":\"\"}}", p)), 0);
    CU_ASSERT_EQUAL(prov_estimate_messages_event("message_start", parse(
        "{\"type\":\"message_start\",\"message\":{\"content\":[{\"type\":\"text\","
        "\"text\":\"abc\"}]}}", p)), 0);
    CU_ASSERT_EQUAL(prov_estimate_messages_event("ping", parse("{\"type\":\"ping\"}", p)), 0);
    apr_pool_destroy(p);
}

void prov_test_suite_estimate(void)
{
    PROV_SUITE("estimate",
               PROV_TEST(test_rule),
               PROV_TEST(test_output_tokens),
               PROV_TEST(test_tokens_and_bill),
               PROV_TEST(test_count_answers),
               PROV_TEST(test_count_events));
}
