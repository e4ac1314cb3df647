/* mod_provider_stream.h: the API of mod_provider_stream.c, one event stream
 * to the client while the gateway streams to us, and the table by which a
 * transport translates it (provider_streamer_t). */
#ifndef MOD_PROVIDER_STREAM_H
#define MOD_PROVIDER_STREAM_H

#include "mod_provider_infer.h"
#include "prov_sse.h"

/* An answer streamed to the client while the gateway streams to us. */
typedef struct provider_stream_t {
    request_rec *r;
    const struct provider_streamer_t *how;
    void *translator;             /* the transport's (how->open) */
    apr_bucket_brigade *bb;
    int status;                   /* the gateway's HTTP status, once known */
    int started;                  /* the client has the 200 and its headers */
    int client_gone;
    int undelivered;              /* PROVIDER_WRITE_REFUSED or _FAILED: our answer failed */
    int malformed;                /* the translator refused the gateway's bytes */
    int feeding;                  /* inside on_data: events wait for the gateway's
                                   * pause (or the answer's end) */
    prov_sse_buf_t *out;          /* events not yet passed on; a translator may
                                   * encode into it (prov_sse_put_*) instead of
                                   * calling provider_stream_write */
    apr_time_t last_write;
    apr_interval_time_t ping;     /* ProviderStreamPingInterval */
    apr_time_t deadline;          /* the request's start + ProviderStreamMaxDuration */
    int too_long;                 /* ended at the deadline (by us, like a gateway cut) */
    provider_infer_t *in;         /* the request (its progress, journaled by the tick) */
    apr_time_t progress_at;       /* the tick's next progress record */
    int progressed;               /* the first was made (at the first write
                                   * that delivered output); the tick's follow */
    char *refusal;                /* a non-200 answer's body, kept up to 64 KiB */
    apr_size_t refusal_len;
    const char *retry_after;      /* the refusal's Retry-After header, or NULL */
} provider_stream_t;

/* How a transport streams: the translator between the gateway's stream and
 * the client's. */
typedef struct provider_streamer_t {
    const char *content_type;
    /* Makes the answer's translator; it emits each event for the client
     * through provider_stream_write with x as baton. */
    void *(*open)(provider_infer_t *in, provider_stream_t *x);
    /* Feeds the translator gateway bytes (pieces of any size); a failure
     * stops the transfer. */
    apr_status_t (*feed)(void *translator, const char *data, apr_size_t len);
    /* The keep-alive event while the gateway is silent; NULL: none. */
    const char *(*ping)(void);
    /* A gateway error that ended the stream before the client had anything
     * (answered as a plain error); NULL when the translator relays errors. */
    const prov_gwerror_t *(*early_error)(void *translator);
    /* Whether the answer is complete (its last event seen): its last
     * events then wait for provider_stream_finish. */
    int (*complete)(void *translator);
    /* Everything the translator put into x->out so far reached the client
     * (a write of it succeeded): its output counts as delivered. NULL: the
     * translator does not count output. */
    void (*written)(void *translator);
    /* What was delivered so far (for the tick's progress records); NULL:
     * none. */
    void (*delivery)(void *translator, prov_delivery_t *d);
    /* Settles a stream that the client has, however it ended (rv: the
     * gateway transfer's result), and writes its last event. */
    int (*end)(provider_infer_t *in, provider_stream_t *x, apr_status_t rv);
    /* The message of the 502 when the gateway's answer was no such stream. */
    const char *malformed;
} provider_streamer_t;

/* Writes one event (x is a provider_stream_t) and flushes it; the first
 * write sends the 200 and the stream's headers. The events made from the
 * gateway's bytes go out together, flushed when the gateway has nothing
 * more to read for now (one write to the client, not one per event;
 * nothing waits for the gateway's next bytes). APR_ECONNABORTED when the
 * client has gone or the answer failed (x says which): the translator
 * stops. */
apr_status_t provider_stream_write(void *x, const char *event, apr_size_t len);
/* Ends the answer of a complete stream for the client (the events still
 * waiting and the last chunk, in one write with a flush) before the
 * transport commits its settlement, as an answer read whole goes out before
 * its settlement. Returns PROVIDER_WRITE_*: _REFUSED or _FAILED when this
 * was the answer's first write and it was refused (nothing was delivered:
 * provider_infer_undelivered). */
int provider_stream_finish(provider_stream_t *x);
/* A complete stream's end: provider_stream_finish, then the staged
 * settlement committed (or, when that first write was refused, the hold
 * released as undelivered). Returns what the handler returns. */
int provider_stream_commit(provider_infer_t *in, provider_stream_t *x);
/* Non-zero when the client has gone (noticed now or before). */
int provider_stream_gone(provider_stream_t *x);
/* How the stream ended (prov_ending_classify of what x saw; rv: the
 * gateway transfer's result; complete and gateway_error: the transport's
 * judgement of its last events). */
prov_ending_e provider_stream_ending(const provider_stream_t *x, apr_status_t rv, int complete,
                                     int gateway_error);
/* A stream the client has, cut short (not complete, not left by the client,
 * not ended by a gateway error event; rv: the transfer's result): the error
 * the client is told, naming the limit or the gateway (what_cut: the
 * transport's words for a gateway cut) and the charge. */
prov_error_t *provider_stream_cut_error(const provider_stream_t *x, apr_status_t rv,
                                        const char *what_cut, prov_micro_t charge);
/* Streams the gateway's answer to body at path through how and settles it;
 * returns what the handler returns. */
int provider_stream_run(provider_infer_t *in, const provider_streamer_t *how, const char *path,
                        const char *body, const apr_table_t *headers);

#endif
