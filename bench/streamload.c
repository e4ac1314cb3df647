/* streamload.c: N streams open at once against one server, as N agents
 * would hold them: it connects N sockets (one epoll loop, non-blocking),
 * writes the same streamed request on each, reads every answer to its end
 * and sorts them: completed (a 200 whose chunked body ended and holds the
 * stream's last event, END), or failed by status (502, 504, other) or by
 * the connection (refused, reset, closed early). It prints one line,
 *
 *   STREAMLOAD open=N connected=C completed=K s502=A s504=B other=O conn=E
 *              unfinished=L opened_ms=T first_ms=F all_ms=U
 *
 * (opened_ms: when the last request was written; first_ms: when the first
 * answer ended, so that what a script measured "with every stream open"
 * can be checked to have ended before it; all_ms: when the last answer
 * ended; all from the start), and writes "OPEN\n" to stderr once every request is
 * written, for the script that watches memory meanwhile.
 * bench/streams10k.sh runs it.
 *
 *   streamload PORT PATH BODYFILE N END HEADER...
 *
 * The process needs N + a few descriptors (ulimit -n). */
#define _GNU_SOURCE 1               /* memmem */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#define KEEP 4096                   /* the answer's head and its last bytes */

typedef struct conn_t {
    int fd, status, done, sent;
    size_t wrote;
    char head[KEEP];                /* the first bytes (status line) */
    size_t hlen;
    char tail[KEEP];                /* the last bytes */
    size_t tlen;
} conn_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int open_one(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Keeps the first and the last KEEP bytes of the answer. */
static void keep(conn_t *c, const char *b, size_t n)
{
    size_t k = n < KEEP - 1 - c->hlen ? n : KEEP - 1 - c->hlen;
    memcpy(c->head + c->hlen, b, k);
    c->hlen += k;
    c->head[c->hlen] = '\0';
    if (n >= KEEP - 1) {
        memcpy(c->tail, b + n - (KEEP - 1), KEEP - 1);
        c->tlen = KEEP - 1;
    }
    else {
        size_t drop = c->tlen + n > KEEP - 1 ? c->tlen + n - (KEEP - 1) : 0;
        memmove(c->tail, c->tail + drop, c->tlen - drop);
        c->tlen -= drop;
        memcpy(c->tail + c->tlen, b, n);
        c->tlen += n;
    }
    c->tail[c->tlen] = '\0';
}

/* 1 when a 200's chunked body has ended (any answer also ends with the
 * connection: the request said Connection: close). */
static int ended(conn_t *c)
{
    if (!c->status && c->hlen >= 12 && !strncmp(c->head, "HTTP/1.1 ", 9))
        c->status = atoi(c->head + 9);
    return c->status == 200 && c->tlen >= 5 && !memcmp(c->tail + c->tlen - 5, "0\r\n\r\n", 5);
}

int main(int argc, char **argv)
{
    int port, n, i, h, ep, left, connected = 0, completed = 0, s502 = 0, s504 = 0, other = 0,
        conn_err = 0;
    char *req, body[65536], buf[65536];
    size_t blen, rlen;
    const char *end;
    conn_t *cs;
    FILE *bf;
    double t0, opened = 0, first = 0, all = 0;
    struct epoll_event ev, evs[256];

    if (argc < 6) {
        fputs("usage: streamload PORT PATH BODYFILE N END HEADER...\n", stderr);
        return 2;
    }
    port = atoi(argv[1]);
    n = atoi(argv[4]);
    end = argv[5];
    if (!(bf = fopen(argv[3], "r")) || n <= 0)
        return 2;
    blen = fread(body, 1, sizeof body, bf);
    fclose(bf);
    req = malloc(blen + 8192);
    rlen = (size_t)sprintf(req, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                           "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                           argv[2], blen);
    for (h = 6; h < argc; h++)
        rlen += (size_t)sprintf(req + rlen, "%s\r\n", argv[h]);
    rlen += (size_t)sprintf(req + rlen, "\r\n");
    memcpy(req + rlen, body, blen);
    rlen += blen;

    cs = calloc((size_t)n, sizeof *cs);
    ep = epoll_create1(0);
    t0 = now_ms();
    left = n;
    for (i = 0; i < n; i++) {
        cs[i].fd = open_one(port);
        if (cs[i].fd < 0) {
            cs[i].done = 1;
            conn_err++;
            left--;
            continue;
        }
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.ptr = &cs[i];
        epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
    }
    while (left > 0) {
        int k = epoll_wait(ep, evs, 256, 120000);
        if (k <= 0)
            break;                  /* two minutes without a byte: give up */
        for (i = 0; i < k; i++) {
            conn_t *c = evs[i].data.ptr;
            ssize_t r;
            if (c->done)
                continue;
            if (!c->sent && (evs[i].events & EPOLLOUT)) {
                r = send(c->fd, req + c->wrote, rlen - c->wrote, MSG_NOSIGNAL);
                if (r > 0 && (c->wrote += (size_t)r) == rlen) {
                    c->sent = 1;
                    connected++;
                    ev.events = EPOLLIN;
                    ev.data.ptr = c;
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                    if (connected + conn_err == n) {
                        opened = now_ms() - t0;
                        fputs("OPEN\n", stderr);
                    }
                }
                else if (r < 0 && errno != EAGAIN) {
                    c->done = 1;
                    conn_err++;
                    left--;
                    close(c->fd);
                }
                continue;
            }
            while ((r = recv(c->fd, buf, sizeof buf, 0)) > 0)
                keep(c, buf, (size_t)r);
            if (ended(c) || r == 0 || (r < 0 && errno != EAGAIN)) {
                c->done = 1;
                left--;
                close(c->fd);
                if (c->status == 200 && ended(c) && strstr(c->tail, end))
                    completed++;
                else if (c->status == 502)
                    s502++;
                else if (c->status == 504)
                    s504++;
                else if (c->status)
                    other++;
                else
                    conn_err++;
                if (first == 0)
                    first = now_ms() - t0;
                if (!left)
                    all = now_ms() - t0;
            }
        }
    }
    printf("STREAMLOAD open=%d connected=%d completed=%d s502=%d s504=%d other=%d conn=%d "
           "unfinished=%d opened_ms=%.0f first_ms=%.0f all_ms=%.0f\n", n, connected, completed,
           s502, s504, other, conn_err, left, opened, first, all);
    free(cs);
    free(req);
    return 0;
}
