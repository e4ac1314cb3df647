/* prov_sse.c: the Server-Sent Events parser and encoder. The parser keeps the
 * unfinished line and the current event's fields between feeds, follows the
 * SSE rules that matter to us (LF, CRLF or CR line ends; "event:", "data:",
 * comments and unknown fields; an empty line ends an event) and never holds
 * more than max_event bytes: a longer line or event is APR_ENOSPC. Lines are
 * found with memchr (the stream's bytes are not walked one by one). For the
 * prov_sse_ev_t callback, an event's single data line that lies in the bytes
 * being fed is handed out where it lies; it is copied only when a second
 * data line follows or the feed ends before the event does. The same
 * callback learns when the event's bytes are exactly the encoder's form
 * (raw): a relay then passes them on without encoding anything. */
#include <stdlib.h>
#include <string.h>
#include "prov_sse.h"

/* How far the current event's bytes are the encoder's form (raw). */
enum { RAW_NONE = 0, RAW_NAME = 1, RAW_DATA = 2, RAW_NO = -1 };

/* Where a line given to take_line lies. */
enum { LINE_OWN = 0, LINE_FED = 1, LINE_FED_LF = 2 };

struct prov_sse_parser_t {
    prov_sse_event_cb *cb;
    prov_sse_ev_cb *ev_cb;
    void *baton;
    apr_size_t max;
    char *line;          /* the unfinished line */
    apr_size_t line_len, line_cap;
    char *data;          /* data lines so far, joined by '\n' */
    apr_size_t data_len, data_cap;
    const char *slice;   /* or the one data line, where it lies in the bytes fed */
    apr_size_t slice_len;
    int has_data;
    char name[64];
    int last_cr;         /* the previous feed ended on CR: skip a leading LF */
    int raw_state;       /* RAW_*: the event so far is "event: N\n" "data: D\n" */
    const char *raw;     /* its first byte, in the bytes fed */
    apr_pool_t *pool;
};

prov_sse_parser_t *prov_sse_parser_create(prov_sse_event_cb *cb, void *baton,
                                          apr_size_t max_event, apr_pool_t *p)
{
    prov_sse_parser_t *ps = apr_pcalloc(p, sizeof(*ps));
    ps->cb = cb;
    ps->baton = baton;
    ps->max = max_event ? max_event : 1024 * 1024;
    ps->pool = p;
    return ps;
}

prov_sse_parser_t *prov_sse_parser_create_ev(prov_sse_ev_cb *cb, void *baton,
                                             apr_size_t max_event, apr_pool_t *p)
{
    prov_sse_parser_t *ps = prov_sse_parser_create(NULL, baton, max_event, p);
    ps->ev_cb = cb;
    return ps;
}

static apr_status_t grow(char **buf, apr_size_t *cap, apr_size_t need, apr_size_t max,
                         apr_pool_t *p)
{
    char *nb;
    apr_size_t n;
    if (need > max + 1)     /* first: a buffer may already be larger than max */
        return APR_ENOSPC;
    if (need <= *cap)
        return APR_SUCCESS;
    n = *cap ? *cap : 256;
    while (n < need)
        n *= 2;
    nb = apr_palloc(p, n);
    if (*buf)
        memcpy(nb, *buf, *cap);
    *buf = nb;
    *cap = n;
    return APR_SUCCESS;
}

/* The data line handed out as a slice goes into the parser's own buffer
 * (a second data line follows, or the bytes fed are about to go away). */
static apr_status_t own_slice(prov_sse_parser_t *ps)
{
    if (!ps->slice)
        return APR_SUCCESS;
    if (grow(&ps->data, &ps->data_cap, ps->slice_len + 1, ps->max, ps->pool) != APR_SUCCESS)
        return APR_ENOSPC;
    memcpy(ps->data, ps->slice, ps->slice_len);
    ps->data_len = ps->slice_len;
    ps->slice = NULL;
    return APR_SUCCESS;
}

static apr_status_t deliver(prov_sse_parser_t *ps, const char *end)
{
    prov_sse_ev_t ev;
    if (!ps->ev_cb) {
        if (grow(&ps->data, &ps->data_cap, ps->data_len + 1, ps->max, ps->pool) != APR_SUCCESS)
            return APR_ENOSPC;
        ps->data[ps->data_len] = '\0';
        return ps->cb(ps->baton, ps->name[0] ? ps->name : "message", ps->data, ps->data_len);
    }
    ev.name = ps->name[0] ? ps->name : "message";
    ev.data = ps->slice ? ps->slice : ps->data;
    ev.len = ps->slice ? ps->slice_len : ps->data_len;
    ev.raw = end && ps->raw_state == RAW_DATA ? ps->raw : NULL;
    ev.raw_len = ev.raw ? (apr_size_t)(end - ps->raw) : 0;
    return ps->ev_cb(ps->baton, &ev);
}

/* An empty line; end: just past it when it lies in the bytes fed and ends
 * in a lone LF (the raw form), else NULL. */
static apr_status_t dispatch(prov_sse_parser_t *ps, const char *end)
{
    apr_status_t rv = APR_SUCCESS;
    if (ps->has_data)
        rv = deliver(ps, end);
    ps->data_len = 0;
    ps->slice = NULL;
    ps->has_data = 0;
    ps->name[0] = '\0';
    ps->raw_state = RAW_NONE;
    return rv;
}

/* Follows the raw form through one non-empty line (l, n bytes; where: LINE_*). */
static void raw_step(prov_sse_parser_t *ps, const char *l, apr_size_t n, int where)
{
    if (where != LINE_FED_LF) {
        ps->raw_state = l[0] == ':' && ps->raw_state == RAW_NONE ? RAW_NONE : RAW_NO;
        return;
    }
    switch (ps->raw_state) {
    case RAW_NONE:
        if (l[0] == ':')
            return;         /* a comment before the event is not part of it */
        if (n > 7 && n - 7 < sizeof(ps->name) && !memcmp(l, "event: ", 7)
            && !memchr(l + 7, '\0', n - 7)) {
            ps->raw_state = RAW_NAME;
            ps->raw = l;
            return;
        }
        break;
    case RAW_NAME:
        if (n >= 6 && !memcmp(l, "data: ", 6)) {
            ps->raw_state = RAW_DATA;
            return;
        }
        break;
    default:
        break;
    }
    ps->raw_state = RAW_NO;
}

static apr_status_t take_data(prov_sse_parser_t *ps, const char *val, apr_size_t vlen,
                              int where)
{
    apr_size_t need;
    if (ps->ev_cb && where != LINE_OWN && !ps->has_data) {
        ps->slice = val;
        ps->slice_len = vlen;
        ps->has_data = 1;
        return APR_SUCCESS;
    }
    if (own_slice(ps) != APR_SUCCESS)
        return APR_ENOSPC;
    need = ps->data_len + (ps->has_data ? 1 : 0) + vlen + 1;
    if (grow(&ps->data, &ps->data_cap, need, ps->max, ps->pool) != APR_SUCCESS)
        return APR_ENOSPC;
    if (ps->has_data)
        ps->data[ps->data_len++] = '\n';
    memcpy(ps->data + ps->data_len, val, vlen);
    ps->data_len += vlen;
    ps->has_data = 1;
    return APR_SUCCESS;
}

static apr_status_t take_line(prov_sse_parser_t *ps, const char *l, apr_size_t n, int where)
{
    const char *colon, *val;
    apr_size_t flen, vlen;
    if (n == 0)
        return dispatch(ps, where == LINE_FED_LF ? l + 1 : NULL);
    if (ps->ev_cb)
        raw_step(ps, l, n, where);
    if (l[0] == ':')
        return APR_SUCCESS;
    colon = memchr(l, ':', n);
    flen = colon ? (apr_size_t)(colon - l) : n;
    val = colon ? colon + 1 : l + n;
    vlen = colon ? n - flen - 1 : 0;
    if (vlen && *val == ' ') {
        val++;
        vlen--;
    }
    if (flen == 4 && !memcmp(l, "data", 4))
        return take_data(ps, val, vlen, where);
    if (flen == 5 && !memcmp(l, "event", 5)) {
        apr_size_t k = vlen < sizeof(ps->name) - 1 ? vlen : sizeof(ps->name) - 1;
        memcpy(ps->name, val, k);
        ps->name[k] = '\0';
    }
    return APR_SUCCESS;
}

/* The first line end (LF or CR) in [p, end), or NULL. */
static const char *line_end(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (apr_size_t)(end - p));
    const char *cr = memchr(p, '\r', (apr_size_t)((nl ? nl : end) - p));
    return cr ? cr : nl;
}

/* The bytes fed go away: a slice is copied, a raw form cannot span feeds. */
static apr_status_t feed_done(prov_sse_parser_t *ps)
{
    if (ps->raw_state != RAW_NONE)
        ps->raw_state = RAW_NO;
    return own_slice(ps);
}

static apr_status_t feed_lines(prov_sse_parser_t *ps, const char *buf, apr_size_t len)
{
    const char *p = buf, *end = buf + len;
    if (ps->last_cr && len && buf[0] == '\n')
        p++;
    ps->last_cr = 0;
    while (p < end) {
        const char *eol = line_end(p, end);
        apr_size_t k = (apr_size_t)((eol ? eol : end) - p);
        apr_status_t rv;
        /* One bound for a line, whole in buf or gathered over feeds (a
         * comment too), so that how the bytes arrive changes nothing. */
        if (ps->line_len + k > ps->max)
            return APR_ENOSPC;
        if (!eol) {
            /* No line end yet: keep the piece for the next feed. */
            if (grow(&ps->line, &ps->line_cap, ps->line_len + k, ps->max, ps->pool)
                != APR_SUCCESS)
                return APR_ENOSPC;
            memcpy(ps->line + ps->line_len, p, k);
            ps->line_len += k;
            break;
        }
        if (ps->line_len) {
            if (grow(&ps->line, &ps->line_cap, ps->line_len + k, ps->max, ps->pool)
                != APR_SUCCESS)
                return APR_ENOSPC;
            memcpy(ps->line + ps->line_len, p, k);
            rv = take_line(ps, ps->line, ps->line_len + k, LINE_OWN);
            ps->line_len = 0;
        }
        else {
            rv = take_line(ps, p, k, *eol == '\n' ? LINE_FED_LF : LINE_FED);
        }
        if (rv != APR_SUCCESS)
            return rv;
        if (*eol == '\r') {
            if (eol + 1 < end && eol[1] == '\n')
                eol++;
            else if (eol + 1 == end)
                ps->last_cr = 1;
        }
        p = eol + 1;
    }
    return APR_SUCCESS;
}

apr_status_t prov_sse_feed(prov_sse_parser_t *ps, const char *buf, apr_size_t len)
{
    apr_status_t rv = feed_lines(ps, buf, len);
    apr_status_t done = feed_done(ps);
    return rv != APR_SUCCESS ? rv : done;
}

int prov_sse_pending(const prov_sse_parser_t *ps)
{
    return ps->line_len > 0 || ps->has_data;
}

/* ---- the encoder ------------------------------------------------------------- */

/* The encoded size of an event (nlen: the name's length, or -1 for none). */
static apr_size_t encoded_size(apr_ssize_t nlen, const char *data, apr_size_t dlen)
{
    const char *c = data, *end = data + dlen, *nl;
    apr_size_t lines = 1;
    while ((nl = memchr(c, '\n', (apr_size_t)(end - c))) != NULL) {
        lines++;
        c = nl + 1;
    }
    return (nlen >= 0 ? (apr_size_t)nlen + 8 : 0) + dlen + lines * 7 + 1;
}

/* Writes the event at out (encoded_size bytes); returns its length. */
static apr_size_t encode_into(char *out, const char *name, apr_ssize_t nlen, const char *data,
                              apr_size_t dlen)
{
    const char *c = data, *end = data + dlen;
    apr_size_t n = 0;
    if (nlen >= 0) {
        memcpy(out, "event: ", 7);
        memcpy(out + 7, name, (apr_size_t)nlen);
        n = 7 + (apr_size_t)nlen;
        out[n++] = '\n';
    }
    for (;;) {
        const char *nl = memchr(c, '\n', (apr_size_t)(end - c));
        apr_size_t k = nl ? (apr_size_t)(nl - c) : (apr_size_t)(end - c);
        memcpy(out + n, "data: ", 6);
        n += 6;
        memcpy(out + n, c, k);
        n += k;
        out[n++] = '\n';
        if (!nl)
            break;
        c = nl + 1;
    }
    out[n++] = '\n';
    return n;
}

const char *prov_sse_encode_len(const char *name, const char *data, apr_size_t dlen,
                                apr_size_t *out_len, apr_pool_t *p)
{
    apr_ssize_t nlen = name ? (apr_ssize_t)strlen(name) : -1;
    char *out = apr_palloc(p, encoded_size(nlen, data, dlen) + 1);
    apr_size_t n = encode_into(out, name, nlen, data, dlen);
    out[n] = '\0';
    if (out_len)
        *out_len = n;
    return out;
}

const char *prov_sse_encode(const char *name, const char *data, apr_pool_t *p)
{
    return prov_sse_encode_len(name, data, strlen(data), NULL, p);
}

static apr_status_t buf_free(void *data)
{
    prov_sse_buf_t *b = data;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    return APR_SUCCESS;
}

prov_sse_buf_t *prov_sse_buf_create(apr_pool_t *p)
{
    prov_sse_buf_t *b = apr_pcalloc(p, sizeof(*b));
    b->p = p;
    return b;
}

void prov_sse_buf_reset(prov_sse_buf_t *b)
{
    b->len = 0;
}

/* Room for n more bytes: the first BUF_POOLED from the pool (a stream's
 * events fit), past that malloc'ed, freed with the pool. */
#define BUF_POOLED 4096
static apr_status_t reserve(prov_sse_buf_t *b, apr_size_t n)
{
    apr_size_t cap;
    char *nb;
    if (b->cap - b->len >= n)
        return APR_SUCCESS;
    if (n > APR_SIZE_MAX / 2 - b->len)
        return APR_ENOMEM;
    if (!b->cap && n <= BUF_POOLED) {
        b->data = apr_palloc(b->p, BUF_POOLED);
        b->cap = BUF_POOLED;
        return APR_SUCCESS;
    }
    cap = b->cap ? b->cap : BUF_POOLED;
    while (cap - b->len < n)
        cap *= 2;
    if (!b->heap) {
        if (!(nb = malloc(cap)))
            return APR_ENOMEM;
        if (b->len)
            memcpy(nb, b->data, b->len);
        b->heap = 1;
        apr_pool_cleanup_register(b->p, b, buf_free, apr_pool_cleanup_null);
    }
    else if (!(nb = realloc(b->data, cap)))
        return APR_ENOMEM;
    b->data = nb;
    b->cap = cap;
    return APR_SUCCESS;
}

apr_status_t prov_sse_put_event(prov_sse_buf_t *b, const char *name, const char *data,
                                apr_size_t dlen)
{
    apr_ssize_t nlen = name ? (apr_ssize_t)strlen(name) : -1;
    if (reserve(b, encoded_size(nlen, data, dlen)) != APR_SUCCESS)
        return APR_ENOMEM;
    b->len += encode_into(b->data + b->len, name, nlen, data, dlen);
    return APR_SUCCESS;
}

apr_status_t prov_sse_buf_reserve(prov_sse_buf_t *b, apr_size_t n)
{
    return reserve(b, n);
}

apr_status_t prov_sse_put_bytes(prov_sse_buf_t *b, const char *bytes, apr_size_t n)
{
    if (reserve(b, n) != APR_SUCCESS)
        return APR_ENOMEM;
    if (n)
        memcpy(b->data + b->len, bytes, n);
    b->len += n;
    return APR_SUCCESS;
}
