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
 * its strings hold, its agent session and client too (a session of no
 * bytes is none, and has no client). The journals live
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
        FUZZ_CHECK(recs[i].row.request_id && recs[i].row.transport
                   && recs[i].row.status < PROV_STATUS__COUNT);
    if (n) {
        s->rec = recs[n - 1];
        s->rec.row.request_id = apr_pstrdup(s->p, recs[n - 1].row.request_id);
        s->rec.row.transport = apr_pstrdup(s->p, recs[n - 1].row.transport);
        if (recs[n - 1].row.session)
            s->rec.row.session = apr_pstrdup(s->p, recs[n - 1].row.session);
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
    r.row.request_id = take_text(&data, &size, 64, p);
    r.row.transport = take_text(&data, &size, 16, p);
    r.row.status = (prov_status_e)(fuzz_take(&data, &size) % PROV_STATUS__COUNT);
    r.row.user_id = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.row.key_id = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.row.model_id = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.row.tokens.input = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.row.tokens.output = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.row.tokens.cache = (apr_int64_t)fuzz_take_u64(&data, &size, 4);
    r.row.tokens.reasoning = (apr_int64_t)fuzz_take_u64(&data, &size, 4);
    r.row.hold = (prov_micro_t)fuzz_take_u64(&data, &size, 8);
    r.row.charge = (prov_micro_t)fuzz_take_u64(&data, &size, 8);
    r.row.created_at = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.row.settled_at = (apr_int64_t)fuzz_take_u64(&data, &size, 8);
    r.row.from_plan = fuzz_take(&data, &size) & 1;
    r.drawn = fuzz_take(&data, &size) & 1;
    r.progress = fuzz_take(&data, &size) & 1;
    r.row.session = take_text(&data, &size, 128, p);
    r.row.client = (prov_client_e)(fuzz_take(&data, &size) % PROV_CLIENT__COUNT);
    if (!*r.row.session || r.row.client == PROV_CLIENT_NONE) {
        r.row.session = NULL;       /* the engine's rows: a session has a client */
        r.row.client = PROV_CLIENT_NONE;
    }

    FUZZ_CHECK(prov_journal_open(&j, journal_dir(), "fuzzdb", 0, p) == APR_SUCCESS);
    FUZZ_CHECK(prov_journal_append(j, &r, &ticket) == APR_SUCCESS
               && (r.progress ? ticket == 0 : ticket > 0));
    if (r.progress) {
        /* Never outstanding: a settlement of another request keeps the
         * files; the progress comes back after it. */
        prov_journal_rec_t other = r;
        other.progress = 0;
        other.row.request_id = apr_pstrcat(p, r.row.request_id, "+", NULL);
        FUZZ_CHECK(prov_journal_append(j, &other, &ticket) == APR_SUCCESS && ticket > 0);
    }
    prov_journal_close(j);          /* outstanding: its files stay for a replay */
    memset(&s, 0, sizeof(s));
    s.p = p;
    FUZZ_CHECK(prov_journal_recover(&n, journal_dir(), "fuzzdb", replayed, &s, p)
               == APR_SUCCESS);
    FUZZ_CHECK(n == 1 && s.n == 1 + r.progress);
    FUZZ_CHECK(s.rec.progress == r.progress);
    FUZZ_CHECK(!strcmp(s.rec.row.request_id, r.row.request_id) && !strcmp(s.rec.row.transport,
                                                                          r.row.transport)
               && s.rec.row.status == r.row.status);
    FUZZ_CHECK(s.rec.row.user_id == r.row.user_id && s.rec.row.key_id == r.row.key_id
               && s.rec.row.model_id == r.row.model_id);
    FUZZ_CHECK(!memcmp(&s.rec.row.tokens, &r.row.tokens, sizeof(r.row.tokens)));
    FUZZ_CHECK(s.rec.row.hold == r.row.hold && s.rec.row.charge == r.row.charge);
    FUZZ_CHECK(s.rec.row.created_at == r.row.created_at
               && s.rec.row.settled_at == r.row.settled_at);
    FUZZ_CHECK(s.rec.row.from_plan == r.row.from_plan && s.rec.drawn == r.drawn);
    FUZZ_CHECK(s.rec.row.client == r.row.client
               && (r.row.session ? s.rec.row.session && !strcmp(s.rec.row.session,
                                                                r.row.session)
                                 : !s.rec.row.session));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    apr_pool_t *p = fuzz_pool();
    garbled(data, size, p);
    round_trip(data, size, p);
    apr_pool_destroy(p);
    return 0;
}
