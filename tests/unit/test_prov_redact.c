/* test_prov_redact.c: unit tests of the log masking of outside text
 * (prov_redact) and of what a gateway's error may tell a client
 * (prov_gwerror): every masking rule, a secret cut off by the end of the
 * text, control characters, the length bound on a UTF-8 boundary; the
 * gateway error shapes, the kinds and their allow-listed types, and client
 * messages that never carry the gateway's text. */
#include <string.h>
#include "unit_tests.h"
#include "prov_gwerror.h"
#include "prov_json.h"
#include "prov_redact.h"

#define TOKEN "gwtok-0123456789abcdef0123456789abcdef"
#define GWURL "http://10.1.2.3:4000"

static const prov_redactor_t *redactor(void)
{
    static const char *const secrets[] = { GWURL, TOKEN, "abc", NULL };
    return prov_redactor_create(secrets, prov_test_pool());
}

static const char *red(const char *text)
{
    return prov_redact(redactor(), text, strlen(text), 400, prov_test_pool());
}

static void test_literal_secrets(void)
{
    const char *out = red("upstream " GWURL "/v1/chat failed; token " TOKEN " refused");
    CU_ASSERT_PTR_NULL(strstr(out, TOKEN));
    CU_ASSERT_PTR_NULL(strstr(out, "10.1.2.3"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "upstream "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "refused"));
    /* The host:port of the URL alone, in another case, and the secret too
     * short to be one ("abc") left alone. */
    CU_ASSERT_STRING_EQUAL(red("connect to 10.1.2.3:4000 failed (abc)"),
                           "connect to [redacted] failed (abc)");
    CU_ASSERT_STRING_EQUAL(red("GWTOK-0123456789ABCDEF0123456789ABCDEF!"), "[redacted]!");
}

static void test_generic_rules(void)
{
    CU_ASSERT_STRING_EQUAL(red("see https://internal.example/a?token=x for more"),
                           "see [url] for more");
    CU_ASSERT_STRING_EQUAL(red("sent Authorization: Bearer abc.def-ghi\nnext"),
                           "sent Authorization: [redacted] next");
    CU_ASSERT_STRING_EQUAL(red("header was 'bearer xyz123' here"),
                           "header was 'bearer [redacted]' here");
    CU_ASSERT_STRING_EQUAL(red("Basic dXNlcjpwYXNz rejected"), "Basic [redacted] rejected");
    CU_ASSERT_STRING_EQUAL(red("{\"x-api-key\": \"k-1\", \"n\": 2}"),
                           "{\"x-api-key\": \"[redacted]\", \"n\": 2}");
    CU_ASSERT_STRING_EQUAL(red("password=hunter2&user=bob"), "password=[redacted]&user=bob");
    CU_ASSERT_STRING_EQUAL(red("key sk-prov-AbCdEf012345_-xyz is unknown"),
                           "key sk-[redacted] is unknown");
    CU_ASSERT_STRING_EQUAL(red("and sk-ant-api03-abcdefgh."), "and sk-[redacted].");
    CU_ASSERT_STRING_EQUAL(red("id 0123456789abcdef0123456789abcdef01 ok"), "id [redacted] ok");
    /* What is not a secret stays. */
    CU_ASSERT_STRING_EQUAL(red("max_tokens: 8192 > 4096, task-12345678, tokens: 5"),
                           "max_tokens: 8192 > 4096, task-12345678, tokens: 5");
    CU_ASSERT_STRING_EQUAL(red("prompt is too long: 250000 tokens > 200000 maximum"),
                           "prompt is too long: 250000 tokens > 200000 maximum");
    CU_ASSERT_STRING_EQUAL(red("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
                           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    CU_ASSERT_STRING_EQUAL(prov_redact(NULL, "Bearer t0k", 10, 100, prov_test_pool()),
                           "Bearer [redacted]");
}

static void test_bounds(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *cut = "error near gwtok-0123";   /* the token, cut by the end of the text */
    char big[300];
    const char *out;

    CU_ASSERT_STRING_EQUAL(prov_redact(redactor(), cut, strlen(cut), 400, p),
                           "error near [redacted]");
    CU_ASSERT_STRING_EQUAL(red("line\r\nforged [error] line\x7f"), "line  forged [error] line ");
    memset(big, 'x', sizeof(big));
    out = prov_redact(NULL, big, sizeof(big), 100, p);
    CU_ASSERT_EQUAL(strlen(out), 103);
    CU_ASSERT_STRING_EQUAL(out + 100, "...");
    /* Cut on a character boundary: 50 two-byte characters, room for 33. */
    out = prov_redact(NULL, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                      "\xc3\xa9\xc3\xa9\xc3\xa9", 38, 17, p);
    CU_ASSERT_EQUAL(strlen(out), 16 + 3);
    CU_ASSERT_EQUAL((unsigned char)out[15], 0xa9);
    /* A mask is written whole or not at all. */
    out = prov_redact(NULL, "aaaaaaaaaaaaaa Bearer abcdef", 28, 20, p);
    CU_ASSERT_PTR_NULL(strstr(out, "abcdef"));
    CU_ASSERT_STRING_EQUAL(prov_redact(NULL, NULL, 0, 100, p), "");
}

/* ---- prov_gwerror ---- */

static prov_gwerror_t readerr(int status, const char *body)
{
    prov_gwerror_t e;
    prov_gwerror_read(&e, status, body, strlen(body), prov_test_pool());
    return e;
}

static void test_gwerror_kinds(void)
{
    prov_gwerror_t e = readerr(400, "{\"type\":\"error\",\"error\":{\"type\":"
                               "\"invalid_request_error\",\"message\":\"prompt is too "
                               "long: 250000 tokens > 200000 maximum\"}}");
    CU_ASSERT_EQUAL(e.kind, PROV_GWERR_CONTEXT_LENGTH);
    CU_ASSERT_EQUAL(e.prompt_tokens, 250000);
    CU_ASSERT_EQUAL(e.limit_tokens, 200000);
    CU_ASSERT_STRING_EQUAL(e.type, "invalid_request_error");
    e = readerr(400, "{\"error\":{\"message\":\"This model's maximum context length is 128000 "
                "tokens. However, your messages resulted in 130001 tokens.\",\"type\":"
                "\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}");
    CU_ASSERT_EQUAL(e.kind, PROV_GWERR_CONTEXT_LENGTH);
    CU_ASSERT_EQUAL(e.prompt_tokens, 130001);
    CU_ASSERT_EQUAL(e.limit_tokens, 128000);
    e = readerr(400, "{\"error\":{\"message\":\"x\",\"code\":\"context_length_exceeded\"}}");
    CU_ASSERT_EQUAL(e.kind, PROV_GWERR_CONTEXT_LENGTH);
    CU_ASSERT_EQUAL(e.prompt_tokens, 0);
    CU_ASSERT_EQUAL(readerr(422, "{\"detail\":\"bad field\"}").kind, PROV_GWERR_INVALID_REQUEST);
    CU_ASSERT_STRING_EQUAL(readerr(422, "{\"detail\":\"bad field\"}").text, "bad field");
    CU_ASSERT_EQUAL(readerr(429, "").kind, PROV_GWERR_RATE_LIMIT);
    CU_ASSERT_EQUAL(readerr(529, "{}").kind, PROV_GWERR_OVERLOADED);
    CU_ASSERT_EQUAL(readerr(401, "no").kind, PROV_GWERR_AUTH);
    CU_ASSERT_EQUAL(readerr(404, "no").kind, PROV_GWERR_NOT_FOUND);
    CU_ASSERT_EQUAL(readerr(500, "<html>oops</html>").kind, PROV_GWERR_SERVER);
    CU_ASSERT_STRING_EQUAL(readerr(500, "<html>oops</html>").text, "<html>oops</html>");
    /* A 500 saying "context length" is still a server failure. */
    CU_ASSERT_EQUAL(readerr(500, "{\"error\":{\"message\":\"context length\"}}").kind,
                    PROV_GWERR_SERVER);
    /* Inside a stream: by the type; unknown types are api_error. */
    e = readerr(0, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                "\"message\":\"m\"}}");
    CU_ASSERT_EQUAL(e.kind, PROV_GWERR_OVERLOADED);
    CU_ASSERT_STRING_EQUAL(e.type, "overloaded_error");
    e = readerr(0, "{\"error\":{\"type\":\"secret_sauce_error\",\"message\":\"m\"}}");
    CU_ASSERT_EQUAL(e.kind, PROV_GWERR_UNKNOWN);
    CU_ASSERT_STRING_EQUAL(e.type, "api_error");
    CU_ASSERT_EQUAL(readerr(0, "{\"error\":{\"code\":429,\"type\":\"rate_limit_error\"}}").kind,
                    PROV_GWERR_RATE_LIMIT);
}

static void test_gwerror_text_kept(void)
{
    char big[3000];
    prov_gwerror_t e;
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    e = readerr(400, big);
    CU_ASSERT_EQUAL(strlen(e.text), PROV_GWERROR_TEXT_MAX);
    e = readerr(400, "{\"error\":{\"message\":\"see " GWURL " with Bearer " TOKEN "\"}}");
    CU_ASSERT_STRING_EQUAL(e.text, "see " GWURL " with Bearer " TOKEN);
}

static void test_gwerror_client(void)
{
    apr_pool_t *p = prov_test_pool();
    const char *leak = "{\"error\":{\"type\":\"invalid_request_error\",\"message\":\"at " GWURL
                       " (Authorization: Bearer " TOKEN ")\"}}";
    prov_gwerror_t e = readerr(400, leak);
    prov_error_t *c = prov_gwerror_client(&e, p);
    const char *ev, *perr = NULL;
    json_object *o;

    CU_ASSERT_EQUAL(c->code, PROV_E_INVALID_REQUEST);
    CU_ASSERT_PTR_NULL(strstr(c->message, GWURL));
    CU_ASSERT_PTR_NULL(strstr(c->message, TOKEN));
    CU_ASSERT_PTR_NOT_NULL(strstr(c->message, "HTTP 400"));
    e = readerr(400, "{\"error\":{\"message\":\"prompt is too long: 9 tokens > 8 maximum " TOKEN
                "\"}}");
    c = prov_gwerror_client(&e, p);
    CU_ASSERT_STRING_EQUAL(c->message, "prompt is too long: 9 tokens > 8 maximum. The prompt "
                           "is longer than this model's context window.");
    e = readerr(413, "{\"error\":{\"message\":\"Input is too long for requested model.\"}}");
    CU_ASSERT_STRING_EQUAL(prov_gwerror_client(&e, p)->message, "prompt is too long: the "
                           "prompt is longer than this model's context window.");
    e = readerr(503, leak);
    c = prov_gwerror_client(&e, p);
    CU_ASSERT_EQUAL(c->code, PROV_E_GATEWAY_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(c->message, "HTTP 503"));
    CU_ASSERT_PTR_NULL(strstr(c->message, TOKEN));

    e = readerr(0, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
                "\"from " GWURL " Bearer " TOKEN "\"}}");
    ev = prov_gwerror_anthropic_event(&e, p);
    CU_ASSERT_PTR_NULL(strstr(ev, TOKEN));
    CU_ASSERT_PTR_NULL(strstr(ev, "10.1.2.3"));
    CU_ASSERT_EQUAL(strncmp(ev, "event: error\ndata: ", 19), 0);
    o = prov_json_parse(ev + 19, strlen(ev + 19), &perr, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(o);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "type"), "error");
    o = prov_json_get(o, "error", json_type_object);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "type"), "overloaded_error");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "code"), "server_is_overloaded");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(o, "message"), "The model is overloaded upstream; "
                           "retry shortly. The model's answer was interrupted.");
    /* Another kind inside a stream is ours, naming the type. */
    e = readerr(0, "{\"error\":{\"type\":\"api_error\",\"message\":\"x\"}}");
    c = prov_gwerror_client(&e, p);
    CU_ASSERT_EQUAL(c->code, PROV_E_GATEWAY_ERROR);
    CU_ASSERT_STRING_EQUAL(c->message, "The model's answer was interrupted by an error "
                           "upstream (api_error).");
}

/* The model's own conditions keep their meaning: the codes clients act on,
 * the status of each family, Retry-After from the gateway. */
static void test_gwerror_conditions(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_gwerror_t e = readerr(400, "{\"error\":{\"message\":\"This model's maximum context "
                               "length is 128000 tokens. However, your messages resulted in "
                               "130001 tokens.\",\"code\":\"context_length_exceeded\"}}");
    prov_error_t *c = prov_gwerror_client(&e, p);

    CU_ASSERT_EQUAL(c->code, PROV_E_CONTEXT_LENGTH);
    CU_ASSERT_STRING_EQUAL(prov_error_info(c->code)->code, "context_length_exceeded");
    CU_ASSERT_EQUAL(prov_error_status(c->code, 0), 400);
    CU_ASSERT_EQUAL(prov_error_status(c->code, 1), 400);
    CU_ASSERT_STRING_EQUAL(c->message, "prompt is too long: 130001 tokens > 128000 maximum. "
                           "The prompt is longer than this model's context window.");
    CU_ASSERT_EQUAL(c->retry_after, 0);

    e = readerr(429, "{\"error\":{\"message\":\"slow down " TOKEN "\"}}");
    prov_gwerror_retry_after(&e, "7");
    c = prov_gwerror_client(&e, p);
    CU_ASSERT_EQUAL(c->code, PROV_E_UPSTREAM_RATE_LIMIT);
    CU_ASSERT_STRING_EQUAL(prov_error_info(c->code)->code, "rate_limit_exceeded");
    CU_ASSERT_EQUAL(prov_error_status(c->code, 0), 429);
    CU_ASSERT_EQUAL(c->retry_after, 7);
    CU_ASSERT_STRING_EQUAL(c->message, "The model is rate limited upstream. Please try again "
                           "in 7s. Nothing was charged.");
    /* no header, a date, zero, too long: 1 s */
    e = readerr(429, "");
    prov_gwerror_retry_after(&e, "Wed, 21 Oct 2015 07:28:00 GMT");
    prov_gwerror_retry_after(&e, "0");
    prov_gwerror_retry_after(&e, "86400");
    CU_ASSERT_EQUAL(prov_gwerror_client(&e, p)->retry_after, 1);

    e = readerr(529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                "\"message\":\"Overloaded\"}}");
    c = prov_gwerror_client(&e, p);
    CU_ASSERT_EQUAL(c->code, PROV_E_UPSTREAM_OVERLOADED);
    CU_ASSERT_STRING_EQUAL(prov_error_info(c->code)->code, "server_is_overloaded");
    CU_ASSERT_EQUAL(prov_error_status(c->code, 0), 503);
    CU_ASSERT_EQUAL(prov_error_status(c->code, 1), 529);
    CU_ASSERT_STRING_EQUAL(prov_error_info(c->code)->anthropic_type, "overloaded_error");
    CU_ASSERT_EQUAL(c->retry_after, 0);
    /* OpenAI's overload is a 503 with its code; a bare 503 stays a failure */
    e = readerr(503, "{\"error\":{\"message\":\"The server is overloaded or not ready yet.\","
                "\"type\":\"server_error\",\"code\":\"server_is_overloaded\"}}");
    prov_gwerror_retry_after(&e, "3");
    c = prov_gwerror_client(&e, p);
    CU_ASSERT_EQUAL(c->code, PROV_E_UPSTREAM_OVERLOADED);
    CU_ASSERT_EQUAL(c->retry_after, 3);
    CU_ASSERT_EQUAL(prov_gwerror_client(&(prov_gwerror_t){ .status = 503,
                                        .kind = PROV_GWERR_SERVER }, p)->code,
                    PROV_E_GATEWAY_ERROR);
    /* in a stream: the same codes */
    e = readerr(0, "{\"error\":{\"message\":\"x\",\"code\":\"context_length_exceeded\"}}");
    CU_ASSERT_EQUAL(prov_gwerror_client(&e, p)->code, PROV_E_CONTEXT_LENGTH);
    e = readerr(0, "{\"error\":{\"type\":\"rate_limit_error\",\"message\":\"x\"}}");
    c = prov_gwerror_client(&e, p);
    CU_ASSERT_EQUAL(c->code, PROV_E_UPSTREAM_RATE_LIMIT);
    CU_ASSERT_STRING_EQUAL(c->message, "The model is rate limited upstream. Please try again "
                           "in 1s. The model's answer was interrupted.");
    e = readerr(0, "{\"error\":{\"type\":\"server_error\",\"code\":\"server_is_overloaded\"}}");
    CU_ASSERT_EQUAL(prov_gwerror_client(&e, p)->code, PROV_E_UPSTREAM_OVERLOADED);
}

void prov_test_suite_redact(void)
{
    PROV_SUITE("redact", PROV_TEST(test_literal_secrets), PROV_TEST(test_generic_rules),
               PROV_TEST(test_bounds), PROV_TEST(test_gwerror_kinds),
               PROV_TEST(test_gwerror_text_kept), PROV_TEST(test_gwerror_client),
               PROV_TEST(test_gwerror_conditions));
}
