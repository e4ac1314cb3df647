/* prov_gateway_http.c: the plain HTTP/1.1 backend of the gateway client,
 * for answers and streams when the gateway is reached over plain
 * http:// (the usual case: an internal service on the same host or
 * network). It speaks just enough HTTP/1.1 for one request at a time on
 * a kept connection to the gateway (prov_gateway_conn.c: the process's
 * idle ones, given back after each call): the
 * request is written with one sendmsg and the answer read within the
 * connect and total timeouts (prov_gateway_answer.c). A request is never
 * sent twice once the gateway may have read all of it: it is sent again
 * (once, on a new connection) only when writing it to a kept connection
 * failed before all its bytes were handed to the kernel; any failure after
 * that is the caller's gateway error, since the gateway may be running it.
 * Streams take the same way: the request sent as above, then the answer
 * read as it comes and handed on (all that one read completed at once),
 * bounded by the gateway's silence, with the caller's tick about once a
 * second. https:// gateways stay with libcurl (prov_gateway_curl.c); why
 * this client exists, with its cost against libcurl's:
 * docs/internals/gateway.md. The service token is written to the socket
 * and nowhere else. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "prov_gateway_http.h"

/* Answer buffers a thread keeps between calls, up to this size each (a
 * 32 KB malloc per call made malloc consolidate its free lists each time). */
#define KEEP_BUF (64 * 1024)

#define MAX_PORT_DIGITS 5

/* ---- where ------------------------------------------------------------------ */

/* The port after host_end (at ':'), up to slash; APR_EINVAL unless digits. */
static apr_status_t parse_port(const char **port, const char *host_end, const char *slash,
                               apr_pool_t *p)
{
    const char *c;
    if (*host_end != ':' || host_end + 1 == slash || slash - host_end > MAX_PORT_DIGITS + 1)
        return APR_EINVAL;
    for (c = host_end + 1; c < slash; c++) {
        if (*c < '0' || *c > '9')
            return APR_EINVAL;
    }
    *port = apr_pstrndup(p, host_end + 1, (apr_size_t)(slash - host_end - 1));
    return APR_SUCCESS;
}

apr_status_t prov_gateway_target_parse(prov_gateway_target_t *t, const char *url, apr_pool_t *p)
{
    const char *hp, *slash, *host_end, *port = NULL;
    const char *host;
    if (strncasecmp(url, "http://", 7))
        return APR_ENOTIMPL;
    hp = url + 7;
    slash = strchr(hp, '/');
    if (!slash)
        slash = hp + strlen(hp);
    if (slash == hp || memchr(hp, '@', (apr_size_t)(slash - hp))
        || memchr(hp, '?', (apr_size_t)(slash - hp)) || strpbrk(slash, "?#"))
        return APR_EINVAL;
    if (*hp == '[') {
        host_end = memchr(hp, ']', (apr_size_t)(slash - hp));
        if (!host_end)
            return APR_EINVAL;
        host = apr_pstrndup(p, hp + 1, (apr_size_t)(host_end - hp - 1));
        host_end++;
    }
    else {
        host_end = memchr(hp, ':', (apr_size_t)(slash - hp));
        if (!host_end)
            host_end = slash;
        host = apr_pstrndup(p, hp, (apr_size_t)(host_end - hp));
    }
    if (host_end < slash && parse_port(&port, host_end, slash, p) != APR_SUCCESS)
        return APR_EINVAL;
    if (!*host)
        return APR_EINVAL;
    t->host = host;
    t->port = port ? port : "80";
    t->host_header = apr_pstrndup(p, hp, (apr_size_t)(slash - hp));
    t->prefix = apr_pstrdup(p, slash);
    return APR_SUCCESS;
}

static apr_status_t http_setup(const void **where, const char *base_url, apr_pool_t *p)
{
    prov_gateway_target_t *t = apr_pcalloc(p, sizeof(*t));
    apr_status_t rv = prov_gateway_target_parse(t, base_url, p);
    if (rv == APR_SUCCESS)
        *where = t;
    return rv;
}

/* ---- the request ------------------------------------------------------------ */

/* Appends n bytes of s at out + *at (out NULL: counts only). */
static void put(char *out, apr_size_t *at, const char *s, apr_size_t n)
{
    if (out)
        memcpy(out + *at, s, n);
    *at += n;
}

#define PUT_LIT(out, at, lit) put(out, at, lit, sizeof(lit) - 1)

/* Writes the request's head at out (NULL: only measures it); its length. */
static apr_size_t head_write(char *out, const prov_gateway_target_t *t,
                             const prov_gateway_req_t *req,
                             const char *clen)
{
    apr_size_t at = 0;
    if (req->body)
        PUT_LIT(out, &at, "POST ");
    else
        PUT_LIT(out, &at, "GET ");
    put(out, &at, t->prefix, strlen(t->prefix));
    put(out, &at, req->path, strlen(req->path));
    PUT_LIT(out, &at, " HTTP/1.1\r\nHost: ");
    put(out, &at, t->host_header, strlen(t->host_header));
    /* a stream's caller names its own (text/event-stream) */
    if (req->headers && apr_table_get(req->headers, "Accept"))
        PUT_LIT(out, &at, "\r\n");
    else
        PUT_LIT(out, &at, "\r\nAccept: */*\r\n");
    if (req->auth_header) {
        put(out, &at, req->auth_header, strlen(req->auth_header));
        PUT_LIT(out, &at, "\r\n");
    }
    if (req->body) {
        PUT_LIT(out, &at, "Content-Type: application/json\r\nContent-Length: ");
        put(out, &at, clen, strlen(clen));
        PUT_LIT(out, &at, "\r\n");
    }
    if (req->headers) {
        const apr_array_header_t *arr = apr_table_elts(req->headers);
        const apr_table_entry_t *e = (const apr_table_entry_t *)arr->elts;
        int i;
        for (i = 0; i < arr->nelts; i++) {
            /* a header value never carries a line break onto the wire */
            if (strpbrk(e[i].key, "\r\n:") || strpbrk(e[i].val, "\r\n"))
                continue;
            put(out, &at, e[i].key, strlen(e[i].key));
            PUT_LIT(out, &at, ": ");
            put(out, &at, e[i].val, strlen(e[i].val));
            PUT_LIT(out, &at, "\r\n");
        }
    }
    PUT_LIT(out, &at, "\r\n");
    return at;
}

/* The request's head, measured then written into one allocation. */
static const char *head_of(const prov_gateway_target_t *t, const prov_gateway_req_t *req,
                           apr_pool_t *p)
{
    char clen[24], *head;
    apr_size_t n;
    prov_u64_format_buf(clen, (apr_uint64_t)req->len);
    n = head_write(NULL, t, req, clen);
    head = apr_palloc(p, n + 1);
    head_write(head, t, req, clen);
    head[n] = '\0';
    return head;
}

/* The result of a call whose connection was made, with *why for the log;
 * sent: the gateway may have read the whole request. */
static apr_status_t failure(apr_status_t rv, int sent, const char **why)
{
    if (rv == APR_TIMEUP)
        *why = "no answer in time";
    else if (rv == APR_EOF)
        *why = "connection closed before the answer";
    else if (rv == APR_ENOSPC)
        *why = "answer too large";
    else if (sent)
        *why = "connection failed after the request was sent, or the answer is not HTTP";
    else
        *why = "connection failed while sending the request";
    return rv == APR_TIMEUP || rv == APR_ENOMEM ? rv : APR_EGENERAL;
}

/* Hands the request whole to the kernel on the slot's connection, made when
 * there is none. A kept connection that fails before then is replaced once:
 * part of the request is still ours, so the gateway cannot have read it
 * whole. APR_SUCCESS once the gateway may have all of it. */
static apr_status_t send_request(prov_gateway_slot_t *s, const prov_gateway_req_t *req,
                                 const char *head,
                                 apr_time_t deadline, const char **why)
{
    apr_status_t rv = APR_EGENERAL;
    int tries;
    for (tries = 0; tries < 2; tries++) {
        int reused = s->fd >= 0;
        struct iovec iov[2];
        if (!reused) {
            apr_time_t cd = apr_time_now() + apr_time_from_msec(req->connect_timeout_ms);
            rv = prov_gateway_conn_open(&s->fd, req->where, cd < deadline ? cd : deadline);
            if (rv != APR_SUCCESS) {
                s->fd = -1;
                *why = rv == APR_TIMEUP ? "connect timed out" : "cannot connect";
                return rv;
            }
        }
        iov[0].iov_base = (void *)head;
        iov[0].iov_len = strlen(head);
        iov[1].iov_base = (void *)(req->body ? req->body : "");
        iov[1].iov_len = req->body ? req->len : 0;
        rv = prov_gateway_conn_send(s->fd, iov, req->body && req->len ? 2 : 1, deadline);
        if (rv == APR_SUCCESS)
            return rv;
        prov_gateway_conn_drop(s);
        if (!reused || rv == APR_TIMEUP)
            break;
    }
    return failure(rv, 0, why);
}

/* Gives a call's buffers back to its slot (or frees the large ones). */
static void keep_buffers(prov_gateway_slot_t *s, prov_gateway_answer_t *a)
{
    if (a->cap > KEEP_BUF) {
        free(a->in);
        a->in = NULL;
        a->cap = 0;
    }
    if (a->bcap > KEEP_BUF) {
        free(a->body);
        a->body = NULL;
        a->bcap = 0;
    }
    s->in = a->in;
    s->incap = a->cap;
    s->body = a->body;
    s->bodycap = a->bcap;
}

/* Reads the answer on the slot's connection into the slot's buffers; the
 * connection is kept only when it can carry another request. */
static apr_status_t receive(prov_gateway_response_t **resp, prov_gateway_slot_t *s,
                            apr_time_t deadline,
                            apr_pool_t *p)
{
    prov_gateway_answer_t a;
    prov_gateway_sock_t sock;
    apr_status_t rv;
    memset(&a, 0, sizeof(a));
    sock.fd = s->fd;
    sock.deadline = deadline;
    a.read = prov_gateway_conn_recv;
    a.src = &sock;
    a.in = s->in;
    a.cap = s->incap;
    a.body = s->body;
    a.bcap = s->bodycap;
    s->in = s->body = NULL;
    rv = prov_gateway_answer_read(&a, p);
    if (rv == APR_SUCCESS)
        *resp = prov_gateway_answer_response(&a, p);
    /* bytes beyond the answer: the connection is out of step */
    if (rv != APR_SUCCESS || !a.keep || a.pos != a.len)
        prov_gateway_conn_drop(s);
    prov_gateway_conn_park(s);
    keep_buffers(s, &a);
    return rv;
}

/* The request on a kept connection to req->owner (the thread's own, else
 * the process's idle one last given back; checked before reuse, made when
 * there is none), sent by send_request's rule; *s is the
 * slot. Once this succeeds the gateway may have the whole request: whatever
 * fails afterwards, it is not sent again. */
static apr_status_t open_and_send(prov_gateway_slot_t **s, const prov_gateway_req_t *req,
                                  apr_time_t deadline, const char **why, apr_pool_t *p)
{
    apr_status_t rv;
    *why = NULL;
    if ((rv = prov_gateway_conn_slot(s, req->owner)) != APR_SUCCESS)
        return rv;
    if ((*s)->fd >= 0 && !prov_gateway_conn_usable((*s)->fd))
        prov_gateway_conn_drop(*s);
    if ((*s)->fd < 0)
        prov_gateway_conn_take(*s);
    return send_request(*s, req, head_of(req->where, req, p), deadline, why);
}

apr_status_t prov_gateway_http_request(prov_gateway_response_t **resp,
                                       const prov_gateway_req_t *req,
                                       const char **why, apr_pool_t *p)
{
    apr_time_t deadline = apr_time_now() + apr_time_from_msec(req->timeout_ms);
    prov_gateway_slot_t *s = NULL;
    apr_status_t rv;

    if ((rv = open_and_send(&s, req, deadline, why, p)) != APR_SUCCESS)
        return rv;
    if ((rv = receive(resp, s, deadline, p)) != APR_SUCCESS)
        return failure(rv, 1, why);
    return APR_SUCCESS;
}

/* ---- streams ------------------------------------------------------------------ */

/* A stream's answer on the slot's connection, its body handed to req->cb as
 * it is decoded; the connection is kept only when the answer ended cleanly. */
static apr_status_t receive_stream(int *status, prov_gateway_slot_t *s,
                                   const prov_gateway_req_t *req,
                                   apr_pool_t *p)
{
    prov_gateway_answer_t a;
    prov_gateway_ssock_t sock;
    apr_status_t rv;
    memset(&a, 0, sizeof(a));
    memset(&sock, 0, sizeof(sock));
    sock.fd = s->fd;
    sock.last_data = sock.last_tick = apr_time_now();
    sock.idle_limit = apr_time_from_msec(req->timeout_ms);
    sock.tick = req->tick;
    sock.idle = req->idle;
    sock.baton = req->baton;
    a.read = prov_gateway_conn_recv_stream;
    a.src = &sock;
    a.sink = req->cb;
    a.baton = req->baton;
    a.status_out = status;
    a.in = s->in;
    a.cap = s->incap;
    a.body = s->body;
    a.bcap = s->bodycap;
    s->in = s->body = NULL;
    rv = prov_gateway_answer_read(&a, p);
    if (req->retry_after && a.retry_after)
        *req->retry_after = a.retry_after;
    if (rv != APR_SUCCESS || !a.keep || a.pos != a.len)
        prov_gateway_conn_drop(s);
    prov_gateway_conn_park(s);
    keep_buffers(s, &a);
    return rv;
}

/* A stream from an http:// gateway: the request as prov_gateway_http_request
 * sends it (never twice), then the answer read as it comes, bounded by the
 * gateway's silence rather than a total time. */
static apr_status_t http_stream(int *status, const prov_gateway_req_t *req, const char **why,
                                apr_pool_t *p)
{
    apr_time_t deadline = apr_time_now() + apr_time_from_msec(req->timeout_ms);
    prov_gateway_slot_t *s = NULL;
    apr_status_t rv;

    *status = 0;
    if ((rv = open_and_send(&s, req, deadline, why, p)) != APR_SUCCESS)
        return rv;
    rv = receive_stream(status, s, req, p);
    if (rv == APR_SUCCESS || rv == APR_ECONNABORTED)
        return rv;
    if (rv == APR_TIMEUP) {
        *why = "the stream was silent too long";
        return rv;
    }
    return failure(rv, 1, why);
}

const prov_gateway_backend_t prov_gateway_http_backend = {
    "http/1.1", NULL, http_setup, prov_gateway_http_request, http_stream
};
