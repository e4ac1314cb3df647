/* prov_journal.c: the settlement journal's files (see prov_journal.h). A
 * journal of owner O in directory D is D/O.lock (a header line naming the
 * database, flock'ed by the owner for its life) and segments D/O.N.log, one
 * record per line. A lock file is made under a hidden temporary name,
 * locked, then renamed into place, so that nobody ever sees it unlocked
 * while its owner lives. A segment is allocated at its full size when it
 * is made (posix_fallocate: a page touched later can never fail for want
 * of disk) and mapped shared; a record is copied into the mapping under
 * the journal's mutex, its newline last, so no system call is made per
 * record. A record is a settlement ("S", outstanding until committed) or a
 * request's progress ("P": it keeps no segment, except a drawn request's
 * floor, kept until its settlement is journaled). The
 * page cache holds what was copied when the process is killed
 * the next moment, as it held what write(2) wrote. The unused rest of a
 * segment is NUL bytes, where a reader stops; a last line without its
 * newline (the process was killed inside the copy) is ignored: its answer
 * had not gone out. A sealed segment, and the current one at close, is cut
 * to what was written. The file system's work of a rotation is done by the
 * billing writer in prov_journal_reap, off the path of the requests: it
 * makes the next segment ahead (a spare, NUL bytes only, which a reader
 * finds empty) and seals the one a rotation left, so that a rotation under
 * the write lock is a swap of pointers (making and sealing took 0.23 ms,
 * up to 0.9, about once a second under load, every settling thread
 * waiting). Without a writer (providerctl, the tests) a rotation makes and
 * seals itself. No fsync: the journal is for a process that dies,
 * not for a machine that loses power. Reading dead processes' journals
 * back is prov_journal_read.c. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <apr_file_io.h>
#include <apr_general.h>
#include <apr_network_io.h>
#include <apr_strings.h>
#include "prov_journal.h"
#include "prov_log.h"
#include "prov_metrics.h"

/* One record line at most (a request id and a transport of sane length;
 * a longer record is refused, EINVAL). */
#define REC_MAX 1024

/* A segment's open file and its mapping (map NULL: none). */
typedef struct mfile_t {
    int fd;
    char *map;
    apr_off_t size;                 /* bytes written */
} mfile_t;

typedef struct seg_t {
    struct seg_t *next;
    int no;
    int outstanding;                /* settlements not done */
    int kept;                       /* kept progress records not done */
    char *path;
} seg_t;

/* Three locks: wmu serialises the writes (and cur, the current segment's
 * file), mu guards the segment lists and the counts, smu the spare, the
 * left one and the numbering (a rotation's swap takes it). A record's
 * done never waits for another thread's write(2), nor makes a system call:
 * the engine calls it holding its own queue mutex, so a segment whose
 * records are all done goes to dead, whose files prov_journal_reap deletes
 * outside every lock (an unlink took 0.4-0.8 ms, every request waiting on
 * the engine meanwhile). Lock order: wmu, smu, mu. */
struct prov_journal_t {
    pthread_mutex_t wmu, mu, smu;
    char *dir, *lock_path;
    char owner[PROV_JOURNAL_OWNER_MAX];
    int lock_fd;
    mfile_t cur;                    /* the current segment (segs, its head) */
    apr_size_t map_len;             /* every mapping's length */
    apr_off_t segment_max;
    seg_t *segs;
    seg_t *dead;                    /* sealed, every record done: to unlink */
    seg_t *spare;                   /* made ahead, not in segs yet; its file: */
    mfile_t spare_file;
    mfile_t left;                   /* rotated out, to seal */
    int next_no;                    /* the next segment's number */
};

static apr_status_t os_error(void)
{
    return APR_FROM_OS_ERROR(errno ? errno : EIO);
}

const char *prov_journal_owner(const prov_journal_t *j)
{
    return j->owner;
}

/* Makes the next segment (smu held, or the journal not shared yet) at its
 * full size (a record started before segment_max always fits) and maps it
 * into *f; NULL with errno set when it cannot. */
static seg_t *seg_open(prov_journal_t *j, mfile_t *f)
{
    seg_t *s = calloc(1, sizeof(*s));
    int err, *fd = &f->fd;
    char **map = &f->map;
    if (!s)
        return NULL;
    s->no = j->next_no;
    f->size = 0;
    if (!(s->path = malloc(strlen(j->dir) + strlen(j->owner) + 32))) {
        free(s);
        return NULL;
    }
    sprintf(s->path, "%s/%s.%d.log", j->dir, j->owner, s->no);
    *fd = open(s->path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (*fd < 0) {
        free(s->path);
        free(s);
        return NULL;
    }
    if ((err = posix_fallocate(*fd, 0, (off_t)j->map_len)) == 0) {
        *map = mmap(NULL, j->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
        if (*map != MAP_FAILED) {
            j->next_no++;
            return s;
        }
        err = errno;
    }
    close(*fd);
    unlink(s->path);
    free(s->path);
    free(s);
    *fd = -1;
    *map = NULL;
    errno = err;
    return NULL;
}

/* Unmaps f (when mapped) and cuts its file to what was written. */
static void mfile_seal(prov_journal_t *j, mfile_t *f)
{
    if (!f->map)
        return;
    munmap(f->map, j->map_len);
    f->map = NULL;
    if (ftruncate(f->fd, (off_t)f->size) != 0) {
        /* left at full size: the reader stops at the first NUL */
    }
    close(f->fd);
    f->fd = -1;
}

/* Writes a NUL byte into every page of f's mapping (a reader's end of
 * data, as before): the first write into a new file's mapping took about
 * 0.2 ms (ext4), each page after it 2-4 us, which a record copied into a
 * spare made ahead would otherwise still pay. */
static void mfile_touch(prov_journal_t *j, mfile_t *f)
{
    volatile char *m = f->map;
    apr_size_t off, page = (apr_size_t)sysconf(_SC_PAGESIZE);
    for (off = 0; m && off < j->map_len; off += page)
        m[off] = '\0';
}

static void seg_free(seg_t *s)
{
    free(s->path);
    free(s);
}

/* Moves the sealed segment *pp, every record of it done, from the list to
 * the dead (mu held). */
static void seg_bury(prov_journal_t *j, seg_t **pp)
{
    seg_t *s = *pp;
    *pp = s->next;
    s->next = j->dead;
    __atomic_store_n(&j->dead, s, __ATOMIC_RELAXED);   /* reap peeks without mu */
}

static void journal_free(prov_journal_t *j)
{
    seg_t *s, *next;
    for (s = j->segs; s; s = next) {
        next = s->next;
        seg_free(s);
    }
    for (s = j->dead; s; s = next) {
        next = s->next;
        seg_free(s);
    }
    if (j->spare)
        seg_free(j->spare);
    pthread_mutex_destroy(&j->mu);
    pthread_mutex_destroy(&j->smu);
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
    pthread_mutex_init(&j->smu, NULL);
    pthread_mutex_init(&j->wmu, NULL);
    j->lock_fd = j->cur.fd = j->spare_file.fd = j->left.fd = -1;
    j->next_no = 1;
    j->segment_max = segment_max > 0 ? segment_max : PROV_JOURNAL_SEGMENT;
    j->map_len = (apr_size_t)j->segment_max + REC_MAX;
    make_owner(j->owner, sizeof(j->owner), p);
    j->dir = strdup(dir);
    j->lock_path = strdup(apr_psprintf(p, "%s/%s.lock", dir, j->owner));
    if (!j->dir || !j->lock_path) {
        journal_free(j);
        return APR_ENOMEM;
    }
    tmp = apr_psprintf(p, "%s/.%s.lock.tmp", dir, j->owner);
    header = apr_psprintf(p, PROV_JOURNAL_HEADER_TAG "\t%s\t%s\n", db_id, j->owner);
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
    if (!(j->segs = seg_open(j, &j->cur))) {
        rv = os_error();
        unlink(j->lock_path);
        close(fd);
        journal_free(j);
        return rv;
    }
    mfile_touch(j, &j->cur);
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

/* "\tV" (V: v in decimal), or NULL when it does not fit. */
static char *put_i64(char *o, const char *end, apr_int64_t v)
{
    if (end - o < 24)
        return NULL;
    *o++ = '\t';
    if (v < 0)
        *o++ = '-';
    return prov_u64_format_buf(o, v < 0 ? (apr_uint64_t)(-(v + 1)) + 1 : (apr_uint64_t)v);
}

/* No printf: a record is written on every settled request's path. */
static int format_rec(char *buf, apr_size_t len, const prov_journal_rec_t *r)
{
    char *o = buf, *end = buf + len;
    const apr_int64_t mid[] = { r->row.tokens.input, r->row.tokens.output, r->row.tokens.cache,
                                r->row.tokens.reasoning, r->row.hold, r->row.charge,
                                r->row.from_plan ? 1 : 0, r->drawn ? 1 : 0 };
    int i;
    o[0] = r->progress ? 'P' : 'S';
    o[1] = '\t';
    o += 2;
    if (!(o = put_text(o, end, r->row.request_id)) || !(o = put_i64(o, end, r->row.user_id))
        || !(o = put_i64(o, end, r->row.key_id)) || !(o = put_i64(o, end, r->row.model_id)))
        return -1;
    *o++ = '\t';
    if (end - o < 2 || !(o = put_text(o, end, r->row.transport)))
        return -1;
    for (i = 0; i < (int)(sizeof(mid) / sizeof(mid[0])); i++) {
        if (!(o = put_i64(o, end, mid[i])))
            return -1;
    }
    *o++ = '\t';
    if (end - o < 2 || !(o = put_text(o, end, prov_ledger_status_name(r->row.status)))
        || !(o = put_i64(o, end, r->row.created_at))
        || !(o = put_i64(o, end, r->row.settled_at)) || end - o < 1)
        return -1;
    *o++ = '\n';
    return (int)(o - buf);
}

/* Starts the next segment (wmu held): the spare when one was made ahead,
 * else made here. The full one is left for prov_journal_reap to seal (one
 * left before and not sealed yet is sealed here), and deleted when none of
 * its records is outstanding. Keeps writing the full one (while its
 * mapping has room) when no next one can be made. */
static void rotate(prov_journal_t *j)
{
    mfile_t next = { -1, NULL, 0 }, unsealed;
    seg_t *s, **pp;
    pthread_mutex_lock(&j->smu);
    if ((s = j->spare)) {
        next = j->spare_file;
        j->spare = NULL;
    }
    else {
        s = seg_open(j, &next);
    }
    unsealed = j->left;
    if (s) {
        j->left = j->cur;
        j->cur = next;
    }
    else {
        unsealed.map = NULL;
    }
    pthread_mutex_unlock(&j->smu);
    if (!s)
        return;
    mfile_seal(j, &unsealed);
    pthread_mutex_lock(&j->mu);
    s->next = j->segs;
    j->segs = s;
    for (pp = &s->next; *pp; pp = &(*pp)->next) {
        if ((*pp)->outstanding == 0 && (*pp)->kept == 0) {
            seg_bury(j, pp);
            break;
        }
    }
    pthread_mutex_unlock(&j->mu);
}

apr_status_t prov_journal_append(prov_journal_t *j, const prov_journal_rec_t *rec, int *ticket)
{
    char buf[REC_MAX];
    int len = format_rec(buf, sizeof(buf), rec);
    seg_t *cur;
    apr_status_t rv = APR_SUCCESS;

    *ticket = 0;
    if (len < 0)
        return APR_EINVAL;
    pthread_mutex_lock(&j->wmu);
    if (j->cur.size >= j->segment_max)
        rotate(j);
    cur = j->segs;                   /* the current one is never freed */
    if ((apr_size_t)j->cur.size + (apr_size_t)len <= j->map_len) {
        /* The line, then its newline: a copy cut by a kill leaves a line
         * without one, which the reader drops. */
        memcpy(j->cur.map + j->cur.size, buf, (size_t)len - 1);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        j->cur.map[j->cur.size + len - 1] = '\n';
        __atomic_store_n(&j->cur.size, j->cur.size + len, __ATOMIC_RELAXED);
        if (!rec->progress || rec->keep) {
            pthread_mutex_lock(&j->mu);
            if (rec->progress)
                cur->kept++;
            else
                cur->outstanding++;
            pthread_mutex_unlock(&j->mu);
            if (!rec->progress)
                prov_metrics_add(prov_metrics_current(), PROV_MX_JOURNAL_UNWRITTEN, 1);
            *ticket = cur->no;
        }
    }
    else {
        rv = APR_ENOSPC;             /* full, and no next segment could be made */
    }
    pthread_mutex_unlock(&j->wmu);
    return rv;
}

/* n records of segment ticket done: settlements, or kept progress. */
static void done(prov_journal_t *j, int ticket, int n, int kept)
{
    seg_t **pp;
    if (!j || ticket <= 0 || n <= 0)
        return;
    pthread_mutex_lock(&j->mu);
    for (pp = &j->segs; *pp; pp = &(*pp)->next) {
        seg_t *s = *pp;
        if (s->no != ticket)
            continue;
        if (kept)
            s->kept -= n;
        else {
            s->outstanding -= n;
            prov_metrics_add(prov_metrics_current(), PROV_MX_JOURNAL_UNWRITTEN, -n);
        }
        /* A full segment with nothing outstanding is not needed any more. */
        if (s->outstanding <= 0 && s->kept <= 0 && s != j->segs)
            seg_bury(j, pp);
        break;
    }
    pthread_mutex_unlock(&j->mu);
}

void prov_journal_done_n(prov_journal_t *j, int ticket, int n)
{
    done(j, ticket, n, 0);
}

void prov_journal_done_kept(prov_journal_t *j, int ticket)
{
    done(j, ticket, 1, 1);
}

/* Seals the segment a rotation left, and makes the next one once the
 * current one is half full (not before: an idle process keeps one). */
static void ahead(prov_journal_t *j)
{
    mfile_t left;
    int half;
    pthread_mutex_lock(&j->smu);    /* a rotation swaps cur under it */
    half = __atomic_load_n(&j->cur.size, __ATOMIC_RELAXED) >= j->segment_max / 2;
    left = j->left;
    j->left.map = NULL;
    j->left.fd = -1;
    if (!j->spare && half && (j->spare = seg_open(j, &j->spare_file)))
        mfile_touch(j, &j->spare_file);
    pthread_mutex_unlock(&j->smu);
    mfile_seal(j, &left);
}

/* Deletes the dead segments' files; returns how many. */
static int bury_dead(prov_journal_t *j)
{
    seg_t *s, *next;
    int n = 0;
    if (!__atomic_load_n(&j->dead, __ATOMIC_RELAXED))
        return 0;
    pthread_mutex_lock(&j->mu);
    s = j->dead;
    __atomic_store_n(&j->dead, NULL, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&j->mu);
    for (; s; s = next, n++) {
        next = s->next;
        unlink(s->path);
        seg_free(s);
    }
    return n;
}

int prov_journal_reap(prov_journal_t *j)
{
    if (!j)
        return 0;
    ahead(j);
    return bury_dead(j);
}

void prov_journal_done(prov_journal_t *j, int ticket)
{
    prov_journal_done_n(j, ticket, 1);
}

/* The settlements (or kept progress records) not done. */
static int count(prov_journal_t *j, int kept)
{
    const seg_t *s;
    int n = 0;
    pthread_mutex_lock(&j->mu);
    for (s = j->segs; s; s = s->next)
        n += kept ? s->kept : s->outstanding;
    pthread_mutex_unlock(&j->mu);
    return n;
}

int prov_journal_outstanding(prov_journal_t *j)
{
    return count(j, 0);
}

int prov_journal_kept(prov_journal_t *j)
{
    return count(j, 1);
}

void prov_journal_close(prov_journal_t *j)
{
    seg_t *s;
    int left;
    if (!j)
        return;
    bury_dead(j);
    mfile_seal(j, &j->left);
    if (j->spare) {                  /* no record in it */
        unlink(j->spare->path);
        mfile_seal(j, &j->spare_file);
    }
    if ((left = prov_journal_outstanding(j)) == 0) {
        for (s = j->segs; s; s = s->next)
            unlink(s->path);
        unlink(j->lock_path);
    }
    else {
        prov_log(PROV_LOG_WARN, APR_SUCCESS, "PROV00380: journal %s closed with %d "
                 "settlement(s) not written; a surviving process replays them", j->owner, left);
    }
    mfile_seal(j, &j->cur);
    close(j->lock_fd);              /* last: the lock goes with it */
    journal_free(j);
}
