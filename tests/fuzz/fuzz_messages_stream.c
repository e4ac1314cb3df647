/* fuzz_messages_stream.c: libFuzzer harness of the Messages stream relay
 * (prov_messages_stream_*), which reads the usage from message_start and
 * message_delta, writes the public model id and the credits into them, and
 * answers a gateway error event with one of its own. The input is the
 * gateway's SSE stream. It is fed twice, whole and in pieces of a size drawn
 * from the input: the client must get the same bytes and the relay must
 * read the same usage and state either way. Checked too: what the client
 * gets decodes into exactly the events the relay counted; message_start
 * carries the public model id and message_delta (an object) non-negative
 * credits. */
#include "fuzz_stream_util.h"
#include "prov_messages.h"

typedef struct run_t {
    collected_t out;
    apr_status_t rv;
    int events, complete, failed, has_usage;
    prov_tokens_t t;
} run_t;

static void relay(run_t *r, const uint8_t *data, size_t size, size_t piece, apr_pool_t *p)
{
    static const prov_rates_t rates = { 3, 15, 1, 15 };
    prov_messages_stream_t *s;
    size_t at = 0;
    collected_init(&r->out, p);
    s = prov_messages_stream_create("public-model", &rates, 100, PROV_OUTPUT_TOKENS_MAX,
                                    1000000000, collect, &r->out, p);
    r->rv = APR_SUCCESS;
    while (at < size && r->rv == APR_SUCCESS) {
        size_t n = piece && size - at > piece ? piece : size - at;
        r->rv = prov_messages_stream_feed(s, (const char *)data + at, n);
        at += n;
    }
    r->events = prov_messages_stream_events(s);
    r->complete = prov_messages_stream_complete(s);
    r->failed = prov_messages_stream_failed(s);
    r->has_usage = prov_messages_stream_tokens(s, &r->t);
}

static void check_relayed(const run_t *r, apr_pool_t *p)
{
    decoded_t d;
    int i;
    decode(&d, &r->out, p);
    FUZZ_CHECK(d.names->nelts == r->events);
    for (i = 0; i < d.names->nelts; i++) {
        const char *name = APR_ARRAY_IDX(d.names, i, const char *);
        json_object *ev = APR_ARRAY_IDX(d.data, i, json_object *);
        if (!strcmp(name, "message_start") && prov_json_get(ev, "message", json_type_object))
            FUZZ_CHECK(!strcmp(prov_json_get_str(prov_json_get(ev, "message", json_type_object),
                                                 "model"), "public-model"));
        if (!strcmp(name, "message_delta") && json_object_is_type(ev, json_type_object)) {
            json_object *c = prov_json_get(prov_json_get(ev, "usage", json_type_object),
                                           "credits", json_type_int);
            json_object *cd = prov_json_get(prov_json_get(ev, "usage", json_type_object),
                                            "credits", json_type_double);
            FUZZ_CHECK(c || cd);
            FUZZ_CHECK(c ? json_object_get_int64(c) >= 0 : json_object_get_double(cd) >= 0);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    run_t whole, pieces;
    relay(&whole, data, size, 0, p);
    relay(&pieces, data, size, piece_of(data, size), p);
    FUZZ_CHECK(whole.rv == pieces.rv);
    FUZZ_CHECK(whole.out.len == pieces.out.len);
    FUZZ_CHECK(!whole.out.len || !memcmp(whole.out.buf, pieces.out.buf, whole.out.len));
    FUZZ_CHECK(whole.events == pieces.events && whole.complete == pieces.complete
               && whole.failed == pieces.failed && whole.has_usage == pieces.has_usage);
    FUZZ_CHECK(!memcmp(&whole.t, &pieces.t, sizeof(whole.t)));
    check_relayed(&whole, p);
    apr_pool_destroy(p);
    return 0;
}
