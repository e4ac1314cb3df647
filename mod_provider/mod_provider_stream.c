/* mod_provider_stream.c: an answer streamed to the client while the gateway
 * streams to us, for every transport that streams (Messages relays the
 * gateway's events, Responses translates its chat chunks). The transport's
 * translator (provider_streamer_t) turns gateway bytes into client events;
 * this file owns the rest: the events written together and flushed when the
 * gateway has nothing more to read for now, before the reader waits for it
 * (mod_proxy's pace: a burst of events the gateway sent at once costs one
 * write, not one each), a complete answer's last events with its last chunk
 * in one write, the 200
 * and the stream's headers with the first one, a client that went away
 * noticed (c->aborted, or a write that failed) and the transfer stopped
 * with it, a keep-alive event while the gateway is silent, a refusal's body
 * kept for an error answer, a stream's maximum duration
 * (ProviderStreamMaxDuration, from the request's start, looked at with the
 * once-a-second tick: no clock read on the data path), the stream's
 * progress appended to the journal at its first write that delivered
 * output and then from that tick every 5 s (what a child killed under it
 * is charged), and what happens
 * when nothing reached the client yet: a plain error in the transport's
 * shape, the hold released.
 * A stream the client has is settled by the transport (how->end) by what was
 * delivered (docs/internals/broken-streams.md): the translator's output
 * counts once a write of it succeeded (how->written); a complete one is
 * ended for the client (provider_stream_finish) before its settlement is
 * written. */
#include <string.h>
#include "mod_provider.h"
#include "mod_provider_stream.h"
#include "mod_provider_http.h"
#include "mod_provider_infer.h"
#include "mod_provider_status.h"

APLOG_USE_MODULE(provider);

/* A gateway refusal that arrives on a stream request is kept up to this size. */
#define REFUSAL_MAX (64 * 1024)
/* Events waiting for the gateway's pause go out at once beyond this size. */
#define HOLD_MAX (16 * 1024)
/* A stream's progress goes to the journal at its first write that
 * delivered output, then from the tick at most this often. */
#define PROGRESS_EVERY apr_time_from_sec(5)

/* What the client would be charged were the stream cut now, for the
 * journal (docs/internals/broken-streams.md, "A killed child"); returns
 * whether a record was made (not while nothing was delivered). */
static int progress(provider_stream_t *x)
{
    prov_delivery_t d;
    x->how->delivery(x->translator, &d);
    d.complete = 0;
    d.client_left = 0;
    return provider_infer_progress(x->in, &d);
}

/* The 200 and the stream's headers, with the first events. */
static void start_answer(provider_stream_t *x)
{
    request_rec *r = x->r;
    r->status = HTTP_OK;
    ap_set_content_type(r, x->how->content_type);
    apr_table_setn(r->headers_out, "Cache-Control", "no-cache");
    apr_table_setn(r->headers_out, "X-Accel-Buffering", "no");
}

/* Passes the events waiting in x->out to the client with a flush: one
 * bucket over the buffer (transient: the flush writes it before
 * ap_pass_brigade returns, and a filter that keeps it sets it aside). */
static apr_status_t flush_events(provider_stream_t *x)
{
    request_rec *r = x->r;
    apr_bucket_alloc_t *ba = r->connection->bucket_alloc;
    int w;

    if (!x->out->len)
        return APR_SUCCESS;
    if (!x->started)
        start_answer(x);
    APR_BRIGADE_INSERT_TAIL(x->bb, apr_bucket_transient_create(x->out->data, x->out->len, ba));
    APR_BRIGADE_INSERT_TAIL(x->bb, apr_bucket_flush_create(ba));
    prov_sse_buf_reset(x->out);
    w = provider_pass(r, x->bb);
    if (w != PROVIDER_WRITE_OK) {
        if (w == PROVIDER_WRITE_GONE)
            x->client_gone = 1;
        else
            x->undelivered = w;
        return APR_ECONNABORTED;
    }
    x->started = 1;
    x->last_write = apr_time_now();
    if (x->how->written)
        x->how->written(x->translator);
    /* The first write that delivered output is journaled at once, unless
     * the answer is complete (its settlement, journaled next, says more);
     * then the tick every PROGRESS_EVERY. */
    if (!x->progressed && x->how->delivery && !x->how->complete(x->translator)
        && progress(x)) {
        x->progressed = 1;
        x->progress_at = x->last_write + PROGRESS_EVERY;
    }
    return APR_SUCCESS;
}

apr_status_t provider_stream_write(void *baton, const char *event, apr_size_t len)
{
    provider_stream_t *x = baton;

    if (x->client_gone || x->undelivered)
        return APR_ECONNABORTED;
    /* copied (the translator reuses its buffer) after the read's other events */
    if (prov_sse_put_bytes(x->out, event, len) != APR_SUCCESS)
        return APR_ENOMEM;
    return x->feeding ? APR_SUCCESS : flush_events(x);
}

int provider_stream_finish(provider_stream_t *x)
{
    conn_rec *c = x->r->connection;
    int w;
    if (x->client_gone || x->undelivered)
        return x->undelivered ? x->undelivered : PROVIDER_WRITE_GONE;
    if (!x->out->len && !x->started)
        return PROVIDER_WRITE_OK;
    if (!x->started)
        start_answer(x);
    /* The events waiting and the EOS (httpd then sends none of its own:
     * r->eos_sent), so that the chunk filter writes the last chunk after
     * them; then a flush at the connection, which would otherwise keep
     * those bytes until the request's end, after the settlement: one
     * write. */
    if (x->out->len)
        APR_BRIGADE_INSERT_TAIL(x->bb, apr_bucket_transient_create(x->out->data, x->out->len,
                                                                   c->bucket_alloc));
    APR_BRIGADE_INSERT_TAIL(x->bb, apr_bucket_eos_create(c->bucket_alloc));
    w = provider_pass(x->r, x->bb);
    prov_sse_buf_reset(x->out);
    if (w == PROVIDER_WRITE_OK) {
        x->started = 1;
        if (ap_fflush(c->output_filters, x->bb) != APR_SUCCESS)
            w = PROVIDER_WRITE_GONE;
        else if (x->how->written)
            x->how->written(x->translator);
    }
    apr_brigade_cleanup(x->bb);
    if (w == PROVIDER_WRITE_GONE)
        x->client_gone = 1;
    else if (w != PROVIDER_WRITE_OK)
        x->undelivered = w;
    return w;
}

int provider_stream_commit(provider_infer_t *in, provider_stream_t *x)
{
    int w = provider_stream_finish(x);
    if (w == PROVIDER_WRITE_REFUSED || w == PROVIDER_WRITE_FAILED)
        return provider_infer_undelivered(in, w);
    provider_infer_commit(in);
    return OK;
}

int provider_stream_gone(provider_stream_t *x)
{
    if (x->r->connection->aborted)
        x->client_gone = 1;
    return x->client_gone;
}

/* Gateway bytes: a refusal's kept whole for provider_gateway_refusal, a
 * stream's translated and written as they come. */
static apr_status_t on_data(void *baton, const char *data, apr_size_t len)
{
    provider_stream_t *x = baton;
    apr_status_t rv;

    if (x->status != HTTP_OK) {
        apr_size_t room = REFUSAL_MAX - x->refusal_len;
        if (!x->refusal)
            x->refusal = apr_palloc(x->r->pool, REFUSAL_MAX + 1);
        if (len > room)
            len = room;
        memcpy(x->refusal + x->refusal_len, data, len);
        x->refusal_len += len;
        x->refusal[x->refusal_len] = '\0';
        return APR_SUCCESS;
    }
    if (provider_stream_gone(x))
        return APR_ECONNABORTED;
    x->feeding = 1;
    rv = x->how->feed(x->translator, data, len);
    x->feeding = 0;
    if (rv != APR_SUCCESS && !x->client_gone && !x->undelivered)
        x->malformed = 1;
    /* What this read made waits for the gateway's pause (on_idle), unless
     * it is much or the transfer stops here. */
    if ((rv != APR_SUCCESS || x->out->len >= HOLD_MAX) && flush_events(x) != APR_SUCCESS
        && rv == APR_SUCCESS)
        rv = APR_ECONNABORTED;
    return rv;
}

/* The gateway has nothing more for now: what its bytes made goes out. */
static apr_status_t on_idle(void *baton)
{
    provider_stream_t *x = baton;
    return x->out->len ? flush_events(x) : APR_SUCCESS;
}

/* About once a second (while the gateway is silent, and between its
 * bytes): notices a client that has gone and a stream that reached its
 * maximum duration (the transfer then stops, and with it the upstream
 * work); journals the stream's progress every PROGRESS_EVERY after its
 * first record (flush_events); a keep-alive
 * event after the interval of silence. */
static apr_status_t on_tick(void *baton)
{
    provider_stream_t *x = baton;
    apr_time_t now;
    if (provider_stream_gone(x))
        return APR_ECONNABORTED;
    now = apr_time_now();
    if (x->progressed && now >= x->progress_at) {
        x->progress_at = now + PROGRESS_EVERY;
        progress(x);
    }
    if (now >= x->deadline) {
        x->too_long = 1;
        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, x->r, "PROV00104: the stream reached "
                      "ProviderStreamMaxDuration (%" APR_INT64_T_FMT " s): ended",
                      (apr_int64_t)apr_time_sec(x->deadline - x->r->request_time));
        return APR_ECONNABORTED;
    }
    if (x->how->ping && x->started && now - x->last_write >= x->ping) {
        const char *ping = x->how->ping();
        return provider_stream_write(x, ping, strlen(ping));
    }
    return APR_SUCCESS;
}

/* What x saw of its end, for prov_ending_classify. */
static void stream_facts(prov_ending_facts_t *f, const provider_stream_t *x, apr_status_t rv)
{
    memset(f, 0, sizeof(*f));
    f->started = x->started;
    f->client_left = x->client_gone;
    f->refused = !x->started && x->status != 0 && x->status != HTTP_OK;
    f->too_long = x->too_long;
    f->malformed = x->malformed;
    f->rv = rv;
}

prov_ending_e provider_stream_ending(const provider_stream_t *x, apr_status_t rv, int complete,
                                     int gateway_error)
{
    prov_ending_facts_t f;
    stream_facts(&f, x, rv);
    f.complete = complete;
    f.gateway_error = gateway_error;
    return prov_ending_classify(&f);
}

prov_error_t *provider_stream_cut_error(const provider_stream_t *x, apr_status_t rv,
                                        const char *what_cut, prov_micro_t charge)
{
    apr_pool_t *p = x->r->pool;
    const char *credits = prov_money_format(charge, p);
    if (x->too_long)
        return prov_error_make(p, PROV_E_STREAM_MAX_DURATION, NULL, "The stream reached the "
                               "longest time a stream may last here (%" APR_INT64_T_FMT " s); "
                               "%s credits were charged for what was delivered.",
                               (apr_int64_t)apr_time_sec(x->deadline - x->r->request_time),
                               credits);
    return prov_error_make(p, rv == APR_TIMEUP ? PROV_E_GATEWAY_TIMEOUT : PROV_E_GATEWAY_ERROR,
                           NULL, "%s; %s credits were charged for what was delivered.",
                           what_cut, credits);
}

/* Nothing has gone to the client: the gateway refused, failed, sent no
 * stream, or the client left first. A plain answer is still possible. */
static int not_started(provider_infer_t *in, provider_stream_t *x, apr_status_t rv)
{
    request_rec *r = in->r;
    const prov_gwerror_t *early = x->how->early_error ? x->how->early_error(x->translator)
                                                      : NULL;
    provider_family_e family = in->family;
    prov_ending_facts_t f;
    prov_ending_e end;

    stream_facts(&f, x, rv);
    f.refused = f.refused || early;  /* an error event before anything was sent */
    end = prov_ending_classify(&f);
    if (end == PROV_END_TIMEOUT || end == PROV_END_UNREACHABLE)
        return provider_infer_gateway_failed(in, rv);
    provider_infer_release(in, end);
    if (end == PROV_END_CLIENT_LEFT) {
        r->connection->keepalive = AP_CONN_CLOSE;
        return OK;
    }
    if (end == PROV_END_REFUSED && x->status != 0 && x->status != HTTP_OK) {
        prov_gateway_response_t resp;
        memset(&resp, 0, sizeof(resp));
        resp.status = x->status;
        resp.body = x->refusal ? x->refusal : "";
        resp.len = x->refusal_len;
        resp.retry_after = x->retry_after;
        return provider_gateway_refusal(r, family, &resp);
    }
    if (end == PROV_END_REFUSED) {
        prov_gwerror_t g = *early;
        g.early = 1;
        provider_log_gateway_error(r, early);
        return provider_send_error(r, family, prov_gwerror_client(&g, r->pool));
    }
    if (end == PROV_END_MAX_DURATION)
        return provider_send_error(r, family, provider_stream_cut_error(x, rv, NULL, 0));
    return provider_fail(r, family, PROV_E_GATEWAY_ERROR, NULL, "%s", x->how->malformed);
}

static int run(provider_infer_t *in, const provider_streamer_t *how, const char *path,
               const char *body, const apr_table_t *headers)
{
    request_rec *r = in->r;
    provider_stream_t x;
    prov_gateway_stream_cb_t cb;
    apr_status_t rv;

    memset(&x, 0, sizeof(x));
    x.r = r;
    x.in = in;
    x.how = how;
    x.bb = apr_brigade_create(r->pool, r->connection->bucket_alloc);
    x.out = prov_sse_buf_create(r->pool);
    x.ping = apr_time_from_sec(in->conf->ping_interval);
    x.deadline = r->request_time + apr_time_from_sec(in->conf->stream_max);
    x.translator = how->open(in, &x);
    cb.data = on_data;
    cb.tick = on_tick;
    cb.idle = on_idle;
    cb.baton = &x;
    cb.retry_after = &x.retry_after;
    rv = prov_gateway_stream_with(&x.status, in->conf->gateway, path, body, strlen(body),
                                  headers, &cb, r->pool);
    /* A complete answer's last events go with its end (provider_stream_finish);
     * any other's now, as at each pause of the gateway. */
    if (x.out->len && !how->complete(x.translator))
        flush_events(&x);
    if (x.undelivered)
        return provider_infer_undelivered(in, x.undelivered);
    if (x.started || x.out->len)
        return how->end(in, &x, rv);
    return not_started(in, &x, rv);
}

/* The stream counted open in this process while it runs (/server-status). */
int provider_stream_run(provider_infer_t *in, const provider_streamer_t *how, const char *path,
                        const char *body, const apr_table_t *headers)
{
    int st;
    provider_status_stream(1);
    st = run(in, how, path, body, headers);
    provider_status_stream(-1);
    return st;
}
