/* fuzz_messages_answer.c: libFuzzer harness of the reader of the gateway's
 * Messages answer that is not streamed (prov_messages_read_answer, the usage
 * reader prov_messages_tokens) and of the answer the client gets from it
 * (prov_messages_render). The input is a gateway's answer body. Checked:
 * the client's answer parses as JSON with the public model id and
 * usage.credits; no reasoning tokens on this transport; a usage read has no
 * negative count (one that cannot be read is PROV_USAGE_UNREADABLE). */
#include "fuzz_common.h"
#include "prov_messages.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    json_object *answer = NULL, *o;
    prov_tokens_t t;
    apr_status_t rv;

    memset(&t, 0, sizeof(t));
    rv = prov_messages_read_answer(&answer, &t, (const char *)data, size, p);
    FUZZ_CHECK(rv == APR_SUCCESS || rv == APR_ENOENT || rv == APR_EINVAL
               || rv == PROV_USAGE_UNREADABLE);
    /* a usage that is read is whole numbers >= 0 (else it is no usage) */
    FUZZ_CHECK(rv != APR_SUCCESS || (t.input >= 0 && t.output >= 0 && t.cache >= 0
                                     && t.reasoning >= 0));
    if (rv != APR_EINVAL) {
        FUZZ_CHECK(answer != NULL);
        FUZZ_CHECK(t.reasoning == 0);
        o = fuzz_reparse(prov_messages_render(answer, "public-model", 12000000, p), p);
        FUZZ_CHECK(!strcmp(prov_json_get_str(o, "model"), "public-model"));
        FUZZ_CHECK(prov_json_get(prov_json_get(o, "usage", json_type_object), "credits",
                                 json_type_int));
    }
    apr_pool_destroy(p);
    return 0;
}
