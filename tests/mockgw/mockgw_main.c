/*
 * mockgw_main.c — process life of the mock gateway: command line, service
 * token, model list, the listening socket, one thread per connection, and
 * shutdown on SIGTERM/SIGINT. Sized for ten thousand open streams and more
 * (bench/streams10k.sh): a small thread stack, a deep listen backlog, the
 * descriptor limit raised to its hard limit.
 *
 * Contract (tests and bench/ rely on it):
 *   mockgw --listen HOST:PORT --token-file FILE [--verbose] [--models LIST]
 *          [--times FILE]
 * PORT may be 0; once listening, exactly one line "mockgw listening on
 * HOST:PORT" (the bound port) goes to stdout. --models (or MOCKGW_MODELS) is a
 * comma-separated list of the ids GET /v1/models reports. Exit status: 0 after
 * SIGTERM/SIGINT, 1 on a startup failure, 2 on a usage error.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "mockgw.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MGW_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(MGW_ASAN)
#include <sanitizer/lsan_interface.h>
#define LEAK_CHECK() __lsan_do_leak_check()
#else
#define LEAK_CHECK() ((void)0)
#endif

#define DEFAULT_MODELS \
    "gpt-4o-mini,gpt-4o,claude-sonnet-4,claude-haiku-4,o3-mini,slow-model"
#define IDLE_TIMEOUT_SECONDS 300
#define LISTEN_BACKLOG 65535        /* the kernel caps it at net.core.somaxconn */
#define THREAD_STACK (256 * 1024)   /* 10,000 open streams: 10,000 threads */

mgw_config_t mgw_cfg;

_Noreturn static void usage(void)
{
    fputs("usage: mockgw --listen HOST:PORT --token-file FILE [--verbose] "
          "[--models ID,ID,...] [--times FILE]\n", stderr);
    exit(2);
}

/* Returns the token read from path, trailing whitespace removed, or exits. */
static char *read_token(const char *path)
{
    FILE *f = fopen(path, "r");
    mgw_buf_t b = { 0 };
    char chunk[4096];
    size_t n;

    if (!f) {
        fprintf(stderr, "mockgw: cannot open token file %s: %s\n", path,
                strerror(errno));
        exit(1);
    }
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        mgw_buf_append(&b, chunk, n);
    fclose(f);
    while (b.len > 0 && strchr(" \t\r\n", b.p[b.len - 1]))
        b.p[--b.len] = '\0';
    if (b.len == 0) {
        fprintf(stderr, "mockgw: token file %s is empty\n", path);
        exit(1);
    }
    return b.p;
}

/* Returns the GET /v1/models answer for a comma-separated list. */
static char *render_models(const char *list)
{
    json_object *o = json_object_new_object(), *data = json_object_new_array();
    char *copy = mgw_xstrdup(list), *save = NULL, *res;
    mgw_buf_t b = { 0 };

    for (char *id = strtok_r(copy, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
        while (*id == ' ')
            id++;
        char *end = id + strlen(id);
        while (end > id && end[-1] == ' ')
            *--end = '\0';
        if (!*id)
            continue;
        json_object *m = json_object_new_object();
        mgw_jset(m, "id", json_object_new_string(id));
        mgw_jset(m, "object", json_object_new_string("model"));
        mgw_jset(m, "created", json_object_new_int64(1700000000));
        mgw_jset(m, "owned_by", json_object_new_string("mockgw"));
        json_object_array_add(data, m);
    }
    mgw_jset(o, "object", json_object_new_string("list"));
    mgw_jset(o, "data", data);
    mgw_buf_json(&b, o);
    json_object_put(o);
    free(copy);
    res = b.p;
    return res;
}

/* Returns a listening socket for "host:port" ("[v6]:port" too), or exits. */
static int listen_on(const char *spec, char *shown, size_t shown_len)
{
    char host[256], port[16], h[NI_MAXHOST], s[NI_MAXSERV];
    const char *colon = strrchr(spec, ':');
    struct addrinfo hints, *ai = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    size_t hl;
    int fd, one = 1, rc;

    if (!colon || colon == spec || strlen(colon + 1) >= sizeof port
        || (hl = (size_t)(colon - spec)) >= sizeof host)
        usage();
    memcpy(host, spec, hl);
    host[hl] = '\0';
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    strcpy(port, colon + 1);
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    if ((rc = getaddrinfo(host, port, &hints, &ai)) != 0) {
        fprintf(stderr, "mockgw: cannot resolve %s: %s\n", spec, gai_strerror(rc));
        exit(1);
    }
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one)
        || bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, LISTEN_BACKLOG)
        || getsockname(fd, (struct sockaddr *)&ss, &sl)
        || getnameinfo((struct sockaddr *)&ss, sl, h, sizeof h, s, sizeof s,
                       NI_NUMERICHOST | NI_NUMERICSERV)) {
        fprintf(stderr, "mockgw: cannot listen on %s: %s\n", spec, strerror(errno));
        exit(1);
    }
    freeaddrinfo(ai);
    snprintf(shown, shown_len, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
             h, s);
    return fd;
}

static void *serve(void *arg)
{
    mgw_conn_t *c = arg;

    for (;;) {
        mgw_request_t r;
        int rc = mgw_http_read_request(c, &r), ret;
        if (rc == 0)
            mgw_time_mark(c->fd, "request", 0);
        if (rc > 0) {
            mgw_http_error_close(c, rc);
            if (mgw_cfg.verbose)
                fprintf(stderr, "mockgw: unreadable request -> %d\n", rc);
        }
        if (rc != 0) {
            mgw_request_free(&r);
            break;
        }
        ret = mgw_route(c, &r);
        mgw_request_free(&r);
        if (ret < 0)
            break;
    }
    close(c->fd);
    free(c->buf);
    free(c);
    return NULL;
}

static void *accept_loop(void *arg)
{
    int lfd = *(int *)arg, one = 1;
    struct timeval idle = { IDLE_TIMEOUT_SECONDS, 0 };
    pthread_attr_t attr;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    for (;;) {
        pthread_t t;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS
                || errno == ENOMEM)
                usleep(10000);      /* let connections finish */
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle, sizeof idle);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &idle, sizeof idle);
        mgw_conn_t *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->cap = 16384;
        c->buf = mgw_xmalloc(c->cap);
        if (pthread_create(&t, &attr, serve, c) != 0) {
            close(fd);
            free(c->buf);
            free(c);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *listen_spec = NULL, *token_file = NULL, *models = NULL, *times = NULL;
    char shown[NI_MAXHOST + NI_MAXSERV + 4];
    sigset_t sigs;
    pthread_t acceptor;
    int lfd, sig;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            mgw_cfg.verbose = true;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            usage();
        if (eq)
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        else
            usage();
        if (nl == 8 && strncmp(a, "--listen", nl) == 0)
            listen_spec = v;
        else if (nl == 12 && strncmp(a, "--token-file", nl) == 0)
            token_file = v;
        else if (nl == 8 && strncmp(a, "--models", nl) == 0)
            models = v;
        else if (nl == 7 && strncmp(a, "--times", nl) == 0)
            times = v;
        else
            usage();
    }
    if (!listen_spec || !token_file)
        usage();
    if (!models)
        models = getenv("MOCKGW_MODELS");
    if (!models || !*models)
        models = DEFAULT_MODELS;

    /* one descriptor per connection: as many as the hard limit allows */
    {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    mgw_cfg.token = read_token(token_file);
    mgw_cfg.models_json = render_models(models);
    if (times && !(mgw_cfg.times = fopen(times, "a"))) {
        fprintf(stderr, "mockgw: cannot open %s\n", times);
        return 1;
    }

    /* Signals are taken by sigwait in this thread only; the threads created
     * below inherit the blocked mask. */
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    lfd = listen_on(listen_spec, shown, sizeof shown);
    {
        mgw_buf_t self = { 0 };
        mgw_buf_printf(&self, "http://%s", shown);
        mgw_cfg.self_url = self.p;
    }
    if (pthread_create(&acceptor, NULL, accept_loop, &lfd) != 0) {
        fputs("mockgw: cannot start the accept thread\n", stderr);
        return 1;
    }
    printf("mockgw listening on %s\n", shown);
    fflush(stdout);

    while (sigwait(&sigs, &sig) != 0)
        ;
    if (mgw_cfg.verbose)
        fprintf(stderr, "mockgw: signal %d, exiting\n", sig);
    close(lfd);
    /* Connection threads may be mid-answer; exit without unwinding them. */
    fflush(stdout);
    LEAK_CHECK();
    _exit(0);
}
