/* prov_gateway_answer.c: the answer reader of the plain HTTP/1.1 gateway
 * client: the status line and the headers it needs (Content-Length,
 * Transfer-Encoding, Connection, Content-Type, Retry-After), 1xx answers
 * skipped, then a body framed by Content-Length, chunked (extensions and
 * trailers accepted and dropped), or ending with the connection, all within
 * fixed bounds; for a stream, the body is handed on as it is decoded
 * instead of kept. Bytes come through a read function, from a socket
 * (prov_gateway_conn.c) or from memory (prov_gateway_http_parse, for the tests
 * and the fuzzer); the result never depends on how they were split into
 * reads. */
#define _GNU_SOURCE 1   /* memmem */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include "prov_gateway_http.h"

#define MAX_HEAD (64 * 1024)            /* the answer's status line and headers */
#define MAX_BODY (256 * 1024 * 1024)    /* an answer that is not streamed */
#define MAX_CHUNK_LINE 1024             /* a chunk's size line, extensions included */
#define READ_SIZE 16384                 /* bytes asked for per read */

static apr_status_t reserve(char **buf, apr_size_t *cap, apr_size_t need)
{
    apr_size_t c = *cap ? *cap : 8192;
    char *nb;
    if (need <= *cap)
        return APR_SUCCESS;
    while (c < need)
        c *= 2;
    if (!(nb = realloc(*buf, c)))
        return APR_ENOMEM;
    *buf = nb;
    *cap = c;
    return APR_SUCCESS;
}

/* Reads more bytes; APR_EOF when the gateway closed the connection. */
static apr_status_t fill(prov_gateway_answer_t *a)
{
    apr_size_t got = 0;
    apr_status_t rv;
    if (a->sink && a->pos) {
        /* a stream keeps only what is still to decode */
        memmove(a->in, a->in + a->pos, a->len - a->pos);
        a->len -= a->pos;
        a->pos = 0;
    }
    if (a->len - a->pos > MAX_BODY)
        return APR_ENOSPC;
    if ((rv = reserve(&a->in, &a->cap, a->len + READ_SIZE + 1)) != APR_SUCCESS)
        return rv;
    if ((rv = a->read(a->src, a->in + a->len, a->cap - a->len - 1, &got)) != APR_SUCCESS)
        return rv;
    a->len += got;
    a->in[a->len] = '\0';
    return APR_SUCCESS;
}

static int has_token(const char *v, const char *token)
{
    apr_size_t n = strlen(token);
    while (*v) {
        while (*v == ' ' || *v == '\t' || *v == ',')
            v++;
        if (!strncasecmp(v, token, n) && (!v[n] || v[n] == ',' || v[n] == ' ' || v[n] == ';'))
            return 1;
        while (*v && *v != ',')
            v++;
    }
    return 0;
}

/* Parses the status line at line; APR_EGENERAL unless HTTP/1.0 or 1.1 with
 * a three-digit status. */
static apr_status_t parse_status(prov_gateway_answer_t *a, const char *line)
{
    if (strncmp(line, "HTTP/1.", 7) || (line[7] != '0' && line[7] != '1') || line[8] != ' ')
        return APR_EGENERAL;
    a->minor = line[7] - '0';
    if (line[9] < '1' || line[9] > '5' || line[10] < '0' || line[10] > '9'
        || line[11] < '0' || line[11] > '9' || (line[12] != ' ' && line[12] != '\r'))
        return APR_EGENERAL;
    a->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    a->keep = a->minor == 1;
    a->clen = -1;
    a->chunked = 0;
    return APR_SUCCESS;
}

/* One header, its name and value already cut out and trimmed. */
static apr_status_t take_header(prov_gateway_answer_t *a, const char *name, const char *v,
                                apr_pool_t *p)
{
    if (!strcasecmp(name, "Content-Length")) {
        char *e = NULL;
        long long n = strtoll(v, &e, 10);
        if (!*v || *e || n < 0 || n > MAX_BODY)
            return APR_EGENERAL;
        a->clen = n;
    }
    else if (!strcasecmp(name, "Transfer-Encoding"))
        a->chunked = has_token(v, "chunked");
    else if (!strcasecmp(name, "Connection")) {
        if (has_token(v, "close"))
            a->keep = 0;
        else if (has_token(v, "keep-alive"))
            a->keep = 1;
    }
    else if (!strcasecmp(name, "Content-Type"))
        a->content_type = apr_pstrdup(p, v);
    else if (!strcasecmp(name, "Retry-After"))
        a->retry_after = apr_pstrdup(p, v);
    return APR_SUCCESS;
}

/* Parses the head in a->in[pos, end) (end: after the blank line). */
static apr_status_t parse_head(prov_gateway_answer_t *a, apr_size_t end, apr_pool_t *p)
{
    char *line = a->in + a->pos, *stop = a->in + end - 2;
    char *eol;
    apr_status_t rv;
    if ((rv = parse_status(a, line)) != APR_SUCCESS)
        return rv;
    for (line = (char *)memmem(line, (apr_size_t)(stop + 2 - line), "\r\n", 2) + 2; line < stop;
         line = eol + 2) {
        char *colon, *v, *ve;
        eol = memmem(line, (apr_size_t)(stop + 2 - line), "\r\n", 2);
        if (!eol || eol > stop)
            return APR_EGENERAL;
        colon = memchr(line, ':', (apr_size_t)(eol - line));
        if (!colon)
            return APR_EGENERAL;
        for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
            ;
        for (ve = eol; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--)
            ;
        *colon = '\0';
        *ve = '\0';
        if ((rv = take_header(a, line, v, p)) != APR_SUCCESS)
            return rv;
    }
    a->pos = end;
    return APR_SUCCESS;
}

static apr_status_t append(prov_gateway_answer_t *a, const char *data, apr_size_t n)
{
    apr_status_t rv;
    if (a->blen + n > MAX_BODY)
        return APR_ENOSPC;
    if ((rv = reserve(&a->body, &a->bcap, a->blen + n + 1)) != APR_SUCCESS)
        return rv;
    memcpy(a->body + a->blen, data, n);
    a->blen += n;
    return APR_SUCCESS;
}

/* A stream's body decoded so far, handed to the sink at once (all the
 * chunks one read brought: one call, one write to the client). */
static apr_status_t deliver(prov_gateway_answer_t *a)
{
    apr_size_t n = a->blen;
    if (!a->sink || !n)
        return APR_SUCCESS;
    a->blen = 0;
    return a->sink(a->baton, a->body, n) == APR_SUCCESS ? APR_SUCCESS : APR_ECONNABORTED;
}

/* One chunked body, decoded as far as the bytes read allow: APR_SUCCESS
 * when it is complete, APR_INCOMPLETE when more bytes are needed. The
 * result never depends on how the bytes were split into reads: a size line
 * is at most MAX_CHUNK_LINE bytes, and its size only hex digits. */
static apr_status_t decode_chunks(prov_gateway_answer_t *a)
{
    for (;;) {
        char *at = a->in + a->pos, *e;
        char *eol = memmem(at, a->len - a->pos, "\r\n", 2);
        apr_uint64_t size = 0;
        apr_status_t rv;
        if (!eol)
            /* a last byte '\r' may start the line's end */
            return a->len - a->pos > MAX_CHUNK_LINE + 1 ? APR_EGENERAL : APR_INCOMPLETE;
        if (eol - at > MAX_CHUNK_LINE)
            return APR_EGENERAL;
        for (e = at; e < eol && apr_isxdigit(*e) && size <= MAX_BODY; e++)
            size = size * 16 + (apr_uint64_t)(*e <= '9' ? *e - '0' : (*e | 0x20) - 'a' + 10);
        if (e == at || (e != eol && *e != ';' && *e != ' ') || size > MAX_BODY)
            return APR_EGENERAL;
        if (size == 0) {
            /* trailers, then the blank line */
            char *end = memmem(eol, (apr_size_t)(a->in + a->len - eol), "\r\n\r\n", 4);
            if (!end)
                return APR_INCOMPLETE;
            a->pos = (apr_size_t)(end + 4 - a->in);
            return APR_SUCCESS;
        }
        if ((apr_size_t)(a->in + a->len - (eol + 2)) < size + 2)
            return APR_INCOMPLETE;
        if (eol[2 + size] != '\r' || eol[3 + size] != '\n')
            return APR_EGENERAL;
        if ((rv = append(a, eol + 2, (apr_size_t)size)) != APR_SUCCESS)
            return rv;
        a->pos = (apr_size_t)(eol + 4 + size - a->in);
    }
}

/* The head of the final answer; informational ones (100 Continue) are
 * skipped. */
static apr_status_t read_head(prov_gateway_answer_t *a, apr_pool_t *p)
{
    apr_status_t rv;
    for (;;) {
        char *end = NULL;
        while (!a->in || !(end = memmem(a->in + a->pos, a->len - a->pos, "\r\n\r\n", 4))) {
            if (a->len - a->pos > MAX_HEAD)
                return APR_EGENERAL;
            if ((rv = fill(a)) != APR_SUCCESS)
                return rv;
        }
        if ((apr_size_t)(end + 4 - (a->in + a->pos)) > MAX_HEAD)
            return APR_EGENERAL;
        if ((rv = parse_head(a, (apr_size_t)(end + 4 - a->in), p)) != APR_SUCCESS)
            return rv;
        if (a->status >= 200) {
            if (a->status_out)
                *a->status_out = a->status;
            return APR_SUCCESS;
        }
    }
}

apr_status_t prov_gateway_answer_read(prov_gateway_answer_t *a, apr_pool_t *p)
{
    apr_status_t rv;
    if ((rv = read_head(a, p)) != APR_SUCCESS)
        return rv;
    if (a->status == 204 || a->status == 304)
        return APR_SUCCESS;
    if (a->chunked) {
        while ((rv = decode_chunks(a)) == APR_INCOMPLETE) {
            if ((rv = deliver(a)) != APR_SUCCESS)
                return rv;
            if ((rv = fill(a)) != APR_SUCCESS)
                return rv == APR_EOF ? APR_EGENERAL : rv;
        }
        return rv == APR_SUCCESS ? deliver(a) : rv;
    }
    if (a->clen >= 0 && a->sink) {
        apr_int64_t left = a->clen;
        while (left > 0) {
            apr_size_t n = a->len - a->pos;
            if (!n && (rv = fill(a)) != APR_SUCCESS)
                return rv == APR_EOF ? APR_EGENERAL : rv;
            n = a->len - a->pos < (apr_size_t)left ? a->len - a->pos : (apr_size_t)left;
            if ((rv = append(a, a->in + a->pos, n)) != APR_SUCCESS
                || (rv = deliver(a)) != APR_SUCCESS)
                return rv;
            a->pos += n;
            left -= (apr_int64_t)n;
        }
        return APR_SUCCESS;
    }
    if (a->clen >= 0) {
        while (a->len - a->pos < (apr_size_t)a->clen) {
            if ((rv = fill(a)) != APR_SUCCESS)
                return rv == APR_EOF ? APR_EGENERAL : rv;
        }
        rv = append(a, a->in + a->pos, (apr_size_t)a->clen);
        a->pos += (apr_size_t)a->clen;
        return rv;
    }
    /* neither: the body ends with the connection */
    a->keep = 0;
    while ((rv = fill(a)) == APR_SUCCESS) {
        if (a->sink) {
            apr_status_t srv = append(a, a->in + a->pos, a->len - a->pos);
            a->pos = a->len;
            if (srv != APR_SUCCESS || (srv = deliver(a)) != APR_SUCCESS)
                return srv;
        }
    }
    if (rv != APR_EOF)
        return rv;
    rv = append(a, a->in + a->pos, a->len - a->pos);
    a->pos = a->len;
    return rv == APR_SUCCESS ? deliver(a) : rv;
}

prov_gateway_response_t *prov_gateway_answer_response(const prov_gateway_answer_t *a,
                                                      apr_pool_t *p)
{
    prov_gateway_response_t *r = apr_pcalloc(p, sizeof(*r));
    r->status = a->status;
    r->body = a->body ? apr_pstrmemdup(p, a->body, a->blen) : apr_pstrdup(p, "");
    r->len = a->blen;
    r->content_type = a->content_type;
    r->retry_after = a->retry_after;
    return r;
}

/* ---- answers from memory ------------------------------------------------------ */

typedef struct mem_src_t {
    const char *at;
    apr_size_t left, step;
} mem_src_t;

static apr_status_t mem_read(void *src, char *buf, apr_size_t cap, apr_size_t *got)
{
    mem_src_t *m = src;
    apr_size_t k = m->left < cap ? m->left : cap;
    if (!k)
        return APR_EOF;
    if (m->step && k > m->step)
        k = m->step;
    memcpy(buf, m->at, k);
    m->at += k;
    m->left -= k;
    *got = k;
    return APR_SUCCESS;
}

apr_status_t prov_gateway_http_parse(prov_gateway_response_t **resp, int *keep, const char *buf,
                                     apr_size_t len, apr_size_t step, apr_pool_t *p)
{
    prov_gateway_answer_t a;
    mem_src_t m;
    apr_status_t rv;
    memset(&a, 0, sizeof(a));
    m.at = buf ? buf : "";
    m.left = len;
    m.step = step;
    a.read = mem_read;
    a.src = &m;
    rv = prov_gateway_answer_read(&a, p);
    if (rv == APR_SUCCESS) {
        *resp = prov_gateway_answer_response(&a, p);
        *keep = a.keep && a.pos == a.len;
    }
    free(a.in);
    free(a.body);
    return rv;
}
