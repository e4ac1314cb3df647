/* test_prov_messages_relay.c: unit tests of the Messages stream relay's
 * events read without json-c (prov_messages_answer.c's fast path): the same
 * bytes as the json-c path for a gateway that writes as json-c prints
 * (mockgw's stream), the model and the credits spliced into the gateway's
 * own bytes where json-c puts them (a model or a usage added last, a usage
 * that is not an object replaced), the output counted from the text with
 * its escapes decoded, and the events the scan must hand to the json-c path
 * (seen by its compact print): a credits member already there, duplicate
 * keys, a count too long to read, a public id that needs escaping, a tool's
 * input other than {}. */
#include <string.h>
#include "unit_tests.h"
#include "prov_messages.h"
#include "prov_money.h"

typedef struct relayed_t {
    char buf[8192];
    apr_size_t len;
    prov_messages_stream_t *s;
} relayed_t;

static apr_status_t take(void *baton, const char *ev, apr_size_t len)
{
    relayed_t *r = baton;
    CU_ASSERT_FATAL(r->len + len < sizeof(r->buf));
    memcpy(r->buf + r->len, ev, len);
    r->len += len;
    r->buf[r->len] = '\0';
    return APR_SUCCESS;
}

/* The stream relayed with public id id, fast or through json-c only; one
 * output token costs a micro-credit. */
static void relay(relayed_t *r, const char *id, const char *text, int fast, apr_pool_t *p)
{
    static const prov_rates_t rates = { 0, 1000000, 0, 0 };
    memset(r, 0, sizeof(*r));
    r->s = prov_messages_stream_create(id, &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000000,
                                       take, r, p);
    prov_messages_stream_set_fast(r->s, fast);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(r->s, text, strlen(text)), APR_SUCCESS);
}

static apr_uint64_t output_bytes(const relayed_t *r)
{
    prov_delivery_t d;
    prov_messages_stream_delivery(r->s, &d);
    return d.output_bytes;
}

/* Both paths: the same state, usage and output counted; returns the fast
 * path's events (fast) and sets *slow to the json-c path's. */
static const char *both(const char **slow, const char *id, const char *text, apr_pool_t *p)
{
    relayed_t *f = apr_pcalloc(p, sizeof(*f)), *j = apr_pcalloc(p, sizeof(*j));
    prov_tokens_t tf, tj;
    relay(f, id, text, 1, p);
    relay(j, id, text, 0, p);
    CU_ASSERT_EQUAL(prov_messages_stream_events(f->s), prov_messages_stream_events(j->s));
    CU_ASSERT_EQUAL(prov_messages_stream_complete(f->s), prov_messages_stream_complete(j->s));
    CU_ASSERT_EQUAL(prov_messages_stream_tokens(f->s, &tf), prov_messages_stream_tokens(j->s, &tj));
    CU_ASSERT(!memcmp(&tf, &tj, sizeof(tf)));
    CU_ASSERT_EQUAL(output_bytes(f), output_bytes(j));
    *slow = apr_pstrdup(p, j->buf);
    return apr_pstrdup(p, f->buf);
}

#define EV(name, data) "event: " name "\ndata: " data "\n\n"

static const char mockgw_stream[] =
    EV("message_start", "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_mock_1\",\"type\":"
       "\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4\",\"content\":[],"
       "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":16,"
       "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}")
    EV("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
       "{\"type\":\"text\",\"text\":\"\"}}")
    EV("ping", "{\"type\":\"ping\"}")
    EV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
       "{\"type\":\"text_delta\",\"text\":\"mock rep\"}}")
    EV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
       "{\"type\":\"text_delta\",\"text\":\"ly.\"}}")
    EV("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
    EV("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
       "\"stop_sequence\":null},\"usage\":{\"output_tokens\":16}}")
    EV("message_stop", "{\"type\":\"message_stop\"}");

static void test_same_bytes(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *slow, *fast = both(&slow, "pub/claude-1", mockgw_stream, p);
    CU_ASSERT_STRING_EQUAL(fast, slow);
    CU_ASSERT_PTR_NOT_NULL(strstr(fast, "\"model\":\"pub/claude-1\",\"content\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(fast, "\"usage\":{\"output_tokens\":16,\"credits\":0.000016}}"));
}

/* Splices, with white space that the json-c path would drop: proof that the
 * scan read them. */
static void test_spliced(void)
{
    apr_pool_t *p = prov_test_pool();
    relayed_t r;
    const char *slow, *fast;

    relay(&r, "pub", EV("message_start", " {\"type\": \"message_start\", \"message\": {\"id\": \"m\","
                        " \"usage\": {\"input_tokens\": 5}} } ")
                     EV("content_block_delta", "{\"delta\": {\"text\": \"caf\\u00e9\\n\","
                        " \"thinking\": 7}}")
                     EV("content_block_start", "{\"content_block\": {\"name\": \"Bash\","
                        " \"input\": { }}}")
                     EV("message_delta", "{\"type\": \"message_delta\", \"usage\": null}"), 1, p);
    CU_ASSERT_STRING_EQUAL(r.buf,
        EV("message_start", "{\"type\": \"message_start\", \"message\": {\"id\": \"m\","
           " \"usage\": {\"input_tokens\": 5},\"model\":\"pub\"} }")
        EV("content_block_delta", "{\"delta\": {\"text\": \"caf\\u00e9\\n\", \"thinking\": 7}}")
        EV("content_block_start", "{\"content_block\": {\"name\": \"Bash\", \"input\": { }}}")
        EV("message_delta", "{\"type\": \"message_delta\", \"usage\": {\"credits\":0.000004}}"));
    /* "café\n" is 6 bytes, "Bash" 4: 10 bytes, 4 output tokens estimated
     * (the gateway reported no output count), 4 micro-credits told */
    CU_ASSERT_EQUAL(output_bytes(&r), 10);

    /* a message_start without usage or model, a message_delta without usage */
    fast = both(&slow, "pub", EV("message_start", "{ \"message\":{}}")
                              EV("message_delta", "{ }"), p);
    CU_ASSERT_STRING_EQUAL(fast, EV("message_start", "{ \"message\":{\"model\":\"pub\"}}")
                                 EV("message_delta", "{ \"usage\":{\"credits\":0}}"));
    CU_ASSERT_STRING_EQUAL(slow, EV("message_start", "{\"message\":{\"model\":\"pub\"}}")
                                 EV("message_delta", "{\"usage\":{\"credits\":0}}"));
}

/* Events the scan declines go through json-c, whose print is compact. */
static void test_declined(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *slow, *fast;

    /* usage with credits already: json-c replaces them */
    fast = both(&slow, "pub", EV("message_delta", "{ \"usage\": {\"output_tokens\": 3,"
                                                  " \"credits\": 99}}"), p);
    CU_ASSERT_STRING_EQUAL(fast, slow);
    CU_ASSERT_STRING_EQUAL(fast, EV("message_delta", "{\"usage\":{\"output_tokens\":3,"
                                                     "\"credits\":0.000003}}"));
    /* a duplicate key: json-c's last value wins */
    fast = both(&slow, "pub", EV("message_start", "{ \"message\": {\"model\": \"a\"},"
                                                  " \"message\": {\"usage\": {\"input_tokens\": 2}}}"),
                p);
    CU_ASSERT_STRING_EQUAL(fast, slow);
    CU_ASSERT_STRING_EQUAL(fast, EV("message_start", "{\"message\":{\"usage\":{\"input_tokens\":2},"
                                                     "\"model\":\"pub\"}}"));
    /* a count of 19 digits */
    fast = both(&slow, "pub", EV("message_delta", "{ \"usage\": {\"output_tokens\":"
                                                  " 1000000000000000000}}"), p);
    CU_ASSERT_STRING_EQUAL(fast, slow);
    CU_ASSERT_PTR_NOT_NULL(strstr(fast, "{\"usage\":{\"output_tokens\":1000000000000000000,"));
    /* a public id that JSON must escape */
    fast = both(&slow, "pub\"x", EV("message_start", "{ \"message\": {}}"), p);
    CU_ASSERT_STRING_EQUAL(fast, slow);
    CU_ASSERT_STRING_EQUAL(fast, EV("message_start", "{\"message\":{\"model\":\"pub\\\"x\"}}"));
    /* a tool's input: json-c's print of it is counted (8 bytes + "Bash") */
    fast = both(&slow, "pub", EV("content_block_start", "{ \"content_block\": {\"name\": \"Bash\","
                                                        " \"input\": {\"a\": [1, 2]}}}"), p);
    CU_ASSERT_STRING_EQUAL(fast, slow);
    /* an error event is always ours, read by the json-c path */
    fast = both(&slow, "pub", EV("error", "{\"type\":\"error\",\"error\":{\"type\":"
                                          "\"overloaded_error\",\"message\":\"busy\"}}"), p);
    CU_ASSERT_STRING_EQUAL(fast, slow);
    CU_ASSERT_PTR_NULL(strstr(fast, "busy"));
    /* not JSON, or not an object: relayed as it came by both */
    fast = both(&slow, "pub", EV("message_start", "[1]") EV("content_block_delta", "{\"delta\":")
                              EV("message_delta", "null"), p);
    CU_ASSERT_STRING_EQUAL(fast, slow);
    CU_ASSERT_STRING_EQUAL(fast, EV("message_start", "[1]") EV("content_block_delta", "{\"delta\":")
                                 EV("message_delta", "null"));
}

static void test_tool_input_bytes(void)
{
    apr_pool_t *p = prov_test_pool();
    relayed_t r;
    relay(&r, "pub", EV("content_block_start", "{ \"content_block\": {\"name\": \"Bash\","
                                               " \"input\": {\"a\": [1, 2]}}}"), 1, p);
    CU_ASSERT_EQUAL(output_bytes(&r), 4 + strlen("{\"a\":[1,2]}"));
    /* counting stops once the charge is told */
    relay(&r, "pub", EV("message_delta", "{}") EV("content_block_delta",
                                                  "{\"delta\":{\"text\":\"late\"}}"), 1, p);
    CU_ASSERT_EQUAL(output_bytes(&r), 0);
}

void prov_test_suite_messages_relay(void)
{
    PROV_SUITE("messages_relay",
               PROV_TEST(test_same_bytes),
               PROV_TEST(test_spliced),
               PROV_TEST(test_declined),
               PROV_TEST(test_tool_input_bytes));
}
