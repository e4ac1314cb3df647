/* fuzz_sse.c: libFuzzer harness of the Server-Sent Events decoder and encoder
 * (core/transport/prov_sse.c). The input is a stream as a gateway might
 * send it. It is fed twice, whole and in pieces of a size drawn from the input, and both
 * runs must yield the same events and the same result (the decoder must not
 * depend on how the bytes arrive); no event may exceed the parser's bound.
 * Each event is then encoded (prov_sse_encode) and decoded again: the same
 * name and data must come back. The prov_sse_ev_t parser
 * (prov_sse_parser_create_ev) is run on the same pieces and must give the
 * same events and result; an event's raw bytes, when it gives them, must lie
 * in the piece fed and be exactly what prov_sse_encode_len and
 * prov_sse_put_event write for it. */
#include "fuzz_common.h"
#include "prov_sse.h"

#define MAX_EVENT 256          /* small, so that inputs reach the bound */

typedef struct events_t {
    apr_array_header_t *list;       /* "name\0data" strings */
    apr_array_header_t *lens;       /* apr_size_t: data lengths */
    apr_size_t max;                 /* the parser's bound */
    const char *fed, *fed_end;      /* the piece being fed (prov_sse_ev_t runs) */
    prov_sse_buf_t *out;            /* raw events checked against prov_sse_put_event */
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

/* The prov_sse_ev_t form: recorded as on_event records, the raw bytes checked. */
static apr_status_t on_ev(void *baton, const prov_sse_ev_t *ev)
{
    events_t *e = baton;
    char *copy = apr_palloc(e->p, ev->len + 1);
    FUZZ_CHECK(ev->data != NULL || ev->len == 0);
    if (ev->len)
        memcpy(copy, ev->data, ev->len);
    copy[ev->len] = '\0';
    if (ev->raw) {
        apr_size_t n;
        const char *enc = prov_sse_encode_len(ev->name, copy, ev->len, &n, e->p);
        FUZZ_CHECK(ev->raw >= e->fed && ev->raw + ev->raw_len <= e->fed_end);
        FUZZ_CHECK(ev->raw_len == n && !memcmp(ev->raw, enc, n));
        prov_sse_buf_reset(e->out);
        FUZZ_CHECK(prov_sse_put_event(e->out, ev->name, ev->data, ev->len) == APR_SUCCESS);
        FUZZ_CHECK(e->out->len == n && !memcmp(e->out->data, enc, n));
    }
    return on_event(e, ev->name, copy, ev->len);
}

static apr_status_t run_as(events_t *e, const uint8_t *data, size_t size, size_t piece,
                           int *pending, apr_size_t max, int slices, apr_pool_t *p)
{
    prov_sse_parser_t *ps = slices ? prov_sse_parser_create_ev(on_ev, e, max, p)
                                   : prov_sse_parser_create(on_event, e, max, p);
    apr_status_t rv = APR_SUCCESS;
    size_t at = 0;
    e->list = apr_array_make(p, 8, sizeof(const char *));
    e->lens = apr_array_make(p, 8, sizeof(apr_size_t));
    e->max = max;
    e->out = prov_sse_buf_create(p);
    e->p = p;
    while (at < size && rv == APR_SUCCESS) {
        size_t n = piece && size - at > piece ? piece : size - at;
        e->fed = (const char *)data + at;
        e->fed_end = e->fed + n;
        rv = prov_sse_feed(ps, (const char *)data + at, n);
        at += n;
    }
    *pending = prov_sse_pending(ps);
    return rv;
}

static apr_status_t run(events_t *e, const uint8_t *data, size_t size, size_t piece, int *pending,
                        apr_size_t max, apr_pool_t *p)
{
    return run_as(e, data, size, piece, pending, max, 0, p);
}

/* Both runs gave the same events. */
static void same_events(const events_t *a, const events_t *b)
{
    int i;
    FUZZ_CHECK(a->list->nelts == b->list->nelts);
    for (i = 0; i < a->list->nelts; i++) {
        const char *x = APR_ARRAY_IDX(a->list, i, const char *);
        const char *y = APR_ARRAY_IDX(b->list, i, const char *);
        apr_size_t lx = APR_ARRAY_IDX(a->lens, i, apr_size_t);
        FUZZ_CHECK(lx == APR_ARRAY_IDX(b->lens, i, apr_size_t));
        FUZZ_CHECK(!strcmp(x, y));
        FUZZ_CHECK(!memcmp(x + strlen(x) + 1, y + strlen(y) + 1, lx));
    }
}

/* The prov_sse_ev_t parser against the copying one, on the same pieces. */
static void compare_forms(const events_t *old, apr_status_t old_rv, int old_pending,
                          const uint8_t *data, size_t size, size_t piece, apr_pool_t *p)
{
    events_t ev;
    int pending;
    apr_status_t rv = run_as(&ev, data, size, piece, &pending, MAX_EVENT, 1, p);
    FUZZ_CHECK(rv == old_rv);
    if (rv == APR_SUCCESS)
        FUZZ_CHECK(pending == old_pending);
    same_events(old, &ev);
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
    if (rv1 == APR_SUCCESS)
        FUZZ_CHECK(pend1 == pend2);
    same_events(&whole, &pieces);
    compare_forms(&whole, rv1, pend1, data, size, 0, p);
    compare_forms(&pieces, rv2, pend2, data, size, piece, p);
    for (i = 0; i < (size_t)whole.list->nelts; i++) {
        const char *a = APR_ARRAY_IDX(whole.list, i, const char *);
        apr_size_t la = APR_ARRAY_IDX(whole.lens, i, apr_size_t);
        round_trip(a, a + strlen(a) + 1, la, p);
    }
    apr_pool_destroy(p);
    return 0;
}
