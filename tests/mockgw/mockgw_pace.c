/*
 * mockgw_pace.c — what mockgw offers for measuring and checking the pace of
 * streams: the timestamps of --times (when each request was read and each
 * event written, on CLOCK_MONOTONIC, which every process of the machine
 * shares, so that bench/streamtime can set them beside its own), the
 * lockstep fault (before sending the next event, a stream waits until the
 * client has acknowledged the text piece just sent with GET /v1/_ack?n=N,
 * so a test can tell that each event reached the client before the next
 * was produced, without timing anything), and the filler text of the
 * pieces-<n> fault (a slow stream of n text events for bench/streams10k.sh)
 * and of the greedy fault (a reply exactly as long as the output cap).
 * One lockstep stream at a time: the acknowledgements are process-wide.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mockgw.h"

#define LOCKSTEP_WAIT_SECONDS 10    /* then the piece counts as missed */

static pthread_mutex_t times_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lock_cv = PTHREAD_COND_INITIALIZER;
static long acked;                  /* pieces the client acknowledged */
static long streams, waited, missed;

void mgw_time_mark(int fd, const char *what, long i)
{
    struct timespec ts;

    if (!mgw_cfg.times)
        return;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pthread_mutex_lock(&times_mu);
    fprintf(mgw_cfg.times, "mgwtime %d %s %ld %lld\n", fd, what, i,
            (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000);
    fflush(mgw_cfg.times);
    pthread_mutex_unlock(&times_mu);
}

void mgw_lockstep_begin(void)
{
    pthread_mutex_lock(&lock_mu);
    acked = 0;
    streams++;
    pthread_mutex_unlock(&lock_mu);
}

void mgw_lockstep_ack(long n)
{
    pthread_mutex_lock(&lock_mu);
    if (n > acked)
        acked = n;
    pthread_cond_broadcast(&lock_cv);
    pthread_mutex_unlock(&lock_mu);
}

void mgw_lockstep_wait(long n)
{
    struct timespec until;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += LOCKSTEP_WAIT_SECONDS;
    pthread_mutex_lock(&lock_mu);
    while (acked < n && rc == 0)
        rc = pthread_cond_timedwait(&lock_cv, &lock_mu, &until);
    if (acked >= n)
        waited++;
    else
        missed++;
    pthread_mutex_unlock(&lock_mu);
}

json_object *mgw_lockstep_json(void)
{
    json_object *o = json_object_new_object();

    pthread_mutex_lock(&lock_mu);
    mgw_jset(o, "streams", json_object_new_int64(streams));
    mgw_jset(o, "acked", json_object_new_int64(waited));
    mgw_jset(o, "missed", json_object_new_int64(missed));
    pthread_mutex_unlock(&lock_mu);
    return o;
}

static void pad_filler(mgw_buf_t *out, size_t want)
{
    static const char filler[] = " and so on, at a steady pace.";

    while (out->len < want)
        mgw_buf_append(out, filler, want - out->len < sizeof filler - 1
                                    ? want - out->len : sizeof filler - 1);
}

void mgw_pad_pieces(mgw_buf_t *out, long pieces)
{
    pad_filler(out, (size_t)pieces * MGW_PIECE_BYTES);
}

void mgw_pad_to(mgw_buf_t *out, size_t bytes)
{
    if (out->len > bytes) {
        out->len = mgw_utf8_prefix(out->p, out->len, bytes);
        out->p[out->len] = '\0';
    }
    pad_filler(out, bytes);
}
