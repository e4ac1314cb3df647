/* prov_messages_answer.c: the Messages transport's answer half, without
 * httpd: the gateway's non-streamed answer read (its usage as token kinds)
 * and rendered for the client (public model id, credits in usage), and a
 * streamed answer relayed event by event, reading the usage from
 * message_start and message_delta and counting the output text on the way,
 * so that the event that ends the answer (message_delta, or an error: a
 * gateway's error event is replaced by ours) tells the charge that
 * prov_estimate's rule gives. The request half is in prov_messages.c. */
#include <string.h>
#include "prov_messages.h"
#include "prov_estimate.h"
#include "prov_sse.h"

/* A reported count; -1 when the gateway reported a negative one (for the
 * settlement to judge). */
static apr_int64_t count_of(apr_int64_t n)
{
    return n < 0 ? -1 : n;
}

/* Input and cache-creation tokens are both charged as input. */
static apr_int64_t input_of(apr_int64_t input, apr_int64_t creation)
{
    if (input < 0 || creation < 0)
        return -1;
    return prov_i64_add_sat(input, creation);
}

static apr_int64_t count_at(json_object *usage, const char *name)
{
    json_object *v = prov_json_get(usage, name, json_type_int);
    return v ? count_of(json_object_get_int64(v)) : 0;
}

apr_status_t prov_messages_tokens(prov_tokens_t *t, json_object *usage)
{
    if (!usage || !json_object_is_type(usage, json_type_object))
        return APR_EINVAL;
    t->cache = count_at(usage, "cache_read_input_tokens");
    t->input = input_of(count_at(usage, "input_tokens"),
                        count_at(usage, "cache_creation_input_tokens"));
    t->output = count_at(usage, "output_tokens");
    t->reasoning = 0;
    return APR_SUCCESS;
}

apr_status_t prov_messages_read_answer(json_object **answer, prov_tokens_t *t,
                                       const char *body, apr_size_t len, apr_pool_t *p)
{
    const char *perr = NULL;
    json_object *root = prov_json_parse(body, len, &perr, p);
    const char *type = root ? prov_json_get_str(root, "type") : NULL;
    if (!type || strcmp(type, "message") || !prov_json_get(root, "content", json_type_array))
        return APR_EINVAL;
    *answer = root;
    return prov_messages_tokens(t, prov_json_get(root, "usage", json_type_object))
           == APR_SUCCESS ? APR_SUCCESS : APR_ENOENT;
}

apr_status_t prov_messages_relay_read(prov_json_relay_t *rl, prov_tokens_t *t,
                                      const char *body, apr_size_t len)
{
    const prov_jmember_t *type, *content;
    apr_int64_t cache, input, creation, output;
    if (prov_json_scan_object(&rl->top, body, len) != APR_SUCCESS
        || !(type = prov_json_scan_member(&rl->top, "type"))
        || type->vlen != 9 || memcmp(type->val, "\"message\"", 9)
        || !(content = prov_json_scan_member(&rl->top, "content")) || *content->val != '['
        || !prov_json_scan_member(&rl->top, "model")
        || prov_json_scan_sub(&rl->usage, &rl->top, "usage") != APR_SUCCESS
        || prov_json_scan_member(&rl->usage, "credits")
        || prov_json_scan_int(&cache, &rl->usage, "cache_read_input_tokens") != APR_SUCCESS
        || prov_json_scan_int(&input, &rl->usage, "input_tokens") != APR_SUCCESS
        || prov_json_scan_int(&creation, &rl->usage, "cache_creation_input_tokens")
               != APR_SUCCESS
        || prov_json_scan_int(&output, &rl->usage, "output_tokens") != APR_SUCCESS)
        return APR_EGENERAL;
    rl->body = body;
    rl->len = len;
    t->cache = count_of(cache);
    t->input = input_of(count_of(input), count_of(creation));
    t->output = count_of(output);
    t->reasoning = 0;
    return APR_SUCCESS;
}

const char *prov_messages_render(json_object *answer, const char *public_id,
                                 prov_micro_t charge, apr_pool_t *p)
{
    return prov_json_answer_render(answer, public_id, charge, p);
}

/* ---- streaming relay ------------------------------------------------------- */

struct prov_messages_stream_t {
    const char *public_id;
    prov_rates_t rates;
    apr_int64_t input_estimate;
    apr_int64_t max_output;
    prov_micro_t hold;
    prov_messages_emit_cb *emit;
    void *baton;
    prov_sse_parser_t *parser;
    apr_pool_t *p;
    apr_pool_t *scratch;        /* cleared after each feed */
    int events, complete, failed, final_usage, has_usage;
    int told;                   /* the charge was told to the client: counting stops */
    apr_uint64_t output_bytes;  /* output text relayed */
    prov_gwerror_t gw_error;    /* the gateway's error event, when failed */
    apr_int64_t input, creation, cache_read, output;
};

/* Later events override the counts that they repeat. */
static void take_usage(prov_messages_stream_t *s, json_object *usage)
{
    json_object *v;
    if (!usage || !json_object_is_type(usage, json_type_object))
        return;
    s->has_usage = 1;
    if ((v = prov_json_get(usage, "input_tokens", json_type_int)))
        s->input = json_object_get_int64(v);
    if ((v = prov_json_get(usage, "cache_creation_input_tokens", json_type_int)))
        s->creation = json_object_get_int64(v);
    if ((v = prov_json_get(usage, "cache_read_input_tokens", json_type_int)))
        s->cache_read = json_object_get_int64(v);
    if ((v = prov_json_get(usage, "output_tokens", json_type_int)))
        s->output = json_object_get_int64(v);
}

int prov_messages_stream_tokens(const prov_messages_stream_t *s, prov_tokens_t *t)
{
    t->input = input_of(s->input, s->creation);
    t->cache = count_of(s->cache_read);
    t->output = count_of(s->output);
    t->reasoning = 0;
    return s->has_usage;
}

void prov_messages_stream_delivery(const prov_messages_stream_t *s, prov_delivery_t *d)
{
    memset(d, 0, sizeof(*d));
    prov_messages_stream_tokens(s, &d->reported);
    d->usage = s->final_usage ? PROV_USAGE_FINAL
             : s->has_usage ? PROV_USAGE_PARTIAL : PROV_USAGE_NONE;
    d->output_bytes = s->output_bytes;
    d->started = s->events > 0;
    d->complete = s->complete;
}

prov_micro_t prov_messages_stream_bill(const prov_messages_stream_t *s, int complete,
                                       int client_left, prov_bill_e *how, prov_tokens_t *t)
{
    prov_delivery_t d;
    prov_messages_stream_delivery(s, &d);
    d.complete = complete;
    d.client_left = client_left;
    return prov_estimate_bill(how, t, NULL, &d, &s->rates, s->input_estimate,
                              s->max_output, s->hold);
}

/* An error event: e in the Anthropic shape (error.type = type when given),
 * with usage.credits = charge. */
static const char *error_event(const prov_error_t *e, const char *type, prov_micro_t charge,
                               apr_pool_t *p)
{
    const char *perr = NULL, *json = prov_error_anthropic_json(e, p);
    json_object *ev = prov_json_parse(json, strlen(json), &perr, p), *usage;
    if (!ev)
        return prov_sse_encode("error", json, p);
    if (type)
        json_object_object_add(prov_json_get(ev, "error", json_type_object), "type",
                               json_object_new_string(type));
    usage = json_object_new_object();
    json_object_object_add(usage, "credits", prov_json_credits(charge));
    json_object_object_add(ev, "usage", usage);
    return prov_sse_encode("error", prov_json_dump(ev, p), p);
}

/* The charge the client is told in the event that ends the answer. */
static void tell(prov_messages_stream_t *s, json_object *ev, int complete)
{
    json_object *usage = prov_json_get(ev, "usage", json_type_object);
    prov_bill_e how;
    prov_tokens_t t;
    prov_micro_t charge = prov_messages_stream_bill(s, complete, 0, &how, &t);
    if (!usage) {
        usage = json_object_new_object();
        json_object_object_add(ev, "usage", usage);
    }
    json_object_object_add(usage, "credits", prov_json_credits(charge));
    s->told = 1;
}

static apr_status_t on_event(void *baton, const char *name, const char *data, apr_size_t len)
{
    prov_messages_stream_t *s = baton;
    const char *out = NULL, *perr = NULL;
    json_object *ev = NULL;
    apr_uint64_t bytes = 0;
    apr_size_t olen = 0;
    int rewrite = 1;
    apr_status_t rv;

    /* Nothing after the end of the answer or an error: the client has the
     * figure it is charged. */
    if (s->complete || s->failed)
        return APR_SUCCESS;
    if (strcmp(name, "ping") && strcmp(name, "content_block_stop")
        && strcmp(name, "message_stop") && strcmp(name, "error"))
        ev = prov_json_parse(data, len, &perr, s->scratch);
    /* only an object can take the model and the credits (json-c aborts the
     * process when a member is added to anything else) */
    if (ev && !json_object_is_type(ev, json_type_object))
        ev = NULL;
    if (ev && !strcmp(name, "message_start")) {
        json_object *msg = prov_json_get(ev, "message", json_type_object);
        if (msg) {
            take_usage(s, prov_json_get(msg, "usage", json_type_object));
            json_object_object_add(msg, "model", json_object_new_string(s->public_id));
        }
    }
    else if (ev && !strcmp(name, "message_delta")) {
        json_object *usage = prov_json_get(ev, "usage", json_type_object);
        take_usage(s, usage);
        if (usage)
            s->final_usage = 1;
        /* Headers are long gone: the charge travels in the last usage. */
        tell(s, ev, 1);
    }
    else if (!strcmp(name, "error")) {
        /* The gateway's words may hold its address or a token: the client
         * gets ours, with an allow-listed type, and what it is charged. */
        prov_bill_e how;
        prov_tokens_t t;
        prov_micro_t charge = prov_messages_stream_bill(s, 0, 0, &how, &t);
        prov_gwerror_read(&s->gw_error, 0, data, len, s->p);
        out = error_event(prov_gwerror_client(&s->gw_error, s->scratch), s->gw_error.type,
                          charge, s->scratch);
        s->failed = 1;
        s->told = 1;
    }
    else {
        rewrite = 0;
        if (ev && !s->told)
            bytes = prov_estimate_messages_event(name, ev);
    }
    if (!out && ev && rewrite)
        out = prov_sse_encode(name, prov_json_dump(ev, s->scratch), s->scratch);
    else if (!out)      /* passed on byte for byte: data may hold NUL bytes */
        out = prov_sse_encode_len(name, data, len, &olen, s->scratch);
    if (!strcmp(name, "message_stop"))
        s->complete = 1;
    s->events++;
    rv = s->emit(s->baton, out, olen ? olen : strlen(out));
    if (rv == APR_SUCCESS)
        s->output_bytes += bytes;
    return rv;
}

prov_messages_stream_t *prov_messages_stream_create(const char *public_id,
                                                    const prov_rates_t *effective,
                                                    apr_int64_t input_estimate,
                                                    apr_int64_t max_output,
                                                    prov_micro_t hold,
                                                    prov_messages_emit_cb *emit, void *baton,
                                                    apr_pool_t *p)
{
    prov_messages_stream_t *s = apr_pcalloc(p, sizeof(*s));
    s->public_id = apr_pstrdup(p, public_id);
    s->rates = *effective;
    s->input_estimate = input_estimate;
    s->max_output = max_output;
    s->hold = hold;
    s->emit = emit;
    s->baton = baton;
    s->p = p;
    apr_pool_create(&s->scratch, p);
    s->parser = prov_sse_parser_create(on_event, s, 4 * 1024 * 1024, p);
    return s;
}

apr_status_t prov_messages_stream_feed(prov_messages_stream_t *s, const char *buf,
                                       apr_size_t len)
{
    apr_status_t rv = prov_sse_feed(s->parser, buf, len);
    apr_pool_clear(s->scratch);
    return rv;
}

int prov_messages_stream_events(const prov_messages_stream_t *s)
{
    return s->events;
}

int prov_messages_stream_complete(const prov_messages_stream_t *s)
{
    return s->complete;
}

int prov_messages_stream_failed(const prov_messages_stream_t *s)
{
    return s->failed;
}

const prov_gwerror_t *prov_messages_stream_error(const prov_messages_stream_t *s)
{
    return s->failed ? &s->gw_error : NULL;
}

const char *prov_messages_ping_event(void)
{
    return "event: ping\ndata: {\"type\":\"ping\"}\n\n";
}

const char *prov_messages_error_event(const prov_error_t *e, prov_micro_t charge,
                                      apr_pool_t *p)
{
    return error_event(e, NULL, charge, p);
}
