/* fuzz_gateway_http.c: libFuzzer harness of the plain HTTP/1.1 gateway
 * client's answer parser (core/gateway/prov_gateway_answer.c, through
 * prov_gateway_http_parse: the status line and headers, 1xx answers skipped,
 * Content-Length, chunked with extensions and trailers, or a body that ends
 * with the connection). The input is the bytes a gateway sends, read once all
 * at once and once a few bytes per read (a size drawn from the input): the
 * result must not depend on how the bytes arrive. Checked too: a parsed
 * answer has a final status (200-599), a body no longer than the input, and
 * the Content-Type and Retry-After it carries. */
#include "fuzz_common.h"
#include "prov_gateway_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    prov_gateway_response_t *r1 = NULL, *r2 = NULL;
    int keep1 = 0, keep2 = 0;
    size_t step = 1, i;
    apr_status_t rv1, rv2;

    for (i = 0; i < size; i++)
        step = step * 31 + data[i];
    step = 1 + step % 61;
    rv1 = prov_gateway_http_parse(&r1, &keep1, (const char *)data, size, 0, p);
    rv2 = prov_gateway_http_parse(&r2, &keep2, (const char *)data, size, step, p);
    FUZZ_CHECK(rv1 == APR_SUCCESS || rv1 == APR_EOF || rv1 == APR_EGENERAL);
    FUZZ_CHECK(rv1 == rv2);
    if (rv1 == APR_SUCCESS) {
        FUZZ_CHECK(r1->status >= 200 && r1->status <= 599);
        FUZZ_CHECK(r1->len <= size && r1->body && r1->body[r1->len] == '\0');
        FUZZ_CHECK(r1->status == r2->status && r1->len == r2->len);
        FUZZ_CHECK(!memcmp(r1->body, r2->body, r1->len));
        FUZZ_CHECK(!r1->content_type == !r2->content_type);
        FUZZ_CHECK(!r1->content_type || !strcmp(r1->content_type, r2->content_type));
        FUZZ_CHECK(!r1->retry_after == !r2->retry_after);
        FUZZ_CHECK(!r1->retry_after || !strcmp(r1->retry_after, r2->retry_after));
        /* a kept connection holds nothing beyond the answer read whole */
        FUZZ_CHECK(!keep1 || keep2);
    }
    apr_pool_destroy(p);
    return 0;
}
