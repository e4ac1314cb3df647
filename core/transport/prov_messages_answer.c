/* prov_messages_answer.c: the Messages transport's answer half, without
 * httpd: the gateway's non-streamed answer read (its usage as token kinds)
 * rendered for the client (public model id, credits in usage; the reading
 * of its usage is prov_messages_usage.c's), and a streamed answer relayed event by event, reading the usage from
 * message_start and message_delta and counting the output text on the way,
 * so that the event that ends the answer (message_delta, or an error: a
 * gateway's error event is replaced by ours) tells the charge that
 * prov_estimate's rule gives. Events are read from their text
 * (prov_json_scan.h: the deltas passed on as they came, the model and the
 * credits spliced in) and only what that scan declines goes through json-c.
 * The request half is in prov_messages.c. */
#include <stdio.h>
#include <string.h>
#include "prov_messages_int.h"
#include "prov_estimate.h"
#include "prov_sse.h"

const char *prov_messages_render(json_object *answer, const char *public_id,
                                 prov_micro_t charge, apr_pool_t *p)
{
    return prov_relay_render_tree(answer, public_id, charge, p);
}

/* ---- streaming relay ------------------------------------------------------- */

struct prov_messages_stream_t {
    const char *public_id;
    const char *quoted_id;      /* "public_id" as JSON, or NULL: no splicing */
    const char *model_member;   /* ,"model":"public_id" */
    prov_rates_t rates;
    apr_int64_t input_estimate;
    apr_int64_t max_output;
    prov_micro_t hold;
    prov_messages_emit_cb *emit;
    void *baton;
    prov_sse_parser_t *parser;
    prov_sse_buf_t *out;        /* where events are encoded: the caller's
                                 * (prov_messages_stream_set_out) or own */
    prov_sse_buf_t *own;        /* emptied into emit after each event */
    prov_sse_buf_t *tmp;        /* a spliced event's JSON, reused */
    apr_pool_t *p;
    apr_pool_t *scratch;        /* json-c's path: cleared after a feed that used it */
    int dirty;                  /* scratch was used */
    int events, complete, failed, final_usage, has_usage;
    int early;                  /* the error came before any event: not relayed */
    int bad_usage;              /* usage reports that could not be read */
    int told;                   /* the charge was told to the client: from then on
                                 * only message_stop, ping and error are relayed */
    int fast;                   /* events read without json-c where they can be */
    apr_uint64_t output_bytes;  /* output text put into the output */
    apr_uint64_t sent_bytes;    /* of which written (prov_messages_stream_written) */
    int dropped;                /* events dropped after the figure was told */
    prov_gwerror_t gw_error;    /* the gateway's error event, when failed */
    apr_int64_t count[PROV_MC_KINDS];
};

/* The member key of o, whatever its type (NULL when absent or null). */
static json_object *member(json_object *o, const char *key)
{
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* A report's counts taken when it is readable: a stream's counts are
 * running totals, so a count only ever grows. Returns whether it was. */
static int take_counts(prov_messages_stream_t *s, const prov_mcounts_t *c, int need)
{
    int i;
    if (!prov_mcounts_readable(c, need)) {
        s->bad_usage++;
        return 0;
    }
    s->has_usage = 1;
    for (i = 0; i < PROV_MC_KINDS; i++) {
        if (c->set[i] && c->v[i] > s->count[i])
            s->count[i] = c->v[i];
    }
    return 1;
}

/* With json-c: the usage member of o as it came (none when absent or null). */
static int take_usage(prov_messages_stream_t *s, json_object *o, int need)
{
    json_object *usage = member(o, "usage");
    prov_mcounts_t c;
    if (!usage)
        return 0;
    prov_mcounts_tree(&c, usage);
    return take_counts(s, &c, need);
}

int prov_messages_stream_tokens(const prov_messages_stream_t *s, prov_tokens_t *t)
{
    prov_mcounts_tokens(t, s->count);
    return s->has_usage;
}

void prov_messages_stream_delivery(const prov_messages_stream_t *s, prov_delivery_t *d)
{
    memset(d, 0, sizeof(*d));
    prov_messages_stream_tokens(s, &d->reported);
    d->usage = s->final_usage ? PROV_USAGE_FINAL
             : s->has_usage ? PROV_USAGE_PARTIAL : PROV_USAGE_NONE;
    d->unreadable = s->bad_usage;
    /* without the caller's buffer, every event went through emit */
    d->output_bytes = s->out ? s->sent_bytes : s->output_bytes;
    d->queued_bytes = s->output_bytes - d->output_bytes;
    d->started = s->events > 0;
    d->complete = s->complete;
}

void prov_messages_stream_written(prov_messages_stream_t *s)
{
    s->sent_bytes = s->output_bytes;
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

/* The charge told in an event that goes out after every event put before
 * it: their output counts (if that write fails, the client never learns
 * the figure, and the settlement counts what was written). */
static prov_micro_t told_bill(prov_messages_stream_t *s, int complete)
{
    prov_delivery_t d;
    prov_bill_e how;
    prov_tokens_t t;
    prov_messages_stream_delivery(s, &d);
    d.output_bytes += d.queued_bytes;
    d.queued_bytes = 0;
    d.complete = complete;
    s->told = 1;
    return prov_estimate_bill(&how, &t, NULL, &d, &s->rates, s->input_estimate,
                              s->max_output, s->hold);
}

/* An error event's data: e in the Anthropic shape (error.type = type when
 * given), with usage.credits = charge. */
static const char *error_json(const prov_error_t *e, const char *type, prov_micro_t charge,
                              apr_pool_t *p)
{
    const char *perr = NULL, *json = prov_error_anthropic_json(e, p);
    json_object *ev = prov_json_parse(json, strlen(json), &perr, p), *usage;
    if (!ev)
        return json;
    if (type)
        json_object_object_add(prov_json_get(ev, "error", json_type_object), "type",
                               json_object_new_string(type));
    usage = json_object_new_object();
    json_object_object_add(usage, "credits", prov_json_credits(charge));
    json_object_object_add(ev, "usage", usage);
    return prov_json_dump(ev, p);
}

/* The charge the client is told in the event that ends the answer (after
 * its usage was taken): from then on, no more output is relayed. */
static prov_micro_t tell_charge(prov_messages_stream_t *s)
{
    return told_bill(s, 1);
}

static void tell(prov_messages_stream_t *s, json_object *ev)
{
    json_object *usage = prov_json_get(ev, "usage", json_type_object);
    prov_micro_t charge = tell_charge(s);
    if (!usage) {
        usage = json_object_new_object();
        json_object_object_add(ev, "usage", usage);
    }
    json_object_object_add(usage, "credits", prov_json_credits(charge));
}

/* An event read with json-c, the path for whatever fast_event declines:
 * the data to send in *text (*tlen bytes; data itself when it passes as it
 * came) and the output bytes it carries. */
static void slow_event(prov_messages_stream_t *s, const char *name, const char *data,
                       apr_size_t len, const char **text, apr_size_t *tlen,
                       apr_uint64_t *bytes)
{
    const char *perr = NULL;
    json_object *ev = NULL;
    int rewrite = 1;

    if (!s->scratch)
        apr_pool_create(&s->scratch, s->p);
    s->dirty = 1;
    *text = data;
    *tlen = len;
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
            take_usage(s, msg, PROV_MC_NEED_INPUT);
            json_object_object_add(msg, "model", json_object_new_string(s->public_id));
        }
    }
    else if (ev && !strcmp(name, "message_delta")) {
        if (take_usage(s, ev, PROV_MC_NEED_OUTPUT))
            s->final_usage = 1;
        /* Headers are long gone: the charge travels in the last usage. */
        tell(s, ev);
    }
    else if (!strcmp(name, "error")) {
        /* The gateway's words may hold its address or a token: the client
         * gets ours, with an allow-listed type, and what it is charged. */
        prov_micro_t charge = told_bill(s, 0);
        prov_gwerror_read(&s->gw_error, 0, data, len, s->p);
        *text = error_json(prov_gwerror_client(&s->gw_error, s->scratch), s->gw_error.type,
                           charge, s->scratch);
        *tlen = strlen(*text);
        s->failed = 1;
        return;
    }
    else {
        rewrite = 0;
        if (ev && !s->told)
            *bytes = prov_estimate_messages_event(name, ev);
    }
    if (ev && rewrite) {
        *text = prov_json_dump(ev, s->scratch);
        *tlen = strlen(*text);
    }
}

/* ---- events read without json-c ----
 * What slow_event does, for the events prov_json_scan.h plainly recognises
 * (it declines anything json-c could read otherwise): the counts read from
 * the text, the model and the credits spliced into the gateway's bytes where
 * json-c's tree would put them (for a gateway that writes as json-c prints,
 * the same bytes; otherwise the same JSON), content deltas passed on as they
 * came. tests/fuzz/fuzz_messages_relay.c compares the two paths. */

/* The event's object (without the white space around it) with the bytes
 * [at, at + cut) replaced by the k bytes of ins, in the stream's reused
 * buffer; *n its length. NULL when memory ran out. */
static const char *splice(apr_size_t *n, prov_messages_stream_t *s, const prov_jobject_t *top,
                          const char *data, const char *at, apr_size_t cut, const char *ins,
                          apr_size_t k)
{
    const char *b = data, *e = top->close + 1;
    while (*b != '{')
        b++;
    if (!s->tmp)
        s->tmp = prov_sse_buf_create(s->p);
    prov_sse_buf_reset(s->tmp);
    if (prov_sse_put_bytes(s->tmp, b, (apr_size_t)(at - b)) != APR_SUCCESS
        || prov_sse_put_bytes(s->tmp, ins, k) != APR_SUCCESS
        || prov_sse_put_bytes(s->tmp, at + cut, (apr_size_t)(e - (at + cut))) != APR_SUCCESS)
        return NULL;
    *n = s->tmp->len;
    return s->tmp->data;
}

/* message_start: the message's usage taken, its model replaced (or added
 * last, where json-c adds a member). */
static int start_event(prov_messages_stream_t *s, const prov_jobject_t *top, const char *data,
                       const char **text, apr_size_t *tlen)
{
    prov_jobject_t msg, usage;
    const prov_jmember_t *model;
    prov_mcounts_t c;
    int rv;
    if (!s->quoted_id || prov_json_scan_sub(&msg, top, "message") != APR_SUCCESS
        || !(rv = prov_mcounts_scan(&c, &msg, &usage)))
        return 0;
    if (rv > 0)
        take_counts(s, &c, PROV_MC_NEED_INPUT);
    if ((model = prov_json_scan_member(&msg, "model")))
        *text = splice(tlen, s, top, data, model->val, model->vlen, s->quoted_id,
                       strlen(s->quoted_id));
    else        /* ,"model":"ID" (without its comma in an empty message) */
        *text = splice(tlen, s, top, data, msg.close, 0, s->model_member + !msg.n,
                       strlen(s->model_member + !msg.n));
    return 1;
}

/* message_delta: its usage taken (final), the charge told in usage.credits:
 * added last to usage, or usage made {"credits":X} (replacing a value that
 * is not an object, or added last to the event). */
static int delta_event(prov_messages_stream_t *s, const prov_jobject_t *top, const char *data,
                       const char **text, apr_size_t *tlen)
{
    prov_jobject_t usage;
    const prov_jmember_t *m = prov_json_scan_member(top, "usage");
    char money[PROV_MONEY_BUFSIZE], ins[PROV_MONEY_BUFSIZE + 32];
    prov_mcounts_t c;
    int rv = prov_mcounts_scan(&c, top, &usage);
    if (!rv || (m && *m->val == '{' && prov_json_scan_member(&usage, "credits")))
        return 0;
    if (rv > 0 && take_counts(s, &c, PROV_MC_NEED_OUTPUT))
        s->final_usage = 1;
    prov_money_format_buf(money, tell_charge(s));
    if (m && *m->val == '{')
        *text = splice(tlen, s, top, data, usage.close, 0, ins,
                       (apr_size_t)sprintf(ins, "%s\"credits\":%s", usage.n ? "," : "", money));
    else if (m)
        *text = splice(tlen, s, top, data, m->val, m->vlen, ins,
                       (apr_size_t)sprintf(ins, "{\"credits\":%s}", money));
    else
        *text = splice(tlen, s, top, data, top->close, 0, ins,
                       (apr_size_t)sprintf(ins, "%s\"usage\":{\"credits\":%s}",
                                           top->n ? "," : "", money));
    return 1;
}

/* The output bytes of a content_block_delta's delta (text, thinking,
 * partial_json) or a content_block_start's block (text, thinking, a tool's
 * name), as prov_estimate_messages_event counts them; 0 when declined (a
 * tool's input other than {}: json-c's print of it counts). */
static int block_bytes(apr_uint64_t *bytes, const prov_jobject_t *top, int delta)
{
    static const char *const keys[2][3] = { { "text", "thinking", "name" },
                                            { "text", "thinking", "partial_json" } };
    prov_jobject_t b, input;
    apr_uint64_t n = 0;
    apr_status_t rv = prov_json_scan_sub(&b, top, delta ? "delta" : "content_block");
    int i;
    if (rv == APR_EGENERAL)
        return 0;
    for (i = 0; rv == APR_SUCCESS && i < 3; i++) {
        const prov_jmember_t *m = prov_json_scan_member(&b, keys[delta][i]);
        if (m && *m->val == '"')
            n += prov_json_scan_strlen(m->val, m->vlen);
    }
    if (rv == APR_SUCCESS && !delta) {
        apr_status_t in = prov_json_scan_sub(&input, &b, "input");
        if (in == APR_EGENERAL || (in == APR_SUCCESS && input.n > 0))
            return 0;
    }
    *bytes = n;
    return 1;
}

/* The events the relay tells apart by name. */
enum { K_OTHER, K_START, K_MDELTA, K_STOP, K_BSTART, K_BDELTA, K_ERROR };

static int kind_of(const char *name)
{
    switch (name[0]) {      /* a content_block_delta, the usual event: one strcmp */
    case 'm':
        return !strcmp(name, "message_start") ? K_START : !strcmp(name, "message_delta")
             ? K_MDELTA : !strcmp(name, "message_stop") ? K_STOP : K_OTHER;
    case 'c':
        return !strcmp(name, "content_block_delta") ? K_BDELTA
             : !strcmp(name, "content_block_start") ? K_BSTART : K_OTHER;
    case 'e':
        return !strcmp(name, "error") ? K_ERROR : K_OTHER;
    default:
        return K_OTHER;
    }
}

/* An event read as slow_event would read it, when the scan plainly
 * recognises it: 1 with *text, *tlen and *bytes (*text is ev->data when it
 * passes as it came); 0 (nothing changed) to leave it to slow_event. Events
 * whose JSON slow_event only reads for nothing pass untouched. */
static int fast_event(prov_messages_stream_t *s, int kind, const prov_sse_ev_t *ev,
                      const char **text, apr_size_t *tlen, apr_uint64_t *bytes)
{
    prov_jobject_t top;

    *text = ev->data;
    *tlen = ev->len;
    if (kind == K_ERROR)
        return 0;
    if (kind == K_START || kind == K_MDELTA) {
        if (prov_json_scan_object(&top, ev->data, ev->len) != APR_SUCCESS
            || !(kind == K_START ? start_event : delta_event)(s, &top, ev->data, text, tlen))
            return 0;
    }
    else if (!s->told && (kind == K_BDELTA || kind == K_BSTART)) {
        if (prov_json_scan_object(&top, ev->data, ev->len) != APR_SUCCESS
            || !block_bytes(bytes, &top, kind == K_BDELTA))
            return 0;
    }
    return 1;
}

/* The event into the output: its own bytes when it passes as it came and
 * they are the encoder's form, else encoded; then, without a caller's
 * buffer, handed to emit. */
static apr_status_t put(prov_messages_stream_t *s, const prov_sse_ev_t *ev, const char *text,
                        apr_size_t tlen)
{
    prov_sse_buf_t *b = s->out;
    apr_status_t rv;

    if (!text)
        return APR_ENOMEM;
    if (!b && !(b = s->own))
        b = s->own = prov_sse_buf_create(s->p);
    rv = text == ev->data && ev->raw ? prov_sse_put_bytes(b, ev->raw, ev->raw_len)
                                     : prov_sse_put_event(b, ev->name, text, tlen);
    if (rv != APR_SUCCESS || b == s->out)
        return rv;
    rv = s->emit(s->baton, b->data, b->len);
    prov_sse_buf_reset(b);
    return rv;
}

static apr_status_t on_event(void *baton, const prov_sse_ev_t *ev)
{
    prov_messages_stream_t *s = baton;
    const char *text = NULL;
    apr_uint64_t bytes = 0;
    apr_size_t tlen = 0;
    apr_status_t rv;
    int kind;

    /* Nothing after the end of the answer or an error, and after the
     * figure was told in message_delta only its end: the client has the
     * figure it is charged, and no output it is not charged for. */
    if (s->complete || s->failed)
        return APR_SUCCESS;
    kind = kind_of(ev->name);
    if (s->told && kind != K_STOP && kind != K_ERROR && strcmp(ev->name, "ping")) {
        s->dropped++;
        return APR_SUCCESS;
    }
    if (!s->fast || !fast_event(s, kind, ev, &text, &tlen, &bytes))
        slow_event(s, ev->name, ev->data, ev->len, &text, &tlen, &bytes);
    /* An error before any event is a refusal: nothing is relayed, so that
     * the client can be answered with its HTTP status (a 529 the SDKs and
     * Claude Code retry; prov_messages_stream_early_error). */
    if (kind == K_ERROR && !s->events) {
        s->early = 1;
        return APR_SUCCESS;
    }
    if (kind == K_STOP)
        s->complete = 1;
    s->events++;
    rv = put(s, ev, text, tlen);
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
    if (prov_json_scan_plain(public_id)) {
        s->quoted_id = apr_pstrcat(p, "\"", public_id, "\"", NULL);
        s->model_member = apr_pstrcat(p, ",\"model\":", s->quoted_id, NULL);
    }
    s->fast = 1;
    s->rates = *effective;
    s->input_estimate = input_estimate;
    s->max_output = max_output;
    s->hold = hold;
    s->emit = emit;
    s->baton = baton;
    s->p = p;
    s->parser = prov_sse_parser_create_ev(on_event, s, 4 * 1024 * 1024, p);
    return s;
}

apr_status_t prov_messages_stream_feed(prov_messages_stream_t *s, const char *buf,
                                       apr_size_t len)
{
    apr_status_t rv = prov_sse_feed(s->parser, buf, len);
    if (s->dirty) {
        apr_pool_clear(s->scratch);
        s->dirty = 0;
    }
    return rv;
}

void prov_messages_stream_set_out(prov_messages_stream_t *s, prov_sse_buf_t *out)
{
    s->out = out;
}

void prov_messages_stream_set_fast(prov_messages_stream_t *s, int on)
{
    s->fast = on;
}

int prov_messages_stream_events(const prov_messages_stream_t *s)
{
    return s->events;
}

int prov_messages_stream_dropped(const prov_messages_stream_t *s)
{
    return s->dropped;
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

const prov_gwerror_t *prov_messages_stream_early_error(const prov_messages_stream_t *s)
{
    return s->early ? &s->gw_error : NULL;
}

const char *prov_messages_ping_event(void)
{
    return "event: ping\ndata: {\"type\":\"ping\"}\n\n";
}

const char *prov_messages_error_event(const prov_error_t *e, prov_micro_t charge,
                                      apr_pool_t *p)
{
    return prov_sse_encode("error", error_json(e, NULL, charge, p), p);
}
