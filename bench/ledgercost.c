/* ledgercost.c: what writing a settled request's ledger row costs the
 * billing writer on SQLite, by the size of its group. A fresh database file
 * (the schema migrated, the module's pragmas: WAL, synchronous NORMAL) gets
 * ROWS complete rows in transactions of B rows each, for B of 1, 8, 30, 72,
 * 128 and 256, written two ways: one statement a row (bill_ledger_complete,
 * as the writer did before) and the store's own way
 * (prov_store_bill_ledger_insert: up to 64 rows to a statement). Printed:
 * microseconds a row, the best of three runs (wall time: run it on a quiet
 * machine, or compare the two columns of one run). One user, key and model,
 * request ids in time order, as under load.
 *
 *   bench/ledgercost [--dir DIR] [--rows N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <apr_general.h>
#include <apr_strings.h>
#include "prov_store.h"
#include "prov_store_billing.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A fresh store on DIR/ledgercost.db: migrated, set up, prepared. */
static prov_store_t *fresh(const char *dir, apr_pool_t *p)
{
    const char *file = apr_pstrcat(p, dir, "/ledgercost.db", NULL);
    prov_store_t *s = NULL;
    int applied = 0;
    unlink(file);
    unlink(apr_pstrcat(p, file, "-wal", NULL));
    unlink(apr_pstrcat(p, file, "-shm", NULL));
    if (prov_store_open(&s, apr_pstrcat(p, "sqlite3:", file, NULL), 0, p) != APR_SUCCESS
        || prov_store_setup(s, p) != APR_SUCCESS
        || prov_schema_migrate(&applied, s, p) != APR_SUCCESS
        || prov_store_prepare_all(s) != APR_SUCCESS) {
        fprintf(stderr, "ledgercost: cannot make a database in %s\n", dir);
        exit(1);
    }
    return s;
}

/* One statement a row, as the writer did before. */
static apr_status_t one_by_one(prov_store_t *s, const prov_ledger_row_t *e, int n, apr_pool_t *p)
{
    apr_status_t rv = APR_SUCCESS;
    int i;
    for (i = 0; i < n && rv == APR_SUCCESS; i++, e++) {
        apr_int64_t plan = 0;
        const void *args[] = { e->request_id, &e->user_id, &e->key_id, &e->model_id,
                               e->transport, &e->tokens.input, &e->tokens.output,
                               &e->tokens.cache, &e->tokens.reasoning, &e->hold, &e->charge,
                               &plan, "balance", e->status, &e->created_at, &e->settled_at };
        rv = prov_store_exec_bin(s, "bill_ledger_complete", args, p);
    }
    return rv;
}

/* Microseconds a row: total rows in groups of b, written by way (0: one by
 * one, 1: the store's). */
static double run(const char *dir, int way, int b, long total, apr_pool_t *parent)
{
    apr_pool_t *p, *tp;
    prov_store_t *s;
    prov_ledger_row_t *rows;
    long seq = 0, g;
    double t0;
    int i;
    apr_pool_create(&p, parent);
    s = fresh(dir, p);
    rows = apr_pcalloc(p, sizeof(*rows) * (apr_size_t)b);
    apr_pool_create(&tp, p);
    t0 = now_s();
    for (g = 0; g < total / b; g++) {
        apr_pool_clear(tp);
        for (i = 0; i < b; i++, seq++) {
            prov_ledger_row_t *e = &rows[i];
            e->request_id = apr_psprintf(tp, "req_%013lxabcdefghijkl", 0x6000000000000L + seq);
            e->user_id = e->key_id = e->model_id = 1;
            e->transport = "messages";
            e->status = "ok";
            e->tokens.input = 20 + seq % 7;
            e->tokens.output = 16;
            e->hold = 9000;
            e->charge = 1234 + seq % 100;
            e->created_at = e->settled_at = 1790000000 + seq / 15000;
        }
        if (prov_store_begin(s, tp) != APR_SUCCESS
            || (way ? prov_store_bill_ledger_insert(s, rows, b, tp)
                    : one_by_one(s, rows, b, tp)) != APR_SUCCESS
            || prov_store_commit(s, tp) != APR_SUCCESS) {
            fprintf(stderr, "ledgercost: a group failed\n");
            exit(1);
        }
    }
    t0 = (now_s() - t0) * 1e6 / (double)(g * b);
    prov_store_close(s);
    apr_pool_destroy(p);
    return t0;
}

int main(int argc, char **argv)
{
    static const int sizes[] = { 1, 8, 30, 72, 128, 256 };
    const char *dir = "/tmp";
    long total = 60000;
    apr_pool_t *p;
    size_t z;
    int i;
    for (i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--dir"))
            dir = argv[i + 1];
        else if (!strcmp(argv[i], "--rows"))
            total = atol(argv[i + 1]);
    }
    if (total < 256) {
        fprintf(stderr, "usage: ledgercost [--dir DIR] [--rows N (>= 256)]\n");
        return 2;
    }
    apr_initialize();
    apr_pool_create(&p, NULL);
    printf("ledger rows on SQLite (%s), %ld rows a run, best of 3, us a row\n", dir, total);
    printf("%10s %14s %14s\n", "group", "one by one", "the store's");
    for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
        double best[2] = { 1e9, 1e9 };
        int r, way;
        for (r = 0; r < 3; r++) {
            for (way = 0; way < 2; way++) {
                double v = run(dir, way, sizes[z], sizes[z] == 1 ? total / 10 : total, p);
                best[way] = v < best[way] ? v : best[way];
            }
        }
        printf("%10d %14.2f %14.2f\n", sizes[z], best[0], best[1]);
    }
    apr_pool_destroy(p);
    apr_terminate();
    return 0;
}
