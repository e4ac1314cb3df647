/* fuzz_messages_request.c: libFuzzer harness of the Messages request parser
 * and normaliser (prov_messages_parse, for /v1/messages and for
 * /v1/messages/count_tokens), the body it sends the gateway
 * (prov_messages_upstream_body), the input estimate, and the
 * anthropic-version check (fed the input's first line). The input is a
 * client's request body. Checked: a refusal is a 400 INVALID_REQUEST whose
 * Anthropic-shaped JSON parses; an accepted request's upstream body is a JSON
 * object naming the upstream model whose messages are user or assistant
 * messages without image, document or thinking blocks, with no cache_control
 * where the normaliser strips it, no thinking field, and (count_tokens) none
 * of the fields that endpoint does not take. A body the fast path
 * (prov_messages_parse_fast) takes, the json-c path (prov_messages_parse_json)
 * takes too, with the same model, cap, stream flag and counts, and the
 * gateway gets the same JSON either way. */
#include "fuzz_common.h"
#include "prov_messages.h"
#include "prov_error.h"

static int type_is(json_object *o, const char *type)
{
    const char *t = prov_json_get_str(o, "type");
    return t && !strcmp(t, type);
}

static void check_blocks(json_object *content)
{
    size_t i, j;
    if (!json_object_is_type(content, json_type_array))
        return;
    for (i = 0; i < json_object_array_length(content); i++) {
        json_object *b = json_object_array_get_idx(content, i);
        json_object *inner = prov_json_get(b, "content", json_type_array);
        FUZZ_CHECK(!type_is(b, "image") && !type_is(b, "document"));
        FUZZ_CHECK(!type_is(b, "thinking") && !type_is(b, "redacted_thinking"));
        FUZZ_CHECK(!json_object_object_get_ex(b, "cache_control", NULL));
        for (j = 0; inner && type_is(b, "tool_result") && j < json_object_array_length(inner);
             j++) {
            json_object *ib = json_object_array_get_idx(inner, j);
            FUZZ_CHECK(!type_is(ib, "image") && !type_is(ib, "document"));
            FUZZ_CHECK(!json_object_object_get_ex(ib, "cache_control", NULL));
        }
    }
}

static void check_upstream(const prov_messages_req_t *req, int count_tokens, apr_pool_t *p)
{
    const char *up = prov_messages_upstream_body(req, "upstream-model", 0, p);
    json_object *o = fuzz_reparse(up, p), *msgs, *sys;
    size_t i;
    FUZZ_CHECK(json_object_is_type(o, json_type_object));
    FUZZ_CHECK(!strcmp(prov_json_get_str(o, "model"), "upstream-model"));
    FUZZ_CHECK(!json_object_object_get_ex(o, "thinking", NULL));
    FUZZ_CHECK(!json_object_object_get_ex(o, "cache_control", NULL));
    if (count_tokens) {
        FUZZ_CHECK(!json_object_object_get_ex(o, "max_tokens", NULL));
        FUZZ_CHECK(!json_object_object_get_ex(o, "stream", NULL));
    }
    msgs = prov_json_get(o, "messages", json_type_array);
    FUZZ_CHECK(msgs && json_object_array_length(msgs) > 0);
    FUZZ_CHECK((int)json_object_array_length(msgs) == req->n_messages);
    for (i = 0; i < json_object_array_length(msgs); i++) {
        json_object *m = json_object_array_get_idx(msgs, i), *c = NULL;
        const char *role = prov_json_get_str(m, "role");
        FUZZ_CHECK(role && (!strcmp(role, "user") || !strcmp(role, "assistant")));
        FUZZ_CHECK(json_object_object_get_ex(m, "content", &c) && c);
        check_blocks(c);
    }
    if ((sys = prov_json_get(o, "system", json_type_array)))
        check_blocks(sys);
    FUZZ_CHECK(prov_messages_estimate_tokens(req) >= 8);
}

static void parse(const uint8_t *data, size_t size, int count_tokens)
{
    apr_pool_t *p = fuzz_pool();
    prov_messages_req_t *req = NULL;
    prov_error_t *err = NULL;
    if (prov_messages_parse(&req, &err, (const char *)data, size, count_tokens, p)
        == APR_SUCCESS) {
        FUZZ_CHECK(req && !err && req->model && *req->model);
        FUZZ_CHECK(count_tokens ? req->max_tokens == -1 : req->max_tokens >= 1);
        check_upstream(req, count_tokens, p);
    }
    else {
        FUZZ_CHECK(err && err->code == PROV_E_INVALID_REQUEST && err->message && *err->message);
        fuzz_reparse(prov_error_anthropic_json(err, p), p);
    }
    apr_pool_destroy(p);
}

/* The fast path only ever takes what the json-c path takes, alike. */
static void compare_fast(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    prov_messages_req_t fast, *req = NULL;
    prov_error_t *err = NULL;
    if (prov_messages_parse_fast(&fast, (const char *)data, size, p)) {
        FUZZ_CHECK(prov_messages_parse_json(&req, &err, (const char *)data, size, 0, p)
                   == APR_SUCCESS);
        FUZZ_CHECK(!strcmp(fast.model, req->model) && fast.max_tokens == req->max_tokens
                   && fast.stream == req->stream && fast.prompt_bytes == req->prompt_bytes
                   && fast.n_messages == req->n_messages);
        FUZZ_CHECK(json_object_equal(
            fuzz_reparse(prov_messages_upstream_body(&fast, "upstream/model", 0, p), p),
            fuzz_reparse(prov_messages_upstream_body(req, "upstream/model", 0, p), p)));
    }
    apr_pool_destroy(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char version[16];
    size_t n = 0;
    apr_status_t rv;
    while (n < size && n < sizeof(version) - 1 && data[n] != '\n')
        n++;
    memcpy(version, data, n);
    version[n] = '\0';
    rv = prov_messages_version_check(version);
    FUZZ_CHECK(rv == APR_SUCCESS || rv == APR_EINVAL || rv == APR_ENOTIMPL);
    FUZZ_CHECK(rv != APR_SUCCESS || (strlen(version) == 10 && strcmp(version, "2023-06-01") >= 0));
    parse(data, size, 0);
    parse(data, size, 1);
    compare_fast(data, size);
    return 0;
}
