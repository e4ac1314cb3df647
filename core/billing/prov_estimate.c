/* prov_estimate.c: the charge of an answer whose cost the gateway did not
 * report (the rule of docs/internals/broken-streams.md) and the counting of
 * the output text that each transport's answers and stream events carry.
 * Counting is by bytes of the text the client receives (not of the JSON or
 * SSE framing around it), three bytes a token rounded up: more tokens than
 * a tokenizer finds in ordinary text, so an estimate errs towards the
 * gateway's work, and the hold caps it. */
#include <string.h>
#include "prov_estimate.h"

prov_bill_e prov_estimate_rule(const prov_delivery_t *d)
{
    if (d->usage == PROV_USAGE_FINAL)
        return PROV_BILL_REPORTED;
    if (d->complete || d->output_bytes > 0 || (d->client_left && d->started))
        return PROV_BILL_ESTIMATED;
    return PROV_BILL_RELEASE;
}

apr_int64_t prov_estimate_output_tokens(apr_uint64_t bytes)
{
    apr_uint64_t t = bytes / 3 + (bytes % 3 ? 1 : 0);
    return t > (apr_uint64_t)APR_INT64_MAX ? APR_INT64_MAX : (apr_int64_t)t;
}

apr_uint64_t prov_estimate_delivered(const prov_delivery_t *d)
{
    apr_uint64_t n = d->output_bytes;
    if (d->complete && n + d->queued_bytes >= n)
        n += d->queued_bytes;
    return n;
}

static apr_int64_t positive(apr_int64_t v)
{
    return v > 0 ? v : 0;
}

/* A report that says no input at all, for a request that sent some. */
static int no_input(const prov_delivery_t *d, apr_int64_t input_estimate)
{
    return d->usage != PROV_USAGE_NONE && d->reported.input == 0 && d->reported.cache == 0
           && input_estimate > 0;
}

void prov_estimate_tokens(prov_tokens_t *t, const prov_delivery_t *d,
                          apr_int64_t input_estimate)
{
    apr_int64_t out = prov_estimate_output_tokens(prov_estimate_delivered(d));
    if (d->usage != PROV_USAGE_NONE) {
        t->input = positive(d->reported.input);
        t->cache = positive(d->reported.cache);
        t->reasoning = positive(d->reported.reasoning);
        t->output = positive(d->reported.output) > out ? positive(d->reported.output) : out;
        if (!t->input && !t->cache)
            t->input = positive(input_estimate);
    }
    else {
        t->input = positive(input_estimate);
        t->cache = 0;
        t->reasoning = 0;
        t->output = out;
    }
}

prov_micro_t prov_estimate_bill(prov_bill_e *how, prov_tokens_t *t, unsigned *notes,
                                const prov_delivery_t *d, const prov_rates_t *eff,
                                apr_int64_t input_estimate, apr_int64_t max_output,
                                prov_micro_t hold)
{
    prov_tokens_t reported = d->reported;
    prov_micro_t charge;
    unsigned n = 0;
    int ab = 0;
    *how = prov_estimate_rule(d);
    if (*how != PROV_BILL_RELEASE && no_input(d, input_estimate))
        n |= PROV_BILL_INPUT_ESTIMATE;
    switch (*how) {
    case PROV_BILL_REPORTED:
        /* The gateway's word, within what the request can be billed: the
         * hold is its worst case (prov_worst.h), so a report that costs
         * more (input beyond a token a byte of the body, say) is one no
         * request could produce, charged the hold, as an absurd one is. */
        if (n & PROV_BILL_INPUT_ESTIMATE)
            reported.input = input_estimate;
        charge = prov_money_settle(&ab, t, eff, &reported, max_output, hold);
        if (charge > hold) {
            charge = hold;
            ab = 1;
        }
        if (ab)
            n |= PROV_BILL_ABSURD;
        break;
    case PROV_BILL_ESTIMATED:
        prov_estimate_tokens(t, d, input_estimate);
        charge = prov_money_charge(eff, t);
        if (charge > hold)
            charge = hold;
        break;
    default:
        memset(t, 0, sizeof(*t));
        charge = 0;
    }
    if (notes)
        *notes = n;
    return charge;
}

const prov_delivery_t *prov_estimate_answer(prov_delivery_t *d, apr_uint64_t output_bytes)
{
    memset(d, 0, sizeof(*d));
    d->output_bytes = output_bytes;
    d->started = d->complete = 1;
    return d;
}

static apr_uint64_t str_bytes(json_object *o, const char *key)
{
    json_object *v = prov_json_get(o, key, json_type_string);
    return v ? (apr_uint64_t)json_object_get_string_len(v) : 0;
}

/* A message's content: a string, or an array of parts with text. */
static apr_uint64_t content_bytes(json_object *content)
{
    apr_uint64_t n = 0;
    size_t i;
    if (content && json_object_is_type(content, json_type_string))
        return (apr_uint64_t)json_object_get_string_len(content);
    for (i = 0; content && json_object_is_type(content, json_type_array)
                && i < json_object_array_length(content); i++)
        n += str_bytes(json_object_array_get_idx(content, i), "text");
    return n;
}

apr_uint64_t prov_estimate_chat_answer(json_object *answer)
{
    json_object *choices = prov_json_get(answer, "choices", json_type_array);
    apr_uint64_t n = 0;
    size_t i, k;

    for (i = 0; choices && i < json_object_array_length(choices); i++) {
        json_object *msg = prov_json_get(json_object_array_get_idx(choices, i), "message",
                                         json_type_object);
        json_object *calls = prov_json_get(msg, "tool_calls", json_type_array);
        json_object *content = NULL;
        json_object_object_get_ex(msg, "content", &content);
        n += content_bytes(content) + str_bytes(msg, "refusal");
        for (k = 0; calls && k < json_object_array_length(calls); k++) {
            json_object *fn = prov_json_get(json_object_array_get_idx(calls, k), "function",
                                            json_type_object);
            n += str_bytes(fn, "name") + str_bytes(fn, "arguments");
        }
    }
    return n;
}

/* One content block of a Messages answer (or a content_block_start). */
static apr_uint64_t block_bytes(json_object *block)
{
    apr_uint64_t n = str_bytes(block, "text") + str_bytes(block, "thinking")
                   + str_bytes(block, "name");
    json_object *input = prov_json_get(block, "input", json_type_object);
    if (input && json_object_object_length(input) > 0) {
        size_t len = 0;
        json_object_to_json_string_length(input, JSON_C_TO_STRING_PLAIN, &len);
        n += len;
    }
    return n;
}

apr_uint64_t prov_estimate_messages_answer(json_object *answer)
{
    json_object *content = prov_json_get(answer, "content", json_type_array);
    apr_uint64_t n = 0;
    size_t i;
    for (i = 0; content && i < json_object_array_length(content); i++)
        n += block_bytes(json_object_array_get_idx(content, i));
    return n;
}

apr_uint64_t prov_estimate_messages_event(const char *name, json_object *ev)
{
    if (!strcmp(name, "content_block_delta")) {
        json_object *d = prov_json_get(ev, "delta", json_type_object);
        return str_bytes(d, "text") + str_bytes(d, "thinking") + str_bytes(d, "partial_json");
    }
    if (!strcmp(name, "content_block_start"))
        return block_bytes(prov_json_get(ev, "content_block", json_type_object));
    return 0;
}
