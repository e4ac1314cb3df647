/* journalcost.c: what the billing journal costs a request. THREADS threads
 * (a child's workers) each append RECORDS settlement records, as the engine
 * writes them, to one journal, and mark each done again at once (as its
 * row's batch would: full segments are then deleted, as in a server); the
 * wall time and the CPU time (user + system, all threads) per record are
 * printed. Compare with a request's CPU cost in bench/run.sh (about
 * 2 cores / requests per second).
 *
 *   bench/journalcost [--dir DIR] [--threads N] [--records M] */
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
static long records = 100000;

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
        snprintf(id, sizeof(id), "req_%013lx%08lx", (long)(intptr_t)arg, i);
        if (prov_journal_append(journal, &r, &ticket) != APR_SUCCESS) {
            fprintf(stderr, "journalcost: append failed\n");
            exit(1);
        }
        prov_journal_done(journal, ticket);
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
    pthread_t *th;
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
    }
    if (threads < 1 || records < 1 || !(th = calloc((size_t)threads, sizeof(*th)))) {
        fprintf(stderr, "usage: journalcost [--dir DIR] [--threads N] [--records M]\n");
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
    for (i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_SELF, &r1);
    prov_journal_close(journal);
    n = (double)threads * (double)records;
    wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cpu = secs(&r1.ru_utime) - secs(&r0.ru_utime) + secs(&r1.ru_stime) - secs(&r0.ru_stime);
    printf("journalcost: %ld threads x %ld records in %s: %.0f records/s, %.2f us wall and "
           "%.2f us CPU per record\n", threads, records, dir, n / wall, wall / n * 1e6,
           cpu / n * 1e6);
    apr_pool_destroy(p);
    apr_terminate();
    return 0;
}
