/* fuzz_sse.c: libFuzzer harness of the Server-Sent Events decoder and encoder
 * (core/transport/prov_sse.c). The input is a stream as a gateway might
 * send it. It is fed twice, whole and in pieces of a size drawn from the input, and both
 * runs must yield the same events and the same result (the decoder must not
 * depend on how the bytes arrive); no event may exceed the parser's bound.
 * Each event is then encoded (prov_sse_encode) and decoded again: the same
 * name and data must come back. */
#include "fuzz_common.h"
#include "prov_sse.h"

#define MAX_EVENT 256          /* small, so that inputs reach the bound */

typedef struct events_t {
    apr_array_header_t *list;       /* "name\0data" strings */
    apr_array_header_t *lens;       /* apr_size_t: data lengths */
    apr_size_t max;                 /* the parser's bound */
    apr_pool_t *p;
} events_t;

static apr_status_t on_event(void *baton, const char *name, const char *data, apr_size_t len)
{
    events_t *e = baton;
    apr_size_t n = strlen(name);
    char *s = apr_palloc(e->p, n + 1 + len + 1);
    FUZZ_CHECK(len <= e->max);
    FUZZ_CHECK(data[len] == '\0');
    FUZZ_CHECK(n > 0 && n < 64);
    memcpy(s, name, n + 1);
    memcpy(s + n + 1, data, len + 1);
    APR_ARRAY_PUSH(e->list, const char *) = s;
    APR_ARRAY_PUSH(e->lens, apr_size_t) = len;
    return APR_SUCCESS;
}

static apr_status_t run(events_t *e, const uint8_t *data, size_t size, size_t piece, int *pending,
                        apr_size_t max, apr_pool_t *p)
{
    prov_sse_parser_t *ps = prov_sse_parser_create(on_event, e, max, p);
    apr_status_t rv = APR_SUCCESS;
    size_t at = 0;
    e->list = apr_array_make(p, 8, sizeof(const char *));
    e->lens = apr_array_make(p, 8, sizeof(apr_size_t));
    e->max = max;
    e->p = p;
    while (at < size && rv == APR_SUCCESS) {
        size_t n = piece && size - at > piece ? piece : size - at;
        rv = prov_sse_feed(ps, (const char *)data + at, n);
        at += n;
    }
    *pending = prov_sse_pending(ps);
    return rv;
}

/* Encodes one event and decodes it again. */
static void round_trip(const char *name, const char *data, apr_size_t len, apr_pool_t *p)
{
    events_t again;
    const char *enc;
    int pending;
    if (memchr(data, '\0', len))
        return;                 /* the encoder takes C strings */
    enc = prov_sse_encode(name, data, p);
    /* the bound counts a line's field name too: room for "data: " */
    FUZZ_CHECK(run(&again, (const uint8_t *)enc, strlen(enc), 0, &pending, MAX_EVENT + 8, p)
               == APR_SUCCESS);
    FUZZ_CHECK(!pending);
    FUZZ_CHECK(again.list->nelts == 1);
    FUZZ_CHECK(!strcmp(APR_ARRAY_IDX(again.list, 0, const char *), name));
    FUZZ_CHECK(APR_ARRAY_IDX(again.lens, 0, apr_size_t) == len);
    FUZZ_CHECK(!memcmp(APR_ARRAY_IDX(again.list, 0, const char *) + strlen(name) + 1, data, len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    events_t whole, pieces;
    apr_status_t rv1, rv2;
    size_t piece = 1, i;
    int pend1, pend2;
    for (i = 0; i < size; i++)
        piece += data[i];
    piece = 1 + piece % 37;
    rv1 = run(&whole, data, size, 0, &pend1, MAX_EVENT, p);
    rv2 = run(&pieces, data, size, piece, &pend2, MAX_EVENT, p);
    FUZZ_CHECK(rv1 == APR_SUCCESS || rv1 == APR_ENOSPC);
    FUZZ_CHECK(rv1 == rv2);
    FUZZ_CHECK(whole.list->nelts == pieces.list->nelts);
    if (rv1 == APR_SUCCESS)
        FUZZ_CHECK(pend1 == pend2);
    for (i = 0; i < (size_t)whole.list->nelts; i++) {
        const char *a = APR_ARRAY_IDX(whole.list, i, const char *);
        const char *b = APR_ARRAY_IDX(pieces.list, i, const char *);
        apr_size_t la = APR_ARRAY_IDX(whole.lens, i, apr_size_t);
        FUZZ_CHECK(la == APR_ARRAY_IDX(pieces.lens, i, apr_size_t));
        FUZZ_CHECK(!strcmp(a, b));
        FUZZ_CHECK(!memcmp(a + strlen(a) + 1, b + strlen(b) + 1, la));
        round_trip(a, a + strlen(a) + 1, la, p);
    }
    apr_pool_destroy(p);
    return 0;
}
