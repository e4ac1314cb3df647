/* fuzz_journal.c: libFuzzer harness of the billing journal's reader
 * (core/billing/prov_journal.c: prov_journal_recover and its record
 * parser), which reads back what a killed process left, torn or garbled
 * records included.
 * The input is used twice: as a dead process's segment file, whose replay
 * must hand over well-formed records only (no more than its lines) and
 * delete the journal; and as the text and numbers of one settlement or
 * progress record that a journal writes (prov_journal_append) and a replay
 * reads back: the same record must come back (a progress one last, after
 * the settlement of another request that keeps the files), whatever bytes
 * its strings hold. The journals live
 * in a directory of this process under TMPDIR. */
#include <unistd.h>
#include "fuzz_common.h"
#include "prov_journal.h"

static char *dir;

static void remove_dir(void)
{
    if (dir)
        rmdir(dir);
}

static const char *journal_dir(void)
{
    if (!dir) {
        const char *tmp = getenv("TMPDIR");
        char *d = malloc(4096);
        FUZZ_CHECK(d != NULL);
        snprintf(d, 4096, "%s/prov-fuzz-journal.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        FUZZ_CHECK(mkdtemp(d) != NULL);
        dir = d;
        atexit(remove_dir);
    }
    return dir;
}

typedef struct seen_t {
    int n, calls, last;
    prov_journal_rec_t rec;         /* the last one, copied into p */
    apr_pool_t *p;
} seen_t;

static apr_status_t replayed(void *baton, const char *owner, const prov_journal_rec_t *recs,
                             int n, int last, apr_pool_t *p)
{
    seen_t *s = baton;
    int i;
    FUZZ_CHECK(owner && *owner && n >= 0 && n <= PROV_JOURNAL_CHUNK && !s->last);
    for (i = 0; i < n; i++)
        FUZZ_CHECK(recs[i].request_id && recs[i].transport && recs[i].status);
    if (n) {
        s->rec = recs[n - 1];
        s->rec.request_id = apr_pstrdup(s->p, recs[n - 1].request_id);
        s->rec.transport = apr_pstrdup(s->p, recs[n - 1].transport);
        s->rec.status = apr_pstrdup(s->p, recs[n - 1].status);
    }
    s->n += n;
    s->calls++;
    s->last = last;
    return APR_SUCCESS;
}

static void write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    FUZZ_CHECK(f != NULL);
    FUZZ_CHECK(fwrite(data, 1, size, f) == size || size == 0);
    FUZZ_CHECK(fclose(f) == 0);
}

/* The input as a dead process's only segment. */
static void garbled(const uint8_t *data, size_t size, apr_pool_t *p)
{
    static const char lock[] = "PROVJ1\tfuzzdb\tdead-1\n";
    const char *d = journal_dir();
    seen_t s;
    int n = 0;
    size_t i, lines = 0;
    memset(&s, 0, sizeof(s));
    s.p = p;
    write_file(apr_pstrcat(p, d, "/dead-1.lock", NULL), lock, sizeof(lock) - 1);
    write_file(apr_pstrcat(p, d, "/dead-1.1.log", NULL), data, size);
    FUZZ_CHECK(prov_journal_recover(&n, d, "fuzzdb", replayed, &s, p) == APR_SUCCESS);
    for (i = 0; i < size; i++)
        lines += data[i] == '\n';
    FUZZ_CHECK(n == 1 && s.last && s.n >= 0 && (size_t)s.n <= lines);
    FUZZ_CHECK(access(apr_pstrcat(p, d, "/dead-1.lock", NULL), F_OK) != 0);
    FUZZ_CHECK(access(apr_pstrcat(p, d, "/dead-1.1.log", NULL), F_OK) != 0);
}

/* A C string of up to max bytes from the input. */
static const char *take_text(const uint8_t **data, size_t *size, size_t max, apr_pool_t *p)
{
    size_t n = fuzz_take(data, size) % (max + 1);
    if (n > *size)
        n = *size;
    {
        const char *s = apr_pstrmemdup(p, (const char *)*data, n);
        *data += n;
        *size -= n;
        return s;       /* cut at its first NUL, as a C string is */
    }
}

/* The input as one settlement, written and read back. */
static void round_trip(const uint8_t *data, size_t size, apr_pool_t *p)
{
    prov_journal_t *j = NULL;
    prov_journal_rec_t r;
    seen_t s;
    int n = 0, ticket = 0;
    memset(&r, 0, sizeof(r));
    r.request_id = take_text(&data, &size, 64, p);
    r.transport = take_text(&data, &size, 16, p);
    r.status = take_text(&data, &size, 16, p);
    r.user_id = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.key_id = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.model_id = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.tokens.input = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.tokens.output = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.tokens.cache = (apr_int64_t)fuzz_take_u64(&data, &size, 4);
    r.tokens.reasoning = (apr_int64_t)fuzz_take_u64(&data, &size, 4);
    r.hold = (prov_micro_t)fuzz_take_u64(&data, &size, 8);
    r.charge = (prov_micro_t)fuzz_take_u64(&data, &size, 8);
    r.created_at = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.settled_at = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.from_plan = fuzz_take(&data, &size) & 1;
    r.drawn = fuzz_take(&data, &size) & 1;
    r.progress = fuzz_take(&data, &size) & 1;

    FUZZ_CHECK(prov_journal_open(&j, journal_dir(), "fuzzdb", 0, p) == APR_SUCCESS);
    FUZZ_CHECK(prov_journal_append(j, &r, &ticket) == APR_SUCCESS
               && (r.progress ? ticket == 0 : ticket > 0));
    if (r.progress) {
        /* Never outstanding: a settlement of another request keeps the
         * files; the progress comes back after it. */
        prov_journal_rec_t other = r;
        other.progress = 0;
        other.request_id = apr_pstrcat(p, r.request_id, "+", NULL);
        FUZZ_CHECK(prov_journal_append(j, &other, &ticket) == APR_SUCCESS && ticket > 0);
    }
    prov_journal_close(j);          /* outstanding: its files stay for a replay */
    memset(&s, 0, sizeof(s));
    s.p = p;
    FUZZ_CHECK(prov_journal_recover(&n, journal_dir(), "fuzzdb", replayed, &s, p)
               == APR_SUCCESS);
    FUZZ_CHECK(n == 1 && s.n == 1 + r.progress);
    FUZZ_CHECK(s.rec.progress == r.progress);
    FUZZ_CHECK(!strcmp(s.rec.request_id, r.request_id) && !strcmp(s.rec.transport, r.transport)
               && !strcmp(s.rec.status, r.status));
    FUZZ_CHECK(s.rec.user_id == r.user_id && s.rec.key_id == r.key_id
               && s.rec.model_id == r.model_id);
    FUZZ_CHECK(!memcmp(&s.rec.tokens, &r.tokens, sizeof(r.tokens)));
    FUZZ_CHECK(s.rec.hold == r.hold && s.rec.charge == r.charge);
    FUZZ_CHECK(s.rec.created_at == r.created_at && s.rec.settled_at == r.settled_at);
    FUZZ_CHECK(s.rec.from_plan == r.from_plan && s.rec.drawn == r.drawn);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    garbled(data, size, p);
    round_trip(data, size, p);
    apr_pool_destroy(p);
    return 0;
}
