/* fuzz_responses_stream.c: libFuzzer harness of the Responses stream
 * translator (core/transport/prov_responses_stream.c: prov_resp_stream_*),
 * which turns the gateway's chat.completion.chunk stream into the response.*
 * events Codex reads, for a Codex-like request with function, custom and
 * namespaced tools.
 * The input is the gateway's SSE stream, fed twice, whole and in pieces of a
 * size drawn from the input: the client must get the same bytes and the same
 * result either way. The stream is then ended as the module ends it
 * (prov_resp_stream_complete, or prov_resp_stream_fail after a failed feed).
 * Checked: every event decodes, its name is its data's type and its
 * sequence_number counts from 0; it ends with response.completed,
 * response.incomplete or response.failed, whose output holds only message,
 * function_call and custom_tool_call items, and whose usage shows no
 * negative token count. */
#include "fuzz_stream_util.h"
#include "prov_responses.h"

static const char codex_request[] =
    "{\"model\":\"m\",\"stream\":true,\"input\":\"hi\",\"tools\":["
    "{\"type\":\"function\",\"name\":\"shell\",\"parameters\":{\"type\":\"object\"}},"
    "{\"type\":\"custom\",\"name\":\"apply_patch\",\"format\":{\"type\":\"grammar\","
    "\"syntax\":\"lark\",\"definition\":\"start: /.+/\"}},"
    "{\"type\":\"namespace\",\"name\":\"crm\",\"tools\":[{\"type\":\"function\",\"name\":"
    "\"lookup\"}]},{\"type\":\"web_search\"}]}";

typedef struct run_t {
    collected_t out;
    apr_status_t rv, end_rv;
    int finished, started;
    apr_status_t tokens_rv;
    prov_tokens_t t;
} run_t;

static void translate(run_t *r, const prov_resp_req_t *req, const uint8_t *data, size_t size,
                      size_t piece, apr_pool_t *p)
{
    prov_resp_stream_t *s;
    size_t at = 0;
    collected_init(&r->out, p);
    s = prov_resp_stream_create(req, "resp_abc", "public-model", 1700000000, collect, &r->out, p);
    r->rv = APR_SUCCESS;
    while (at < size && r->rv == APR_SUCCESS) {
        size_t n = piece && size - at > piece ? piece : size - at;
        r->rv = prov_resp_stream_feed(s, (const char *)data + at, n);
        at += n;
    }
    r->finished = prov_resp_stream_finished(s);
    r->started = prov_resp_stream_started(s);
    memset(&r->t, 0, sizeof(r->t));
    r->tokens_rv = prov_resp_stream_tokens(s, &r->t);
    r->end_rv = r->rv == APR_SUCCESS ? prov_resp_stream_complete(s, 12000000)
                                     : prov_resp_stream_fail(s, "GATEWAY_ERROR", "failed", -1);
}

static void check_output(json_object *resp)
{
    json_object *out = prov_json_get(resp, "output", json_type_array);
    json_object *usage = prov_json_get(resp, "usage", json_type_object);
    static const char *const counts[] = { "input_tokens", "output_tokens", "total_tokens", NULL };
    const char *const *c;
    size_t i;
    FUZZ_CHECK(out != NULL);
    for (c = counts; usage && *c; c++)
        FUZZ_CHECK(json_object_get_int64(prov_json_get(usage, *c, json_type_int)) >= 0);
    for (i = 0; i < json_object_array_length(out); i++) {
        const char *type = prov_json_get_str(json_object_array_get_idx(out, i), "type");
        FUZZ_CHECK(type && (!strcmp(type, "message") || !strcmp(type, "function_call")
                            || !strcmp(type, "custom_tool_call")));
    }
}

static void check_events(const run_t *r, apr_pool_t *p)
{
    decoded_t d;
    const char *last;
    int i;
    decode(&d, &r->out, p);
    FUZZ_CHECK(d.names->nelts >= 3);
    for (i = 0; i < d.names->nelts; i++) {
        json_object *ev = APR_ARRAY_IDX(d.data, i, json_object *);
        json_object *seq = prov_json_get(ev, "sequence_number", json_type_int);
        FUZZ_CHECK(ev && seq && json_object_get_int64(seq) == i);
        FUZZ_CHECK(!strcmp(prov_json_get_str(ev, "type"), APR_ARRAY_IDX(d.names, i, const char *)));
    }
    last = APR_ARRAY_IDX(d.names, d.names->nelts - 1, const char *);
    FUZZ_CHECK(!strcmp(last, r->rv == APR_SUCCESS ? "response.completed" : "response.failed")
               || (r->rv == APR_SUCCESS && !strcmp(last, "response.incomplete")));
    check_output(prov_json_get(APR_ARRAY_IDX(d.data, d.names->nelts - 1, json_object *),
                               "response", json_type_object));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    prov_resp_req_t *req = NULL;
    prov_error_t *err = NULL;
    run_t whole, pieces;

    FUZZ_CHECK(prov_resp_parse(&req, &err, codex_request, sizeof(codex_request) - 1, p)
               == APR_SUCCESS);
    translate(&whole, req, data, size, 0, p);
    translate(&pieces, req, data, size, piece_of(data, size), p);
    FUZZ_CHECK(whole.rv == APR_SUCCESS || whole.rv == APR_EINVAL || whole.rv == APR_ENOSPC);
    FUZZ_CHECK(whole.rv == pieces.rv && whole.end_rv == APR_SUCCESS
               && pieces.end_rv == APR_SUCCESS);
    FUZZ_CHECK(whole.finished == pieces.finished && whole.started == pieces.started);
    FUZZ_CHECK(whole.tokens_rv == pieces.tokens_rv && !memcmp(&whole.t, &pieces.t,
                                                              sizeof(whole.t)));
    FUZZ_CHECK(whole.out.len == pieces.out.len && !memcmp(whole.out.buf, pieces.out.buf,
                                                          whole.out.len));
    check_events(&whole, p);
    apr_pool_destroy(p);
    return 0;
}
