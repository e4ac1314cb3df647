/* billing_fixture.h: what the billing engine's suites share
 * (test_prov_billing.c, test_prov_billing_lease.c,
 * test_prov_billing_journal.c): a database with a user, a key, a model and
 * the key's auth behind a fixed source of its own, the reads a test checks
 * the books with (holding the connection, as the writer thread may use it),
 * a lease table of a test's own and the ways to free it, and threads that
 * reserve and settle at once on one key with the books they must leave. */
#ifndef BILLING_FIXTURE_H
#define BILLING_FIXTURE_H

#include "unit_tests.h"
#include "prov_account.h"
#include "prov_billing_int.h"
#include "prov_lease_int.h"
#include "prov_models.h"

#define C PROV_MICRO_PER_CREDIT
#define T0 APR_INT64_C(1700000000)   /* a multiple of 3600 plus 800 s */

typedef struct bf_fixture_t {
    apr_pool_t *p;
    prov_store_t *s;
    prov_store_source_t *src;
    prov_user_t *u;
    prov_key_t *k;
    prov_model_t *m;
    prov_auth_t *auth;
    const char *secret;
    char dir[64];                 /* a journal directory (the journal suite's) */
} bf_fixture_t;

/* Fills f around the store s in the pool p (f's pool from then on): a user
 * of email with balance (none when 0), a key (with a weekly budget when
 * has_budget), the model m1, the key's auth and a fixed source with an
 * engine channel of its own. A failure is fatal to the test. */
void bf_fill(bf_fixture_t *f, apr_pool_t *p, prov_store_t *s, const char *email,
             prov_micro_t balance, int has_budget, prov_micro_t budget);
/* The same in a child of the run's pool, on prov_test_store_any's database,
 * for bill@example.com. */
void bf_setup(bf_fixture_t *f, prov_micro_t balance, int has_budget, prov_micro_t budget);

/* Takes (and gives back) f's one connection for this thread, waiting for
 * the writer thread's batch that holds it. */
void bf_hold_store(bf_fixture_t *f);
void bf_release_store(bf_fixture_t *f);
/* The first column of sql's last row (-1: no row). */
apr_int64_t bf_value(bf_fixture_t *f, const char *sql);
/* The user's balance as the database has it. */
prov_micro_t bf_balance(bf_fixture_t *f);
/* How many ledger rows have status. */
apr_int64_t bf_count_status(bf_fixture_t *f, const char *status);
/* prov_billing_reserve of f's key and model (asserted APR_SUCCESS): the
 * reservation, or NULL with the refusal in *err (err may be NULL). */
prov_reservation_t *bf_reserve(bf_fixture_t *f, const char *id, prov_micro_t hold,
                               apr_int64_t now, prov_error_t **err);
/* A reserve op of f's key and model with a hold of C, alone (next NULL). */
void bf_reserve_op(prov_op_t *op, bf_fixture_t *f, const char *id, apr_int64_t now);
/* prov_lease_draw for a request of this transport, id and agent session
 * (NULL: none; client codex with one). */
int bf_draw(prov_leases_t *L, prov_reservation_t **r, const prov_auth_t *auth,
            apr_int64_t model_id, const char *transport, const char *id, const char *session,
            prov_micro_t hold, apr_int64_t now, apr_pool_t *p);

/* Makes f->dir, an empty journal directory of the test's own; the files
 * in a directory (hidden ones too; -1: none); the directory removed with
 * its files. */
void bf_journal_dir(bf_fixture_t *f);
int bf_files_in(const char *dir);
void bf_remove_dir(const char *dir);
/* Whether a segment (.log) of dir holds text. */
int bf_dir_has(const char *dir, const char *text);
/* Appends r's record to j as the engine writes it (drawn: r->entry set):
 * a settlement (charge, status), or a progress record (never outstanding),
 * settled at `at`, of 4 input tokens and charge / 10 output tokens. */
void bf_journal(prov_journal_t *j, const prov_reservation_t *r, prov_micro_t charge,
                prov_status_e status, int progress, apr_int64_t at);
/* The books: balance + holds and leases in flight + the ledger's charges =
 * the top-up, and every scope's buckets = charges + holds + leases. */
void bf_check_books(bf_fixture_t *f, prov_micro_t topup);

/* An empty lease table of a test's own that grants leases (as one a writer
 * thread serves), keeping a lease keep_idle after its key's last request. */
void bf_lease_table(prov_leases_t *L, apr_time_t keep_idle);
/* Two reservations at once (grant-1, grant-2 in ops, of C each) run in a
 * real batch on such a table, the second granted a lease of 1,024 holds:
 * the lease's slot. */
prov_slot_t *bf_granted(bf_fixture_t *f, prov_leases_t *L, prov_op_t ops[2]);
/* Frees the slots and keys of such a table, asserting that each has no
 * lease, nothing in flight and nothing unwritten left. */
void bf_free_slots(prov_leases_t *L);
/* Frees a dead process's lease table: slots and whatever entries they
 * hold, and its keys. */
void bf_drop_slots(prov_leases_t *L);

/* What bf_run_leasers' threads did: requests made, reservations granted,
 * settled and drawn from a lease, and the charges. */
typedef struct bf_lease_run_t {
    int ok, settled, leased;
    apr_int64_t requests;
    prov_micro_t charged;
} bf_lease_run_t;

/* Runs threads that each reserve 3 C and settle, again and again (now and
 * then two at once), on f's key at T0, and adds what they did to *out;
 * asserts that every request was granted and settled. */
void bf_run_leasers(bf_fixture_t *f, bf_lease_run_t *out);
/* After bf_run_leasers (f's balance was 1000000 C): every row written
 * complete, no lease left, the balance and the buckets equal the charges. */
void bf_check_lease_books(bf_fixture_t *f, apr_int64_t requests, prov_micro_t charged);

#endif
