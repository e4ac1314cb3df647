/* prov_journal_read.c: the settlement journal read back (see
 * prov_journal.h). A survivor looks for lock files in the directory; one it
 * can lock (its owner is gone), that is still the file it opened and that
 * names this database is replayed: its segments in order, a chunk of
 * records per call of the engine's replay function, lines cut short or
 * unreadable skipped (and counted); progress records are kept aside, the
 * latest of each request, and those of requests that no settlement ended
 * are handed over last; then its files are deleted. A hidden
 * temporary lock file left by a process that died while opening its
 * journal is removed once it is old. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <apr_file_io.h>
#include <apr_hash.h>
#include <apr_lib.h>
#include <apr_strings.h>
#include "prov_journal.h"
#include "prov_log.h"

/* A hidden lock file nobody locks is a journal that never started. */
#define TMP_STALE 60
/* A lock file's header line at most. */
#define HEADER_MAX 256

static char *get_text(const char *s, apr_pool_t *p)
{
    char *out = apr_pstrdup(p, s), *o = out;
    for (; *s; s++) {
        if (*s == '%' && apr_isxdigit(s[1]) && apr_isxdigit(s[2])) {
            char h[3] = { s[1], s[2], 0 };
            *o++ = (char)strtol(h, NULL, 16);
            s += 2;
        }
        else {
            *o++ = *s;
        }
    }
    *o = '\0';
    return out;
}

/* Parses one record line (NUL-terminated, without its newline). */
static int parse_rec(prov_journal_rec_t *r, char *line, apr_pool_t *p)
{
    char *f[PROV_JOURNAL_FIELDS], *t = line;
    apr_int64_t v[PROV_JOURNAL_FIELDS];
    int n = 0, i;
    /* Fields may be empty: split on every tab. */
    while (t && n < PROV_JOURNAL_FIELDS) {
        f[n++] = t;
        if ((t = strchr(t, '\t')) != NULL)
            *t++ = '\0';
    }
    if ((n != PROV_JOURNAL_FIELDS && n != PROV_JOURNAL_FIELDS_OLD) || t
        || (strcmp(f[0], "S") && strcmp(f[0], "P")))
        return 0;
    for (i = 2; i < PROV_JOURNAL_FIELDS_OLD; i++) {
        if (i == 5 || i == 14)
            continue;
        if (prov_parse_i64(&v[i], f[i]) != APR_SUCCESS)
            return 0;
    }
    memset(r, 0, sizeof(*r));
    /* a status the ledger does not know: a bad record */
    if (prov_ledger_status_parse(&r->row.status, f[14]) != APR_SUCCESS)
        return 0;
    r->row.request_id = get_text(f[1], p);
    r->row.user_id = v[2];
    r->row.key_id = v[3];
    r->row.model_id = v[4];
    r->row.transport = get_text(f[5], p);
    r->row.tokens.input = v[6];
    r->row.tokens.output = v[7];
    r->row.tokens.cache = v[8];
    r->row.tokens.reasoning = v[9];
    r->row.hold = v[10];
    r->row.charge = v[11];
    r->row.from_plan = v[12] != 0;
    r->drawn = v[13] != 0;
    r->row.created_at = v[15];
    r->row.settled_at = v[16];
    r->progress = f[0][0] == 'P';
    /* the agent session (the older format has none); a client the ledger
     * does not know: a bad record */
    if (n == PROV_JOURNAL_FIELDS && *f[17]) {
        if (prov_ledger_client_parse(&r->row.client, f[18]) != APR_SUCCESS)
            return 0;
        r->row.session = get_text(f[17], p);
    }
    return 1;
}

typedef struct replay_t {
    const char *owner;
    prov_journal_replay_fn *fn;
    void *baton;
    prov_journal_rec_t *recs;
    int n, bad;
    apr_hash_t *progress;           /* request id -> its latest progress record */
    apr_pool_t *p;
} replay_t;

/* Hands over the records gathered when a chunk is full (or, last, the
 * journal's final call). */
static apr_status_t hand_over(replay_t *x, int last)
{
    apr_status_t rv;
    if (!last && x->n < PROV_JOURNAL_CHUNK)
        return APR_SUCCESS;
    if ((rv = x->fn(x->baton, x->owner, x->recs, x->n, last, x->p)) == APR_SUCCESS)
        x->n = 0;
    return rv;
}

/* One record read: a settlement is gathered (and ends its request's
 * progress); a progress record replaces its request's earlier one. */
static apr_status_t take(replay_t *x, const prov_journal_rec_t *r)
{
    if (r->progress) {
        prov_journal_rec_t *keep = apr_pmemdup(x->p, r, sizeof(*r));
        apr_hash_set(x->progress, keep->row.request_id, APR_HASH_KEY_STRING, keep);
        return APR_SUCCESS;
    }
    apr_hash_set(x->progress, r->row.request_id, APR_HASH_KEY_STRING, NULL);
    x->recs[x->n++] = *r;
    return hand_over(x, 0);
}

/* After every segment: the progress of the requests that were never
 * settled, then the final call. */
static apr_status_t replay_end(replay_t *x)
{
    apr_hash_index_t *hi;
    apr_status_t rv;
    for (hi = apr_hash_first(x->p, x->progress); hi; hi = apr_hash_next(hi)) {
        x->recs[x->n++] = *(const prov_journal_rec_t *)apr_hash_this_val(hi);
        if ((rv = hand_over(x, 0)) != APR_SUCCESS)
            return rv;
    }
    return hand_over(x, 1);
}

/* Reads one segment's records into x, handing over every full chunk. */
static apr_status_t replay_segment(replay_t *x, const char *path)
{
    apr_file_t *f = NULL;
    apr_finfo_t fi;
    char *buf, *line, *nl;
    apr_size_t got = 0;
    apr_status_t rv = apr_file_open(&f, path, APR_FOPEN_READ, APR_OS_DEFAULT, x->p);
    if (rv != APR_SUCCESS)
        return APR_STATUS_IS_ENOENT(rv) ? APR_SUCCESS : rv;
    if ((rv = apr_file_info_get(&fi, APR_FINFO_SIZE, f)) != APR_SUCCESS) {
        apr_file_close(f);
        return rv;
    }
    buf = apr_palloc(x->p, (apr_size_t)fi.size + 1);
    rv = fi.size ? apr_file_read_full(f, buf, (apr_size_t)fi.size, &got) : APR_SUCCESS;
    apr_file_close(f);
    if (rv != APR_SUCCESS && rv != APR_EOF)
        return rv;
    buf[got] = '\0';
    for (line = buf; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        prov_journal_rec_t rec;
        *nl = '\0';
        if (!parse_rec(&rec, line, x->p)) {
            x->bad++;
            continue;
        }
        if ((rv = take(x, &rec)) != APR_SUCCESS)
            return rv;
    }
    return APR_SUCCESS;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* The segment numbers of owner in dir, in order. */
static apr_array_header_t *segments_of(const char *dir, const char *owner, apr_pool_t *p)
{
    apr_array_header_t *nos = apr_array_make(p, 4, sizeof(int));
    apr_size_t ol = strlen(owner);
    struct dirent *de;
    DIR *d = opendir(dir);
    if (!d)
        return nos;
    while ((de = readdir(d)) != NULL) {
        const char *nm = de->d_name;
        char *end = NULL;
        long no;
        if (strncmp(nm, owner, ol) || nm[ol] != '.')
            continue;
        no = strtol(nm + ol + 1, &end, 10);
        if (no > 0 && end && !strcmp(end, ".log"))
            APR_ARRAY_PUSH(nos, int) = (int)no;
    }
    closedir(d);
    qsort(nos->elts, (size_t)nos->nelts, sizeof(int), cmp_int);
    return nos;
}

/* Reads the lock file's header; 1 when it names db_id. */
static int header_matches(int fd, const char *db_id, const char *owner)
{
    char buf[HEADER_MAX];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    char *t1, *t2, *nl;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (!(nl = strchr(buf, '\n')))
        return 0;
    *nl = '\0';
    if (strncmp(buf, PROV_JOURNAL_HEADER_TAG "\t", sizeof(PROV_JOURNAL_HEADER_TAG)) || !(t1 = strchr(buf, '\t'))
        || !(t2 = strchr(t1 + 1, '\t')))
        return 0;
    *t2 = '\0';
    return !strcmp(t1 + 1, db_id) && !strcmp(t2 + 1, owner);
}

/* Replays the journal of owner if its process is gone: 1 when it did. */
static apr_status_t recover_one(int *done, const char *dir, const char *owner,
                                const char *db_id, prov_journal_replay_fn *fn, void *baton,
                                apr_pool_t *p)
{
    const char *lock = apr_psprintf(p, "%s/%s.lock", dir, owner);
    struct stat a, b;
    apr_array_header_t *nos;
    replay_t x;
    apr_status_t rv = APR_SUCCESS;
    int fd = open(lock, O_RDWR | O_CLOEXEC), i;

    *done = 0;
    if (fd < 0)
        return APR_SUCCESS;
    /* Locked: its owner lives (or another survivor replays it). Unlinked
     * since it was opened: replayed already. */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &a) != 0 || stat(lock, &b) != 0
        || a.st_ino != b.st_ino || a.st_dev != b.st_dev || !header_matches(fd, db_id, owner)) {
        close(fd);
        return APR_SUCCESS;
    }
    memset(&x, 0, sizeof(x));
    x.owner = owner;
    x.fn = fn;
    x.baton = baton;
    x.p = p;
    x.recs = apr_palloc(p, sizeof(*x.recs) * PROV_JOURNAL_CHUNK);
    x.progress = apr_hash_make(p);
    nos = segments_of(dir, owner, p);
    for (i = 0; i < nos->nelts && rv == APR_SUCCESS; i++)
        rv = replay_segment(&x, apr_psprintf(p, "%s/%s.%d.log", dir, owner,
                                             APR_ARRAY_IDX(nos, i, int)));
    if (rv == APR_SUCCESS)
        rv = replay_end(&x);
    if (rv == APR_SUCCESS) {
        for (i = 0; i < nos->nelts; i++)
            unlink(apr_psprintf(p, "%s/%s.%d.log", dir, owner, APR_ARRAY_IDX(nos, i, int)));
        unlink(lock);
        *done = 1;
        if (x.bad)
            prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00381: journal %s had %d unreadable "
                     "record(s); they were skipped", owner, x.bad);
    }
    close(fd);
    return rv;
}

/* A hidden lock file that nobody holds and that is old: its journal never
 * started (the process died while opening it). */
static void clean_tmp(const char *dir, const char *name, apr_pool_t *p)
{
    const char *path = apr_psprintf(p, "%s/%s", dir, name);
    struct stat st;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0
        && apr_time_sec(apr_time_now()) - st.st_mtime > TMP_STALE)
        unlink(path);
    close(fd);
}

apr_status_t prov_journal_recover(int *replayed, const char *dir, const char *db_id,
                                  prov_journal_replay_fn *fn, void *baton, apr_pool_t *p)
{
    apr_array_header_t *owners = apr_array_make(p, 4, sizeof(char *)),
                       *tmps = apr_array_make(p, 1, sizeof(char *));
    apr_status_t rv = APR_SUCCESS;
    struct dirent *de;
    DIR *d = opendir(dir);
    int i, count = 0;

    if (replayed)
        *replayed = 0;
    if (!d)
        return APR_SUCCESS;
    while ((de = readdir(d)) != NULL) {
        apr_size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.') {
            if (len > 9 && !strcmp(de->d_name + len - 9, ".lock.tmp"))
                APR_ARRAY_PUSH(tmps, char *) = apr_pstrdup(p, de->d_name);
        }
        else if (len > 5 && !strcmp(de->d_name + len - 5, ".lock")) {
            APR_ARRAY_PUSH(owners, char *) = apr_pstrndup(p, de->d_name, len - 5);
        }
    }
    closedir(d);
    for (i = 0; i < owners->nelts; i++) {
        apr_pool_t *sub = NULL;
        apr_status_t r1;
        int done = 0;
        apr_pool_create(&sub, p);
        r1 = recover_one(&done, dir, APR_ARRAY_IDX(owners, i, char *), db_id, fn, baton, sub);
        apr_pool_destroy(sub);
        if (r1 != APR_SUCCESS)
            rv = r1;
        count += done;
    }
    for (i = 0; i < tmps->nelts; i++)
        clean_tmp(dir, APR_ARRAY_IDX(tmps, i, char *), p);
    if (replayed)
        *replayed = count;
    return rv;
}
