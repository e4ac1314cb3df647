/* fuzz_chat_request.c: libFuzzer harness of the Chat Completions request
 * parser (prov_chat_parse) and the body it sends the gateway
 * (prov_chat_upstream_body). The input is a client's request body. Checked:
 * what the fast path (prov_chat_fast.c) takes, the json-c path takes with
 * the same fields and upstream JSON; a refusal is a 400 INVALID_REQUEST
 * whose OpenAI-shaped JSON parses; an
 * accepted request has a model and a positive max_tokens (or none), and its
 * upstream body is a JSON object naming the upstream model, with a non-empty
 * messages array of the counted length, and no streaming and no tools. */
#include "fuzz_common.h"
#include "prov_chat.h"
#include "prov_error.h"

static void check_upstream(const prov_chat_req_t *req, apr_pool_t *p)
{
    const char *up = prov_chat_upstream_body(req, "upstream-model", 0, p);
    json_object *o = fuzz_reparse(up, p), *msgs, *v = NULL;
    FUZZ_CHECK(json_object_is_type(o, json_type_object));
    FUZZ_CHECK(!strcmp(prov_json_get_str(o, "model"), "upstream-model"));
    msgs = prov_json_get(o, "messages", json_type_array);
    FUZZ_CHECK(msgs && json_object_array_length(msgs) > 0);
    FUZZ_CHECK((int)json_object_array_length(msgs) == req->n_messages);
    FUZZ_CHECK(!json_object_object_get_ex(o, "message", NULL));
    FUZZ_CHECK(!json_object_object_get_ex(o, "tools", NULL));
    FUZZ_CHECK(!json_object_object_get_ex(o, "functions", NULL));
    FUZZ_CHECK(!json_object_object_get_ex(o, "stream", &v) || !json_object_get_boolean(v));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    prov_chat_req_t *req = NULL;
    prov_error_t *err = NULL;
    prov_chat_req_t fast, *tree = NULL;
    prov_error_t *terr = NULL;
    /* the fast path takes only what the json-c path takes, alike */
    if (prov_chat_parse_fast(&fast, (const char *)data, size, p)) {
        FUZZ_CHECK(prov_chat_parse_json(&tree, &terr, (const char *)data, size, p)
                   == APR_SUCCESS);
        FUZZ_CHECK(!strcmp(fast.model, tree->model) && fast.max_tokens == tree->max_tokens
                   && fast.prompt_bytes == tree->prompt_bytes
                   && fast.n_messages == tree->n_messages);
        FUZZ_CHECK(json_object_equal(
            fuzz_reparse(prov_chat_upstream_body(&fast, "upstream-model", 0, p), p),
            fuzz_reparse(prov_chat_upstream_body(tree, "upstream-model", 0, p), p)));
    }
    if (prov_chat_parse(&req, &err, (const char *)data, size, p) == APR_SUCCESS) {
        FUZZ_CHECK(req && !err);
        FUZZ_CHECK(req->model && *req->model);
        FUZZ_CHECK(req->max_tokens == -1 || req->max_tokens >= 1);
        FUZZ_CHECK(req->n_messages >= 1);
        check_upstream(req, p);
    }
    else {
        FUZZ_CHECK(err && err->code == PROV_E_INVALID_REQUEST && err->message && *err->message);
        fuzz_reparse(prov_error_openai_json(err, p), p);
    }
    apr_pool_destroy(p);
    return 0;
}
