/* fuzz_responses_request.c: libFuzzer harness of the Responses request parser
 * and translator (prov_resp_parse, prov_resp_upstream_body,
 * prov_resp_tool_by_flat). The input is a client's request body (what Codex
 * and the OpenAI SDK send). Checked: a refusal is a 400 INVALID_REQUEST whose
 * OpenAI-shaped JSON parses; an accepted request's Chat Completions body is a
 * JSON object naming the upstream model, with a non-empty messages array of
 * system, user, assistant and tool messages (tool calls with string
 * arguments), function tools only, each one known by its flat name,
 * stream/stream_options exactly when the client streams, and the dropped
 * hosted tools named with header token characters only. */
#include "fuzz_common.h"
#include "prov_responses.h"
#include "prov_error.h"
#include "prov_header.h"

static void check_messages(json_object *msgs)
{
    size_t i, j;
    FUZZ_CHECK(msgs && json_object_array_length(msgs) > 0);
    for (i = 0; i < json_object_array_length(msgs); i++) {
        json_object *m = json_object_array_get_idx(msgs, i);
        json_object *calls = prov_json_get(m, "tool_calls", json_type_array);
        const char *role = prov_json_get_str(m, "role");
        FUZZ_CHECK(role && (!strcmp(role, "system") || !strcmp(role, "user")
                            || !strcmp(role, "assistant") || !strcmp(role, "tool")));
        FUZZ_CHECK(!calls || !strcmp(role, "assistant"));
        FUZZ_CHECK(strcmp(role, "tool") || prov_json_get_str(m, "tool_call_id"));
        for (j = 0; calls && j < json_object_array_length(calls); j++) {
            json_object *fn = prov_json_get(json_object_array_get_idx(calls, j), "function",
                                            json_type_object);
            FUZZ_CHECK(prov_json_get_str(fn, "name") && prov_json_get_str(fn, "arguments"));
        }
    }
}

static void check_upstream(const prov_resp_req_t *req, apr_pool_t *p)
{
    const char *up = prov_resp_upstream_body(req, "upstream-model", 0, p);
    json_object *o = fuzz_reparse(up, p), *tools, *v = NULL;
    size_t i;
    FUZZ_CHECK(json_object_is_type(o, json_type_object));
    FUZZ_CHECK(!strcmp(prov_json_get_str(o, "model"), "upstream-model"));
    check_messages(prov_json_get(o, "messages", json_type_array));
    tools = prov_json_get(o, "tools", json_type_array);
    FUZZ_CHECK((tools ? (int)json_object_array_length(tools) : 0) == req->tools->nelts);
    for (i = 0; tools && i < json_object_array_length(tools); i++) {
        json_object *t = json_object_array_get_idx(tools, i);
        const char *name = prov_json_get_str(prov_json_get(t, "function", json_type_object),
                                             "name");
        FUZZ_CHECK(!strcmp(prov_json_get_str(t, "type"), "function"));
        FUZZ_CHECK(name && prov_resp_tool_by_flat(req, name));
    }
    FUZZ_CHECK(!json_object_object_get_ex(o, "tool_choice", NULL) || tools);
    if (req->stream) {
        FUZZ_CHECK(json_object_object_get_ex(o, "stream", &v) && json_object_get_boolean(v));
        FUZZ_CHECK(prov_json_get(o, "stream_options", json_type_object));
    }
    else {
        FUZZ_CHECK(!json_object_object_get_ex(o, "stream", NULL));
    }
    FUZZ_CHECK(req->max_output_tokens == -1 || req->max_output_tokens >= 1);
    /* the dropped hosted tools go into a response header */
    if (req->dropped_tools) {
        const char *c;
        FUZZ_CHECK(strlen(req->dropped_tools) <= PROV_RESP_DROPPED_MAX);
        for (c = req->dropped_tools; *c; c++)
            FUZZ_CHECK(prov_header_tchar((unsigned char)*c) || *c == ',');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    prov_resp_req_t *req = NULL;
    prov_error_t *err = NULL;
    if (prov_resp_parse(&req, &err, (const char *)data, size, p) == APR_SUCCESS) {
        FUZZ_CHECK(req && !err && req->model && *req->model);
        check_upstream(req, p);
    }
    else {
        FUZZ_CHECK(err && err->code == PROV_E_INVALID_REQUEST && err->message && *err->message);
        fuzz_reparse(prov_error_openai_json(err, p), p);
    }
    apr_pool_destroy(p);
    return 0;
}
