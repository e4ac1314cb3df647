/* prov_batch.h: the ledger batch writer, the billing engine's second layer
 * (above the windows, below the leases and the queue). A batch is a list of
 * operations (reservations, settlements, sweeps, journal replays, holds given
 * back by hand) and the leases' work (the slots whose entries it writes and
 * whose leases it renews or returns), run in one transaction by
 * prov_batch_run; it sets every operation's and slot's result and
 * holds no state between batches. Here: the operation, the slot and entry
 * types the upper layers fill in, and the batch's entry points. */
#ifndef PROV_BATCH_H
#define PROV_BATCH_H

#include <pthread.h>
#include "prov_billing.h"
#include "prov_journal.h"

/* A lease's row id ("lease_" and 24 hex digits) with room to spare, and the
 * plan name a lease keeps for the reservations drawn from it. */
#define PROV_LEASE_ID_MAX 48
#define PROV_PLAN_NAME_MAX 65     /* providerctl takes 64 characters; and the NUL */

typedef enum {
    PROV_OP_RESERVE = 0,
    PROV_OP_SETTLE,
    PROV_OP_SWEEP,
    PROV_OP_FLUSH,                  /* nothing itself: the batch writes what leases drew */
    PROV_OP_REPLAY,                 /* a dead process's journal records (and its leases) */
    PROV_OP_DROP                    /* one hold or lease given back (providerctl hold release) */
} prov_op_kind_e;

/* The leases' work (the lease layer keeps the slots). A slot is one key and
 * model of one queue (database) in this process: it counts their
 * reservations in flight and may hold a lease. An entry is one
 * request drawn from a lease whose ledger row is not written yet. All of
 * their fields are guarded by the engine's queue mutex, except what a batch
 * reads of the slots and entries handed to it: those do not change until the
 * batch ends. */
typedef enum {
    PROV_ENT_INFLIGHT = 0,          /* drawn, not settled, not written */
    PROV_ENT_SETTLED,               /* settled, not written */
    PROV_ENT_WRITING,               /* in the running batch */
    PROV_ENT_WRITTEN                /* its row is a hold now: settled as one */
} prov_entry_state_e;

typedef enum {
    PROV_LEASE_NONE = 0,
    PROV_LEASE_OPEN,                /* requests may draw from it */
    PROV_LEASE_DRAINING             /* no more draws: the next batch returns it */
} prov_lease_state_e;

typedef struct prov_slot_t prov_slot_t;

typedef struct prov_entry_t {
    prov_slot_t *slot;
    prov_entry_state_e state;
    int complete;                   /* WRITING: written as a settled row */
    int settled;                    /* WRITING: settled while its hold was written */
    prov_ledger_row_t row;          /* its row as it will be written (status, charge,
                                     * tokens and settled_at once settled) */
    apr_time_t drawn_at;            /* wall clock: old holds are written */
    int jticket;                    /* its settlement's journal record (0: none) */
    const char *owner;              /* the journal of its lease's table (L->owner), for
                                     * a row written as a hold; "" or NULL: none */
    struct prov_entry_t *next;
} prov_entry_t;

struct prov_slot_t {
    apr_int64_t key_id, model_id, user_id;
    int busy;                       /* reservations in flight, drawn or not */
    prov_lease_state_e state;
    char id[PROV_LEASE_ID_MAX];                    /* the lease's row in billing_leases */
    char *key_hash;                 /* the key's secret as checked by the lease */
    int from_plan;
    prov_micro_t amount;            /* what the database holds for the lease */
    prov_micro_t drawn;             /* of it, by entries not yet written */
    prov_micro_t unit;              /* the headroom a renewal aims for */
    prov_micro_t unit_max;
    int exhausted;                  /* a draw found too little: grow the unit */
    apr_int64_t at;                 /* engine time the lease was last placed */
    prov_plan_windows_t windows;    /* for the reservations drawn */
    char plan_name[PROV_PLAN_NAME_MAX];
    prov_entry_t *pending;          /* drawn, not written */
    apr_time_t pending_oldest;      /* no entry of pending drawn before (wall clock) */
    int settled_n;                  /* of them settled ... */
    apr_time_t settled_since;       /* ... the first at (wall clock) */
    apr_time_t last_draw;           /* wall clock */
    apr_time_t closed_at;           /* wall clock its last lease was returned */
    apr_time_t idle_since;          /* wall clock busy last fell to 0 */
    /* the running batch's work (set when taken, read by the batch) */
    prov_entry_t *taken;
    prov_micro_t writing;           /* the taken entries' amounts */
    prov_micro_t take_drawn;        /* drawn when taken */
    int closing;                    /* the batch returns the lease */
    int renew;                      /* ... or checks it again and tops it up */
    apr_time_t checked;             /* wall clock of its last check */
    apr_time_t admitted;            /* ... or of a read that admitted its key */
    struct prov_slot_t *work_next;
    /* the batch's results */
    prov_micro_t res_amount;
    apr_int64_t res_at;
    int res_gone, res_drain;
    prov_plan_windows_t res_windows;
    char res_plan_name[PROV_PLAN_NAME_MAX];
    struct prov_slot_t *next;
};

/* One operation of a batch: what it asks, and (set by the batch) its result.
 * The queue adds what it needs to wait for it. */
typedef struct prov_op_t {
    prov_op_kind_e kind;
    apr_pool_t *p;                  /* the caller's pool: results go here */
    apr_int64_t now;
    /* reserve */
    const prov_auth_t *auth;
    apr_int64_t model_id;
    const char *transport;
    const char *request_id;
    prov_micro_t hold;
    prov_micro_t hold_min;          /* the least hold it may be lowered to (a request
                                     * whose output cap the service chooses); hold
                                     * when it may not */
    prov_micro_t floor;             /* the charge of its input estimate alone */
    const char *hold_owner;         /* the journal its process keeps (NULL: none): a
                                     * hold is recorded to it (ledger.owner) */
    /* settle / release */
    prov_reservation_t *res;
    prov_tokens_t tokens;
    prov_micro_t charge;
    prov_status_e status;
    /* results */
    apr_status_t rv;
    prov_reservation_t *out;        /* reserve: the reservation, or NULL ... */
    prov_error_t *err;              /* ... and the refusal */
    int swept;                      /* sweep: holds expired */
    prov_slot_t *slot;              /* reserve: its key and model's slot (counted busy) */
    prov_micro_t lease_unit;        /* reserve: also grant a lease of this size, */
    prov_micro_t lease_floor;       /* ... or halved down to this one for the room */
    prov_micro_t granted;           /* ... granted (0: none) */
    char lease_id[PROV_LEASE_ID_MAX];
    prov_plan_windows_t lease_windows;
    char lease_plan_name[PROV_PLAN_NAME_MAX];
    int retry_ok;                   /* reserve: a lease of the account is held here ... */
    int retry;                      /* ... and a refusal runs again once it is returned */
    int retried;
    int no_draw;                    /* reserve: the database did not admit its key just now */
    const char *lease_owner;        /* reserve: the journal a granted lease is recorded to */
    /* replay: records of a dead process's journal, and (owner set) the
     * leases it held, all returned; drop: request_id names the hold or
     * lease, status the row's new status */
    const prov_journal_rec_t *recs;
    int nrecs;
    const char *owner;
    int returned;                   /* replay: leases returned */
    int progressed;                 /* replay: of swept, requests settled at their progress */
    int floors;                     /* replay (owner set): holds charged their floor */
    apr_int64_t at;                 /* drop: its time (now 0: no sweep comes with it) */
    int jticket;                    /* settle: its journal record (0: none) */
    int done;
    int async;                      /* a copied settlement nobody waits for */
    pthread_cond_t cond;            /* signalled when done, or to lead */
    struct prov_op_t *next;
    struct prov_op_t *retry_next;
} prov_op_t;

/* A settlement nobody waits for, copied out of r (malloc; the engine frees
 * it once committed). NULL without memory. */
prov_op_t *prov_batch_async_settle(const prov_reservation_t *r, const prov_tokens_t *t,
                                   prov_micro_t charge, prov_status_e status, apr_int64_t now);

/* Runs ops (a list) and the leases' work (slots linked by work_next) in one
 * transaction on s at engine time now (0: the latest of the ops'); sweep:
 * also expire stale holds and leases older than hold_timeout. Sets each
 * op's and slot's results; returns non-success only when the transaction
 * failed (then every op failed with it). */
apr_status_t prov_batch_run(prov_store_t *s, prov_op_t *ops, prov_slot_t *work,
                            apr_int64_t now, int sweep, apr_int64_t hold_timeout,
                            apr_pool_t *p);

/* Drawn rows one batch writes at most (all of a lease it returns): a
 * database that falls behind (a busy PostgreSQL) gets batches of bounded
 * length rather than ever longer ones. */
#define PROV_BATCH_ROWS_MAX 512

#endif
