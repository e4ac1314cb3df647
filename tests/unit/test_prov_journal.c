/* test_prov_journal.c: unit tests of the settlement journal's files: records
 * read back exactly as written (text with odd bytes too), a live journal is
 * never replayed (its lock is held), a closed one with records outstanding
 * is, once, then deleted; a journal with nothing outstanding leaves no file;
 * full segments go as soon as their records are done; a torn last record
 * (the process killed inside a record's copy) and a garbled line are
 * skipped, and a killed process's segment (its unused rest NUL bytes) is
 * read up to its last whole record; the writer's reap makes the next
 * segment ahead once the current one is half full and seals the one a
 * rotation left, a rotation without a spare makes and seals its own, and a
 * killed process's spare (NUL bytes only) replays as nothing; records
 * come in chunks, in order; a journal of another database is left alone, and
 * one whose replay fails is kept for the next try; progress records are
 * never outstanding and come back last, the latest of each request that no
 * settlement ended. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "unit_tests.h"
#include "prov_journal.h"

/* What a replay call saw. */
typedef struct seen_t {
    int calls, n, lasts;
    int fail;                       /* fail the next call */
    char ids[1300][32];
    prov_micro_t charges[1300];
    int progress[1300];
    prov_journal_rec_t first;
    char first_id[64], first_status[64], first_transport[16];
    int chunk[8];
} seen_t;

static apr_status_t collect(void *baton, const char *owner, const prov_journal_rec_t *recs,
                            int n, int last, apr_pool_t *p)
{
    seen_t *s = baton;
    int i;
    (void)owner;
    (void)p;
    if (s->fail) {
        s->fail = 0;
        return APR_EGENERAL;
    }
    if (s->calls < 8)
        s->chunk[s->calls] = n;
    s->calls++;
    s->lasts += last;
    for (i = 0; i < n; i++) {
        if (s->n == 0 && i == 0) {
            s->first = recs[0];
            apr_cpystrn(s->first_id, recs[0].row.request_id, sizeof(s->first_id));
            apr_cpystrn(s->first_status, prov_ledger_status_name(recs[0].row.status),
                        sizeof(s->first_status));
            apr_cpystrn(s->first_transport, recs[0].row.transport, sizeof(s->first_transport));
        }
        if (s->n < 1300) {
            apr_cpystrn(s->ids[s->n], recs[i].row.request_id, sizeof(s->ids[0]));
            s->charges[s->n] = recs[i].row.charge;
            s->progress[s->n] = recs[i].progress;
        }
        s->n++;
    }
    return APR_SUCCESS;
}

/* The first n ids seen are prefix0, prefix1, ... in that order. */
static void ids_in_order(const seen_t *s, const char *prefix, int n)
{
    char id[32];
    int i;
    CU_ASSERT_TRUE(s->n >= n);
    for (i = 0; i < n && i < s->n && i < 1300; i++) {
        snprintf(id, sizeof(id), "%s%d", prefix, i);
        CU_ASSERT_STRING_EQUAL(s->ids[i], id);
    }
}

static char *temp_dir(void)
{
    static char dir[64];
    strcpy(dir, "/tmp/prov-unit-journal-XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    return dir;
}

/* Files in dir (hidden ones too). */
static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;
    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    }
    closedir(d);
    return n;
}

/* Whether dir holds segment n of a journal (a file named O.n.log). */
static int dir_has_segment(const char *dir, int n)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char tail[32];
    int found = 0;
    size_t k;
    snprintf(tail, sizeof(tail), ".%d.log", n);
    k = strlen(tail);
    while (d && !found && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);
        found = len > k && !strcmp(de->d_name + len - k, tail);
    }
    if (d)
        closedir(d);
    return found;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[512];
    if (!d)
        return;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* Marks the n records of tickets done and closes j: not a file may stay
 * in dir, which goes. */
static void done_and_close(prov_journal_t *j, const int *tickets, int n, const char *dir)
{
    int i;
    for (i = 0; i < n; i++)
        prov_journal_done(j, tickets[i]);
    CU_ASSERT_EQUAL(prov_journal_outstanding(j), 0);
    prov_journal_close(j);
    CU_ASSERT_EQUAL(files_in(dir), 0);
    remove_dir(dir);
}

static prov_journal_rec_t rec(const char *id, prov_micro_t charge)
{
    prov_journal_rec_t r;
    memset(&r, 0, sizeof(r));
    r.row.request_id = id;
    r.row.transport = "chat";
    r.row.status = PROV_STATUS_OK;
    r.row.user_id = 7;
    r.row.key_id = 8;
    r.row.model_id = 9;
    r.row.created_at = 1700000000;
    r.row.settled_at = 1700000002;
    r.row.tokens.input = 11;
    r.row.tokens.output = 22;
    r.row.tokens.cache = 3;
    r.row.tokens.reasoning = 4;
    r.row.hold = 1000;
    r.row.charge = charge;
    r.row.from_plan = 1;
    r.drawn = 1;
    return r;
}

static void test_journal_roundtrip(void)
{
    apr_pool_t *p = NULL;
    prov_journal_t *j = NULL;
    prov_journal_rec_t r = rec("req odd%\t\nid", 777);
    seen_t *s = calloc(1, sizeof(*s));
    char *dir = temp_dir();
    int ticket = 0, replayed = -1;

    apr_pool_create(&p, prov_test_pool());
    r.row.status = PROV_STATUS_MAX_DURATION;
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, dir, "db-1", 0, p), APR_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(prov_journal_owner(j), "-"));
    CU_ASSERT_EQUAL(prov_journal_append(j, &r, &ticket), APR_SUCCESS);
    CU_ASSERT_EQUAL(ticket, 1);
    r = rec("req-2", 5);
    CU_ASSERT_EQUAL(prov_journal_append(j, &r, &ticket), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_journal_outstanding(j), 2);
    CU_ASSERT_EQUAL(files_in(dir), 2);           /* the lock and one segment */
    /* Alive: its lock is held, nobody replays it. */
    CU_ASSERT_EQUAL(prov_journal_recover(&replayed, dir, "db-1", collect, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 0);
    CU_ASSERT_EQUAL(s->calls, 0);
    /* One record committed, the other not: the files stay at close. */
    prov_journal_done(j, ticket);
    prov_journal_close(j);
    CU_ASSERT_EQUAL(files_in(dir), 2);
    /* Another database's survivor leaves it alone. */
    CU_ASSERT_EQUAL(prov_journal_recover(&replayed, dir, "db-2", collect, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 0);
    /* A failed replay keeps it for the next try. */
    s->fail = 1;
    CU_ASSERT_NOT_EQUAL(prov_journal_recover(&replayed, dir, "db-1", collect, s, p),
                        APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 0);
    CU_ASSERT_EQUAL(files_in(dir), 2);
    CU_ASSERT_EQUAL(prov_journal_recover(&replayed, dir, "db-1", collect, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 1);
    CU_ASSERT_EQUAL(s->n, 2);
    CU_ASSERT_EQUAL(s->calls, 1);
    CU_ASSERT_EQUAL(s->lasts, 1);
    CU_ASSERT_STRING_EQUAL(s->first_id, "req odd%\t\nid");
    CU_ASSERT_STRING_EQUAL(s->first_status, "max_duration");
    CU_ASSERT_STRING_EQUAL(s->first_transport, "chat");
    CU_ASSERT_STRING_EQUAL(s->ids[1], "req-2");
    CU_ASSERT_EQUAL(s->first.row.charge, 777);
    CU_ASSERT_EQUAL(s->first.row.hold, 1000);
    CU_ASSERT_EQUAL(s->first.row.user_id, 7);
    CU_ASSERT_EQUAL(s->first.row.key_id, 8);
    CU_ASSERT_EQUAL(s->first.row.model_id, 9);
    CU_ASSERT_EQUAL(s->first.row.tokens.input, 11);
    CU_ASSERT_EQUAL(s->first.row.tokens.output, 22);
    CU_ASSERT_EQUAL(s->first.row.tokens.cache, 3);
    CU_ASSERT_EQUAL(s->first.row.tokens.reasoning, 4);
    CU_ASSERT_EQUAL(s->first.row.created_at, 1700000000);
    CU_ASSERT_EQUAL(s->first.row.settled_at, 1700000002);
    CU_ASSERT_TRUE(s->first.row.from_plan);
    CU_ASSERT_TRUE(s->first.drawn);
    /* Replayed once: gone. */
    CU_ASSERT_EQUAL(files_in(dir), 0);
    CU_ASSERT_EQUAL(prov_journal_recover(&replayed, dir, "db-1", collect, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 0);
    CU_ASSERT_EQUAL(s->n, 2);
    remove_dir(dir);
    free(s);
    apr_pool_destroy(p);
}

/* Small segments: a full one goes once its records are done, by the next
 * reap (done itself deletes nothing: the engine calls it holding its
 * mutex); a journal closed with nothing outstanding leaves no file
 * behind. */
static void test_journal_segments(void)
{
    apr_pool_t *p = NULL;
    prov_journal_t *j = NULL;
    prov_journal_rec_t r = rec("seg", 1);
    char *dir = temp_dir();
    int tickets[10], i;

    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, dir, "db-1", 100, p), APR_SUCCESS);
    for (i = 0; i < 10; i++)
        CU_ASSERT_EQUAL(prov_journal_append(j, &r, &tickets[i]), APR_SUCCESS);
    CU_ASSERT_TRUE(tickets[9] >= 4);
    CU_ASSERT_EQUAL(files_in(dir), 1 + tickets[9]);
    for (i = 0; i < 10; i++) {
        if (tickets[i] < tickets[9])
            prov_journal_done(j, tickets[i]);
    }
    CU_ASSERT_EQUAL(files_in(dir), 1 + tickets[9]);
    CU_ASSERT_EQUAL(prov_journal_reap(j), tickets[9] - 1);
    CU_ASSERT_EQUAL(files_in(dir), 3);           /* the lock, the current segment, a spare */
    CU_ASSERT_EQUAL(prov_journal_reap(j), 0);
    for (i = 0; i < 10; i++) {
        if (tickets[i] == tickets[9])
            prov_journal_done(j, tickets[i]);
    }
    CU_ASSERT_EQUAL(prov_journal_outstanding(j), 0);
    prov_journal_close(j);
    CU_ASSERT_EQUAL(files_in(dir), 0);
    /* Spent segments not reaped yet go with the close. */
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, dir, "db-1", 100, p), APR_SUCCESS);
    for (i = 0; i < 10; i++)
        CU_ASSERT_EQUAL(prov_journal_append(j, &r, &tickets[i]), APR_SUCCESS);
    CU_ASSERT_EQUAL(files_in(dir), 1 + tickets[9]);
    done_and_close(j, tickets, 10, dir);
    apr_pool_destroy(p);
}

/* More than a chunk of records, a garbled line and a torn last record. */
static void test_journal_torn_and_chunks(void)
{
    apr_pool_t *p = NULL;
    prov_journal_t *j = NULL;
    seen_t *s = calloc(1, sizeof(*s));
    char *dir = temp_dir(), path[512], id[32];
    int ticket, i, fd, replayed = 0, n = PROV_JOURNAL_CHUNK * 2 + 100;
    static const char junk[] = "S\tgarbled line\n";
    static const char torn[] = "S\treq-torn\t7\t8\t9\tchat\t1\t2";

    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, dir, "db-1", 0, p), APR_SUCCESS);
    for (i = 0; i < n; i++) {
        prov_journal_rec_t r;
        snprintf(id, sizeof(id), "req-%d", i);
        r = rec(id, i);
        CU_ASSERT_EQUAL(prov_journal_append(j, &r, &ticket), APR_SUCCESS);
    }
    snprintf(path, sizeof(path), "%s/%s.1.log", dir, prov_journal_owner(j));
    prov_journal_close(j);           /* records outstanding: cut to what was written */
    fd = open(path, O_WRONLY | O_APPEND);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(write(fd, junk, sizeof(junk) - 1), (ssize_t)sizeof(junk) - 1);
    CU_ASSERT_EQUAL(write(fd, torn, sizeof(torn) - 1), (ssize_t)sizeof(torn) - 1);
    close(fd);
    CU_ASSERT_EQUAL(prov_journal_recover(&replayed, dir, "db-1", collect, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 1);
    CU_ASSERT_EQUAL(s->n, n);
    CU_ASSERT_EQUAL(s->calls, 3);
    CU_ASSERT_EQUAL(s->chunk[0], PROV_JOURNAL_CHUNK);
    CU_ASSERT_EQUAL(s->chunk[1], PROV_JOURNAL_CHUNK);
    CU_ASSERT_EQUAL(s->chunk[2], 100);
    CU_ASSERT_EQUAL(s->lasts, 1);
    ids_in_order(s, "req-", n);
    CU_ASSERT_EQUAL(files_in(dir), 0);
    remove_dir(dir);
    free(s);
    apr_pool_destroy(p);
}

/* The first segment file in dir ("" when none). */
static void first_segment(char *out, apr_size_t len, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    *out = '\0';
    while (d && (de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".1.log"))
            snprintf(out, len, "%s/%s", dir, de->d_name);
    }
    if (d)
        closedir(d);
}

/* A process killed with its journal open: its segment is still at full
 * size, NUL bytes after its last record, and a record cut by the kill
 * (no newline) sits before them. The whole records are replayed. */
static void test_journal_killed(void)
{
    apr_pool_t *p = NULL;
    seen_t *s;
    char *dir = temp_dir(), path[512], buf[4096];
    static const char torn[] = "S\treq-torn\t7\t8\t9\tchat\t1\t2";
    struct stat st;
    int replayed = 0, status = -1, fd;
    ssize_t got;
    pid_t pid;

    apr_pool_create(&p, prov_test_pool());
    if ((pid = fork()) == 0) {
        prov_journal_t *j = NULL;
        int ticket, i, ok = prov_journal_open(&j, dir, "db-1", 0, p) == APR_SUCCESS;
        for (i = 0; ok && i < 3; i++) {
            char id[16];
            prov_journal_rec_t r;
            snprintf(id, sizeof(id), "req-k%d", i);
            r = rec(id, i);
            ok = prov_journal_append(j, &r, &ticket) == APR_SUCCESS;
        }
        if (ok)
            raise(SIGKILL);          /* no close: killed (and no leak check) */
        _exit(1);
    }
    CU_ASSERT_TRUE_FATAL(pid > 0);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    s = calloc(1, sizeof(*s));
    first_segment(path, sizeof(path), dir);
    CU_ASSERT_TRUE_FATAL(path[0] != '\0');
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_TRUE(st.st_size >= PROV_JOURNAL_SEGMENT);
    fd = open(path, O_RDWR);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    got = pread(fd, buf, sizeof(buf), 0);
    CU_ASSERT_TRUE_FATAL(got > 0 && memchr(buf, '\0', (size_t)got) != NULL);
    CU_ASSERT_EQUAL(pwrite(fd, torn, sizeof(torn) - 1,
                           (char *)memchr(buf, '\0', (size_t)got) - buf), (ssize_t)sizeof(torn) - 1);
    close(fd);
    CU_ASSERT_EQUAL(prov_journal_recover(&replayed, dir, "db-1", collect, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 1);
    CU_ASSERT_EQUAL(s->n, 3);
    CU_ASSERT_STRING_EQUAL(s->ids[0], "req-k0");
    CU_ASSERT_STRING_EQUAL(s->ids[2], "req-k2");
    CU_ASSERT_EQUAL(files_in(dir), 0);
    remove_dir(dir);
    free(s);
    apr_pool_destroy(p);
}

/* The size of j's segment no in dir (-1: no such file). */
static long seg_size(const char *dir, const prov_journal_t *j, int no)
{
    char path[512];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s.%d.log", dir, prov_journal_owner(j), no);
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Appends n records (ids from *next on), their tickets into t. */
static void append_n(prov_journal_t *j, int *next, int n, int *t)
{
    int i;
    for (i = 0; i < n; i++, (*next)++) {
        char id[16];
        prov_journal_rec_t r;
        snprintf(id, sizeof(id), "a%d", *next);
        r = rec(id, *next);
        CU_ASSERT_EQUAL(prov_journal_append(j, &r, &t[*next]), APR_SUCCESS);
    }
}

/* Segments of 200 bytes: four 64-byte records each (no agent session: its
 * two fields empty), a spare made once
 * two are in, a full mapping 200 + 1024 bytes. */
static void test_journal_ahead(void)
{
    apr_pool_t *p = NULL;
    prov_journal_t *j = NULL;
    char *dir = temp_dir();
    int t[16], next = 0, i;
    const long full = 200 + 1024, four = 4 * 64;

    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(strlen("S\ta0\t7\t8\t9\tchat\t11\t22\t3\t4\t1000\t0\t1\t1\tok\t"
                                 "1700000000\t1700000002\t\t\n"), 64);
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, dir, "db-1", 200, p), APR_SUCCESS);
    append_n(j, &next, 1, t);
    CU_ASSERT_EQUAL(prov_journal_reap(j), 0);
    CU_ASSERT_EQUAL(files_in(dir), 2);                /* less than half: no spare */
    append_n(j, &next, 1, t);
    CU_ASSERT_EQUAL(prov_journal_reap(j), 0);
    CU_ASSERT_EQUAL(files_in(dir), 3);
    CU_ASSERT_EQUAL(seg_size(dir, j, 2), full);       /* the spare, NUL bytes */
    append_n(j, &next, 3, t);                         /* the fifth rotates */
    CU_ASSERT_EQUAL(t[4], 2);
    CU_ASSERT_EQUAL(files_in(dir), 3);                /* the spare swapped in */
    CU_ASSERT_EQUAL(seg_size(dir, j, 1), full);       /* left for the reap */
    CU_ASSERT_EQUAL(prov_journal_reap(j), 0);
    CU_ASSERT_EQUAL(seg_size(dir, j, 1), four);       /* sealed */
    CU_ASSERT_EQUAL(files_in(dir), 3);
    /* No reap: the rotations make their own segments, the second seals
     * what the first left. */
    append_n(j, &next, 3 + 4 + 1, t);
    CU_ASSERT_EQUAL(t[12], 4);
    CU_ASSERT_EQUAL(seg_size(dir, j, 2), four);
    CU_ASSERT_EQUAL(seg_size(dir, j, 3), full);
    CU_ASSERT_EQUAL(files_in(dir), 5);
    for (i = 0; i < next; i++) {
        if (t[i] < 4)
            prov_journal_done(j, t[i]);
    }
    CU_ASSERT_EQUAL(prov_journal_reap(j), 3);
    CU_ASSERT_EQUAL(files_in(dir), 2);
    for (i = 0; i < next && t[i] < 4; i++)
        ;
    done_and_close(j, t + i, next - i, dir);
    apr_pool_destroy(p);
}

/* Killed with a sealed segment, the current one and a spare: the six
 * records come back in order, and every file goes. */
static void test_journal_killed_ahead(void)
{
    apr_pool_t *p = NULL;
    seen_t *s;
    char *dir = temp_dir();
    int replayed = 0, status = -1;
    pid_t pid;

    apr_pool_create(&p, prov_test_pool());
    if ((pid = fork()) == 0) {
        prov_journal_t *j = NULL;
        int t[8], next = 0;
        if (prov_journal_open(&j, dir, "db-1", 200, p) != APR_SUCCESS)
            _exit(1);
        append_n(j, &next, 6, t);
        prov_journal_reap(j);
        raise(SIGKILL);
        _exit(1);
    }
    CU_ASSERT_TRUE_FATAL(pid > 0);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CU_ASSERT_EQUAL(files_in(dir), 4);
    s = calloc(1, sizeof(*s));
    CU_ASSERT_EQUAL(prov_journal_recover(&replayed, dir, "db-1", collect, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 1);
    CU_ASSERT_EQUAL(s->n, 6);
    ids_in_order(s, "a", 6);
    CU_ASSERT_EQUAL(files_in(dir), 0);
    remove_dir(dir);
    free(s);
    apr_pool_destroy(p);
}

/* Progress records: not outstanding (a journal of progress only leaves
 * no file) unless kept; read back after the settlements, the latest of each request
 * that no settlement ended, and only those. */
static void test_journal_progress(void)
{
    apr_pool_t *p = NULL;
    prov_journal_t *j = NULL;
    seen_t *s = calloc(1, sizeof(*s));
    char *dir = temp_dir();
    const char *ids[] = { "a", "b", "a", "b", "c", "d" };
    const int prog[] = { 1, 1, 1, 0, 1, 0 };
    int i, ticket, replayed = -1, a = -1, c = -1;

    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, dir, "db-1", 0, p), APR_SUCCESS);
    for (i = 0; i < 6; i++) {
        prov_journal_rec_t r = rec(ids[i], 10 * (i + 1));
        r.progress = prog[i];
        ticket = -1;
        CU_ASSERT_EQUAL(prov_journal_append(j, &r, &ticket), APR_SUCCESS);
        CU_ASSERT_EQUAL(ticket == 0, prog[i]);
    }
    CU_ASSERT_EQUAL(prov_journal_outstanding(j), 2);
    prov_journal_close(j);
    CU_ASSERT_EQUAL(prov_journal_recover(&replayed, dir, "db-1", collect, s, p), APR_SUCCESS);
    CU_ASSERT_EQUAL(replayed, 1);
    CU_ASSERT_EQUAL_FATAL(s->n, 4);
    CU_ASSERT_EQUAL(s->lasts, 1);
    /* the settlements in order, then the progress of a and c */
    CU_ASSERT_STRING_EQUAL(s->ids[0], "b");
    CU_ASSERT_EQUAL(s->charges[0], 40);
    CU_ASSERT_STRING_EQUAL(s->ids[1], "d");
    CU_ASSERT_FALSE(s->progress[0] || s->progress[1]);
    for (i = 2; i < 4; i++) {
        CU_ASSERT_TRUE(s->progress[i]);
        if (!strcmp(s->ids[i], "a"))
            a = i;
        if (!strcmp(s->ids[i], "c"))
            c = i;
    }
    CU_ASSERT_TRUE_FATAL(a >= 0 && c >= 0);
    CU_ASSERT_EQUAL(s->charges[a], 30);            /* the latest */
    CU_ASSERT_EQUAL(s->charges[c], 50);
    CU_ASSERT_EQUAL(files_in(dir), 0);

    /* Progress only: nothing outstanding, nothing left at close. */
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, dir, "db-1", 0, p), APR_SUCCESS);
    {
        prov_journal_rec_t r = rec("e", 5);
        r.progress = 1;
        CU_ASSERT_EQUAL(prov_journal_append(j, &r, &ticket), APR_SUCCESS);
    }
    CU_ASSERT_EQUAL(prov_journal_outstanding(j), 0);
    prov_journal_close(j);
    CU_ASSERT_EQUAL(files_in(dir), 0);
    remove_dir(dir);
    free(s);
    apr_pool_destroy(p);
}

/* A kept progress record (a drawn request's floor) keeps its segment until
 * it is done, though the segment is full and its settlements are done; a
 * close does not wait for it (its process is alive). */
static void test_journal_kept(void)
{
    apr_pool_t *p = NULL;
    prov_journal_t *j = NULL;
    prov_journal_rec_t f = rec("floor", 7), r = rec("seg", 1);
    char *dir = temp_dir();
    int kept = 0, tickets[10], i;

    apr_pool_create(&p, prov_test_pool());
    CU_ASSERT_EQUAL_FATAL(prov_journal_open(&j, dir, "db-1", 100, p), APR_SUCCESS);
    f.progress = f.keep = 1;
    CU_ASSERT_EQUAL(prov_journal_append(j, &f, &kept), APR_SUCCESS);
    CU_ASSERT_EQUAL(kept, 1);
    CU_ASSERT_EQUAL(prov_journal_kept(j), 1);
    CU_ASSERT_EQUAL(prov_journal_outstanding(j), 0);
    for (i = 0; i < 10; i++)
        CU_ASSERT_EQUAL(prov_journal_append(j, &r, &tickets[i]), APR_SUCCESS);
    CU_ASSERT_TRUE_FATAL(tickets[9] >= 4);
    for (i = 0; i < 10; i++)
        prov_journal_done(j, tickets[i]);
    prov_journal_reap(j);
    CU_ASSERT_TRUE(files_in(dir) >= 3);          /* the lock, the kept one's, the current */
    CU_ASSERT_TRUE(dir_has_segment(dir, 1));
    prov_journal_done_kept(j, kept);
    CU_ASSERT_EQUAL(prov_journal_kept(j), 0);
    prov_journal_reap(j);
    CU_ASSERT_FALSE(dir_has_segment(dir, 1));
    /* Kept and not done at the close: the files go all the same. */
    CU_ASSERT_EQUAL(prov_journal_append(j, &f, &kept), APR_SUCCESS);
    CU_ASSERT_EQUAL(prov_journal_kept(j), 1);
    prov_journal_close(j);
    CU_ASSERT_EQUAL(files_in(dir), 0);
    remove_dir(dir);
    apr_pool_destroy(p);
}

void prov_test_suite_journal(void)
{
    PROV_SUITE("journal", PROV_TEST(test_journal_roundtrip), PROV_TEST(test_journal_segments),
               PROV_TEST(test_journal_torn_and_chunks), PROV_TEST(test_journal_killed),
               PROV_TEST(test_journal_ahead), PROV_TEST(test_journal_killed_ahead),
               PROV_TEST(test_journal_progress), PROV_TEST(test_journal_kept));
}
