/* prov_billing.h: the spend engine's request-time half (docs/internals/transports.md, "One driver"):
 * the estimate of a request's worst-case cost; the reservation that checks
 * the key's rolling weekly budget and the account's remainder (the plan's
 * rolling 5-hour and 7-day quotas, then the prepaid balance) and holds the
 * estimate, atomically; the settlement that replaces the hold with the real
 * charge (or releases it) and completes the request's ledger row; the
 * expiry of holds whose worker died; and the account and key status that
 * providerctl and the cabinet show.
 *
 * Requests of one process are committed in groups: a thread that finds no
 * batch running becomes the leader, takes every reservation and settlement
 * queued so far and runs them in one transaction, while the others wait for
 * their result. Each operation is checked against the state left by the ones
 * before it in the same batch, so a batch is exactly as strict as one
 * transaction per request, at a fraction of the writes.
 *
 * Under concurrent load a process with a writer thread (below) takes a
 * lease for a key and model: one hold, checked like a reservation, from
 * which its next requests draw in memory without waiting for a transaction;
 * their ledger rows are written complete, in groups, by the writer's
 * batches, and the lease is renewed or returned as they go. Leases are
 * granted only while the limits they count against keep room for twice the
 * lease, every batch that checks a reservation of the account returns the
 * account's leases first, and a lease that is not renewed expires like a
 * hold: near a limit every request is checked in the database, and
 * refusals stay exact. */
#ifndef PROV_BILLING_H
#define PROV_BILLING_H

#include "prov_common.h"
#include "prov_error.h"
#include "prov_money.h"
#include "prov_store.h"
#include "prov_store_source.h"
#include "prov_ledger.h"
#include "prov_account.h"
#include "prov_models.h"

/* Bucket sizes: windows are exact to them. */
#define PROV_BUCKET_MINUTES 300      /* the 5-hour window */
#define PROV_BUCKET_HOUR    3600     /* the 7-day window and key budgets */
#define PROV_WINDOW_5H      (5 * 3600)
#define PROV_WINDOW_7D      (7 * 24 * 3600)
/* Holds older than this are released as expired (ProviderHoldTimeout). */
#define PROV_HOLD_TIMEOUT_DEFAULT 3600

/* The account's plan windows as seen by a reservation (for clients that show
 * quota, e.g. Codex's rate-limit headers). Amounts in micro-credits; reset_*
 * = seconds until the oldest usage in the window leaves it (0 when nothing
 * is used). */
typedef struct prov_plan_windows_t {
    int has_plan;
    const char *plan_name;
    apr_int64_t until_at;           /* 0 = open-ended */
    prov_micro_t quota_5h, used_5h;
    apr_int64_t reset_5h;
    prov_micro_t quota_7d, used_7d;
    apr_int64_t reset_7d;
} prov_plan_windows_t;

typedef struct prov_reservation_t {
    prov_ledger_row_t row;          /* its ledger row as held: request, key, model,
                                     * transport, hold, floor, funding, created_at */
    int settled;                    /* settled or released: nothing more to do */
    int leased;                     /* drawn from this process's lease */
    prov_plan_windows_t windows;    /* filled when the account has a plan */
    /* The engine's own: the key and model's slot, the request's entry
     * while its row is not written yet (a lease draw), and its queue. */
    void *slot;
    void *entry;
    void *queue;
    int floor_ticket;               /* a drawn request's floor in the journal, kept
                                     * until its settlement is journaled */
} prov_reservation_t;

/* Sets the hold timeout of this process (seconds; <= 0 keeps the default). */
void prov_queue_configure(apr_int64_t hold_timeout);

/* The documented input estimate, which an answer without usage is charged
 * for its input (the hold is prov_worst.h's): floor(prompt bytes / 3) + 8
 * per message + 16. */
apr_int64_t prov_billing_input_estimate(apr_size_t prompt_bytes, int n_messages);

/* Checks and holds, atomically. On a refusal returns APR_SUCCESS with *r
 * NULL and *err set: 403 USER_BLOCKED (blocked since the key was looked up),
 * 429 API_KEY_CREDIT_BUDGET_EXCEEDED, 429 SUBSCRIPTION_QUOTA_EXCEEDED, 402
 * INSUFFICIENT_CREDITS, with retry_after where waiting helps. On a database
 * failure returns the error (the caller answers 503). */
apr_status_t prov_billing_reserve(prov_reservation_t **r, prov_error_t **err,
                                  const prov_store_source_t *src, const prov_auth_t *auth,
                                  apr_int64_t model_id, const char *transport,
                                  const char *request_id, prov_micro_t hold, apr_int64_t now,
                                  apr_pool_t *p);
/* What a reservation asks for (prov_billing_reserve_ask): hold; hold_min,
 * for a request whose output cap the service chooses: when the key's budget,
 * the plan's windows and the balance cannot hold all of hold, the reservation
 * holds as much of it as the most generous of them can, if that is at least
 * hold_min (<= 0 or > hold: hold), and (*r)->hold says how much was held (a
 * refusal names hold_min as what the request needs); and floor, the
 * charge of the request's input estimate alone. A hold is recorded with the
 * journal of the process that takes it (ledger.owner) and its floor
 * (ledger.floor_credits): when the process dies under the request and its
 * journal holds no record of it, the replay charges the floor
 * (docs/internals/broken-streams.md "A killed child"). A request drawn from
 * a lease has no row yet: its floor (at most its hold) goes to the journal
 * as a progress record instead, which its settlement supersedes. */
typedef struct prov_hold_ask_t {
    prov_micro_t hold;
    prov_micro_t hold_min;
    prov_micro_t floor;
    /* The agent session the request names (prov_agent.h; NULL: none) and
     * the client that named it: carried by its ledger row whichever way the
     * row is written (held, drawn from a lease, journaled, replayed). */
    const char *session;
    prov_client_e client;
} prov_hold_ask_t;
apr_status_t prov_billing_reserve_ask(prov_reservation_t **r, prov_error_t **err,
                                      const prov_store_source_t *src, const prov_auth_t *auth,
                                      apr_int64_t model_id, const char *transport,
                                      const char *request_id, const prov_hold_ask_t *ask,
                                      apr_int64_t now, apr_pool_t *p);
/* How far a request in flight has come, for its process's journal: the
 * charge (and tokens) it would be settled at were it cut now. Appended as a
 * progress record (a copy into the journal's mapping under its lock; no
 * system call, no database), never outstanding: nothing is written to the
 * database unless the process dies, when the replay settles a request with
 * progress and no settlement 'estimated' at its latest progress. Nothing
 * without a journal, or once r is settled. (A reservation drawn from a
 * lease has no row to carry its floor: prov_billing_reserve_ask journals
 * its floor as its first progress, kept until its settlement is.) */
void prov_billing_progress(const prov_reservation_t *r, const prov_tokens_t *t,
                           prov_micro_t charge, apr_int64_t now);
/* Replaces the hold by charge for tokens t and completes the ledger row with
 * status (prov_ledger.h: PROV_STATUS_OK, _CUT, ...). Once only: when the row
 * is no longer reserved (settled, released or expired) returns
 * APR_EINCOMPLETE and moves nothing. */
apr_status_t prov_billing_settle(const prov_store_source_t *src, prov_reservation_t *r,
                                 const prov_tokens_t *t, prov_micro_t charge, prov_status_e status,
                                 apr_int64_t now, apr_pool_t *p);
/* A writer thread for the queue of src's channel: it writes what requests
 * drew from leases (in groups, after their answers) and returns a lease
 * once its key has had nothing in flight for a moment, so that settlements
 * never wait for a batch and a key's waves of requests keep their lease.
 * src must open connections from any thread. Without one (providerctl, or
 * a child whose thread could not start) no lease is granted: every
 * reservation and settlement is a batch's, in the requests' own threads,
 * slower and just as exact. One per channel. */
typedef struct prov_writer_t prov_writer_t;
/* keep_idle: how long a lease whose key has nothing in flight is kept
 * (<= 0: PROV_LEASE_IDLE_DEFAULT). */
#define PROV_LEASE_IDLE_DEFAULT apr_time_from_msec(100)
apr_status_t prov_writer_start(prov_writer_t **w, const prov_store_source_t *src,
                               apr_interval_time_t keep_idle);
/* Stops the thread, writes what is left and returns every lease. */
void prov_writer_stop(prov_writer_t *w);
/* Whether src's queue holds a lease, a request not written yet or a batch
 * running or queued (for tests: 0 means the database is complete). */
int prov_queue_active(const prov_store_source_t *src);
/* The writer's upkeep, for a server (the module; providerctl does not).
 * Holds and leases older than the hold timeout are expired on time without
 * traffic: the thread looks every second and runs prov_queue_expire once
 * the engine's clock (prov_now) has moved min(hold timeout / 4, 60 s) since
 * the last sweep. With journal_dir (NULL: none), every settlement that is
 * answered before its ledger row is committed (drawn from a lease, or
 * queued behind a running batch) is first appended to this process's
 * journal there, and the journals of dead processes in journal_dir are
 * replayed (prov_replay_journals), so that a process killed at any moment
 * loses no settled row. Until the journal is open (it needs the database's
 * identity), no lease is granted and settlements wait for their batch. */
apr_status_t prov_writer_upkeep(prov_writer_t *w, const char *journal_dir);
/* Replays the journals in dir whose processes are gone and that belong to
 * src's database: each settlement once (a drawn request's row written if it
 * was not, a hold settled if it still is one), the leases of those
 * processes returned, in the same batches; then deletes them. *journals
 * (may be NULL) counts them. A journal whose replay fails stays for the
 * next call. */
apr_status_t prov_replay_journals(int *journals, const prov_store_source_t *src, const char *dir,
                                  apr_pool_t *p);

/* A hold in flight (`providerctl hold list`): a request's reservation (its
 * reserved ledger row) or a process's lease. */
typedef struct prov_hold_t {
    const char *id;                 /* the request id, or the lease id */
    int lease;
    apr_int64_t user_id;
    const char *email;              /* NULL when the user is gone */
    apr_int64_t key_id;
    const char *model;              /* the model's public id, NULL when gone */
    prov_micro_t amount;
    int from_plan;
    apr_int64_t since;              /* reserved at, or (a lease) last placed at */
} prov_hold_t;

/* The holds and leases in flight (user_id 0: of every user), oldest first,
 * as an array of prov_hold_t. */
apr_status_t prov_hold_list(apr_array_header_t **holds, prov_store_t *s, apr_int64_t user_id,
                            apr_pool_t *p);
/* Gives back one hold (id: a request id whose row is reserved; the row gets
 * status and no charge) or lease (id: its id; deleted), exactly as
 * prov_queue_expire does. *found: 0 when there is no such hold (settled,
 * expired or unknown). A request whose hold was released and that still
 * ends is not charged. */
apr_status_t prov_hold_release(int *found, const prov_store_source_t *src, const char *id,
                               prov_status_e status, apr_int64_t now, apr_pool_t *p);

/* Returns the hold: no charge, the ledger row records status (PROV_STATUS_FAILED, ...). */
apr_status_t prov_billing_release(const prov_store_source_t *src, prov_reservation_t *r,
                                  prov_status_e status, apr_int64_t now, apr_pool_t *p);
/* Releases (PROV_STATUS_EXPIRED) holds older than the hold timeout; *n counts
 * them. Runs by itself inside batches now and then; exposed for tests. */
apr_status_t prov_queue_expire(int *n, const prov_store_source_t *src, apr_int64_t now,
                               apr_pool_t *p);

/* What an account has and has used, for `balance show`, `subscription show`
 * and the cabinet: the balance, and the plan windows when a subscription is
 * active at now (windows.has_plan). */
typedef struct prov_account_status_t {
    prov_micro_t balance;
    prov_micro_t held;              /* of the balance, by requests in flight */
    prov_plan_windows_t windows;
    /* With a plan: seconds until each window is back to its whole quota
     * (the newest usage has left it; 0 when nothing is used). */
    apr_int64_t full_5h, full_7d;
} prov_account_status_t;

apr_status_t prov_billing_account_status(prov_account_status_t *st, prov_store_t *s,
                                         apr_int64_t user_id, apr_int64_t now, apr_pool_t *p);
/* A key's spend in its rolling week, as shown (cabinet, MCP, providerctl
 * key show: never a check's figure): its requests' charges and open holds,
 * without the undrawn rest of its open leases (requests drawn from a lease
 * appear once the writer writes their rows, within a second or so); and the
 * seconds until the oldest of it leaves the window (0 if none). */
apr_status_t prov_billing_key_status(prov_micro_t *spent_7d, apr_int64_t *reset, prov_store_t *s,
                                     apr_int64_t key_id, apr_int64_t now, apr_pool_t *p);

#endif
