/* fuzz_responses_stream.c: libFuzzer harness of the Responses stream
 * translator (core/transport/prov_responses_stream.c: prov_resp_stream_*),
 * which turns the gateway's chat.completion.chunk stream into the response.*
 * events Codex reads, for a Codex-like request with function, custom and
 * namespaced tools.
 * The input is the gateway's SSE stream, fed three times: whole, and in
 * pieces of a size drawn from the input with the events encoded straight
 * into an output buffer sent after each piece, as the module runs it
 * (prov_resp_stream_set_out) (each chunk read by the scanner and its events
 * written as text where the fast path takes it), and whole
 * with every chunk read by json-c and every event built as a json-c tree
 * (prov_resp_stream_tree_only: the reference). The client must get the same
 * bytes, and the settlement the same usage, output count and gateway error,
 * all three ways. The stream is then ended as the module ends it
 * (prov_resp_stream_complete, or prov_resp_stream_fail after a failed feed).
 * Checked: every event decodes, its name is its data's type and its
 * sequence_number counts from 0; it ends with response.completed,
 * response.incomplete or response.failed, whose output holds only message,
 * function_call and custom_tool_call items, and whose usage shows no
 * negative token count. */
#include "fuzz_stream_util.h"
#include "prov_responses_stream_int.h"

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
    prov_delivery_t d;
    const char *gw_error;       /* the gateway's error text, or NULL */
    apr_int64_t n_fast, n_tree;
} run_t;

/* The events waiting in b (when the stream has an output), sent. */
static void sent(run_t *r, prov_sse_buf_t *b)
{
    if (b && b->len)
        collect(&r->out, b->data, b->len);
    if (b)
        prov_sse_buf_reset(b);
}

/* piece: 0 for the whole input at once, else pieces into an output. */
static void translate(run_t *r, const prov_resp_req_t *req, const uint8_t *data, size_t size,
                      size_t piece, int tree_only, apr_pool_t *p)
{
    prov_resp_stream_t *s;
    const prov_gwerror_t *gw;
    prov_sse_buf_t *b = piece ? prov_sse_buf_create(p) : NULL;
    size_t at = 0;
    collected_init(&r->out, p);
    s = prov_resp_stream_create(req, "resp_abc", "public-model", 1700000000, collect, &r->out, p);
    if (tree_only)
        prov_resp_stream_tree_only(s);
    if (b)
        prov_resp_stream_set_out(s, b);
    r->rv = APR_SUCCESS;
    while (at < size && r->rv == APR_SUCCESS) {
        size_t n = size - at > piece && piece ? piece : size - at;
        r->rv = prov_resp_stream_feed(s, (const char *)data + at, n);
        sent(r, b);
        if (b)      /* what went out counts as delivered */
            prov_resp_stream_written(s);
        at += n;
    }
    r->finished = prov_resp_stream_finished(s);
    r->started = prov_resp_stream_started(s);
    memset(&r->t, 0, sizeof(r->t));
    r->tokens_rv = prov_resp_stream_tokens(s, &r->t);
    gw = prov_resp_stream_error(s);
    r->gw_error = gw ? apr_pstrdup(p, gw->text ? gw->text : "") : NULL;
    r->end_rv = r->rv == APR_SUCCESS ? prov_resp_stream_complete(s, 12000000)
                                     : prov_resp_stream_fail(s, "GATEWAY_ERROR", "failed", -1);
    sent(r, b);
    if (b) {
        prov_resp_stream_written(s);
        FUZZ_CHECK(r->out.n <= prov_resp_stream_events(s));
        r->out.n = (int)prov_resp_stream_events(s);     /* sent several at a time */
    }
    prov_resp_stream_delivery(s, &r->d);
    prov_resp_stream_paths(s, &r->n_fast, &r->n_tree);
}

/* Two runs that the client and the settlement cannot tell apart. */
static void check_same(const run_t *a, const run_t *b)
{
    FUZZ_CHECK(a->rv == b->rv && a->end_rv == APR_SUCCESS && b->end_rv == APR_SUCCESS);
    FUZZ_CHECK(a->finished == b->finished && a->started == b->started);
    FUZZ_CHECK(a->tokens_rv == b->tokens_rv && !memcmp(&a->t, &b->t, sizeof(a->t)));
    FUZZ_CHECK(a->d.output_bytes == b->d.output_bytes && a->d.usage == b->d.usage
               && a->d.started == b->d.started && a->d.unreadable == b->d.unreadable
               && !a->d.queued_bytes && !b->d.queued_bytes);
    FUZZ_CHECK(!a->gw_error == !b->gw_error && (!a->gw_error || !strcmp(a->gw_error,
                                                                         b->gw_error)));
    FUZZ_CHECK(a->out.n == b->out.n && a->out.len == b->out.len
               && !memcmp(a->out.buf, b->out.buf, a->out.len));
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
    run_t whole, pieces, tree;

    FUZZ_CHECK(prov_resp_parse(&req, &err, codex_request, sizeof(codex_request) - 1, p)
               == APR_SUCCESS);
    translate(&whole, req, data, size, 0, 0, p);
    translate(&pieces, req, data, size, piece_of(data, size), 0, p);
    translate(&tree, req, data, size, 0, 1, p);
    FUZZ_CHECK(whole.rv == APR_SUCCESS || whole.rv == APR_EINVAL || whole.rv == APR_ENOSPC);
    FUZZ_CHECK(tree.n_fast == 0);
    check_same(&whole, &pieces);
    check_same(&whole, &tree);
    check_events(&whole, p);
    apr_pool_destroy(p);
    return 0;
}
