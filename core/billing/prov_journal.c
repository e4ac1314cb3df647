/* prov_journal.c: the settlement journal's files (see prov_journal.h). A
 * journal of owner O in directory D is D/O.lock (a header line naming the
 * database, flock'ed by the owner for its life) and segments D/O.N.log, one
 * record per line. A lock file is made under a hidden temporary name,
 * locked, then renamed into place, so that nobody ever sees it unlocked
 * while its owner lives. Records are written with one write(2) each under
 * the journal's mutex; a write cut short is truncated away, and a last line
 * without its newline (the process was killed inside write) is ignored when
 * read back: its answer had not gone out. No fsync: the journal is for a
 * process that dies, not for a machine that loses power. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <apr_file_io.h>
#include <apr_general.h>
#include <apr_lib.h>
#include <apr_network_io.h>
#include <apr_strings.h>
#include "prov_journal.h"
#include "prov_log.h"

#define HEADER_TAG "PROVJ1"
#define NFIELDS 17
/* A hidden lock file nobody locks is a journal that never started. */
#define TMP_STALE 60

typedef struct seg_t {
    struct seg_t *next;
    int no;
    int outstanding;
    char *path;
} seg_t;

/* Two locks: wmu serialises the writes (and the current segment's fd and
 * size), mu guards the segment list and the counts. A record's done never
 * waits for another thread's write(2): the engine calls it holding its own
 * queue mutex. Lock order: wmu, then mu. */
struct prov_journal_t {
    pthread_mutex_t wmu, mu;
    char *dir, *lock_path;
    char owner[PROV_JOURNAL_OWNER_MAX];
    int lock_fd;
    int fd;                         /* the current segment (segs, its head) */
    apr_off_t size, segment_max;
    seg_t *segs;
};

static apr_status_t os_error(void)
{
    return APR_FROM_OS_ERROR(errno ? errno : EIO);
}

const char *prov_journal_owner(const prov_journal_t *j)
{
    return j->owner;
}

static seg_t *seg_open(prov_journal_t *j, int no, int *fd)
{
    seg_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->no = no;
    if (!(s->path = malloc(strlen(j->dir) + strlen(j->owner) + 32))) {
        free(s);
        return NULL;
    }
    sprintf(s->path, "%s/%s.%d.log", j->dir, j->owner, no);
    *fd = open(s->path, O_CREAT | O_EXCL | O_WRONLY | O_APPEND | O_CLOEXEC, 0600);
    if (*fd < 0) {
        free(s->path);
        free(s);
        return NULL;
    }
    return s;
}

static void seg_free(seg_t *s)
{
    free(s->path);
    free(s);
}

static void journal_free(prov_journal_t *j)
{
    seg_t *s, *next;
    for (s = j->segs; s; s = next) {
        next = s->next;
        seg_free(s);
    }
    pthread_mutex_destroy(&j->mu);
    pthread_mutex_destroy(&j->wmu);
    free(j->dir);
    free(j->lock_path);
    free(j);
}

/* A name of letters, digits and '-' only: no '.' (segment names split on
 * the first), nothing a shell or a path would read twice. */
static void make_owner(char *out, apr_size_t len, apr_pool_t *p)
{
    char host[APRMAXHOSTLEN + 1] = "host";
    unsigned char rnd[4] = { 0, 0, 0, 0 };
    char *c;
    apr_gethostname(host, sizeof(host), p);
    host[40] = '\0';
    for (c = host; *c; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
            *c = '-';
    }
    apr_generate_random_bytes(rnd, sizeof(rnd));
    apr_snprintf(out, len, "%s-%ld-%02x%02x%02x%02x", host, (long)getpid(), rnd[0], rnd[1],
                 rnd[2], rnd[3]);
}

apr_status_t prov_journal_open(prov_journal_t **pj, const char *dir, const char *db_id,
                               apr_off_t segment_max, apr_pool_t *p)
{
    prov_journal_t *j;
    const char *tmp, *header;
    apr_status_t rv;
    int fd;

    *pj = NULL;
    if (!dir || !db_id || strchr(db_id, '\t') || strchr(db_id, '\n'))
        return APR_EINVAL;
    rv = apr_dir_make_recursive(dir, APR_FPROT_UREAD | APR_FPROT_UWRITE | APR_FPROT_UEXECUTE, p);
    if (rv != APR_SUCCESS && !APR_STATUS_IS_EEXIST(rv))
        return rv;
    if (!(j = calloc(1, sizeof(*j))))
        return APR_ENOMEM;
    pthread_mutex_init(&j->mu, NULL);
    pthread_mutex_init(&j->wmu, NULL);
    j->lock_fd = j->fd = -1;
    j->segment_max = segment_max > 0 ? segment_max : PROV_JOURNAL_SEGMENT;
    make_owner(j->owner, sizeof(j->owner), p);
    j->dir = strdup(dir);
    j->lock_path = strdup(apr_psprintf(p, "%s/%s.lock", dir, j->owner));
    if (!j->dir || !j->lock_path) {
        journal_free(j);
        return APR_ENOMEM;
    }
    tmp = apr_psprintf(p, "%s/.%s.lock.tmp", dir, j->owner);
    header = apr_psprintf(p, HEADER_TAG "\t%s\t%s\n", db_id, j->owner);
    fd = open(tmp, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        rv = os_error();
        journal_free(j);
        return rv;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0
        || write(fd, header, strlen(header)) != (ssize_t)strlen(header)
        || rename(tmp, j->lock_path) != 0) {
        rv = os_error();
        unlink(tmp);
        close(fd);
        journal_free(j);
        return rv;
    }
    j->lock_fd = fd;
    if (!(j->segs = seg_open(j, 1, &j->fd))) {
        rv = os_error();
        unlink(j->lock_path);
        close(fd);
        journal_free(j);
        return rv;
    }
    *pj = j;
    return APR_SUCCESS;
}

/* ---- records ----------------------------------------------------------------- */

/* Copies s with bytes that would break a line (controls, space, '%')
 * written as %XX; returns the end, or NULL when it does not fit. */
static char *put_text(char *o, const char *end, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (s = s ? s : ""; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= ' ' || c == '%' || c == 0x7f) {
            if (end - o < 4)
                return NULL;
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
        else {
            if (end - o < 2)
                return NULL;
            *o++ = (char)c;
        }
    }
    return o;
}

static int format_rec(char *buf, apr_size_t len, const prov_journal_rec_t *r)
{
    char *o = buf, *end = buf + len;
    int n;
    o[0] = 'S';
    o[1] = '\t';
    o += 2;
    if (!(o = put_text(o, end, r->request_id)))
        return -1;
    n = apr_snprintf(o, end - o, "\t%" APR_INT64_T_FMT "\t%" APR_INT64_T_FMT "\t%"
                     APR_INT64_T_FMT "\t", r->user_id, r->key_id, r->model_id);
    o += n;
    if (end - o < 2 || !(o = put_text(o, end, r->transport)))
        return -1;
    n = apr_snprintf(o, end - o, "\t%" APR_INT64_T_FMT "\t%" APR_INT64_T_FMT "\t%"
                     APR_INT64_T_FMT "\t%" APR_INT64_T_FMT "\t%" APR_INT64_T_FMT "\t%"
                     APR_INT64_T_FMT "\t%d\t%d\t", r->tokens.input, r->tokens.output,
                     r->tokens.cache, r->tokens.reasoning, r->hold, r->charge,
                     r->from_plan ? 1 : 0, r->drawn ? 1 : 0);
    o += n;
    if (end - o < 2 || !(o = put_text(o, end, r->status)))
        return -1;
    n = apr_snprintf(o, end - o, "\t%" APR_INT64_T_FMT "\t%" APR_INT64_T_FMT "\n",
                     r->created_at, r->settled_at);
    o += n;
    if (o >= end || o[-1] != '\n')
        return -1;
    return (int)(o - buf);
}

/* Starts segment no + 1 (wmu held); the full one is deleted when none of
 * its records is outstanding. Keeps writing the old one when it cannot. */
static void rotate(prov_journal_t *j)
{
    int fd = -1;
    seg_t *s = seg_open(j, j->segs->no + 1, &fd), **pp;
    if (!s)
        return;
    close(j->fd);
    j->fd = fd;
    j->size = 0;
    pthread_mutex_lock(&j->mu);
    s->next = j->segs;
    j->segs = s;
    for (pp = &s->next; *pp; pp = &(*pp)->next) {
        if ((*pp)->outstanding == 0) {
            seg_t *old = *pp;
            unlink(old->path);
            *pp = old->next;
            seg_free(old);
            break;
        }
    }
    pthread_mutex_unlock(&j->mu);
}

apr_status_t prov_journal_append(prov_journal_t *j, const prov_journal_rec_t *rec, int *ticket)
{
    char buf[1024];
    int len = format_rec(buf, sizeof(buf), rec);
    ssize_t n;
    seg_t *cur;
    apr_status_t rv = APR_SUCCESS;

    *ticket = 0;
    if (len < 0)
        return APR_EINVAL;
    pthread_mutex_lock(&j->wmu);
    if (j->size >= j->segment_max)
        rotate(j);
    cur = j->segs;                   /* the current one is never freed */
    errno = 0;
    n = write(j->fd, buf, (size_t)len);
    if (n == len) {
        j->size += len;
        pthread_mutex_lock(&j->mu);
        cur->outstanding++;
        pthread_mutex_unlock(&j->mu);
        *ticket = cur->no;
    }
    else {
        rv = os_error();
        /* A cut record must not glue itself to the next one. */
        if (n > 0 && ftruncate(j->fd, (off_t)j->size) != 0)
            j->size += n;            /* the reader drops the glued line */
    }
    pthread_mutex_unlock(&j->wmu);
    return rv;
}

void prov_journal_done_n(prov_journal_t *j, int ticket, int n)
{
    seg_t **pp;
    if (!j || ticket <= 0 || n <= 0)
        return;
    pthread_mutex_lock(&j->mu);
    for (pp = &j->segs; *pp; pp = &(*pp)->next) {
        seg_t *s = *pp;
        if (s->no != ticket)
            continue;
        s->outstanding -= n;
        /* A full segment with nothing outstanding is not needed any more. */
        if (s->outstanding <= 0 && s != j->segs) {
            unlink(s->path);
            *pp = s->next;
            seg_free(s);
        }
        break;
    }
    pthread_mutex_unlock(&j->mu);
}

void prov_journal_done(prov_journal_t *j, int ticket)
{
    prov_journal_done_n(j, ticket, 1);
}

static int outstanding(const prov_journal_t *j)
{
    const seg_t *s;
    int n = 0;
    for (s = j->segs; s; s = s->next)
        n += s->outstanding;
    return n;
}

int prov_journal_outstanding(prov_journal_t *j)
{
    int n;
    pthread_mutex_lock(&j->mu);
    n = outstanding(j);
    pthread_mutex_unlock(&j->mu);
    return n;
}

void prov_journal_close(prov_journal_t *j)
{
    seg_t *s;
    int left;
    if (!j)
        return;
    if ((left = prov_journal_outstanding(j)) == 0) {
        for (s = j->segs; s; s = s->next)
            unlink(s->path);
        unlink(j->lock_path);
    }
    else {
        prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00380: journal %s closed with %d "
                 "settlement(s) not written; a surviving process replays them", j->owner, left);
    }
    close(j->fd);
    close(j->lock_fd);              /* last: the lock goes with it */
    journal_free(j);
}

/* ---- recovery ------------------------------------------------------------------ */

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
    char *f[NFIELDS], *t = line;
    apr_int64_t v[NFIELDS];
    int n = 0, i;
    /* Fields may be empty: split on every tab. */
    while (t && n < NFIELDS) {
        f[n++] = t;
        if ((t = strchr(t, '\t')) != NULL)
            *t++ = '\0';
    }
    if (n != NFIELDS || t || strcmp(f[0], "S"))
        return 0;
    for (i = 2; i < NFIELDS; i++) {
        if (i == 5 || i == 14)
            continue;
        if (prov_parse_i64(&v[i], f[i]) != APR_SUCCESS)
            return 0;
    }
    memset(r, 0, sizeof(*r));
    r->request_id = get_text(f[1], p);
    r->user_id = v[2];
    r->key_id = v[3];
    r->model_id = v[4];
    r->transport = get_text(f[5], p);
    r->tokens.input = v[6];
    r->tokens.output = v[7];
    r->tokens.cache = v[8];
    r->tokens.reasoning = v[9];
    r->hold = v[10];
    r->charge = v[11];
    r->from_plan = v[12] != 0;
    r->drawn = v[13] != 0;
    r->status = get_text(f[14], p);
    r->created_at = v[15];
    r->settled_at = v[16];
    return 1;
}

typedef struct replay_t {
    const char *owner;
    prov_journal_replay_fn *fn;
    void *baton;
    prov_journal_rec_t *recs;
    int n, bad;
    apr_pool_t *p;
} replay_t;

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
        *nl = '\0';
        if (!parse_rec(&x->recs[x->n], line, x->p)) {
            x->bad++;
            continue;
        }
        if (++x->n == PROV_JOURNAL_CHUNK) {
            if ((rv = x->fn(x->baton, x->owner, x->recs, x->n, 0, x->p)) != APR_SUCCESS)
                return rv;
            x->n = 0;
        }
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
    char buf[256];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    char *t1, *t2, *nl;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (!(nl = strchr(buf, '\n')))
        return 0;
    *nl = '\0';
    if (strncmp(buf, HEADER_TAG "\t", sizeof(HEADER_TAG)) || !(t1 = strchr(buf, '\t'))
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
    nos = segments_of(dir, owner, p);
    for (i = 0; i < nos->nelts && rv == APR_SUCCESS; i++)
        rv = replay_segment(&x, apr_psprintf(p, "%s/%s.%d.log", dir, owner,
                                             APR_ARRAY_IDX(nos, i, int)));
    if (rv == APR_SUCCESS)
        rv = fn(baton, owner, x.recs, x.n, 1, p);
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
