/* streamtime.c: where the time of one streamed request goes. It sends the
 * same streamed request COUNT times, one at a time, on one kept connection
 * (TCP_NODELAY, as an SDK's), to a server (mod_provider or mod_proxy in
 * front of mockgw), and times on CLOCK_MONOTONIC, from the moment the
 * request is written: the first byte of the answer, each event's last byte
 * (an event ends with a blank line), and the answer's last byte (the
 * zero-length chunk). With mockgw's --times FILE it reads, after each
 * request, the lines the gateway wrote meanwhile (when it had read the
 * request, when it wrote each event: the same clock) and sets them beside
 * the client's. It prints the median (and the 90th percentile) of each
 * figure over the requests after WARMUP; bench/streamtime.sh runs it.
 *
 *   streamtime PORT PATH BODYFILE COUNT WARMUP TIMESFILE|- HEADER...
 *
 * Plain POSIX; HTTP/1.1 with chunked answers only (what both servers send
 * for a stream). Exit status 1 when an answer is not a 200 stream. */
#define _GNU_SOURCE 1             /* memmem */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#define MAXEV 256
#define BUFSZ (1 << 20)

typedef struct {
    double first, end;              /* ms after the request was written */
    double ev[MAXEV];
    int nev;
    double gw_req, gw_ev[MAXEV];    /* the gateway's, same origin; -1: none */
    int ngw;
} sample_t;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int connect_to(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("streamtime: connect");
        exit(1);
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Reads one 200 answer, timing its events (chunked), or its whole body
 * (Content-Length, one "event"); 0, or -1 when it is not a 200 or the
 * connection ended early. */
static int read_answer(int fd, double t0, sample_t *s, char *buf)
{
    size_t len = 0, pos = 0, body = 0, chunk_left = 0, clen = 0;
    int in_body = 0, chunked = 0;
    char last2[2] = { 0, 0 };

    for (;;) {
        ssize_t n = recv(fd, buf + len, BUFSZ - len, 0);
        double t = (now_us() - t0) / 1e3;
        if (n <= 0)
            return -1;
        if (s->first == 0)
            s->first = t;
        len += (size_t)n;
        if (!in_body) {
            char *e = memmem(buf, len, "\r\n\r\n", 4);
            if (!e)
                continue;
            char *cl = memmem(buf, (size_t)(e - buf), "Content-Length: ", 16);
            chunked = memmem(buf, (size_t)(e - buf), "chunked", 7) != NULL;
            if (strncmp(buf, "HTTP/1.1 200", 12) != 0 || (!chunked && !cl)) {
                fprintf(stderr, "streamtime: not a 200 answer:\n%.*s\n", (int)len, buf);
                return -1;
            }
            in_body = 1;
            pos = (size_t)(e - buf) + 4;
            clen = chunked ? 0 : strtoul(cl + 16, NULL, 10);
        }
        if (!chunked) {
            body += len - pos;
            len = pos = 0;
            if (body >= clen) {
                s->ev[s->nev++] = t;
                s->end = t;
                return 0;
            }
            continue;
        }
        while (pos < len) {
            if (chunk_left == 0) {
                char *nl = memmem(buf + pos, len - pos, "\r\n", 2);
                size_t size;
                if (!nl)
                    break;
                size = strtoul(buf + pos, NULL, 16);
                if (size == 0) {
                    s->end = t;
                    return 0;
                }
                chunk_left = size;
                pos = (size_t)(nl - buf) + 2;
                continue;
            }
            while (pos < len && chunk_left > 0) {
                char ch = buf[pos++];
                chunk_left--;
                body++;
                if (ch == '\n' && last2[1] == '\n' && s->nev < MAXEV)
                    s->ev[s->nev++] = t;
                last2[0] = last2[1];
                last2[1] = ch;
            }
            if (chunk_left == 0) {
                if (len - pos < 2)
                    break;
                pos += 2;           /* the chunk's CRLF */
            }
        }
        /* keep the unparsed tail at the start of the buffer */
        memmove(buf, buf + pos, len - pos);
        len -= pos;
        pos = 0;
    }
}

/* The gateway's lines written since *off: its request and event times. */
static void read_gateway(FILE *f, double t0, sample_t *s)
{
    char line[256];
    s->gw_req = -1;
    s->ngw = 0;
    if (!f)
        return;
    clearerr(f);
    while (fgets(line, sizeof line, f)) {
        int fd;
        char what[32];
        long i;
        double us;
        if (sscanf(line, "mgwtime %d %31s %ld %lf", &fd, what, &i, &us) != 4)
            continue;
        if (strcmp(what, "request") == 0)
            s->gw_req = (us - t0) / 1e3;
        else if (s->ngw < MAXEV)
            s->gw_ev[s->ngw++] = (us - t0) / 1e3;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Prints the median and the 90th percentile of v[0..n). */
static void row(const char *name, double *v, int n)
{
    if (n == 0)
        return;
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("  %-44s %8.3f %8.3f\n", name, v[n / 2], v[(n * 9) / 10]);
}

static void report(sample_t *s, int n)
{
    double *v = malloc(sizeof(double) * (size_t)n);
    int i, k, m, nev = s[0].nev, ngw = s[0].ngw;
    char name[64];

    printf("  %-44s %8s %8s\n", "(ms after the request was written)", "median", "p90");
#define ROW(label, expr, cond)                                                      \
    do {                                                                           \
        for (m = 0, i = 0; i < n; i++)                                             \
            if (cond)                                                              \
                v[m++] = (expr);                                                   \
        row(label, v, m);                                                          \
    } while (0)
    ROW("gateway has read the request", s[i].gw_req, s[i].gw_req >= 0);
    for (k = 0; k < ngw; k++) {
        snprintf(name, sizeof name, "gateway wrote event %d", k + 1);
        ROW(name, s[i].gw_ev[k], s[i].ngw > k);
    }
    ROW("client: first byte", s[i].first, 1);
    for (k = 0; k < nev; k++) {
        snprintf(name, sizeof name, "client: event %d complete", k + 1);
        ROW(name, s[i].ev[k], s[i].nev > k);
    }
    ROW("client: last byte (end of the answer)", s[i].end, 1);
    ROW("first byte after the gateway's first event", s[i].first - s[i].gw_ev[0],
        s[i].ngw > 0);
    ROW("last byte after the gateway's last event", s[i].end - s[i].gw_ev[s[i].ngw - 1],
        s[i].ngw > 0);
#undef ROW
    free(v);
}

int main(int argc, char **argv)
{
    char *buf = malloc(BUFSZ), *req, *body;
    size_t blen, rlen;
    int port, count, warm, fd, i, h;
    sample_t *s;
    FILE *bf, *tf = NULL;

    if (argc < 7) {
        fputs("usage: streamtime PORT PATH BODYFILE COUNT WARMUP TIMESFILE|- HEADER...\n",
              stderr);
        return 2;
    }
    port = atoi(argv[1]);
    count = atoi(argv[4]);
    warm = atoi(argv[5]);
    if (!(bf = fopen(argv[3], "r")) || count <= 0) {
        fputs("streamtime: cannot read the body file, or COUNT is not positive\n", stderr);
        return 2;
    }
    body = malloc(65536);
    blen = fread(body, 1, 65535, bf);
    fclose(bf);
    if (strcmp(argv[6], "-") != 0 && !(tf = fopen(argv[6], "r"))) {
        perror(argv[6]);
        return 2;
    }
    if (tf)
        fseek(tf, 0, SEEK_END);
    req = malloc(blen + 8192);
    rlen = (size_t)sprintf(req, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "Content-Type: application/json\r\nContent-Length: %zu\r\n",
                           argv[2], blen);
    for (h = 7; h < argc; h++)
        rlen += (size_t)sprintf(req + rlen, "%s\r\n", argv[h]);
    rlen += (size_t)sprintf(req + rlen, "\r\n");
    memcpy(req + rlen, body, blen);
    rlen += blen;

    s = calloc((size_t)(count + warm), sizeof *s);
    fd = connect_to(port);
    for (i = 0; i < count + warm; i++) {
        double t0 = now_us();
        if (send(fd, req, rlen, MSG_NOSIGNAL) != (ssize_t)rlen || read_answer(fd, t0, &s[i], buf)) {
            fprintf(stderr, "streamtime: request %d failed\n", i + 1);
            return 1;
        }
        usleep(2000);               /* the gateway's last lines are written */
        read_gateway(tf, t0, &s[i]);
    }
    printf("  %d requests (after %d to warm up), %d events each\n", count, warm, s[warm].nev);
    report(s + warm, count);
    close(fd);
    if (tf)
        fclose(tf);
    free(s);
    free(req);
    free(body);
    free(buf);
    return 0;
}
