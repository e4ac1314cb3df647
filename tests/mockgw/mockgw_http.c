/*
 * mockgw_http.c — the HTTP/1.1 wire layer of the mock gateway.
 *
 * Owns reading requests from a blocking socket (request line, headers,
 * Content-Length and chunked bodies, Expect: 100-continue, pipelined bytes kept
 * for the next request) and writing answers: complete answers with
 * Content-Length, SSE streams with chunked transfer coding, and the wire-level
 * faults (cut, trickle, stall, reset). It knows nothing about the API served.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "mockgw.h"

#define MGW_MAX_LINE 4096   /* chunk-size and trailer lines */

/* ---- input ---- */

/* Reads more bytes into the connection buffer. Returns the count, 0 at EOF,
 * -1 on error (a receive timeout included). */
static ssize_t conn_fill(mgw_conn_t *c)
{
    if (c->start == c->end)
        c->start = c->end = 0;
    if (c->end == c->cap && c->start > 0) {
        memmove(c->buf, c->buf + c->start, c->end - c->start);
        c->end -= c->start;
        c->start = 0;
    }
    if (c->end == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16384;
        c->buf = mgw_xrealloc(c->buf, c->cap);
    }
    for (;;) {
        ssize_t n = recv(c->fd, c->buf + c->end, c->cap - c->end, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n > 0)
            c->end += (size_t)n;
        return n;
    }
}

/* Copies n bytes of input to dst, buffered bytes first. Returns 0 or -1. */
static int conn_read_exact(mgw_conn_t *c, char *dst, size_t n)
{
    size_t have = c->end - c->start;
    size_t take = have < n ? have : n;

    memcpy(dst, c->buf + c->start, take);
    c->start += take;
    while (take < n) {
        ssize_t got = recv(c->fd, dst + take, n - take, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        take += (size_t)got;
    }
    return 0;
}

/* Reads one line; *line points into the buffer (valid until the next read),
 * without its CRLF. Returns 0, -1 on EOF/error, or 400 if too long. */
static int conn_getline(mgw_conn_t *c, char **line, size_t *len)
{
    for (;;) {
        char *s = c->buf + c->start;
        char *nl = memchr(s, '\n', c->end - c->start);
        if (nl) {
            size_t l = (size_t)(nl - s);
            if (l > 0 && s[l - 1] == '\r')
                l--;
            *line = s;
            *len = l;
            c->start += (size_t)(nl - s) + 1;
            return 0;
        }
        if (c->end - c->start > MGW_MAX_LINE)
            return 400;
        if (conn_fill(c) <= 0)
            return -1;
    }
}

static int send_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)n;
        ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

static int send_str(int fd, const char *s, size_t len)
{
    struct iovec v = { (void *)s, len };
    return send_all(fd, &v, 1);
}

/* Parses the request head (already copied to r->head, NUL terminated) in
 * place. Returns 0 or an HTTP status. */
static int parse_head(mgw_conn_t *c, mgw_request_t *r)
{
    char *p = r->head;
    char *eol = strstr(p, "\r\n");
    char *sp1, *sp2, *target;

    if (!eol)
        return 400;
    *eol = '\0';
    sp1 = strchr(p, ' ');
    sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || sp1 == p || sp2 == sp1 + 1)
        return 400;
    *sp1 = *sp2 = '\0';
    r->method = p;
    target = sp1 + 1;
    if (strncmp(sp2 + 1, "HTTP/1.", 7) != 0 || (sp2[8] != '0' && sp2[8] != '1')
        || sp2[9] != '\0')
        return sp2[1] == 'H' ? 505 : 400;
    c->minor_version = sp2[8] - '0';
    r->path = target;
    char *q = strchr(target, '?');
    if (q) {
        *q = '\0';
        r->query = q + 1;
    }

    p = eol + 2;
    while (*p) {
        char *name = p, *colon, *v, *end;
        eol = strstr(p, "\r\n");
        if (!eol)
            return 400;
        if (eol == p)
            break;                          /* the empty line ending the head */
        *eol = '\0';
        p = eol + 2;
        if (*name == ' ' || *name == '\t')
            return 400;                    /* obsolete line folding */
        colon = strchr(name, ':');
        if (!colon || colon == name)
            return 400;
        *colon = '\0';
        for (char *n = name; *n; n++) {
            if (*n == ' ' || *n == '\t')
                return 400;
            if (*n >= 'A' && *n <= 'Z')
                *n = (char)(*n - 'A' + 'a');
        }
        v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        end = v + strlen(v);
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (r->nheaders == MGW_MAX_HEADERS)
            return 431;
        r->headers[r->nheaders].name = name;
        r->headers[r->nheaders].value = v;
        r->nheaders++;
    }
    return 0;
}

/* Returns true if the comma-separated header value contains token. */
static bool has_token(const char *value, const char *token)
{
    size_t tl = strlen(token);
    const char *p = value;

    while (p && *p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if ((size_t)(t - p) == tl && strncasecmp(p, token, tl) == 0)
            return true;
        p = e;
    }
    return false;
}

static int read_chunked(mgw_conn_t *c, mgw_request_t *r)
{
    size_t cap = 0;

    for (;;) {
        char *line;
        size_t len, size = 0, i;
        int rc = conn_getline(c, &line, &len);
        if (rc)
            return rc;
        for (i = 0; i < len; i++) {
            char ch = line[i];
            int d;
            if (ch >= '0' && ch <= '9') d = ch - '0';
            else if (ch >= 'a' && ch <= 'f') d = ch - 'a' + 10;
            else if (ch >= 'A' && ch <= 'F') d = ch - 'A' + 10;
            else break;
            if (size > MGW_MAX_BODY_BYTES)
                return 413;
            size = size * 16 + (size_t)d;
        }
        if (i == 0 || (i < len && line[i] != ';' && line[i] != ' '
                       && line[i] != '\t'))
            return 400;
        if (size == 0)
            break;
        if (size > MGW_MAX_BODY_BYTES - r->body_len)
            return 413;
        if (r->body_len + size + 1 > cap) {
            cap = (r->body_len + size + 1) * 2;
            if (cap > MGW_MAX_BODY_BYTES + 1)
                cap = MGW_MAX_BODY_BYTES + 1;
            r->body = mgw_xrealloc(r->body, cap);
        }
        if (conn_read_exact(c, r->body + r->body_len, size))
            return -1;
        r->body_len += size;
        rc = conn_getline(c, &line, &len);
        if (rc)
            return rc;
        if (len != 0)
            return 400;
    }
    for (;;) {                          /* trailers, up to the empty line */
        char *line;
        size_t len;
        int rc = conn_getline(c, &line, &len);
        if (rc)
            return rc;
        if (len == 0)
            break;
    }
    if (r->body)
        r->body[r->body_len] = '\0';
    return 0;
}

int mgw_http_read_request(mgw_conn_t *c, mgw_request_t *r)
{
    char *hend;
    size_t hlen;
    const char *te, *cl, *conn, *expect;
    int rc;

    memset(r, 0, sizeof *r);
    c->keepalive = false;
    c->minor_version = 1;
    for (;;) {
        /* RFC 9112 2.2: ignore empty lines before the request line. */
        while (c->start < c->end
               && (c->buf[c->start] == '\r' || c->buf[c->start] == '\n'))
            c->start++;
        hend = c->end - c->start >= 4
            ? memmem(c->buf + c->start, c->end - c->start, "\r\n\r\n", 4) : NULL;
        if (hend)
            break;
        if (c->end - c->start > MGW_MAX_HEAD_BYTES)
            return 431;
        if (conn_fill(c) <= 0)
            return -1;              /* EOF or error, mid-request or not */
    }
    hlen = (size_t)(hend - (c->buf + c->start)) + 4;
    if (hlen > MGW_MAX_HEAD_BYTES)
        return 431;
    r->head = mgw_xmalloc(hlen + 1);
    memcpy(r->head, c->buf + c->start, hlen);
    r->head[hlen] = '\0';
    c->start += hlen;
    if ((rc = parse_head(c, r)) != 0)
        return rc;

    conn = mgw_request_header(r, "connection");
    if (c->minor_version == 1)
        c->keepalive = !(conn && has_token(conn, "close"));
    else
        c->keepalive = conn && has_token(conn, "keep-alive");

    te = mgw_request_header(r, "transfer-encoding");
    cl = mgw_request_header(r, "content-length");
    expect = mgw_request_header(r, "expect");
    if (te && !has_token(te, "chunked"))
        return 501;
    if (expect && strcasecmp(expect, "100-continue") == 0
        && c->minor_version == 1 && (te || (cl && strcmp(cl, "0") != 0))
        && c->start == c->end) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        if (send_str(c->fd, cont, sizeof cont - 1))
            return -1;
    }
    if (te)
        return read_chunked(c, r);
    if (cl) {
        size_t len = 0;
        const char *p = cl;
        if (!*p)
            return 400;
        for (; *p; p++) {
            if (*p < '0' || *p > '9')
                return 400;
            len = len * 10 + (size_t)(*p - '0');
            if (len > MGW_MAX_BODY_BYTES)
                return 413;
        }
        if (len > 0) {
            r->body = mgw_xmalloc(len + 1);
            if (conn_read_exact(c, r->body, len))
                return -1;
            r->body[len] = '\0';
            r->body_len = len;
        }
    }
    return 0;
}

void mgw_request_free(mgw_request_t *r)
{
    free(r->head);
    free(r->body);
    r->head = r->body = NULL;
}

const char *mgw_request_header(const mgw_request_t *r, const char *lname)
{
    for (size_t i = 0; i < r->nheaders; i++)
        if (strcmp(r->headers[i].name, lname) == 0)
            return r->headers[i].value;
    return NULL;
}

/* ---- output ---- */

void mgw_sleep_ms(long ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 413: return "Content Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    case 529: return "Site Overloaded";
    default:  return "Unknown";
    }
}

static const char *conn_header(const mgw_conn_t *c)
{
    if (!c->keepalive)
        return "Connection: close\r\n";
    return c->minor_version == 0 ? "Connection: keep-alive\r\n" : "";
}

/* Sends the head v[0] with the body in parts, sleeping ms between them. */
static int send_in_parts(mgw_conn_t *c, struct iovec *v, const char *body,
                         size_t len, size_t parts, long ms)
{
    size_t part = len / parts;

    v[1].iov_base = (void *)body;
    v[1].iov_len = part;
    if (send_all(c->fd, v, 2))
        return -1;
    for (size_t i = 1; i < parts; i++) {
        mgw_sleep_ms(ms);
        if (send_str(c->fd, body + i * part, i + 1 < parts ? part : len - i * part))
            return -1;
    }
    return c->keepalive ? 0 : -1;
}

int mgw_http_respond(mgw_conn_t *c, int status, const char *ctype,
                     const char *extra_headers, const char *body, size_t len,
                     const mgw_fault_t *f)
{
    char head[1024];
    int hl;
    struct iovec v[2];

    c->last_status = status;
    hl = snprintf(head, sizeof head,
                  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                  "%s%s\r\n", status, reason(status), ctype, len,
                  extra_headers ? extra_headers : "", conn_header(c));
    if (hl < 0 || (size_t)hl >= sizeof head)
        return -1;
    v[0].iov_base = head;
    v[0].iov_len = (size_t)hl;
    if (f && f->kind == MGW_FAULT_CUT) {
        v[1].iov_base = (void *)body;
        v[1].iov_len = len / 2;
        send_all(c->fd, v, 2);
        shutdown(c->fd, SHUT_WR);
        return -1;
    }
    if (f && f->stall_ms > 0 && len >= 2)
        return send_in_parts(c, v, body, len, 2, f->stall_ms);
    if (f && f->trickle_ms > 0 && len >= 3)
        return send_in_parts(c, v, body, len, 3, f->trickle_ms);
    v[1].iov_base = (void *)body;
    v[1].iov_len = len;
    if (send_all(c->fd, v, 2))
        return -1;
    return c->keepalive ? 0 : -1;
}

int mgw_http_error_close(mgw_conn_t *c, int status)
{
    char msg[160];
    int n = snprintf(msg, sizeof msg, "{\"error\":{\"message\":\"%s\","
                     "\"type\":\"invalid_request_error\",\"param\":null,"
                     "\"code\":\"http_%d\"}}", reason(status), status);

    c->keepalive = false;
    mgw_http_respond(c, status, "application/json", NULL, msg, (size_t)n, NULL);
    return -1;
}

int mgw_http_reset(mgw_conn_t *c)
{
    struct linger l = { 1, 0 };

    c->last_status = 0;
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    return -1;
}

void mgw_events_add_raw(mgw_events_t *e, const char *text)
{
    mgw_buf_puts(&e->data, text);
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 16;
        e->ends = mgw_xrealloc(e->ends, e->cap * sizeof *e->ends);
    }
    e->ends[e->n++] = e->data.len;
}

void mgw_events_add(mgw_events_t *e, const char *name, json_object *o)
{
    if (name)
        mgw_buf_printf(&e->data, "event: %s\n", name);
    mgw_buf_puts(&e->data, "data: ");
    mgw_buf_json(&e->data, o);
    json_object_put(o);
    mgw_events_add_raw(e, "\n\n");
}

void mgw_events_free(mgw_events_t *e)
{
    mgw_buf_free(&e->data);
    free(e->ends);
    memset(e, 0, sizeof *e);
}

/* Sends data[from, to) as one chunk (or raw on HTTP/1.0). */
static int send_chunk(mgw_conn_t *c, const char *head, size_t hlen,
                      const char *data, size_t len, bool last)
{
    char size[32];
    struct iovec v[5];
    int n = 0;
    bool chunked = c->minor_version == 1;

    if (hlen) {
        v[n].iov_base = (void *)head;
        v[n++].iov_len = hlen;
    }
    if (len) {
        if (chunked) {
            v[n].iov_base = size;
            v[n++].iov_len = (size_t)snprintf(size, sizeof size, "%zx\r\n", len);
        }
        v[n].iov_base = (void *)data;
        v[n++].iov_len = len;
        if (chunked) {
            v[n].iov_base = (void *)"\r\n";
            v[n++].iov_len = 2;
        }
    }
    if (last && chunked) {
        v[n].iov_base = (void *)"0\r\n\r\n";
        v[n++].iov_len = 5;
    }
    return n ? send_all(c->fd, v, n) : 0;
}

/* The events one by one: trickle's sleep between them, stall's after the
 * first half, lockstep's wait for the client's acknowledgement after each
 * text piece; with --times, when each went. */
static int stream_paced(mgw_conn_t *c, const char *head, size_t hl,
                        const mgw_events_t *e, const mgw_fault_t *f)
{
    const char *d = e->data.p;
    size_t from = 0;

    if (f->lockstep)
        mgw_lockstep_begin();
    for (size_t i = 0; i < e->n; i++) {
        if (i > 0 && f->trickle_ms > 0)
            mgw_sleep_ms(f->trickle_ms);
        if (i > 0 && i == e->n / 2 && f->stall_ms > 0)
            mgw_sleep_ms(f->stall_ms);
        if (send_chunk(c, i == 0 ? head : NULL, i == 0 ? hl : 0,
                       d + from, e->ends[i] - from, i + 1 == e->n))
            return -1;
        mgw_time_mark(c->fd, "event", (long)i);
        from = e->ends[i];
        if (f->lockstep && i >= e->first_piece && i < e->first_piece + e->npieces
            && i + 1 < e->n)
            mgw_lockstep_wait((long)(i - e->first_piece + 1));
    }
    if (e->n == 0 && send_chunk(c, head, hl, NULL, 0, true))
        return -1;
    return c->keepalive ? 0 : -1;
}

int mgw_http_stream(mgw_conn_t *c, const mgw_events_t *e, const mgw_fault_t *f)
{
    char head[256];
    int hl;
    const char *d = e->data.p;

    c->last_status = 200;
    if (c->minor_version == 0)
        c->keepalive = false;           /* the end of the body is the close */
    hl = snprintf(head, sizeof head,
                  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  "Cache-Control: no-cache\r\n%s%s\r\n",
                  c->minor_version == 1 ? "Transfer-Encoding: chunked\r\n" : "",
                  conn_header(c));
    if (f && f->kind == MGW_FAULT_CUT) {
        size_t half = f->cut_events < 0 ? e->n / 2
                    : (size_t)f->cut_events < e->n ? (size_t)f->cut_events : e->n;
        send_chunk(c, head, (size_t)hl, d, half ? e->ends[half - 1] : 0, false);
        shutdown(c->fd, SHUT_WR);
        return -1;
    }
    if (f && (f->trickle_ms > 0 || f->stall_ms > 0 || f->lockstep))
        return stream_paced(c, head, (size_t)hl, e, f);
    if (send_chunk(c, head, (size_t)hl, d, e->data.len, true))
        return -1;
    mgw_time_mark(c->fd, "all", (long)e->n);
    return c->keepalive ? 0 : -1;
}
