/* fuzz_responses_fast.c: libFuzzer harness of the Responses request's fast
 * path (prov_resp_parse_fast, prov_responses_request.c) against the json-c
 * path (prov_resp_parse_json), which judges. The input is a /v1/responses
 * body. Checked: a body the fast path takes, the json-c path takes too, with
 * the same model, output cap, stream flag, prompt bytes, message count,
 * instructions, tools (none) and parallel_tool_calls; the gateway gets the
 * same bytes from both (prov_resp_upstream_body, for an upstream id as it is
 * and for one that needs escaping), and the client the same stream of
 * response.* events for a short gateway answer. */
#include "fuzz_stream_util.h"
#include "prov_responses.h"
#include "prov_error.h"

/* A short answer that ends at its cap, with its usage. */
static const char chunks[] =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n"
    "data: [DONE]\n\n";

static const char *events(const prov_resp_req_t *req, apr_pool_t *p)
{
    collected_t c;
    prov_resp_stream_t *s;
    collected_init(&c, p);
    s = prov_resp_stream_create(req, "resp_f", "public/m", 1700000000, collect, &c, p);
    FUZZ_CHECK(prov_resp_stream_feed(s, chunks, sizeof(chunks) - 1) == APR_SUCCESS);
    FUZZ_CHECK(prov_resp_stream_complete(s, 42) == APR_SUCCESS);
    return c.buf;
}

static int same_str(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    prov_resp_req_t fast, *req = NULL;
    prov_error_t *err = NULL;
    if (prov_resp_parse_fast(&fast, (const char *)data, size, p)) {
        FUZZ_CHECK(!fast.upstream && fast.fast_body);
        FUZZ_CHECK(prov_resp_parse_json(&req, &err, (const char *)data, size, p)
                   == APR_SUCCESS);
        FUZZ_CHECK(!strcmp(fast.model, req->model)
                   && fast.max_output_tokens == req->max_output_tokens
                   && fast.stream == req->stream && fast.prompt_bytes == req->prompt_bytes
                   && fast.n_messages == req->n_messages
                   && fast.parallel_tool_calls == req->parallel_tool_calls);
        FUZZ_CHECK(same_str(fast.instructions, req->instructions));
        FUZZ_CHECK(!fast.dropped_tools && !req->dropped_tools);
        FUZZ_CHECK(fast.tools->nelts == 0 && req->tools->nelts == 0);
        FUZZ_CHECK(!strcmp(prov_resp_upstream_body(&fast, "gw/model-1", p),
                           prov_resp_upstream_body(req, "gw/model-1", p)));
        FUZZ_CHECK(!strcmp(prov_resp_upstream_body(&fast, "gw\"\\\x01\x7f\xc3\xa9", p),
                           prov_resp_upstream_body(req, "gw\"\\\x01\x7f\xc3\xa9", p)));
        FUZZ_CHECK(!strcmp(events(&fast, p), events(req, p)));
    }
    apr_pool_destroy(p);
    return 0;
}
