/* test_prov_responses.c: unit tests of the Responses transport's rules: a
 * request translated into the gateway's Chat Completions (input items,
 * instructions, tools of every kind, hosted tools dropped, refusals naming
 * the field), a chat completion translated back into a response object, a
 * streamed chat completion translated into the response.* events (read back
 * through the SSE parser: names, sequence numbers, items, usage, credits,
 * failures, a client that went away), and Codex's quota headers. */
#include <string.h>
#include "unit_tests.h"
#include "prov_responses.h"
#include "prov_sse.h"

static prov_resp_req_t *parse_ok(const char *body, apr_pool_t *p)
{
    prov_resp_req_t *req = NULL;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL(prov_resp_parse(&req, &err, body, strlen(body), p), APR_SUCCESS);
    if (err)
        fprintf(stderr, "unexpected: %s\n", err->message);
    return req;
}

static prov_error_t *parse_bad(const char *body, apr_pool_t *p)
{
    prov_resp_req_t *req = NULL;
    prov_error_t *err = NULL;
    CU_ASSERT_EQUAL(prov_resp_parse(&req, &err, body, strlen(body), p), APR_EINVAL);
    CU_ASSERT_PTR_NULL(req);
    CU_ASSERT_PTR_NOT_NULL_FATAL(err);
    CU_ASSERT_EQUAL(err->code, PROV_E_INVALID_REQUEST);
    return err;
}

/* The upstream body as text, for substring checks. */
static const char *up(const prov_resp_req_t *req, apr_pool_t *p)
{
    return prov_resp_upstream_body(req, "up-1", 0, p);
}

#define HAS(hay, needle) do { \
        const char *h_ = (hay); \
        if (!strstr(h_, needle)) fprintf(stderr, "missing %s in %s\n", needle, h_); \
        CU_ASSERT_PTR_NOT_NULL(strstr(h_, needle)); } while (0)

static void test_string_input(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t *req = parse_ok("{\"model\":\"m\",\"input\":\"hello\",\"max_output_tokens\":9,"
        "\"store\":false,\"include\":[\"reasoning.encrypted_content\"],\"reasoning\":{\"effort\":"
        "\"low\"},\"prompt_cache_key\":\"k\",\"client_metadata\":{\"a\":\"b\"},\"service_tier\":"
        "\"auto\",\"text\":{\"verbosity\":\"low\"},\"previous_response_id\":null}", p);
    const char *s;
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_STRING_EQUAL(req->model, "m");
    CU_ASSERT_EQUAL(req->max_output_tokens, 9);
    CU_ASSERT_EQUAL(req->stream, 0);
    CU_ASSERT_EQUAL(req->n_messages, 1);
    CU_ASSERT_EQUAL(req->prompt_bytes, 5);
    CU_ASSERT_PTR_NULL(req->dropped_tools);
    s = up(req, p);
    CU_ASSERT_STRING_EQUAL(s, "{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}],"
                              "\"max_tokens\":9,\"model\":\"up-1\"}");
}

static void test_items(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t *req = parse_ok("{\"model\":\"m\",\"stream\":true,\"instructions\":\"be brief\","
        "\"input\":[{\"type\":\"message\",\"role\":\"developer\",\"content\":[{\"type\":"
        "\"input_text\",\"text\":\"dev\"}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"a\"},{\"type\":"
        "\"input_text\",\"text\":\"b\"}]},"
        "{\"type\":\"reasoning\",\"summary\":[],\"encrypted_content\":\"xyz\"},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"let me look\"}]},"
        "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"lookup\",\"namespace\":\"crm\","
        "\"arguments\":\"{\\\"q\\\":1}\"},"
        "{\"type\":\"custom_tool_call\",\"call_id\":\"c2\",\"name\":\"apply_patch\",\"input\":"
        "\"*** Begin Patch\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"found\"},"
        "{\"type\":\"custom_tool_call_output\",\"call_id\":\"c2\",\"output\":[{\"type\":"
        "\"input_text\",\"text\":\"done\"},{\"type\":\"input_image\",\"image_url\":\"data:x\"}]}]}",
        p);
    const char *s;
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_EQUAL(req->stream, 1);
    CU_ASSERT_EQUAL(req->n_messages, 6);
    CU_ASSERT_STRING_EQUAL(req->instructions, "be brief");
    s = up(req, p);
    HAS(s, "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
           "{\"role\":\"system\",\"content\":\"dev\"},{\"role\":\"user\",\"content\":\"a\\nb\"},"
           "{\"role\":\"assistant\",\"content\":\"let me look\",\"tool_calls\":["
           "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"crm__lookup\","
           "\"arguments\":\"{\\\"q\\\":1}\"}},"
           "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"apply_patch\","
           "\"arguments\":\"{\\\"input\\\":\\\"*** Begin Patch\\\"}\"}}]},"
           "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"found\"},"
           "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"done\\n[image omitted");
    HAS(s, "\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    CU_ASSERT_PTR_NULL(strstr(s, "xyz"));
    CU_ASSERT_PTR_NULL(strstr(s, "\"tools\""));
}

static void test_tools(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t *req = parse_ok("{\"model\":\"m\",\"input\":\"x\",\"parallel_tool_calls\":false,"
        "\"tools\":[{\"type\":\"web_search\"},"
        "{\"type\":\"function\",\"name\":\"f\",\"description\":\"does f\",\"parameters\":"
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}},\"strict\":false},"
        "{\"type\":\"custom\",\"name\":\"apply_patch\",\"description\":\"edit\",\"format\":"
        "{\"type\":\"grammar\",\"syntax\":\"lark\",\"definition\":\"start: x\"}},"
        "{\"type\":\"namespace\",\"name\":\"crm\",\"description\":\"d\",\"tools\":["
        "{\"type\":\"function\",\"name\":\"lookup\"},{\"type\":\"custom\",\"name\":\"note\"}]},"
        "{\"type\":\"tool_search\",\"execution\":\"client\"}],"
        "\"tool_choice\":{\"type\":\"function\",\"name\":\"lookup\",\"namespace\":\"crm\"}}", p);
    const prov_resp_tool_t *t;
    const char *s;
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_EQUAL(req->tools->nelts, 4);
    CU_ASSERT_STRING_EQUAL(req->dropped_tools, "web_search,tool_search");
    t = prov_resp_tool_by_flat(req, "crm__note");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_STRING_EQUAL(t->name, "note");
    CU_ASSERT_STRING_EQUAL(t->ns, "crm");
    CU_ASSERT_TRUE(t->custom);
    t = prov_resp_tool_by_flat(req, "f");
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_PTR_NULL(t->ns);
    CU_ASSERT_FALSE(t->custom);
    CU_ASSERT_PTR_NULL(prov_resp_tool_by_flat(req, "lookup"));
    s = up(req, p);
    HAS(s, "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"does f\","
           "\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}},"
           "\"strict\":false}}");
    HAS(s, "{\"name\":\"apply_patch\",\"description\":\"edit\\n\\nThe input is raw text (not "
           "JSON) that follows this lark grammar:\\nstart: x\",\"parameters\":{\"type\":\"object\","
           "\"properties\":{\"input\":{\"type\":\"string\"");
    HAS(s, "\"required\":[\"input\"]");
    HAS(s, "\"name\":\"crm__lookup\"");
    HAS(s, "\"name\":\"crm__note\"");
    HAS(s, "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"crm__lookup\"}}");
    HAS(s, "\"parallel_tool_calls\":false");
    CU_ASSERT_PTR_NULL(strstr(s, "web_search"));
    CU_ASSERT_PTR_NULL(strstr(s, "tool_search"));

    /* Only hosted tools: no tools and no tool_choice go upstream. */
    req = parse_ok("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"file_search\"}],"
                   "\"tool_choice\":\"auto\"}", p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_STRING_EQUAL(req->dropped_tools, "file_search");
    s = up(req, p);
    CU_ASSERT_PTR_NULL(strstr(s, "tool"));
}

/* Hosted tool types are the client's text: the header that names them gets
 * token characters only, and a bounded list. */
static void test_dropped_tools_header(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t *req = parse_ok("{\"model\":\"m\",\"input\":\"x\",\"tools\":["
        "{\"type\":\"web_search\\r\\nX-Injected: 1\"},{\"type\":\" \\r\\n\"},"
        "{\"type\":\"namespace\",\"name\":\"c r\\nm\",\"tools\":[{\"type\":\"x\\ty\"}]},"
        "{\"type\":\"caf\\u00e9\"}]}", p);
    const char *big;
    int i;
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_STRING_EQUAL(req->dropped_tools, "web_searchX-Injected1,crm.xy,caf");

    big = "{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"web_search\"}";
    for (i = 0; i < 200; i++)
        big = apr_pstrcat(p, big, ",{\"type\":\"hosted_tool_", prov_i64(i, p), "\"}", NULL);
    big = apr_pstrcat(p, big, "]}", NULL);
    req = parse_ok(big, p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    CU_ASSERT_TRUE(strlen(req->dropped_tools) <= PROV_RESP_DROPPED_MAX);
    CU_ASSERT_EQUAL(strncmp(req->dropped_tools, "web_search,hosted_tool_0,", 25), 0);
    CU_ASSERT_STRING_EQUAL(req->dropped_tools + strlen(req->dropped_tools) - 4, ",...");
}

static void test_refusals(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_error_t *e;
    e = parse_bad("{\"model\":\"m\",\"input\":\"x\",\"previous_response_id\":\"resp_1\"}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "previous_response_id");
    e = parse_bad("{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":"
                  "\"input_text\",\"text\":\"look\"},{\"type\":\"input_image\",\"image_url\":"
                  "\"data:x\"}]}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "input[0].content[1]");
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "input_image"));
    e = parse_bad("{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":"
                  "\"input_file\",\"file_id\":\"f\"}]}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "input[0].content[0]");
    e = parse_bad("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"web_search\"}],"
                  "\"tool_choice\":{\"type\":\"web_search\"}}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "tool_choice");
    CU_ASSERT_PTR_NOT_NULL(strstr(e->message, "hosted"));
    e = parse_bad("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":"
                  "\"f\"}],\"tool_choice\":{\"type\":\"function\",\"name\":\"g\"}}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "tool_choice");
    e = parse_bad("{\"model\":\"m\",\"input\":[{\"type\":\"item_reference\",\"id\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "input[0]");
    e = parse_bad("{\"model\":\"m\",\"input\":[{\"type\":\"local_shell_call\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "input[0].type");
    e = parse_bad("{\"model\":\"m\",\"input\":[{\"role\":\"tool\",\"content\":\"x\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "input[0].role");
    e = parse_bad("{\"model\":\"m\",\"input\":[{\"type\":\"function_call\",\"name\":\"f\"}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "input[0]");
    e = parse_bad("{\"input\":\"x\"}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "model");
    e = parse_bad("{\"model\":\"m\"}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "input");
    e = parse_bad("{\"model\":\"m\",\"input\":[{\"type\":\"reasoning\",\"summary\":[]}]}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "input");
    e = parse_bad("{\"model\":\"m\",\"input\":\"x\",\"max_output_tokens\":0}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "max_output_tokens");
    e = parse_bad("{\"model\":\"m\",\"input\":\"x\",\"stream\":\"yes\"}", p);
    CU_ASSERT_STRING_EQUAL(e->param, "stream");
    e = parse_bad("{\"model\":", p);
    CU_ASSERT_PTR_NULL(e->param);
}

static json_object *parse_json(const char *s, apr_pool_t *p)
{
    const char *perr = NULL;
    json_object *o = prov_json_parse(s, strlen(s), &perr, p);
    CU_ASSERT_PTR_NOT_NULL(o);
    return o;
}

static void test_render(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t *req = parse_ok("{\"model\":\"m\",\"input\":\"x\",\"tools\":["
        "{\"type\":\"custom\",\"name\":\"apply_patch\"},{\"type\":\"namespace\",\"name\":\"crm\","
        "\"tools\":[{\"type\":\"function\",\"name\":\"lookup\"}]}]}", p);
    json_object *answer = parse_json("{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"message\":"
        "{\"role\":\"assistant\",\"content\":\"hi\",\"tool_calls\":["
        "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"apply_patch\","
        "\"arguments\":\"{\\\"input\\\":\\\"*** Begin Patch\\\\n\\\"}\"}},"
        "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"crm__lookup\","
        "\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":"
        "30,\"completion_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":10},"
        "\"completion_tokens_details\":{\"reasoning_tokens\":4}}}", p);
    const char *s;
    CU_ASSERT_PTR_NOT_NULL_FATAL(req);
    s = prov_resp_render(req, answer, "resp_abc", "pub-m", 1700000000, 1234500, p);
    HAS(s, "{\"id\":\"resp_abc\",\"object\":\"response\",\"created_at\":1700000000,"
           "\"status\":\"completed\"");
    HAS(s, "\"model\":\"pub-m\",\"output\":[{\"id\":\"msg_abc_0\",\"type\":\"message\",\"status\":"
           "\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":"
           "\"hi\",\"annotations\":[],\"logprobs\":[]}]},"
           "{\"id\":\"fc_abc_1\",\"type\":\"custom_tool_call\",\"status\":\"completed\",\"call_id\":"
           "\"call_1\",\"name\":\"apply_patch\",\"input\":\"*** Begin Patch\\n\"},"
           "{\"id\":\"fc_abc_2\",\"type\":\"function_call\",\"status\":\"completed\",\"call_id\":"
           "\"call_2\",\"name\":\"lookup\",\"namespace\":\"crm\",\"arguments\":\"{}\"}]");
    HAS(s, "\"usage\":{\"input_tokens\":30,\"input_tokens_details\":{\"cached_tokens\":10},"
           "\"output_tokens\":12,\"output_tokens_details\":{\"reasoning_tokens\":4},"
           "\"total_tokens\":42,\"credits\":1.2345}");

    /* A refusal, and an answer cut by the output limit. */
    answer = parse_json("{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":null,"
                        "\"refusal\":\"I can't\"},\"finish_reason\":\"length\"}],\"usage\":{}}", p);
    s = prov_resp_render(req, answer, "resp_x", "pub-m", 1, 0, p);
    HAS(s, "\"status\":\"incomplete\"");
    HAS(s, "\"incomplete_details\":{\"reason\":\"max_output_tokens\"}");
    HAS(s, "\"content\":[{\"type\":\"refusal\",\"refusal\":\"I can't\"}]");
    HAS(s, "\"credits\":0}");
}

/* ---- the stream ---------------------------------------------------------- */

typedef struct events_t {
    apr_array_header_t *names;    /* event: names */
    apr_array_header_t *data;     /* json_object * (owned by the pool) */
    apr_pool_t *p;
    int fail_after;               /* emit fails from this event on; -1 never */
} events_t;

static apr_status_t collect(void *baton, const char *name, const char *data, apr_size_t len)
{
    events_t *e = baton;
    const char *perr = NULL;
    APR_ARRAY_PUSH(e->names, const char *) = apr_pstrdup(e->p, name);
    APR_ARRAY_PUSH(e->data, json_object *) = prov_json_parse(data, len, &perr, e->p);
    return APR_SUCCESS;
}

/* The emitted text goes back through the SSE parser, as a client reads it. */
static apr_status_t on_emit(void *baton, const char *ev, apr_size_t len)
{
    events_t *e = baton;
    prov_sse_parser_t *ps;
    if (e->fail_after >= 0 && e->names->nelts >= e->fail_after)
        return APR_ECONNABORTED;
    CU_ASSERT_TRUE(len > 2 && ev[len - 1] == '\n' && ev[len - 2] == '\n');
    ps = prov_sse_parser_create(collect, e, 0, e->p);
    CU_ASSERT_EQUAL(prov_sse_feed(ps, ev, len), APR_SUCCESS);
    CU_ASSERT_FALSE(prov_sse_pending(ps));
    return APR_SUCCESS;
}

static events_t *events_new(apr_pool_t *p)
{
    events_t *e = apr_pcalloc(p, sizeof(*e));
    e->names = apr_array_make(p, 16, sizeof(const char *));
    e->data = apr_array_make(p, 16, sizeof(json_object *));
    e->p = p;
    e->fail_after = -1;
    return e;
}

static const char *ev_name(events_t *e, int i)
{
    return APR_ARRAY_IDX(e->names, i, const char *);
}

static json_object *ev_data(events_t *e, int i)
{
    return APR_ARRAY_IDX(e->data, i, json_object *);
}

/* Every event's data carries its own name as type and the next sequence number. */
static void check_sequence(events_t *e)
{
    int i;
    for (i = 0; i < e->names->nelts; i++) {
        json_object *d = ev_data(e, i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(d);
        CU_ASSERT_STRING_EQUAL(prov_json_get_str(d, "type"), ev_name(e, i));
        CU_ASSERT_EQUAL(json_object_get_int64(prov_json_get(d, "sequence_number", json_type_int)),
                        i);
    }
}

/* Feeds text in pieces of n bytes. */
static apr_status_t feed(prov_resp_stream_t *s, const char *text, apr_size_t n)
{
    apr_size_t off = 0, len = strlen(text);
    apr_status_t rv = APR_SUCCESS;
    while (off < len && rv == APR_SUCCESS) {
        apr_size_t k = len - off < n ? len - off : n;
        rv = prov_resp_stream_feed(s, text + off, k);
        off += k;
    }
    return rv;
}

#define CHUNK(delta, finish) "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0," \
    "\"delta\":" delta ",\"finish_reason\":" finish "}]}\n\n"
#define USAGE "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":5," \
    "\"prompt_tokens_details\":{\"cached_tokens\":4},\"completion_tokens_details\":" \
    "{\"reasoning_tokens\":1}}}\n\ndata: [DONE]\n\n"

static void test_stream_text(void)
{
    static const char *const want[] = {
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed" };
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t *req = parse_ok("{\"model\":\"m\",\"input\":\"x\",\"stream\":true}", p);
    events_t *e = events_new(p);
    prov_resp_stream_t *s = prov_resp_stream_create(req, "resp_t1", "pub", 5, on_emit, e, p);
    json_object *done, *completed, *usage;
    prov_tokens_t t;
    size_t i;

    CU_ASSERT_FALSE(prov_resp_stream_started(s));
    CU_ASSERT_EQUAL(prov_resp_stream_tokens(s, &t), APR_ENOENT);
    CU_ASSERT_EQUAL(feed(s, CHUNK("{\"role\":\"assistant\",\"content\":\"\"}", "null")
                            CHUNK("{\"content\":\"Hello, \"}", "null")
                            CHUNK("{\"content\":\"world\"}", "null")
                            CHUNK("{}", "\"stop\"") USAGE, 7), APR_SUCCESS);
    CU_ASSERT_TRUE(prov_resp_stream_started(s));
    CU_ASSERT_TRUE(prov_resp_stream_finished(s));
    CU_ASSERT_EQUAL(prov_resp_stream_tokens(s, &t), APR_SUCCESS);
    CU_ASSERT_EQUAL(t.input, 16);
    CU_ASSERT_EQUAL(t.cache, 4);
    CU_ASSERT_EQUAL(t.output, 4);
    CU_ASSERT_EQUAL(t.reasoning, 1);
    CU_ASSERT_EQUAL(prov_resp_stream_complete(s, 2500000), APR_SUCCESS);
    CU_ASSERT_EQUAL_FATAL(e->names->nelts, (int)(sizeof(want) / sizeof(want[0])));
    for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        CU_ASSERT_STRING_EQUAL(ev_name(e, (int)i), want[i]);
    check_sequence(e);
    CU_ASSERT_EQUAL(prov_resp_stream_events(s), e->names->nelts);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(ev_data(e, 4), "delta"), "Hello, ");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(ev_data(e, 4), "item_id"), "msg_t1_0");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(ev_data(e, 6), "text"), "Hello, world");
    done = prov_json_get(ev_data(e, 8), "item", json_type_object);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(done, "status"), "completed");
    CU_ASSERT_STRING_EQUAL(prov_json_dump(prov_json_get(done, "content", json_type_array), p),
                           "[{\"type\":\"output_text\",\"text\":\"Hello, world\","
                           "\"annotations\":[],\"logprobs\":[]}]");
    completed = prov_json_get(ev_data(e, 9), "response", json_type_object);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(completed, "id"), "resp_t1");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(completed, "status"), "completed");
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(completed, "model"), "pub");
    CU_ASSERT_EQUAL(json_object_array_length(prov_json_get(completed, "output",
                                                           json_type_array)), 1);
    usage = prov_json_get(completed, "usage", json_type_object);
    CU_ASSERT_STRING_EQUAL(prov_json_dump(usage, p), "{\"input_tokens\":20,"
        "\"input_tokens_details\":{\"cached_tokens\":4},\"output_tokens\":5,"
        "\"output_tokens_details\":{\"reasoning_tokens\":1},\"total_tokens\":25,\"credits\":2.5}");
}

static void test_stream_tools(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t *req = parse_ok("{\"model\":\"m\",\"input\":\"x\",\"stream\":true,\"tools\":["
        "{\"type\":\"custom\",\"name\":\"apply_patch\"},{\"type\":\"namespace\",\"name\":\"crm\","
        "\"tools\":[{\"type\":\"function\",\"name\":\"lookup\"}]}]}", p);
    events_t *e = events_new(p);
    prov_resp_stream_t *s = prov_resp_stream_create(req, "resp_t2", "pub", 5, on_emit, e, p);
    json_object *item, *out;
    int i, n_fdelta = 0, n_cdone = 0, n_fdone = 0;

    CU_ASSERT_EQUAL(feed(s,
        CHUNK("{\"role\":\"assistant\",\"content\":\"ok\"}", "null")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":"
              "{\"name\":\"crm__lookup\",\"arguments\":\"\"}}]}", "null")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"q\\\":\"}}]}", "null")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"2}\"}}]}", "null")
        CHUNK("{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":"
              "\"apply_patch\",\"arguments\":\"{\\\"input\\\":\"}}]}", "null")
        CHUNK("{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"P\\\\n\\\"}\"}}]}",
              "null")
        CHUNK("{}", "\"tool_calls\"") USAGE, 13), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_resp_stream_complete(s, 0), APR_SUCCESS);
    check_sequence(e);
    for (i = 0; i < e->names->nelts; i++) {
        const char *n = ev_name(e, i);
        if (!strcmp(n, "response.function_call_arguments.delta")) {
            n_fdelta++;
            CU_ASSERT_STRING_EQUAL(prov_json_get_str(ev_data(e, i), "item_id"), "fc_t2_1");
        }
        if (!strcmp(n, "response.function_call_arguments.done")) {
            n_fdone++;
            CU_ASSERT_STRING_EQUAL(prov_json_get_str(ev_data(e, i), "arguments"), "{\"q\":2}");
            CU_ASSERT_STRING_EQUAL(prov_json_get_str(ev_data(e, i), "name"), "lookup");
        }
        if (!strcmp(n, "response.custom_tool_call_input.done")) {
            n_cdone++;
            CU_ASSERT_STRING_EQUAL(prov_json_get_str(ev_data(e, i), "input"), "P\n");
        }
    }
    CU_ASSERT_EQUAL(n_fdelta, 2);
    CU_ASSERT_EQUAL(n_fdone, 1);
    CU_ASSERT_EQUAL(n_cdone, 1);
    /* the message closes when the first call opens */
    CU_ASSERT_STRING_EQUAL(ev_name(e, 7), "response.output_item.done");
    CU_ASSERT_STRING_EQUAL(ev_name(e, 8), "response.output_item.added");
    out = prov_json_get(prov_json_get(ev_data(e, e->names->nelts - 1), "response",
                                      json_type_object), "output", json_type_array);
    CU_ASSERT_EQUAL_FATAL(json_object_array_length(out), 3);
    item = json_object_array_get_idx(out, 1);
    CU_ASSERT_STRING_EQUAL(prov_json_dump(item, p), "{\"id\":\"fc_t2_1\",\"type\":"
        "\"function_call\",\"status\":\"completed\",\"call_id\":\"call_a\",\"name\":\"lookup\","
        "\"namespace\":\"crm\",\"arguments\":\"{\\\"q\\\":2}\"}");
    item = json_object_array_get_idx(out, 2);
    CU_ASSERT_STRING_EQUAL(prov_json_dump(item, p), "{\"id\":\"fc_t2_2\",\"type\":"
        "\"custom_tool_call\",\"status\":\"completed\",\"call_id\":\"call_b\",\"name\":"
        "\"apply_patch\",\"input\":\"P\\n\"}");
}

/* What a stream delivered (docs/internals/broken-streams.md): the output
 * text sent (text, tool names, arguments, custom input; never the events'
 * JSON), the usage once reported, and nothing counted that the client
 * refused. */
static void test_stream_delivery(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t *req = parse_ok("{\"model\":\"m\",\"input\":\"x\",\"stream\":true,\"tools\":["
        "{\"type\":\"custom\",\"name\":\"apply_patch\"},{\"type\":\"namespace\",\"name\":\"crm\","
        "\"tools\":[{\"type\":\"function\",\"name\":\"lookup\"}]}]}", p);
    const char *text = CHUNK("{\"role\":\"assistant\",\"content\":\"\"}", "null")
                       CHUNK("{\"content\":\"Hello, \"}", "null")
                       CHUNK("{\"content\":\"world\"}", "null");
    events_t *e = events_new(p);
    prov_resp_stream_t *s = prov_resp_stream_create(req, "resp_d1", "pub", 5, on_emit, e, p);
    prov_delivery_t d;

    prov_resp_stream_delivery(s, &d);
    CU_ASSERT_FALSE(d.started);
    CU_ASSERT_EQUAL(d.output_bytes, 0);
    /* the first chunk starts the response, with no output yet */
    CU_ASSERT_EQUAL(feed(s, CHUNK("{\"role\":\"assistant\",\"content\":\"\"}", "null"), 9),
                    APR_SUCCESS);
    prov_resp_stream_delivery(s, &d);
    CU_ASSERT_TRUE(d.started);
    CU_ASSERT_EQUAL(d.output_bytes, 0);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_NONE);
    CU_ASSERT_EQUAL(feed(s,
        CHUNK("{\"content\":\"ok\"}", "null")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":"
              "{\"name\":\"crm__lookup\",\"arguments\":\"\"}}]}", "null")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"q\\\":\"}}]}", "null")
        CHUNK("{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":"
              "\"apply_patch\",\"arguments\":\"{\\\"input\\\":\\\"P\\\\n\\\"}\"}}]}", "null")
        CHUNK("{}", "\"tool_calls\""), 13), APR_SUCCESS);
    /* "ok", "crm__lookup", {"q": and "apply_patch"; the custom input waits for the end */
    prov_resp_stream_delivery(s, &d);
    CU_ASSERT_EQUAL(d.output_bytes, 2 + 11 + 5 + 11);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_NONE);
    CU_ASSERT_EQUAL(feed(s, USAGE, 13), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_resp_stream_complete(s, 0), APR_SUCCESS);
    prov_resp_stream_delivery(s, &d);
    CU_ASSERT_EQUAL(d.output_bytes, 2 + 11 + 5 + 11 + 2);
    CU_ASSERT_EQUAL(d.usage, PROV_USAGE_FINAL);
    CU_ASSERT_EQUAL(d.reported.input, 16);

    /* A client that refuses the second delta was sent only the first. */
    e = events_new(p);
    e->fail_after = 5;
    s = prov_resp_stream_create(req, "resp_d2", "pub", 5, on_emit, e, p);
    CU_ASSERT_EQUAL(feed(s, text, 1000), APR_ECONNABORTED);
    prov_resp_stream_delivery(s, &d);
    CU_ASSERT_EQUAL(d.output_bytes, 7);
}

static void test_stream_fail(void)
{
    apr_pool_t *p = prov_test_pool();
    prov_resp_req_t *req = parse_ok("{\"model\":\"m\",\"input\":\"x\",\"stream\":true,"
                                    "\"max_output_tokens\":3}", p);
    events_t *e = events_new(p);
    prov_resp_stream_t *s = prov_resp_stream_create(req, "resp_t3", "pub", 5, on_emit, e, p);
    json_object *resp;

    CU_ASSERT_EQUAL(feed(s, CHUNK("{\"content\":\"par\"}", "null"), 100), APR_SUCCESS);
    CU_ASSERT_FALSE(prov_resp_stream_finished(s));
    /* a cut stream leaves an unfinished event: the gateway stopped mid-way */
    CU_ASSERT_EQUAL(feed(s, "data: {\"choi", 100), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_resp_stream_fail(s, "GATEWAY_ERROR", "cut short", 7), APR_SUCCESS);
    check_sequence(e);
    CU_ASSERT_STRING_EQUAL(ev_name(e, e->names->nelts - 1), "response.failed");
    resp = prov_json_get(ev_data(e, e->names->nelts - 1), "response", json_type_object);
    CU_ASSERT_STRING_EQUAL(prov_json_get_str(resp, "status"), "failed");
    CU_ASSERT_EQUAL(json_object_get_int64(prov_json_get(resp, "max_output_tokens",
                                                        json_type_int)), 3);
    CU_ASSERT_STRING_EQUAL(prov_json_dump(prov_json_get(resp, "error", json_type_object), p),
                           "{\"code\":\"GATEWAY_ERROR\",\"message\":\"cut short\"}");
    CU_ASSERT_STRING_EQUAL(prov_json_dump(prov_json_get(resp, "usage", json_type_object), p),
                           "{\"input_tokens\":0,\"input_tokens_details\":{\"cached_tokens\":0},"
                           "\"output_tokens\":0,\"output_tokens_details\":{\"reasoning_tokens\":0},"
                           "\"total_tokens\":0,\"credits\":0.000007}");

    /* Not a chunk stream, and an error object in the stream. */
    s = prov_resp_stream_create(req, "resp_t4", "pub", 5, on_emit, events_new(p), p);
    CU_ASSERT_EQUAL(feed(s, "data: not json\n\n", 100), APR_EINVAL);
    s = prov_resp_stream_create(req, "resp_t5", "pub", 5, on_emit, events_new(p), p);
    CU_ASSERT_PTR_NULL(prov_resp_stream_error(s));
    CU_ASSERT_EQUAL(feed(s, "data: {\"error\":{\"message\":\"boom\",\"type\":"
                         "\"server_error\"}}\n\n", 100), APR_EINVAL);
    /* kept for the log, classified for the client */
    CU_ASSERT_PTR_NOT_NULL_FATAL(prov_resp_stream_error(s));
    CU_ASSERT_STRING_EQUAL(prov_resp_stream_error(s)->text, "boom");
    CU_ASSERT_EQUAL(prov_resp_stream_error(s)->kind, PROV_GWERR_SERVER);

    /* A client that went away stops the stream with the emitter's status. */
    e = events_new(p);
    e->fail_after = 3;
    s = prov_resp_stream_create(req, "resp_t6", "pub", 5, on_emit, e, p);
    CU_ASSERT_EQUAL(feed(s, CHUNK("{\"content\":\"a\"}", "null") CHUNK("{\"content\":\"b\"}",
                                                                       "null"), 1000),
                    APR_ECONNABORTED);
    CU_ASSERT_EQUAL(e->names->nelts, 3);

    /* The output limit makes the response incomplete. */
    e = events_new(p);
    s = prov_resp_stream_create(req, "resp_t7", "pub", 5, on_emit, e, p);
    CU_ASSERT_EQUAL(feed(s, CHUNK("{\"content\":\"abc\"}", "\"length\"") "data: [DONE]\n\n",
                         1000), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_resp_stream_complete(s, 0), APR_SUCCESS);
    CU_ASSERT_STRING_EQUAL(ev_name(e, e->names->nelts - 1), "response.incomplete");
}

static void test_quota_headers(void)
{
    apr_pool_t *p = prov_test_pool();
    apr_table_t *h = apr_table_make(p, 8);
    prov_plan_windows_t w;

    memset(&w, 0, sizeof(w));
    prov_resp_quota_headers(h, &w, 1000, p);
    CU_ASSERT_EQUAL(apr_table_elts(h)->nelts, 0);
    w.has_plan = 1;
    w.quota_5h = 8000000;
    w.used_5h = 1000000;
    w.reset_5h = 600;
    w.quota_7d = 3;
    w.used_7d = 1;
    w.reset_7d = 0;
    prov_resp_quota_headers(h, &w, 1000, p);
    CU_ASSERT_STRING_EQUAL(apr_table_get(h, "x-codex-primary-used-percent"), "12.5");
    CU_ASSERT_STRING_EQUAL(apr_table_get(h, "x-codex-primary-window-minutes"), "300");
    CU_ASSERT_STRING_EQUAL(apr_table_get(h, "x-codex-primary-reset-at"), "1600");
    CU_ASSERT_STRING_EQUAL(apr_table_get(h, "x-codex-secondary-used-percent"), "33.3");
    CU_ASSERT_STRING_EQUAL(apr_table_get(h, "x-codex-secondary-window-minutes"), "10080");
    CU_ASSERT_STRING_EQUAL(apr_table_get(h, "x-codex-secondary-reset-at"), "1000");
    w.used_5h = 9000000;    /* over the quota: shown as 100 */
    w.used_7d = 0;
    prov_resp_quota_headers(h, &w, 1000, p);
    CU_ASSERT_STRING_EQUAL(apr_table_get(h, "x-codex-primary-used-percent"), "100");
    CU_ASSERT_STRING_EQUAL(apr_table_get(h, "x-codex-secondary-used-percent"), "0");
}

void prov_test_suite_responses(void)
{
    PROV_SUITE("responses",
               PROV_TEST(test_string_input),
               PROV_TEST(test_items),
               PROV_TEST(test_tools),
               PROV_TEST(test_dropped_tools_header),
               PROV_TEST(test_refusals),
               PROV_TEST(test_render),
               PROV_TEST(test_stream_text),
               PROV_TEST(test_stream_tools),
               PROV_TEST(test_stream_delivery),
               PROV_TEST(test_stream_fail),
               PROV_TEST(test_quota_headers));
}
