/* fuzz_stream_util.h: what the two stream harnesses share: an emit callback
 * that collects the encoded events a translator writes for the client, the
 * piece size drawn from an input, and the decoding of the collected events
 * (with the core's own SSE parser) for the checks. */
#ifndef FUZZ_STREAM_UTIL_H
#define FUZZ_STREAM_UTIL_H

#include "fuzz_common.h"
#include "prov_sse.h"

typedef struct collected_t {
    char *buf;
    apr_size_t len, cap;
    int n;                      /* events emitted */
    apr_pool_t *p;
} collected_t;

static inline void collected_init(collected_t *c, apr_pool_t *p)
{
    memset(c, 0, sizeof(*c));
    c->p = p;
}

static inline apr_status_t collect(void *baton, const char *event, apr_size_t len)
{
    collected_t *c = baton;
    if (c->len + len + 1 > c->cap) {
        apr_size_t cap = c->cap ? c->cap * 2 : 4096;
        char *nb;
        while (cap < c->len + len + 1)
            cap *= 2;
        nb = apr_palloc(c->p, cap);
        if (c->len)
            memcpy(nb, c->buf, c->len);
        c->buf = nb;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, event, len);
    c->len += len;
    c->buf[c->len] = '\0';
    c->n++;
    return APR_SUCCESS;
}

/* A piece size from 1 to 37 that changes with every byte of the input. */
static inline size_t piece_of(const uint8_t *data, size_t size)
{
    size_t sum = 0, i;
    for (i = 0; i < size; i++)
        sum = sum * 31 + data[i];
    return 1 + sum % 37;
}

typedef struct decoded_t {
    apr_array_header_t *names;      /* const char * */
    apr_array_header_t *data;       /* json_object * (parsed data), NULL when not JSON */
    apr_array_header_t *raw;        /* const char * */
    apr_pool_t *p;
} decoded_t;

static inline apr_status_t decoded_event(void *baton, const char *name, const char *data,
                                         apr_size_t len)
{
    decoded_t *d = baton;
    const char *err = NULL;
    APR_ARRAY_PUSH(d->names, const char *) = apr_pstrdup(d->p, name);
    APR_ARRAY_PUSH(d->raw, const char *) = apr_pstrmemdup(d->p, data, len);
    APR_ARRAY_PUSH(d->data, json_object *) = prov_json_parse(data, len, &err, d->p);
    return APR_SUCCESS;
}

/* Decodes what a translator emitted: every byte belongs to a whole event. */
static inline void decode(decoded_t *d, const collected_t *c, apr_pool_t *p)
{
    prov_sse_parser_t *ps = prov_sse_parser_create(decoded_event, d, 64 * 1024 * 1024, p);
    d->names = apr_array_make(p, 16, sizeof(const char *));
    d->data = apr_array_make(p, 16, sizeof(json_object *));
    d->raw = apr_array_make(p, 16, sizeof(const char *));
    d->p = p;
    FUZZ_CHECK(prov_sse_feed(ps, c->buf ? c->buf : "", c->len) == APR_SUCCESS);
    FUZZ_CHECK(!prov_sse_pending(ps));
    FUZZ_CHECK(d->names->nelts == c->n);
}

#endif
