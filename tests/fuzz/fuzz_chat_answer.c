/* fuzz_chat_answer.c: libFuzzer harness of the readers of the gateway's
 * OpenAI-shaped answers that are not streamed: prov_chat_read_answer and the
 * answers built from it (prov_chat_render, and prov_resp_render for a
 * Codex-like request with function, custom and namespaced tools), and the
 * model list (prov_catalog_parse_list), and the same answer relayed without
 * a tree (prov_chat_relay_read: taken only when json-c takes it alike). The input is a gateway's answer body.
 * Checked: every answer given to a client parses as JSON with the public
 * model id and the credits; a response object lists only message,
 * function_call and custom_tool_call items and shows no negative token
 * count. (What a settlement believes of the counts read is prov_money's
 * business: fuzz_money.) */
#include "fuzz_common.h"
#include "prov_chat.h"
#include "prov_catalog.h"
#include "prov_responses.h"

static const char codex_request[] =
    "{\"model\":\"m\",\"input\":\"hi\",\"tools\":["
    "{\"type\":\"function\",\"name\":\"shell\",\"parameters\":{\"type\":\"object\"}},"
    "{\"type\":\"custom\",\"name\":\"apply_patch\",\"format\":{\"type\":\"grammar\","
    "\"syntax\":\"lark\",\"definition\":\"start: /.+/\"}},"
    "{\"type\":\"namespace\",\"name\":\"crm\",\"tools\":[{\"type\":\"function\",\"name\":"
    "\"lookup\"}]},{\"type\":\"web_search\"}]}";

static void check_response(const char *text, apr_pool_t *p)
{
    json_object *o = fuzz_reparse(text, p);
    json_object *out = prov_json_get(o, "output", json_type_array);
    json_object *usage = prov_json_get(o, "usage", json_type_object);
    size_t i;
    FUZZ_CHECK(!strcmp(prov_json_get_str(o, "model"), "public-model"));
    FUZZ_CHECK(out && usage && prov_json_get(usage, "credits", json_type_int));
    FUZZ_CHECK(json_object_get_int64(prov_json_get(usage, "input_tokens", json_type_int)) >= 0);
    FUZZ_CHECK(json_object_get_int64(prov_json_get(usage, "output_tokens", json_type_int)) >= 0);
    FUZZ_CHECK(json_object_get_int64(prov_json_get(usage, "total_tokens", json_type_int)) >= 0);
    for (i = 0; i < json_object_array_length(out); i++) {
        const char *type = prov_json_get_str(json_object_array_get_idx(out, i), "type");
        FUZZ_CHECK(type && (!strcmp(type, "message") || !strcmp(type, "function_call")
                            || !strcmp(type, "custom_tool_call")));
    }
}

/* An answer the relay takes (prov_json_scan.h) json-c takes too, with the
 * same usage, and the relayed answer is the JSON json-c's render gives. */
static void check_relay(const char *data, size_t size, apr_pool_t *p)
{
    prov_relay_t rl;
    prov_tokens_t a, b;
    json_object *tree = NULL;
    const char *ours;
    if (prov_chat_relay_read(&rl, &a, data, size) != APR_SUCCESS)
        return;
    FUZZ_CHECK(prov_chat_read_answer(&tree, &b, data, size, p) == APR_SUCCESS);
    FUZZ_CHECK(a.input == b.input && a.output == b.output && a.cache == b.cache
               && a.reasoning == b.reasoning);
    ours = prov_relay_render(&rl, "public-model", 12000000, p);
    FUZZ_CHECK(ours != NULL);
    FUZZ_CHECK(json_object_equal(fuzz_reparse(ours, p),
                                 fuzz_reparse(prov_chat_render(tree, "public-model", 12000000,
                                                               p), p)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    prov_resp_req_t *req = NULL;
    prov_error_t *err = NULL;
    json_object *answer = NULL;
    prov_tokens_t t;
    apr_hash_t *ids = NULL;
    apr_status_t rv;

    FUZZ_CHECK(prov_resp_parse(&req, &err, codex_request, sizeof(codex_request) - 1, p)
               == APR_SUCCESS);
    memset(&t, 0, sizeof(t));
    rv = prov_chat_read_answer(&answer, &t, (const char *)data, size, p);
    FUZZ_CHECK(rv == APR_SUCCESS || rv == APR_ENOENT || rv == APR_EINVAL
               || rv == PROV_USAGE_UNREADABLE);
    /* a usage that is read is whole numbers >= 0 (else it is no usage) */
    FUZZ_CHECK(rv != APR_SUCCESS || (t.input >= 0 && t.output >= 0 && t.cache >= 0
                                     && t.reasoning >= 0));
    if (rv != APR_EINVAL) {
        json_object *o;
        check_response(prov_resp_render(req, answer, "resp_abc", "public-model", 1700000000,
                                        12000000, p), p);
        o = fuzz_reparse(prov_chat_render(answer, "public-model", 12000000, p), p);
        FUZZ_CHECK(!strcmp(prov_json_get_str(o, "model"), "public-model"));
    }
    check_relay((const char *)data, size, p);
    if (prov_catalog_parse_list(&ids, (const char *)data, size, p) == APR_SUCCESS)
        FUZZ_CHECK(ids != NULL);
    apr_pool_destroy(p);
    return 0;
}
