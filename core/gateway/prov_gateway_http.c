/* prov_gateway_http.c: the gateway client for answers that are not
 * streamed, when the gateway is reached over plain http:// (the usual case:
 * an internal service on the same host or network). It speaks just enough
 * HTTP/1.1 for one request at a time: each thread keeps one keep-alive
 * connection per gateway, writes the request with one sendmsg, and reads the
 * answer (Content-Length, chunked, or up to the close), within the connect
 * and total timeouts. A kept connection is checked before reuse (as
 * mod_proxy does): one the gateway closed, reset or wrote to while idle is
 * dropped and a new one made. A request is never sent twice once the gateway
 * may have read all of it: it is sent again (once, on a new connection) only
 * when writing it to a kept connection failed before all its bytes were
 * handed to the kernel; any failure after that is the caller's gateway
 * error, since the gateway may be running it. Streams and https:// gateways
 * stay with libcurl
 * (prov_gateway.c); for a small answer this client costs about 38 µs of CPU
 * per call where libcurl's easy interface cost 55 (measured against mockgw).
 * The service token is written to the socket and nowhere else. */
#define _GNU_SOURCE 1   /* memmem */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include <apr_time.h>
#include "prov_gateway_int.h"
#include "prov_log.h"

#define MAX_HEAD (64 * 1024)            /* the answer's status line and headers */
#define MAX_BODY (256 * 1024 * 1024)    /* an answer that is not streamed */
#define MAX_CHUNK_LINE 1024             /* a chunk's size line, extensions included */
#define SLOTS 4                         /* gateways a thread keeps a connection to */

/* Answer buffers a thread keeps between calls, up to this size each (a
 * 32 KB malloc per call made malloc consolidate its free lists each time). */
#define KEEP_BUF (64 * 1024)

typedef struct slot_t {
    const void *gw;
    int fd;
    char *in, *body;                /* kept buffers, and their sizes */
    apr_size_t incap, bodycap;
} slot_t;

static pthread_key_t conn_key;
static pthread_once_t conn_once = PTHREAD_ONCE_INIT;

static void conn_thread_cleanup(void *v)
{
    slot_t *slots = v;
    int i;
    for (i = 0; i < SLOTS; i++) {
        if (slots[i].fd >= 0)
            close(slots[i].fd);
        free(slots[i].in);
        free(slots[i].body);
    }
    free(slots);
}

static void conn_key_init(void)
{
    pthread_key_create(&conn_key, conn_thread_cleanup);
}

/* This thread's slot for gw (a free or the oldest one when gw has none). */
static slot_t *slot_of(const void *gw)
{
    slot_t *slots;
    int i;
    pthread_once(&conn_once, conn_key_init);
    slots = pthread_getspecific(conn_key);
    if (!slots) {
        if (!(slots = calloc(SLOTS, sizeof(*slots))))
            return NULL;
        for (i = 0; i < SLOTS; i++)
            slots[i].fd = -1;
        pthread_setspecific(conn_key, slots);
    }
    for (i = 0; i < SLOTS; i++) {
        if (slots[i].gw == gw)
            return &slots[i];
    }
    for (i = 0; i < SLOTS; i++) {
        if (!slots[i].gw)
            break;
    }
    if (i == SLOTS) {
        i = SLOTS - 1;
        if (slots[i].fd >= 0)
            close(slots[i].fd);
        free(slots[i].in);
        free(slots[i].body);
        memmove(slots + 1, slots, (SLOTS - 1) * sizeof(*slots));
        i = 0;
        slots[i].in = slots[i].body = NULL;
        slots[i].incap = slots[i].bodycap = 0;
    }
    slots[i].gw = gw;
    slots[i].fd = -1;
    return &slots[i];
}

static void drop(slot_t *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
}

/* Milliseconds left until deadline (at least 0). */
static int left_ms(apr_time_t deadline)
{
    apr_time_t d = deadline - apr_time_now();
    if (d <= 0)
        return 0;
    return d / 1000 > 0x7fffffff ? 0x7fffffff : (int)(d / 1000) + 1;
}

static apr_status_t wait_fd(int fd, short events, apr_time_t deadline)
{
    struct pollfd pfd;
    int n;
    pfd.fd = fd;
    pfd.events = events;
    do {
        n = poll(&pfd, 1, left_ms(deadline));
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return APR_FROM_OS_ERROR(errno);
    return n == 0 ? APR_TIMEUP : APR_SUCCESS;
}

/* After a send or recv that failed: APR_SUCCESS to try again (interrupted,
 * or the socket became ready before the deadline), else why not. */
static apr_status_t again(int fd, short events, apr_time_t deadline)
{
    if (errno == EINTR)
        return APR_SUCCESS;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
        return APR_FROM_OS_ERROR(errno);
    return wait_fd(fd, events, deadline);
}

/* Whether a kept, idle connection can carry a request: nothing may be
 * readable on it. A readable one holds the gateway's close (EOF), a reset,
 * or bytes nobody asked for (out of step): all dead. */
static int still_open(int fd)
{
    struct pollfd pfd;
    char c;
    ssize_t k;
    int n;
    pfd.fd = fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    do {
        n = poll(&pfd, 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n == 0)
        return 1;
    if (n < 0 || (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
        return 0;
    do {
        k = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (k < 0 && errno == EINTR);
    return k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static apr_status_t open_conn(int *pfd, const prov_gw_target_t *t, apr_time_t deadline)
{
    struct addrinfo hints, *res = NULL, *ai;
    apr_status_t rv = APR_ECONNREFUSED;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(t->host, t->port, &hints, &res) != 0 || !res)
        return APR_ECONNREFUSED;
    for (ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        ai->ai_protocol);
        int one = 1, err = 0;
        socklen_t el = sizeof(err);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
            if (errno != EINPROGRESS) {
                close(fd);
                continue;
            }
            if ((rv = wait_fd(fd, POLLOUT, deadline)) != APR_SUCCESS) {
                close(fd);
                if (rv == APR_TIMEUP)
                    break;
                rv = APR_ECONNREFUSED;
                continue;
            }
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
                close(fd);
                rv = APR_ECONNREFUSED;
                continue;
            }
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        *pfd = fd;
        rv = APR_SUCCESS;
        break;
    }
    freeaddrinfo(res);
    return rv;
}

static apr_status_t send_all(int fd, struct iovec *iov, int n, apr_time_t deadline)
{
    while (n > 0) {
        /* sendmsg, not writev: a gateway that went away must not raise
         * SIGPIPE in a process that has not ignored it */
        struct msghdr m;
        ssize_t k;
        memset(&m, 0, sizeof(m));
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)n;
        k = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (k < 0) {
            apr_status_t rv = again(fd, POLLOUT, deadline);
            if (rv != APR_SUCCESS)
                return rv;
            continue;
        }
        while (n > 0 && (size_t)k >= iov->iov_len) {
            k -= iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= k;
        }
    }
    return APR_SUCCESS;
}

/* ---- the answer ----------------------------------------------------------- */

typedef struct answer_t {
    char *in;                       /* bytes read, not yet consumed */
    apr_size_t len, cap, pos;
    char *body;                     /* the decoded body */
    apr_size_t blen, bcap;
    int status;
    int minor;
    int keep;                       /* the connection may serve another request */
    apr_int64_t clen;               /* Content-Length, or -1 */
    int chunked;
    const char *content_type;
    const char *retry_after;
    const char *src;                /* prov_gw_http_parse: the bytes "received" */
    apr_size_t srclen, step;        /* left to read, and bytes per read */
    int mem;                        /* read from src, not from a socket */
} answer_t;

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
static apr_status_t fill(int fd, answer_t *a, apr_time_t deadline)
{
    apr_status_t rv;
    if (a->len - a->pos > MAX_BODY)
        return APR_ENOSPC;
    if ((rv = reserve(&a->in, &a->cap, a->len + 16384 + 1)) != APR_SUCCESS)
        return rv;
    if (a->mem) {
        apr_size_t k = a->srclen < a->cap - a->len - 1 ? a->srclen : a->cap - a->len - 1;
        if (!k)
            return APR_EOF;
        if (a->step && k > a->step)
            k = a->step;
        memcpy(a->in + a->len, a->src, k);
        a->src += k;
        a->srclen -= k;
        a->len += k;
        a->in[a->len] = '\0';
        return APR_SUCCESS;
    }
    for (;;) {
        ssize_t k = recv(fd, a->in + a->len, a->cap - a->len - 1, 0);
        if (k > 0) {
            a->len += (apr_size_t)k;
            a->in[a->len] = '\0';
            return APR_SUCCESS;
        }
        if (k == 0)
            return APR_EOF;
        if ((rv = again(fd, POLLIN, deadline)) != APR_SUCCESS)
            return rv;
    }
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

/* Parses the head in a->in[pos, end) (end: after the blank line). */
static apr_status_t parse_head(answer_t *a, apr_size_t end, apr_pool_t *p)
{
    char *line = a->in + a->pos, *stop = a->in + end - 2;
    char *eol;
    int code;
    if (strncmp(line, "HTTP/1.", 7) || (line[7] != '0' && line[7] != '1') || line[8] != ' ')
        return APR_EGENERAL;
    a->minor = line[7] - '0';
    if (line[9] < '1' || line[9] > '5' || line[10] < '0' || line[10] > '9'
        || line[11] < '0' || line[11] > '9' || (line[12] != ' ' && line[12] != '\r'))
        return APR_EGENERAL;
    code = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    a->status = code;
    a->keep = a->minor == 1;
    a->clen = -1;
    a->chunked = 0;
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
        if (!strcasecmp(line, "Content-Length")) {
            char *e = NULL;
            long long n = strtoll(v, &e, 10);
            if (!*v || *e || n < 0 || n > MAX_BODY)
                return APR_EGENERAL;
            a->clen = n;
        }
        else if (!strcasecmp(line, "Transfer-Encoding"))
            a->chunked = has_token(v, "chunked");
        else if (!strcasecmp(line, "Connection")) {
            if (has_token(v, "close"))
                a->keep = 0;
            else if (has_token(v, "keep-alive"))
                a->keep = 1;
        }
        else if (!strcasecmp(line, "Content-Type"))
            a->content_type = apr_pstrdup(p, v);
        else if (!strcasecmp(line, "Retry-After"))
            a->retry_after = apr_pstrdup(p, v);
    }
    a->pos = end;
    return APR_SUCCESS;
}

static apr_status_t append(answer_t *a, const char *data, apr_size_t n)
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

/* One chunked body, decoded as far as the bytes read allow: APR_SUCCESS
 * when it is complete, APR_INCOMPLETE when more bytes are needed. The
 * result never depends on how the bytes were split into reads: a size line
 * is at most MAX_CHUNK_LINE bytes, and its size only hex digits. */
static apr_status_t decode_chunks(answer_t *a)
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

static apr_status_t read_answer(int fd, answer_t *a, apr_time_t deadline, apr_pool_t *p)
{
    apr_status_t rv;
    /* the head; informational answers (100 Continue) are skipped */
    for (;;) {
        char *end = NULL;
        while (!a->in || !(end = memmem(a->in + a->pos, a->len - a->pos, "\r\n\r\n", 4))) {
            if (a->len - a->pos > MAX_HEAD)
                return APR_EGENERAL;
            if ((rv = fill(fd, a, deadline)) != APR_SUCCESS)
                return rv;
        }
        if ((apr_size_t)(end + 4 - (a->in + a->pos)) > MAX_HEAD)
            return APR_EGENERAL;
        if ((rv = parse_head(a, (apr_size_t)(end + 4 - a->in), p)) != APR_SUCCESS)
            return rv;
        if (a->status >= 200)
            break;
    }
    if (a->status == 204 || a->status == 304)
        return APR_SUCCESS;
    if (a->chunked) {
        while ((rv = decode_chunks(a)) == APR_INCOMPLETE) {
            if ((rv = fill(fd, a, deadline)) != APR_SUCCESS)
                return rv == APR_EOF ? APR_EGENERAL : rv;
        }
        return rv;
    }
    if (a->clen >= 0) {
        while (a->len - a->pos < (apr_size_t)a->clen) {
            if ((rv = fill(fd, a, deadline)) != APR_SUCCESS)
                return rv == APR_EOF ? APR_EGENERAL : rv;
        }
        rv = append(a, a->in + a->pos, (apr_size_t)a->clen);
        a->pos += (apr_size_t)a->clen;
        return rv;
    }
    /* neither: the body ends with the connection */
    a->keep = 0;
    while ((rv = fill(fd, a, deadline)) == APR_SUCCESS)
        ;
    if (rv != APR_EOF)
        return rv;
    rv = append(a, a->in + a->pos, a->len - a->pos);
    a->pos = a->len;
    return rv;
}

/* ---- the request ------------------------------------------------------------ */

static const char *head_of(const prov_gw_target_t *t, const char *auth_header, const char *path,
                           const char *body, apr_size_t len, const apr_table_t *headers,
                           apr_pool_t *p)
{
    apr_array_header_t *parts = apr_array_make(p, 16, sizeof(const char *));
    APR_ARRAY_PUSH(parts, const char *) = body ? "POST " : "GET ";
    APR_ARRAY_PUSH(parts, const char *) = t->prefix;
    APR_ARRAY_PUSH(parts, const char *) = path;
    APR_ARRAY_PUSH(parts, const char *) = " HTTP/1.1\r\nHost: ";
    APR_ARRAY_PUSH(parts, const char *) = t->host_header;
    APR_ARRAY_PUSH(parts, const char *) = "\r\nAccept: */*\r\n";
    if (auth_header) {
        APR_ARRAY_PUSH(parts, const char *) = auth_header;
        APR_ARRAY_PUSH(parts, const char *) = "\r\n";
    }
    if (body) {
        APR_ARRAY_PUSH(parts, const char *) = "Content-Type: application/json\r\nContent-Length: ";
        APR_ARRAY_PUSH(parts, const char *) = apr_psprintf(p, "%" APR_SIZE_T_FMT "\r\n", len);
    }
    if (headers) {
        const apr_array_header_t *arr = apr_table_elts(headers);
        const apr_table_entry_t *e = (const apr_table_entry_t *)arr->elts;
        int i;
        for (i = 0; i < arr->nelts; i++) {
            /* a header value never carries a line break onto the wire */
            if (strpbrk(e[i].key, "\r\n:") || strpbrk(e[i].val, "\r\n"))
                continue;
            APR_ARRAY_PUSH(parts, const char *) = apr_pstrcat(p, e[i].key, ": ", e[i].val,
                                                             "\r\n", NULL);
        }
    }
    APR_ARRAY_PUSH(parts, const char *) = "\r\n";
    return apr_array_pstrcat(p, parts, 0);
}

/* Gives a call's buffers back to its slot (or frees the large ones). */
static void keep_buffers(slot_t *s, answer_t *a)
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

static prov_gw_response_t *response_of(const answer_t *a, apr_pool_t *p)
{
    prov_gw_response_t *r = apr_pcalloc(p, sizeof(*r));
    r->status = a->status;
    r->body = a->body ? apr_pstrmemdup(p, a->body, a->blen) : apr_pstrdup(p, "");
    r->len = a->blen;
    r->content_type = a->content_type;
    r->retry_after = a->retry_after;
    return r;
}

apr_status_t prov_gw_http_parse(prov_gw_response_t **resp, int *keep, const char *buf,
                                apr_size_t len, apr_size_t step, apr_pool_t *p)
{
    answer_t a;
    apr_status_t rv;
    memset(&a, 0, sizeof(a));
    a.mem = 1;
    a.src = buf ? buf : "";
    a.srclen = len;
    a.step = step;
    rv = read_answer(-1, &a, 0, p);
    if (rv == APR_SUCCESS) {
        *resp = response_of(&a, p);
        *keep = a.keep && a.pos == a.len;
    }
    free(a.in);
    free(a.body);
    return rv;
}

apr_status_t prov_gw_http_request(prov_gw_response_t **resp, const prov_gw_target_t *t,
                                  const void *gw, const char *auth_header,
                                  long connect_timeout_ms, long timeout_ms, const char *path,
                                  const char *body, apr_size_t len, const apr_table_t *headers,
                                  const char **why, apr_pool_t *p)
{
    const char *head = head_of(t, auth_header, path, body, len, headers, p);
    apr_time_t deadline = apr_time_now() + apr_time_from_msec(timeout_ms);
    slot_t *s = slot_of(gw);
    apr_status_t rv = APR_EGENERAL;
    int attempt, sent = 0;

    *why = NULL;
    if (!s)
        return APR_ENOMEM;
    if (s->fd >= 0 && !still_open(s->fd))
        drop(s);
    for (attempt = 0; attempt < 2; attempt++) {
        int reused = s->fd >= 0;
        struct iovec iov[2];
        answer_t a;
        memset(&a, 0, sizeof(a));
        if (!reused) {
            apr_time_t cd = apr_time_now() + apr_time_from_msec(connect_timeout_ms);
            rv = open_conn(&s->fd, t, cd < deadline ? cd : deadline);
            if (rv != APR_SUCCESS) {
                s->fd = -1;
                *why = rv == APR_TIMEUP ? "connect timed out" : "cannot connect";
                return rv;
            }
        }
        iov[0].iov_base = (void *)head;
        iov[0].iov_len = strlen(head);
        iov[1].iov_base = (void *)(body ? body : "");
        iov[1].iov_len = body ? len : 0;
        rv = send_all(s->fd, iov, body && len ? 2 : 1, deadline);
        if (rv != APR_SUCCESS) {
            drop(s);
            /* Part of the request is still ours: the gateway cannot have
             * read it whole, so a kept connection that failed here may be
             * replaced once. */
            if (reused && rv != APR_TIMEUP)
                continue;
            break;
        }
        /* From here on the gateway may have the whole request: whatever
         * fails, it is not sent again. */
        sent = 1;
        a.in = s->in;
        a.cap = s->incap;
        a.body = s->body;
        a.bcap = s->bodycap;
        s->in = s->body = NULL;
        rv = read_answer(s->fd, &a, deadline, p);
        if (rv == APR_SUCCESS) {
            *resp = response_of(&a, p);
            /* bytes beyond the answer: the connection is out of step */
            if (!a.keep || a.pos != a.len)
                drop(s);
            keep_buffers(s, &a);
            return APR_SUCCESS;
        }
        keep_buffers(s, &a);
        drop(s);
        break;
    }
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
