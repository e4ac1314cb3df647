/* prov_sse.c: the Server-Sent Events parser and encoder. The parser keeps the
 * unfinished line and the current event's fields between feeds, follows the
 * SSE rules that matter to us (LF, CRLF or CR line ends; "event:", "data:",
 * comments and unknown fields; an empty line ends an event) and never holds
 * more than max_event bytes: a longer line or event is APR_ENOSPC. */
#include <stdio.h>
#include <string.h>
#include "prov_sse.h"

struct prov_sse_parser_t {
    prov_sse_event_cb *cb;
    void *baton;
    apr_size_t max;
    char *line;          /* the unfinished line */
    apr_size_t line_len, line_cap;
    char *data;          /* data lines so far, joined by '\n' */
    apr_size_t data_len, data_cap;
    int has_data;
    char name[64];
    int last_cr;         /* the previous feed ended on CR: skip a leading LF */
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

static apr_status_t dispatch(prov_sse_parser_t *ps)
{
    apr_status_t rv = APR_SUCCESS;
    if (ps->has_data) {
        if (grow(&ps->data, &ps->data_cap, ps->data_len + 1, ps->max, ps->pool) != APR_SUCCESS)
            return APR_ENOSPC;
        ps->data[ps->data_len] = '\0';
        rv = ps->cb(ps->baton, ps->name[0] ? ps->name : "message", ps->data, ps->data_len);
    }
    ps->data_len = 0;
    ps->has_data = 0;
    ps->name[0] = '\0';
    return rv;
}

static apr_status_t take_line(prov_sse_parser_t *ps, const char *l, apr_size_t n)
{
    const char *colon, *val;
    apr_size_t flen, vlen;
    if (n == 0)
        return dispatch(ps);
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
    if (flen == 4 && !memcmp(l, "data", 4)) {
        apr_size_t need = ps->data_len + (ps->has_data ? 1 : 0) + vlen + 1;
        if (grow(&ps->data, &ps->data_cap, need, ps->max, ps->pool) != APR_SUCCESS)
            return APR_ENOSPC;
        if (ps->has_data)
            ps->data[ps->data_len++] = '\n';
        memcpy(ps->data + ps->data_len, val, vlen);
        ps->data_len += vlen;
        ps->has_data = 1;
    }
    else if (flen == 5 && !memcmp(l, "event", 5)) {
        apr_size_t k = vlen < sizeof(ps->name) - 1 ? vlen : sizeof(ps->name) - 1;
        memcpy(ps->name, val, k);
        ps->name[k] = '\0';
    }
    return APR_SUCCESS;
}

apr_status_t prov_sse_feed(prov_sse_parser_t *ps, const char *buf, apr_size_t len)
{
    apr_size_t i = 0;
    if (ps->last_cr && len && buf[0] == '\n')
        i = 1;
    ps->last_cr = 0;
    while (i < len) {
        const char *start = buf + i;
        apr_size_t k = i;
        apr_status_t rv;
        while (k < len && buf[k] != '\n' && buf[k] != '\r')
            k++;
        /* One bound for a line, whole in buf or gathered over feeds (a
         * comment too), so that how the bytes arrive changes nothing. */
        if (ps->line_len + (k - i) > ps->max)
            return APR_ENOSPC;
        if (k == len) {
            /* No line end yet: keep the piece for the next feed. */
            if (grow(&ps->line, &ps->line_cap, ps->line_len + (k - i), ps->max, ps->pool)
                != APR_SUCCESS)
                return APR_ENOSPC;
            memcpy(ps->line + ps->line_len, start, k - i);
            ps->line_len += k - i;
            break;
        }
        if (ps->line_len) {
            if (grow(&ps->line, &ps->line_cap, ps->line_len + (k - i), ps->max, ps->pool)
                != APR_SUCCESS)
                return APR_ENOSPC;
            memcpy(ps->line + ps->line_len, start, k - i);
            rv = take_line(ps, ps->line, ps->line_len + (k - i));
            ps->line_len = 0;
        }
        else {
            rv = take_line(ps, start, k - i);
        }
        if (rv != APR_SUCCESS)
            return rv;
        if (buf[k] == '\r') {
            if (k + 1 < len && buf[k + 1] == '\n')
                k++;
            else if (k + 1 == len)
                ps->last_cr = 1;
        }
        i = k + 1;
    }
    return APR_SUCCESS;
}

int prov_sse_pending(const prov_sse_parser_t *ps)
{
    return ps->line_len > 0 || ps->has_data;
}

const char *prov_sse_encode_len(const char *name, const char *data, apr_size_t dlen,
                                apr_size_t *out_len, apr_pool_t *p)
{
    const char *c = data, *end = data + dlen;
    char *out;
    apr_size_t n = 0, lines = 1;
    for (; c < end; c++)
        lines += (*c == '\n');
    out = apr_palloc(p, (name ? strlen(name) + 8 : 0) + dlen + lines * 7 + 2);
    if (name)
        n += (apr_size_t)sprintf(out, "event: %s\n", name);
    c = data;
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
    out[n] = '\0';
    if (out_len)
        *out_len = n;
    return out;
}

const char *prov_sse_encode(const char *name, const char *data, apr_pool_t *p)
{
    return prov_sse_encode_len(name, data, strlen(data), NULL, p);
}
