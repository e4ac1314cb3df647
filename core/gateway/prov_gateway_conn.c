/* prov_gateway_conn.c: the sockets of the plain HTTP/1.1 gateway client.
 * Each thread keeps, per gateway, the answer buffers of its last call (a few
 * slots, the oldest given up first); a call's kept connection goes back to
 * the process's idle ones, which any thread's next call to that gateway
 * takes (the last given back first), so that a spare thread among thousands
 * of streaming ones need not connect anew (a thread keeps it in its slot
 * when the process holds SPARE_MAX already). A kept connection is checked
 * before reuse, as mod_proxy does: one the gateway closed, reset or wrote
 * to while idle is not used again. Connecting,
 * sending and receiving are non-blocking, bounded by a deadline, and never
 * raise SIGPIPE. Nothing here knows HTTP (prov_gateway_answer.c reads the
 * answer, prov_gateway_http.c decides when a request may go again). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include "prov_gateway_http.h"

#define SLOTS 4                         /* gateways a thread keeps a connection to */

static pthread_key_t conn_key;
static pthread_once_t conn_once = PTHREAD_ONCE_INIT;

/* Closes the slot's connection and frees its buffers. */
static void empty(prov_gateway_slot_t *s)
{
    prov_gateway_conn_drop(s);
    free(s->in);
    free(s->body);
    s->in = s->body = NULL;
    s->incap = s->bodycap = 0;
}

static void conn_thread_cleanup(void *v)
{
    prov_gateway_slot_t *slots = v;
    int i;
    for (i = 0; i < SLOTS; i++)
        empty(&slots[i]);
    free(slots);
}

static void conn_key_init(void)
{
    pthread_key_create(&conn_key, conn_thread_cleanup);
}

apr_status_t prov_gateway_conn_slot(prov_gateway_slot_t **slot, const void *owner)
{
    prov_gateway_slot_t *slots;
    int i;
    pthread_once(&conn_once, conn_key_init);
    slots = pthread_getspecific(conn_key);
    if (!slots) {
        if (!(slots = calloc(SLOTS, sizeof(*slots))))
            return APR_ENOMEM;
        for (i = 0; i < SLOTS; i++)
            slots[i].fd = -1;
        pthread_setspecific(conn_key, slots);
    }
    for (i = 0; i < SLOTS; i++) {
        if (slots[i].owner == owner) {
            *slot = &slots[i];
            return APR_SUCCESS;
        }
    }
    for (i = 0; i < SLOTS; i++) {
        if (!slots[i].owner)
            break;
    }
    if (i == SLOTS) {
        /* all taken: the oldest (last) goes, the others move down one */
        empty(&slots[SLOTS - 1]);
        memmove(slots + 1, slots, (SLOTS - 1) * sizeof(*slots));
        i = 0;
        slots[i].in = slots[i].body = NULL;
        slots[i].incap = slots[i].bodycap = 0;
    }
    slots[i].owner = owner;
    slots[i].fd = -1;
    *slot = &slots[i];
    return APR_SUCCESS;
}

/* The process's idle connections, under spare_mutex. A child forked after
 * calls closes the ones it inherited: the fork handlers hold the mutex
 * across the fork, and the child's empties the list. */
#define SPARE_MAX 1024
static pthread_mutex_t spare_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static struct { const void *owner; int fd; } spare[SPARE_MAX];
static int spare_n;

static void spare_fork_prepare(void)
{
    pthread_mutex_lock(&spare_mutex);
}

static void spare_fork_parent(void)
{
    pthread_mutex_unlock(&spare_mutex);
}

static void spare_fork_child(void)
{
    while (spare_n > 0)
        close(spare[--spare_n].fd);
    pthread_mutex_unlock(&spare_mutex);
}

static void spare_init(void)
{
    pthread_atfork(spare_fork_prepare, spare_fork_parent, spare_fork_child);
}

void prov_gateway_conn_park(prov_gateway_slot_t *s)
{
    if (s->fd < 0)
        return;
    pthread_once(&spare_once, spare_init);
    pthread_mutex_lock(&spare_mutex);
    if (spare_n < SPARE_MAX) {
        spare[spare_n].owner = s->owner;
        spare[spare_n++].fd = s->fd;
        s->fd = -1;
    }
    pthread_mutex_unlock(&spare_mutex);
}

/* Under spare_mutex: the last idle connection to owner given back, taken
 * out, or -1. */
static int spare_pop(const void *owner)
{
    int i, fd;
    for (i = spare_n - 1; i >= 0; i--) {
        if (spare[i].owner == owner) {
            fd = spare[i].fd;
            memmove(spare + i, spare + i + 1, (size_t)(spare_n - i - 1) * sizeof(spare[0]));
            spare_n--;
            return fd;
        }
    }
    return -1;
}

void prov_gateway_conn_take(prov_gateway_slot_t *s)
{
    int fd;
    for (;;) {
        pthread_mutex_lock(&spare_mutex);
        fd = spare_pop(s->owner);
        pthread_mutex_unlock(&spare_mutex);
        if (fd < 0 || prov_gateway_conn_usable(fd))
            break;
        close(fd);
    }
    s->fd = fd;
}

void prov_gateway_conn_drop(prov_gateway_slot_t *s)
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

/* Nothing may be readable on a kept, idle connection: a readable one holds
 * the gateway's close (EOF), a reset, or bytes nobody asked for (out of
 * step): all dead. */
int prov_gateway_conn_usable(int fd)
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

/* Connects fd to ai before deadline: APR_SUCCESS, APR_TIMEUP, or
 * APR_ECONNREFUSED for anything else. */
static apr_status_t connect_one(int fd, const struct addrinfo *ai, apr_time_t deadline)
{
    int err = 0;
    socklen_t el = sizeof(err);
    apr_status_t rv;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return APR_SUCCESS;
    if (errno != EINPROGRESS)
        return APR_ECONNREFUSED;
    if ((rv = wait_fd(fd, POLLOUT, deadline)) != APR_SUCCESS)
        return rv == APR_TIMEUP ? rv : APR_ECONNREFUSED;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err)
        return APR_ECONNREFUSED;
    return APR_SUCCESS;
}

apr_status_t prov_gateway_conn_open(int *pfd, const prov_gateway_target_t *t, apr_time_t deadline)
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
        int one = 1;
        if (fd < 0)
            continue;
        if ((rv = connect_one(fd, ai, deadline)) != APR_SUCCESS) {
            close(fd);
            /* out of time: the next address would not have any either */
            if (rv == APR_TIMEUP)
                break;
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        *pfd = fd;
        break;
    }
    freeaddrinfo(res);
    return rv;
}

apr_status_t prov_gateway_conn_send(int fd, struct iovec *iov, int n, apr_time_t deadline)
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

apr_status_t prov_gateway_conn_recv(void *sock, char *buf, apr_size_t cap, apr_size_t *got)
{
    prov_gateway_sock_t *s = sock;
    for (;;) {
        ssize_t k = recv(s->fd, buf, cap, 0);
        apr_status_t rv;
        if (k > 0) {
            *got = (apr_size_t)k;
            return APR_SUCCESS;
        }
        if (k == 0)
            return APR_EOF;
        if ((rv = again(s->fd, POLLIN, s->deadline)) != APR_SUCCESS)
            return rv;
    }
}

apr_status_t prov_gateway_conn_recv_stream(void *ssock, char *buf, apr_size_t cap,
                                           apr_size_t *got)
{
    prov_gateway_ssock_t *s = ssock;
    for (;;) {
        ssize_t k = recv(s->fd, buf, cap, 0);
        apr_time_t now;
        apr_interval_time_t left;
        struct pollfd pfd;
        int n;
        if (k > 0) {
            s->last_data = apr_time_now();
            *got = (apr_size_t)k;
            /* bytes that make no event (a gateway's comments) keep the tick */
            if (s->tick && s->last_data - s->last_tick >= apr_time_from_sec(1)) {
                s->last_tick = s->last_data;
                if (s->tick(s->baton) != APR_SUCCESS)
                    return APR_ECONNABORTED;
            }
            return APR_SUCCESS;
        }
        if (k == 0)
            return APR_EOF;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return APR_FROM_OS_ERROR(errno);
        /* nothing more for now: what the bytes so far made can go out */
        if (s->idle && s->idle(s->baton) != APR_SUCCESS)
            return APR_ECONNABORTED;
        now = apr_time_now();
        left = s->last_data + s->idle_limit - now;
        if (left <= 0)
            return APR_TIMEUP;
        /* at most a second, so that the tick runs while the gateway is silent */
        pfd.fd = s->fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        n = poll(&pfd, 1, left > apr_time_from_sec(1) ? 1000 : (int)apr_time_as_msec(left) + 1);
        if (n < 0 && errno != EINTR)
            return APR_FROM_OS_ERROR(errno);
        if (n == 0 && s->tick) {
            s->last_tick = apr_time_now();
            if (s->tick(s->baton) != APR_SUCCESS)
                return APR_ECONNABORTED;
        }
    }
}
