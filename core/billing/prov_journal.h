/* prov_journal.h: the settlement journal, the file half. A process that
 * answers requests before their ledger rows are committed (requests drawn
 * from a lease, settlements queued behind a running batch) first appends
 * each settlement to a journal of its own: one line copied into a shared
 * file mapping (no system call), which the page cache keeps when the
 * process is killed the next moment. A journal is
 * a lock file, held with an exclusive flock(2) for the life of its process
 * (so whoever can take the lock knows the owner is dead: no PID reuse
 * problem), and numbered segment files of records. A segment is deleted
 * once it is full and every record in it has been committed; a journal
 * closed with nothing outstanding is deleted entirely. The journals of dead
 * processes are read back by the survivors (prov_journal_recover), which
 * replay them into the database the lock file names and then delete them.
 * A stream in flight appends its progress too (a record that is not
 * outstanding), so that a process killed under it is charged what it had
 * delivered, and a request drawn from a lease its floor. What a record means to the books is the billing engine's business
 * (prov_replay.c). docs/internals/journal.md tells the life
 * cycle. */
#ifndef PROV_JOURNAL_H
#define PROV_JOURNAL_H

#include "prov_common.h"
#include "prov_ledger.h"

/* Records handed to a replay call at most (one billing batch). */
#define PROV_JOURNAL_CHUNK 512
/* A segment is sealed (and a new one started) once it is this large. */
#define PROV_JOURNAL_SEGMENT (1024 * 1024)
/* The files' format: a lock file's header line starts with the tag, a
 * record line has this many tab-separated fields (prov_journal.c writes
 * them, prov_journal_read.c reads them). */
#define PROV_JOURNAL_HEADER_TAG "PROVJ1"
#define PROV_JOURNAL_FIELDS 17
/* Room for a journal's owner name (host, pid, random; see prov_journal_owner). */
#define PROV_JOURNAL_OWNER_MAX 96

typedef struct prov_journal_t prov_journal_t;

/* A progress record's status: what its request is settled as when its
 * process died with no settlement of it in the journal. */
#define PROV_JOURNAL_PROGRESS_STATUS PROV_STATUS_ESTIMATED

/* One settlement (a line starting "S"), or the progress of a request in
 * flight ("P": the charge it would be settled at were it cut now; status
 * PROV_JOURNAL_PROGRESS_STATUS): what the engine needs to write or settle
 * its row. */
typedef struct prov_journal_rec_t {
    prov_ledger_row_t row;          /* (its floor is not journaled) */
    int drawn;                      /* drawn from a lease: its row may not exist yet */
    int progress;                   /* a progress record, not a settlement */
    int keep;                       /* ... that keeps its segment until done (the
                                     * floor of a request drawn from a lease, done
                                     * once its settlement is journaled) */
} prov_journal_rec_t;

/* Opens a journal for this process in dir (made, mode 0700, when missing):
 * its lock file (held until prov_journal_close or the process ends) names
 * db_id, the database its records belong to. segment_max: bytes per segment
 * (<= 0: PROV_JOURNAL_SEGMENT). The journal is the caller's until
 * prov_journal_close; p is scratch. */
apr_status_t prov_journal_open(prov_journal_t **j, const char *dir, const char *db_id,
                               apr_off_t segment_max, apr_pool_t *p);
/* The journal's owner name (unique per process and host): the database
 * records it with the leases the process holds. */
const char *prov_journal_owner(const prov_journal_t *j);
/* Appends rec; thread-safe (one write at a time). On success *ticket says which segment holds it:
 * pass it to prov_journal_done once the record's settlement is committed.
 * A progress record is not outstanding (*ticket 0): it does not keep its
 * segment, since each carries its request's whole state and only the
 * latest counts; unless rec->keep (a drawn request's floor, which nothing
 * else may stand for until its settlement is journaled: pass the ticket
 * to prov_journal_done_kept then). A failed append leaves nothing behind (returns the error,
 * APR_ENOSPC when the segment is full and no next one could be made;
 * *ticket 0). */
apr_status_t prov_journal_append(prov_journal_t *j, const prov_journal_rec_t *rec, int *ticket);
/* A record of segment ticket is committed (ticket 0: nothing); _n: n of
 * them; _kept: a kept progress record is no longer needed. Never waits for
 * a write in progress, and makes no system call: a full segment whose
 * records are all done is deleted by the next prov_journal_reap. */
void prov_journal_done(prov_journal_t *j, int ticket);
void prov_journal_done_n(prov_journal_t *j, int ticket, int n);
void prov_journal_done_kept(prov_journal_t *j, int ticket);
/* The file system's work, done by the billing writer outside the engine's
 * mutex: deletes the files of the segments whose records are all done
 * (returns how many), seals the segment the last rotation left, and makes
 * the next segment ahead once the current one is half full, so that a
 * rotation only swaps it in. */
int prov_journal_reap(prov_journal_t *j);
/* Settlements appended and not done yet; _kept: kept progress records. */
int prov_journal_outstanding(prov_journal_t *j);
int prov_journal_kept(prov_journal_t *j);
/* Closes and frees j (nobody may use it any more): its files are deleted
 * when no settlement is outstanding, else left (unlocked) for a survivor
 * to replay. Kept progress records do not count: their process is alive
 * (a writer that stops writes the holds of the requests still in flight
 * as rows, which carry their floors), and a replay would settle requests
 * that are still running. */
void prov_journal_close(prov_journal_t *j);

/* Replays one dead journal's records (n of them; last: the journal's final
 * call, made even with n 0) into the database: its settlements in the
 * order written, then, for each request with progress and no settlement,
 * its latest progress record. Must be idempotent: a replay that fails half
 * way is done again later. */
typedef apr_status_t prov_journal_replay_fn(void *baton, const char *owner,
                                            const prov_journal_rec_t *recs, int n, int last,
                                            apr_pool_t *p);

/* Replays, with fn, every journal in dir whose process is gone and whose
 * database is db_id, PROV_JOURNAL_CHUNK records a call, then deletes it;
 * *replayed (may be NULL) counts those journals. Journals of live processes
 * and of other databases are left alone; one whose replay failed is left
 * for the next call (and that failure returned). A dir that does not exist
 * holds nothing. */
apr_status_t prov_journal_recover(int *replayed, const char *dir, const char *db_id,
                                  prov_journal_replay_fn *fn, void *baton, apr_pool_t *p);

#endif
