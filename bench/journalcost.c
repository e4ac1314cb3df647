/* journalcost.c: what the billing journal costs a request. THREADS threads
 * (a child's workers) each append RECORDS settlement records, as the engine
 * writes them, to one journal, and mark each done again at once (as its
 * row's batch would: full segments are then deleted, as in a server); the
 * wall time and the CPU time (user + system, all threads) per record are
 * printed, with the slowest append and how many took over 100 us (a
 * rotation to the next segment is among them when it makes the segment
 * under the write lock). Compare with a request's CPU cost in bench/run.sh
 * (about 2 cores / requests per second). --reap-every US runs a thread
 * that calls prov_journal_reap every US microseconds, as the billing
 * writer does after its batches (0, the default: none, as providerctl);
 * --pace US makes each thread sleep US microseconds after each append (a
 * server's rate, where the reaper has time between rotations; 0, the
 * default: as fast as it goes).
 *
 *   bench/journalcost [--dir DIR] [--threads N] [--records M] [--reap-every US]
 *                     [--pace US] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <apr_general.h>
#include "prov_journal.h"

static prov_journal_t *journal;
static long records = 100000, reap_every, pace;
static long slow_appends;           /* over 100 us */
static double slowest;              /* us */
static volatile int appending = 1;
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void *reaper(void *arg)
{
    (void)arg;
    while (appending) {
        prov_journal_reap(journal);
        usleep((useconds_t)reap_every);
    }
    return NULL;
}

static void *appender(void *arg)
{
    prov_journal_rec_t r;
    char id[40];
    long i;
    memset(&r, 0, sizeof(r));
    r.transport = "chat";
    r.status = "ok";
    r.user_id = 1;
    r.key_id = 1;
    r.model_id = 1;
    r.created_at = 1700000000;
    r.settled_at = 1700000001;
    r.tokens.input = 17;
    r.tokens.output = 16;
    r.hold = 19650;
    r.charge = 12153;
    r.drawn = 1;
    r.request_id = id;
    for (i = 0; i < records; i++) {
        int ticket = 0;
        double t0, took;
        snprintf(id, sizeof(id), "req_%013lx%08lx", (long)(intptr_t)arg, i);
        t0 = now_us();
        if (prov_journal_append(journal, &r, &ticket) != APR_SUCCESS) {
            fprintf(stderr, "journalcost: append failed\n");
            exit(1);
        }
        if ((took = now_us() - t0) > 100) {
            pthread_mutex_lock(&stats_mu);
            slow_appends++;
            slowest = took > slowest ? took : slowest;
            pthread_mutex_unlock(&stats_mu);
        }
        prov_journal_done(journal, ticket);
        if (pace)
            usleep((useconds_t)pace);
    }
    return NULL;
}

static double secs(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

int main(int argc, const char *const *argv)
{
    const char *dir = "/tmp/journalcost";
    long threads = 64, i;
    pthread_t *th, reap_th;
    apr_pool_t *p = NULL;
    struct timespec t0, t1;
    struct rusage r0, r1;
    double wall, cpu, n;

    apr_app_initialize(&argc, &argv, NULL);
    apr_pool_create(&p, NULL);
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--threads"))
            threads = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--records"))
            records = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--reap-every"))
            reap_every = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--pace"))
            pace = atol(argv[i + 1]);
    }
    if (threads < 1 || records < 1 || reap_every < 0 || pace < 0
        || !(th = calloc((size_t)threads, sizeof(*th)))) {
        fprintf(stderr, "usage: journalcost [--dir DIR] [--threads N] [--records M] "
                "[--reap-every US] [--pace US]\n");
        return 2;
    }
    if (prov_journal_open(&journal, dir, "journalcost", 0, p) != APR_SUCCESS) {
        fprintf(stderr, "journalcost: cannot open a journal in %s\n", dir);
        return 1;
    }
    getrusage(RUSAGE_SELF, &r0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, appender, (void *)(intptr_t)i);
    if (reap_every)
        pthread_create(&reap_th, NULL, reaper, NULL);
    for (i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &r1);
    appending = 0;
    if (reap_every)
        pthread_join(reap_th, NULL);
    prov_journal_close(journal);
    n = (double)threads * (double)records;
    wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cpu = secs(&r1.ru_utime) - secs(&r0.ru_utime) + secs(&r1.ru_stime) - secs(&r0.ru_stime);
    printf("journalcost: %ld threads x %ld records in %s: %.0f records/s, %.2f us wall and "
           "%.2f us CPU per record\n", threads, records, dir, n / wall, wall / n * 1e6,
           cpu / n * 1e6);
    printf("journalcost: slowest append %.0f us; %ld appends over 100 us\n", slowest,
           slow_appends);
    apr_pool_destroy(p);
    apr_terminate();
    return 0;
}
