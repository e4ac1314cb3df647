/* fuzz_messages_relay.c: libFuzzer harness comparing the Messages stream
 * relay's two ways of reading an event: from its text (prov_json_scan.h,
 * the default) and through json-c (prov_messages_stream_set_fast off), which
 * the first must match wherever it does not decline. The first input byte
 * chooses the public model id (plain, with a slash, or one that needs
 * escaping) and the hold; the rest is the gateway's SSE stream, fed whole to
 * both. Checked: the same status, events, state, usage, output counted and
 * charges (complete or not, client gone or not); every event the client
 * gets has the same name and the same bytes when the gateway wrote it as
 * json-c prints it (else the same JSON, or the same bytes when it is not
 * JSON). A third relay, the fast one encoding into a buffer of its own
 * (prov_messages_stream_set_out, as mod_provider_messages.c has it) and fed
 * the stream in two pieces, must end in the same state with the same bytes
 * as the fast one that emits each event, once its buffer was written
 * (prov_messages_stream_written). */
#include "fuzz_stream_util.h"
#include "prov_messages.h"

static const char *const ids[] = { "public-model", "vendor/model-1.5", "mod\xc3\xa9le" };

typedef struct run_t {
    collected_t out;
    apr_status_t rv;
    prov_messages_stream_t *s;
} run_t;

static void relay(run_t *r, unsigned opt, const uint8_t *data, size_t size, int fast,
                  apr_pool_t *p)
{
    static const prov_rates_t rates = { 3, 15, 1, 15 };
    collected_init(&r->out, p);
    r->s = prov_messages_stream_create(ids[opt % 3], &rates, 100, PROV_OUTPUT_TOKENS_MAX,
                                       opt & 4 ? 50 : 1000000000, collect, &r->out, p);
    prov_messages_stream_set_fast(r->s, fast);
    r->rv = prov_messages_stream_feed(r->s, (const char *)data, size);
}

/* The events of the input as the relay's parser reads them (up to an error). */
static apr_status_t input_event(void *baton, const char *name, const char *data,
                                apr_size_t len)
{
    apr_array_header_t *raw = baton;
    (void)name;
    APR_ARRAY_PUSH(raw, const char *) = apr_pstrmemdup(raw->pool, data, len);
    return APR_SUCCESS;
}

/* Written as json-c prints it: parsing and printing it gives it back. */
static int canonical(const char *data, apr_pool_t *p)
{
    const char *err = NULL;
    json_object *o = prov_json_parse(data, strlen(data), &err, p);
    return o && !strcmp(prov_json_dump(o, p), data);
}

static void same_state(const run_t *a, const run_t *b)
{
    prov_tokens_t ta, tb;
    prov_delivery_t da, db;
    int complete, left;
    FUZZ_CHECK(a->rv == b->rv);
    FUZZ_CHECK(prov_messages_stream_events(a->s) == prov_messages_stream_events(b->s));
    FUZZ_CHECK(prov_messages_stream_complete(a->s) == prov_messages_stream_complete(b->s));
    FUZZ_CHECK(prov_messages_stream_failed(a->s) == prov_messages_stream_failed(b->s));
    FUZZ_CHECK(prov_messages_stream_tokens(a->s, &ta) == prov_messages_stream_tokens(b->s, &tb));
    FUZZ_CHECK(!memcmp(&ta, &tb, sizeof(ta)));
    prov_messages_stream_delivery(a->s, &da);
    prov_messages_stream_delivery(b->s, &db);
    FUZZ_CHECK(!memcmp(&da, &db, sizeof(da)));
    for (complete = 0; complete < 2; complete++) {
        for (left = 0; left < 2; left++) {
            prov_bill_e ha, hb;
            FUZZ_CHECK(prov_messages_stream_bill(a->s, complete, left, &ha, &ta)
                       == prov_messages_stream_bill(b->s, complete, left, &hb, &tb));
            FUZZ_CHECK(ha == hb && !memcmp(&ta, &tb, sizeof(ta)));
        }
    }
}

static void same_events(const run_t *fast, const run_t *slow, const uint8_t *data,
                        size_t size, apr_pool_t *p)
{
    apr_array_header_t *in = apr_array_make(p, 16, sizeof(const char *));
    prov_sse_parser_t *ps = prov_sse_parser_create(input_event, in, 4 * 1024 * 1024, p);
    decoded_t a, b;
    int i;
    prov_sse_feed(ps, (const char *)data, size);
    decode(&a, &fast->out, p);
    decode(&b, &slow->out, p);
    FUZZ_CHECK(a.names->nelts == b.names->nelts && a.names->nelts <= in->nelts);
    for (i = 0; i < a.names->nelts; i++) {
        const char *ra = APR_ARRAY_IDX(a.raw, i, const char *);
        const char *rb = APR_ARRAY_IDX(b.raw, i, const char *);
        json_object *ja = APR_ARRAY_IDX(a.data, i, json_object *);
        json_object *jb = APR_ARRAY_IDX(b.data, i, json_object *);
        FUZZ_CHECK(!strcmp(APR_ARRAY_IDX(a.names, i, const char *),
                           APR_ARRAY_IDX(b.names, i, const char *)));
        if (!strcmp(ra, rb))
            continue;
        FUZZ_CHECK(!canonical(APR_ARRAY_IDX(in, i, const char *), p));
        FUZZ_CHECK(ja && jb && json_object_equal(ja, jb));
    }
}

/* The fast relay into a buffer, fed data in two pieces cut at opt's byte. */
static void relay_into(const run_t *emitted, unsigned opt, const uint8_t *data, size_t size,
                       apr_pool_t *p)
{
    static const prov_rates_t rates = { 3, 15, 1, 15 };
    prov_sse_buf_t *out = prov_sse_buf_create(p);
    size_t cut = size ? (opt * 7u) % (size + 1) : 0;
    run_t r;
    r.s = prov_messages_stream_create(ids[opt % 3], &rates, 100, PROV_OUTPUT_TOKENS_MAX,
                                      opt & 4 ? 50 : 1000000000, NULL, NULL, p);
    prov_messages_stream_set_out(r.s, out);
    r.rv = prov_messages_stream_feed(r.s, (const char *)data, cut);
    if (r.rv == APR_SUCCESS)
        r.rv = prov_messages_stream_feed(r.s, (const char *)data + cut, size - cut);
    prov_messages_stream_written(r.s);      /* the caller wrote out */
    same_state(&r, emitted);
    FUZZ_CHECK(out->len == emitted->out.len
               && (!out->len || !memcmp(out->data, emitted->out.buf, out->len)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    unsigned opt = fuzz_take(&data, &size);
    run_t fast, slow;
    relay(&fast, opt, data, size, 1, p);
    relay(&slow, opt, data, size, 0, p);
    same_state(&fast, &slow);
    same_events(&fast, &slow, data, size, p);
    relay_into(&fast, opt, data, size, p);
    apr_pool_destroy(p);
    return 0;
}
