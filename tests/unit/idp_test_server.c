/* idp_test_server.c: the identity suites' HTTP server (idp_test_server.h).
 * One thread, one connection at a time: it reads a request's head and its
 * Content-Length body, records it, looks its path up in the route table
 * and answers with that route's status and JSON body, then closes. A path
 * with no route answers 404. */
#define _GNU_SOURCE 1
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <CUnit/CUnit.h>
#include "unit_tests.h"
#include "idp_test_server.h"

/* Reads head and body into buf; returns the body's offset, or -1. */
static long read_all(int fd, char *buf, size_t cap)
{
    size_t got = 0;
    char *end = NULL;
    long clen = 0, head;
    while (!end || got < (size_t)(end + 4 - buf) + (size_t)clen) {
        ssize_t k;
        if (got + 1 >= cap)
            return -1;
        k = recv(fd, buf + got, cap - 1 - got, 0);
        if (k <= 0)
            return -1;
        got += (size_t)k;
        buf[got] = '\0';
        if (!end && (end = strstr(buf, "\r\n\r\n")) != NULL) {
            char *cl = strcasestr(buf, "\r\nContent-Length:");
            clen = cl && cl < end ? atol(cl + 17) : 0;
        }
    }
    head = (long)(end + 4 - buf);
    return head;
}

static void header_copy(char *dst, size_t cap, const char *buf, const char *name)
{
    const char *h = strcasestr(buf, name), *e;
    dst[0] = '\0';
    if (!h)
        return;
    h += strlen(name);
    while (*h == ' ')
        h++;
    e = strstr(h, "\r\n");
    snprintf(dst, cap, "%.*s", (int)(e ? e - h : 0), h);
}

/* Records the request; returns the route index or -1. */
static int take(idp_ts_t *s, const char *buf, long body_at)
{
    idp_ts_request_t *r;
    char path[1024];
    int i, found = -1;
    pthread_mutex_lock(&s->mu);
    r = &s->requests[s->nrequests < IDP_TS_REQUESTS ? s->nrequests++ : IDP_TS_REQUESTS - 1];
    memset(r, 0, sizeof(*r));
    sscanf(buf, "%7s %1023s", r->method, r->target);
    header_copy(r->authorization, sizeof(r->authorization), buf, "\r\nAuthorization:");
    snprintf(r->body, sizeof(r->body), "%s", buf + body_at);
    snprintf(path, sizeof(path), "%.*s", (int)strcspn(r->target, "?"), r->target);
    for (i = 0; i < s->nroutes; i++) {
        if (!strcmp(s->routes[i].path, path)) {
            s->routes[i].hits++;
            found = i;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

static void answer(idp_ts_t *s, int fd, int route)
{
    char *msg = NULL;
    int status = 404, delay = 0, n;
    const char *body = "{\"error\":\"not_found\"}";
    pthread_mutex_lock(&s->mu);
    if (route >= 0) {
        status = s->routes[route].status;
        delay = s->routes[route].delay_ms;
        body = s->routes[route].body;
    }
    n = asprintf(&msg, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", status, strlen(body),
                 body);
    pthread_mutex_unlock(&s->mu);
    if (n < 0)
        return;
    if (delay)
        usleep((useconds_t)delay * 1000);
    if (send(fd, msg, (size_t)n, MSG_NOSIGNAL) < 0) {
        /* the client gave up (a timeout test) */
    }
    free(msg);
}

static void *serve(void *arg)
{
    idp_ts_t *s = arg;
    static __thread char buf[65536];
    for (;;) {
        int fd = accept(s->lfd, NULL, NULL);
        long body_at;
        if (fd < 0)
            break;
        body_at = read_all(fd, buf, sizeof(buf));
        if (body_at >= 0)
            answer(s, fd, take(s, buf, body_at));
        close(fd);
    }
    return NULL;
}

void idp_ts_start(idp_ts_t *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = prov_test_listen(16, 0, &s->port);
    CU_ASSERT_FATAL(pthread_create(&s->th, NULL, serve, s) == 0);
}

void idp_ts_stop(idp_ts_t *s)
{
    int i;
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->th, NULL);
    close(s->lfd);
    for (i = 0; i < s->nroutes; i++) {
        free(s->routes[i].path);
        free(s->routes[i].body);
    }
    pthread_mutex_destroy(&s->mu);
}

void idp_ts_route(idp_ts_t *s, const char *path, int status, int delay_ms, const char *fmt, ...)
{
    char *body = NULL;
    va_list ap;
    int i;
    va_start(ap, fmt);
    if (vasprintf(&body, fmt, ap) < 0)
        body = NULL;
    va_end(ap);
    CU_ASSERT_PTR_NOT_NULL_FATAL(body);
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->nroutes && strcmp(s->routes[i].path, path); i++)
        ;
    if (i == s->nroutes && i < IDP_TS_ROUTES) {
        s->routes[i].path = strdup(path);
        s->nroutes++;
    }
    if (i < IDP_TS_ROUTES) {
        free(s->routes[i].body);
        s->routes[i].body = body;
        s->routes[i].status = status;
        s->routes[i].delay_ms = delay_ms;
    }
    else {
        free(body);
    }
    pthread_mutex_unlock(&s->mu);
}

int idp_ts_hits(idp_ts_t *s, const char *path)
{
    int i, n = 0;
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->nroutes; i++) {
        if (!strcmp(s->routes[i].path, path))
            n = s->routes[i].hits;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

idp_ts_request_t *idp_ts_last(idp_ts_t *s, const char *path, apr_pool_t *p)
{
    idp_ts_request_t *found = NULL;
    size_t n = strlen(path);
    int i;
    pthread_mutex_lock(&s->mu);
    for (i = s->nrequests - 1; i >= 0 && !found; i--) {
        const char *t = s->requests[i].target;
        if (!strncmp(t, path, n) && (t[n] == '\0' || t[n] == '?'))
            found = apr_pmemdup(p, &s->requests[i], sizeof(s->requests[i]));
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

const char *idp_ts_url(const idp_ts_t *s, apr_pool_t *p)
{
    return apr_psprintf(p, "http://127.0.0.1:%d", s->port);
}
