/* test_prov_messages.c: unit tests of the Messages transport's rules: the
 * anthropic-version check, validation with the offending field named, the
 * normalisation that keeps coding-agent clients working (cache_control
 * stripped everywhere, thinking dropped, image/document and unknown blocks
 * refused in a message and replaced by a note in a tool_result, search
 * results there made text, system messages folded; unknown top-level fields
 * and a thinking budget not below max_tokens are tested in
 * test_prov_messages_fields.c),
 * token kinds from Anthropic usage, the answer, and the stream relay (events
 * in order, usage from message_start and message_delta, the public model id
 * and credits written in, pieces of any size, a gateway's error event
 * replaced by ours). */
#include <string.h>
#include "unit_tests.h"
#include "prov_messages.h"
#include "prov_money.h"

static prov_messages_req_t *parse_ok(const char *body, int count, apr_pool_t *p)
{
    prov_messages_req_t *req = NULL;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL(prov_messages_parse(&req, &err, body, strlen(body), count, p), APR_SUCCESS);
    if (err)
        fprintf(stderr, "unexpected: %s\n", err->message);
    return req;
}

static prov_error_t *parse_bad(const char *body, apr_pool_t *p)
{
    prov_messages_req_t *req = NULL;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL(prov_messages_parse(&req, &err, body, strlen(body), 0, p), APR_EINVAL);
    CU_ASSERT_PTR_NULL(req);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INVALID_REQUEST);
    return err;
}

#define HAS(hay, needle) CU_ASSERT_PTR_NOT_NULL(strstr(hay, needle))
#define LACKS(hay, needle) CU_ASSERT_PTR_NULL(strstr(hay, needle))

static void test_version(void)
{
    CU_ASSERT_EQUAL(prov_messages_version_check("2023-06-01"), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_messages_version_check("2025-10-15"), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_messages_version_check("2023-01-01"), APR_ENOTIMPL);
    CU_ASSERT_EQUAL(prov_messages_version_check(NULL), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_messages_version_check(""), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_messages_version_check("2023-6-1"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_messages_version_check("2023-13-01"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_messages_version_check("2023-06-00"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_messages_version_check("2023-06-01x"), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_messages_version_check("latest"), APR_EINVAL);
}

static void test_valid_and_unknown_fields(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_messages_req_t *req = parse_ok("{\"model\":\"m\",\"max_tokens\":64,\"stream\":true,"
        "\"system\":\"be brief\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],"
        "\"metadata\":{\"user_id\":\"u1\"},\"output_config\":{\"effort\":\"low\"},"
        "\"stop_sequences\":[\"X\"],\"top_k\":5,\"service_tier\":\"auto\"}", 0, p);
    const char *up;
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_STRING_EQUAL(req->model, "m");
    CU_ASSERT_EQUAL(req->max_tokens, 64);
    CU_ASSERT_EQUAL(req->stream, 1);
    CU_ASSERT_EQUAL(req->n_messages, 1);
    CU_ASSERT_EQUAL(req->prompt_bytes, 8 + 5);
    up = prov_messages_upstream_body(req, "up-1", 0, p);
    HAS(up, "\"model\":\"up-1\"");
    HAS(up, "\"stop_sequences\":[\"X\"]");
    HAS(up, "\"top_k\":5");
    LACKS(up, "service_tier");     /* consumed: the default tier */
    HAS(up, "\"output_config\":{\"effort\":\"low\"}");
    HAS(up, "\"metadata\":{\"user_id\":\"u1\"}");
    HAS(up, "\"system\":\"be brief\"");
    CU_ASSERT(prov_messages_estimate_tokens(req) > 0);
}

static void test_refusals(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_error_t *e;
    e = parse_bad("{not json", p);
    HAS(e->message, "not valid JSON");
    parse_bad("[1]", p);
    e = parse_bad("{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "model");
    e = parse_bad("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "max_tokens");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":0,\"messages\":[{\"role\":\"user\","
                  "\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "max_tokens");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":\"9\",\"messages\":[]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "max_tokens");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"stream\":\"yes\",\"messages\":"
                  "[{\"role\":\"user\",\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "stream");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"tool\","
                  "\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[0].role");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[0].content");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
                  "\"content\":42}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[0].content");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"system\":[{\"type\":\"image\"}],"
                  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "system");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"tools\":{},"
                  "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "tools");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
                  "\"content\":[{\"type\":\"text\"}]}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[0].content[0]");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"assistant\","
                  "\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\"}]}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[0].content[0]");
    /* count_tokens needs no max_tokens and drops what it does not take */
    {
        prov_messages_req_t *req = parse_ok("{\"model\":\"m\",\"max_tokens\":9,\"stream\":true,"
            "\"temperature\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", 1, p);
        const char *up;
        CU_ASSERT_PTR_NOT_NULL_FATAL(req);
        up = prov_messages_upstream_body(req, "u", 0, p);
        LACKS(up, "max_tokens");
        LACKS(up, "stream");
        LACKS(up, "temperature");
        CU_ASSERT_PTR_NOT_NULL(parse_ok("{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                                        "\"content\":\"x\"}]}", 1, p));
    }
}

static void test_image_document(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_error_t *e;
    prov_messages_req_t *req;
    const char *up;

    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
                  "\"content\":[{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image\","
                  "\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"AA\"}}"
                  "]}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[0].content[1]");
    HAS(e->message, "'image'");
    e = parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
                  "\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"},"
                  "{\"role\":\"user\",\"content\":[{\"type\":\"document\",\"source\":{}}]}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "messages[2].content[0]");
    HAS(e->message, "'document'");

    /* inside a tool_result: a note, the rest kept in order */
    req = parse_ok("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
        "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":["
        "{\"type\":\"text\",\"text\":\"before\"},{\"type\":\"image\",\"source\":{\"type\":"
        "\"base64\",\"media_type\":\"image/png\",\"data\":\"QUJD\"}},{\"type\":\"document\","
        "\"source\":{}},{\"type\":\"text\",\"text\":\"after\"}]}]}]}", 0, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_EQUAL(req->n_replaced, 2);
    up = prov_messages_upstream_body(req, "u", 0, p);
    LACKS(up, "QUJD");
    LACKS(up, "\"type\":\"image\"");
    HAS(up, "{\"type\":\"text\",\"text\":\"before\"},{\"type\":\"text\",\"text\":\"[image "
            "content is not supported by this service and was removed]\"},{\"type\":\"text\","
            "\"text\":\"[document content is not supported by this service and was removed]\"},"
            "{\"type\":\"text\",\"text\":\"after\"}");
}

/* Block types outside text, tool_use, tool_result (and the thinking blocks
 * that are dropped) are refused in a message, by name; inside a tool_result a
 * search_result becomes text and any other block a note. */
static void test_unknown_blocks(void)
{
    apr_pool_t *p = prov_test_pool();
    static const char *const refused[] = { "server_tool_use", "web_search_tool_result",
        "search_result", "container_upload", "mcp_tool_use", "tool_reference", NULL };
    char long_type[200];
    const char *const *t, *up;
    prov_messages_req_t *req;
    prov_error_t *e;

    for (t = refused; *t; t++) {
        e = parse_bad(apr_psprintf(p, "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":"
                      "\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":"
                      "\"%s\",\"id\":\"x\",\"name\":\"web_search\",\"input\":{}}]}]}", *t), p);
        CU_ASSERT_STRING_EQUAL(e->param, "messages[0].content[1]");
        HAS(e->message, apr_psprintf(p, "'%s' blocks are not supported", *t));
    }
    memset(long_type, 'z', sizeof(long_type) - 1);
    long_type[sizeof(long_type) - 1] = '\0';
    e = parse_bad(apr_psprintf(p, "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":"
                  "\"user\",\"content\":[{\"type\":\"%s\"}]}]}", long_type), p);
    CU_ASSERT(strlen(e->message) < 200);

    req = parse_ok("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
        "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":["
        "{\"type\":\"search_result\",\"source\":\"https://a.example/\",\"title\":\"A\","
        "\"content\":[{\"type\":\"text\",\"text\":\"one\"},{\"type\":\"text\",\"text\":\"two\"}],"
        "\"citations\":{\"enabled\":true}},{\"type\":\"tool_reference\",\"tool_name\":\"Read\"},"
        "{\"type\":\"search_result\",\"content\":[]},{\"type\":\"text\",\"text\":\"end\"}]}]}]}",
        0, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_EQUAL(req->n_replaced, 2);
    up = prov_messages_upstream_body(req, "u", 0, p);
    LACKS(up, "\"type\":\"search_result\"");
    LACKS(up, "citations");
    LACKS(up, "\"tool_name\"");
    HAS(up, "\"content\":[{\"type\":\"text\",\"text\":\"A (https://a.example/)\\none\\ntwo\"},"
            "{\"type\":\"text\",\"text\":\"[tool_reference content is not supported by this "
            "service and was removed]\"},{\"type\":\"text\",\"text\":\"[search_result content "
            "is not supported by this service and was removed]\"},{\"type\":\"text\",\"text\":"
            "\"end\"}]");
}

static void test_stripping(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_messages_req_t *req = parse_ok("{\"model\":\"m\",\"max_tokens\":2048,"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},"
        "\"cache_control\":{\"type\":\"ephemeral\"},"
        "\"context_management\":{\"edits\":[{\"type\":\"clear_thinking_20251015\"}]},"
        "\"system\":[{\"type\":\"text\",\"text\":\"s1\",\"cache_control\":{\"type\":\"ephemeral\"}},"
        "{\"type\":\"text\",\"text\":\"s2\"}],"
        "\"tools\":[{\"name\":\"Bash\",\"input_schema\":{\"type\":\"object\"},"
        "\"cache_control\":{\"type\":\"ephemeral\"}}],"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"q\","
        "\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\","
        "\"signature\":\"SIG\"},{\"type\":\"redacted_thinking\",\"data\":\"RED\"},"
        "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"c\":\"ls\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
        "\"content\":\"ok\",\"is_error\":false,\"cache_control\":{\"type\":\"ephemeral\"}}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"only\","
        "\"signature\":\"S2\"}]},"
        "{\"role\":\"user\",\"content\":\"next\"}]}", 0, p);
    const char *up;
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_EQUAL(req->n_dropped, 3);
    /* the assistant message that held only thinking is gone */
    CU_ASSERT_EQUAL(req->n_messages, 4);
    up = prov_messages_upstream_body(req, "u", 0, p);
    LACKS(up, "cache_control");
    LACKS(up, "thinking");
    LACKS(up, "SIG");
    LACKS(up, "RED");
    LACKS(up, "context_management");
    HAS(up, "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"c\":\"ls\"}}");
    HAS(up, "\"is_error\":false");
    HAS(up, "\"system\":[{\"type\":\"text\",\"text\":\"s1\"},{\"type\":\"text\",\"text\":\"s2\"}]");
    HAS(up, "\"tools\":[{\"name\":\"Bash\",\"input_schema\":{\"type\":\"object\"}}]");

    /* other context-management edits stay */
    req = parse_ok("{\"model\":\"m\",\"max_tokens\":9,\"context_management\":{\"edits\":["
        "{\"type\":\"clear_thinking_20251015\"},{\"type\":\"clear_tool_uses_20250919\"}]},"
        "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", 0, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    up = prov_messages_upstream_body(req, "u", 0, p);
    HAS(up, "\"context_management\":{\"edits\":[{\"type\":\"clear_tool_uses_20250919\"}]}");
}

static void test_system_folding(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_messages_req_t *req = parse_ok("{\"model\":\"m\",\"max_tokens\":9,\"system\":\"base\","
        "\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"system\","
        "\"content\":\"extra rule\"},{\"role\":\"assistant\",\"content\":\"b\"},"
        "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"second\"}]},"
        "{\"role\":\"user\",\"content\":\"c\"}]}", 0, p);
    const char *up;
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_EQUAL(req->n_messages, 3);
    up = prov_messages_upstream_body(req, "u", 0, p);
    HAS(up, "\"system\":\"base\\n\\nextra rule\\n\\nsecond\"");
    LACKS(up, "\"role\":\"system\"");

    /* system as blocks: the folded text is a block of its own */
    req = parse_ok("{\"model\":\"m\",\"max_tokens\":9,\"system\":[{\"type\":\"text\","
        "\"text\":\"b1\"}],\"messages\":[{\"role\":\"system\",\"content\":\"f\"},"
        "{\"role\":\"user\",\"content\":\"c\"}]}", 0, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    up = prov_messages_upstream_body(req, "u", 0, p);
    HAS(up, "\"system\":[{\"type\":\"text\",\"text\":\"b1\"},{\"type\":\"text\",\"text\":\"f\"}]");

    /* no system at all: the folded text becomes it */
    req = parse_ok("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\","
        "\"content\":\"c\"},{\"role\":\"system\",\"content\":\"late\"}]}", 0, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    up = prov_messages_upstream_body(req, "u", 0, p);
    HAS(up, "\"system\":\"late\"");

    /* only a system message: nothing to answer */
    parse_bad("{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"system\","
              "\"content\":\"x\"}]}", p);
}

static void test_tokens_and_answer(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_tokens_t t;
    json_object *answer = NULL;
    const char *body = "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\","
        "\"model\":\"up-1\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],"
        "\"usage\":{\"input_tokens\":100,\"cache_creation_input_tokens\":30,"
        "\"cache_read_input_tokens\":50,\"output_tokens\":7}}";
    const char *out;

    CU_ASSERT_EQUAL(prov_messages_read_answer(&answer, &t, body, strlen(body), p), APR_SUCCESS);
    CU_ASSERT_EQUAL(t.input, 130);
    CU_ASSERT_EQUAL(t.cache, 50);
    CU_ASSERT_EQUAL(t.output, 7);
    CU_ASSERT_EQUAL(t.reasoning, 0);
    out = prov_messages_render(answer, "pub-1", 1234, p);
    HAS(out, "\"model\":\"pub-1\"");
    HAS(out, "\"credits\":0.001234");
    LACKS(out, "up-1");

    body = "{\"type\":\"message\",\"content\":[]}";
    CU_ASSERT_EQUAL(prov_messages_read_answer(&answer, &t, body, strlen(body), p), APR_ENOENT);
    body = "{\"id\": \"broken";
    CU_ASSERT_EQUAL(prov_messages_read_answer(&answer, &t, body, strlen(body), p), APR_EINVAL);
    body = "{\"type\":\"error\",\"error\":{}}";
    CU_ASSERT_EQUAL(prov_messages_read_answer(&answer, &t, body, strlen(body), p), APR_EINVAL);
    CU_ASSERT_EQUAL(prov_messages_tokens(&t, NULL), APR_ENOENT);
}

/* ---- the stream relay ---- */

typedef struct sink_t {
    char buf[8192];
    apr_size_t len;
    int events;
    int stop_after;     /* > 0: refuse the event after this many */
} sink_t;

static apr_status_t sink_emit(void *baton, const char *ev, apr_size_t len)
{
    sink_t *s = baton;
    if (s->stop_after && s->events >= s->stop_after)
        return APR_ECONNABORTED;
    if (s->len + len < sizeof(s->buf)) {
        memcpy(s->buf + s->len, ev, len);
        s->len += len;
        s->buf[s->len] = '\0';
    }
    s->events++;
    return APR_SUCCESS;
}

static const char stream_text[] =
    "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\","
    "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up-1\",\"content\":[],"
    "\"usage\":{\"input_tokens\":1000,\"cache_creation_input_tokens\":0,"
    "\"cache_read_input_tokens\":200,\"output_tokens\":1}}}\r\n\r\n"
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: ping\ndata: {\"type\": \"ping\"}\n\n"
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
    "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
    "\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":500}}\n\n"
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

static void run_stream(sink_t *sink, prov_messages_stream_t **ps, apr_size_t piece,
                       apr_pool_t *p)
{
    prov_rates_t rates = { 1000000, 2000000, 100000, 2000000 };
    prov_messages_stream_t *s = prov_messages_stream_create("pub-1", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000000,
                                                            sink_emit, sink, p);
    apr_size_t off = 0, n = strlen(stream_text);
    memset(sink, 0, sizeof(*sink));
    while (off < n) {
        apr_size_t k = n - off < piece ? n - off : piece;
        CU_ASSERT_EQUAL(prov_messages_stream_feed(s, stream_text + off, k), APR_SUCCESS);
        off += k;
    }
    *ps = s;
}

static void test_stream_relay(void)
{
    apr_pool_t *p = prov_test_pool();
    apr_size_t pieces[] = { 1, 7, 64, 100000 };
    size_t i;
    for (i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
        sink_t sink;
        prov_messages_stream_t *s = NULL;
        prov_tokens_t t;
        const char *a, *b, *c;
        run_stream(&sink, &s, pieces[i], p);
        CU_ASSERT_EQUAL(sink.events, 7);
        CU_ASSERT_EQUAL(prov_messages_stream_events(s), 7);
        CU_ASSERT(prov_messages_stream_complete(s));
        CU_ASSERT(!prov_messages_stream_failed(s));
        CU_ASSERT(prov_messages_stream_tokens(s, &t));
        CU_ASSERT_EQUAL(t.input, 1000);
        CU_ASSERT_EQUAL(t.cache, 200);
        CU_ASSERT_EQUAL(t.output, 500);
        /* order kept, the public id in message_start, credits in message_delta:
         * 1000 * 1 + 200 * 0.1 + 500 * 2 credits per 1M = 0.00202 */
        a = strstr(sink.buf, "event: message_start\ndata: ");
        b = strstr(sink.buf, "event: content_block_delta\n");
        c = strstr(sink.buf, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT(a < b && b < c);
        HAS(sink.buf, "\"model\":\"pub-1\"");
        LACKS(sink.buf, "up-1");
        HAS(sink.buf, "\"usage\":{\"output_tokens\":500,\"credits\":0.00202}");
        HAS(sink.buf, "event: ping\ndata: {\"type\": \"ping\"}\n\n");
    }
}

static void test_stream_cut_and_client_gone(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_rates_t rates = { 1000000, 1000000, 1000000, 1000000 };
    sink_t sink;
    prov_messages_stream_t *s;
    prov_tokens_t t;
    const char *half = strstr(stream_text, "event: content_block_delta");
    const char *err_ev = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                         "\"overloaded_error\",\"message\":\"busy\"}}\n\n";

    memset(&sink, 0, sizeof(sink));
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000000, sink_emit, &sink, p);
    CU_ASSERT_FALSE(prov_messages_stream_tokens(s, &t));
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, stream_text, (apr_size_t)(half - stream_text)
                                              + 10), APR_SUCCESS);
    CU_ASSERT_EQUAL(sink.events, 3);
    CU_ASSERT(!prov_messages_stream_complete(s));
    CU_ASSERT(prov_messages_stream_tokens(s, &t));
    CU_ASSERT_EQUAL(t.input, 1000);
    CU_ASSERT_EQUAL(t.output, 1);

    /* the client refuses an event: the relay stops with its status */
    memset(&sink, 0, sizeof(sink));
    sink.stop_after = 2;
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000000, sink_emit, &sink, p);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, stream_text, strlen(stream_text)),
                    APR_ECONNABORTED);
    CU_ASSERT_EQUAL(sink.events, 2);

    /* an error event before any other is a refusal: nothing relayed, the
     * error kept for a plain answer with its status */
    memset(&sink, 0, sizeof(sink));
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000000, sink_emit, &sink, p);
    CU_ASSERT_PTR_NULL(prov_messages_stream_early_error(s));
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, err_ev, strlen(err_ev)), APR_SUCCESS);
    CU_ASSERT(prov_messages_stream_failed(s));
    CU_ASSERT_EQUAL(sink.events, 0);
    CU_ASSERT_EQUAL(prov_messages_stream_events(s), 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(prov_messages_stream_early_error(s));
    CU_ASSERT_EQUAL(prov_messages_stream_early_error(s)->kind, PROV_GWERR_OVERLOADED);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, stream_text, strlen(stream_text)), APR_SUCCESS);
    CU_ASSERT_EQUAL(sink.events, 0);

    /* after message_start, an error event from the gateway marks the stream
     * and ends the relay; the client gets ours, with the allow-listed type,
     * never the gateway's words, and what it is charged (nothing was
     * delivered: nothing) */
    memset(&sink, 0, sizeof(sink));
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000000, sink_emit, &sink, p);
    CU_ASSERT_PTR_NULL(prov_messages_stream_error(s));
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, stream_text, strstr(stream_text,
                    "event: content_block_start") - stream_text), APR_SUCCESS);
    CU_ASSERT_EQUAL(sink.events, 1);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, err_ev, strlen(err_ev)), APR_SUCCESS);
    CU_ASSERT(prov_messages_stream_failed(s));
    CU_ASSERT_PTR_NULL(prov_messages_stream_early_error(s));
    HAS(sink.buf, "event: error\n");
    HAS(sink.buf, "\"type\":\"overloaded_error\"");
    HAS(sink.buf, "\"code\":\"server_is_overloaded\"");
    HAS(sink.buf, "\"usage\":{\"credits\":0}");
    LACKS(sink.buf, "busy");
    CU_ASSERT_PTR_NOT_NULL_FATAL(prov_messages_stream_error(s));
    CU_ASSERT_STRING_EQUAL(prov_messages_stream_error(s)->text, "busy");
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, stream_text, strlen(stream_text)), APR_SUCCESS);
    CU_ASSERT_EQUAL(sink.events, 2);
}

/* The figure the client is told in the event that ends the answer is the
 * one the settlement charges (prov_messages_stream_bill), by
 * docs/internals/broken-streams.md: usage when reported, else an estimate of
 * the input and the output relayed, at most the hold, else nothing. */
static void test_stream_told_credits(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_rates_t rates = { 1000000, 2000000, 100000, 2000000 };   /* 1, 2, 0.1, 2 micro a token */
    const char *no_usage =
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
        "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"up\",\"content\":[]}}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
        "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello, \"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"world\"}}\n\n"
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
        "\"end_turn\"}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    const char *cut = strstr(stream_text, "event: content_block_stop");
    const char *err_ev = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                         "\"api_error\",\"message\":\"x\"}}\n\n";
    const char *delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
                        "\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"there\"}}\n\n";
    prov_messages_stream_t *s;
    prov_delivery_t d;
    prov_bill_e how;
    prov_tokens_t t;
    sink_t sink;

    /* No usage at all: input estimate 100 + 12 bytes / 3 = 4 output tokens. */
    memset(&sink, 0, sizeof(sink));
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000, sink_emit, &sink, p);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, no_usage, strlen(no_usage)), APR_SUCCESS);
    CU_ASSERT(prov_messages_stream_complete(s));
    HAS(sink.buf, "\"usage\":{\"credits\":0.000108}");
    CU_ASSERT_EQUAL(prov_messages_stream_bill(s, 1, 0, &how, &t), 108);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);
    CU_ASSERT_EQUAL(t.input, 100);
    CU_ASSERT_EQUAL(t.output, 4);
    prov_messages_stream_delivery(s, &d);
    CU_ASSERT_EQUAL(d.output_bytes, 12);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_NONE);
    CU_ASSERT(d.complete && d.started);
    /* nothing is relayed after message_stop */
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, delta, strlen(delta)), APR_SUCCESS);
    CU_ASSERT_EQUAL(sink.events, 7);

    /* ... never more than the hold */
    memset(&sink, 0, sizeof(sink));
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 50, sink_emit, &sink, p);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, no_usage, strlen(no_usage)), APR_SUCCESS);
    HAS(sink.buf, "\"usage\":{\"credits\":0.00005}");
    CU_ASSERT_EQUAL(prov_messages_stream_bill(s, 1, 0, &how, &t), 50);

    /* Cut after "Hi" and "there": message_start's input and cache, and the
     * larger output (7 bytes: 3 tokens > 1 reported): 1000 + 20 + 6. */
    memset(&sink, 0, sizeof(sink));
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000, sink_emit, &sink, p);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, stream_text, (apr_size_t)(cut - stream_text)),
                    APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, delta, strlen(delta)), APR_SUCCESS);
    CU_ASSERT(!prov_messages_stream_complete(s));
    CU_ASSERT_EQUAL(prov_messages_stream_bill(s, 0, 0, &how, &t), 1026);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);
    CU_ASSERT_EQUAL(t.cache, 200);
    CU_ASSERT_EQUAL(t.output, 3);
    /* then a gateway error: it tells that figure and ends the relay */
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, err_ev, strlen(err_ev)), APR_SUCCESS);
    CU_ASSERT(prov_messages_stream_failed(s));
    HAS(sink.buf, "\"usage\":{\"credits\":0.001026}");
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, delta, strlen(delta)), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_messages_stream_bill(s, 0, 0, &how, &t), 1026);

    /* A client that refuses a delta was not sent it: not counted. */
    memset(&sink, 0, sizeof(sink));
    sink.stop_after = 3;
    s = prov_messages_stream_create("pub", &rates, 100, PROV_OUTPUT_TOKENS_MAX, 1000000, sink_emit, &sink, p);
    CU_ASSERT_EQUAL(prov_messages_stream_feed(s, no_usage, strlen(no_usage)), APR_ECONNABORTED);
    prov_messages_stream_delivery(s, &d);
    CU_ASSERT_EQUAL(d.output_bytes, 7);
    CU_ASSERT_EQUAL(prov_messages_stream_bill(s, 0, 1, &how, &t), 100 + 6);
    CU_ASSERT_EQUAL(how, PROV_BILL_ESTIMATED);

    /* The full stream with usage: the reported figure, final. */
    run_stream(&sink, &s, 100000, p);
    CU_ASSERT_EQUAL(prov_messages_stream_bill(s, 1, 0, &how, &t), 2020);
    CU_ASSERT_EQUAL(how, PROV_BILL_REPORTED);
}

static void test_events(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_error_t *e = prov_error_make(p, PROV_E_GATEWAY_ERROR, NULL, "cut");
    const char *ev = prov_messages_error_event(e, 1234, p);
    CU_ASSERT_STRING_EQUAL(prov_messages_ping_event(), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
    CU_ASSERT_STRING_EQUAL(ev, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                           "\"api_error\",\"message\":\"cut\",\"code\":\"GATEWAY_ERROR\"},"
                           "\"usage\":{\"credits\":0.001234}}\n\n");
}

void prov_test_suite_messages(void)
{
    PROV_SUITE("messages",
               PROV_TEST(test_version),
               PROV_TEST(test_valid_and_unknown_fields),
               PROV_TEST(test_refusals),
               PROV_TEST(test_image_document),
               PROV_TEST(test_unknown_blocks),
               PROV_TEST(test_stripping),
               PROV_TEST(test_system_folding),
               PROV_TEST(test_tokens_and_answer),
               PROV_TEST(test_stream_relay),
               PROV_TEST(test_stream_cut_and_client_gone),
               PROV_TEST(test_stream_told_credits),
               PROV_TEST(test_events));
}
