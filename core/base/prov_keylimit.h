/* prov_keylimit.h: the per-key request-rate and in-flight limits of API
 * keys with `rpm` or `max_in_flight` set (prov_key_controls.h), in a fixed
 * table over memory the caller provides (the module: shared memory every
 * child of a server sees, under one global mutex, as prov_ratelimit's
 * table; the unit tests: plain memory). A slot is keyed by the key id: the
 * requests of its last 60 seconds, one counter a second, and its requests
 * in flight. The rate is exact within the table: a request is let through
 * when fewer than rpm went through in the current second and the 59 before
 * it. The table is set-associative (PROV_KL_WAYS slots per set, chosen by
 * the key id); a slot with requests in flight is never given up, one whose
 * last minute is empty is free, and else the set's least recently used idle
 * slot makes room (its key starts a fresh minute). Across several servers
 * each counts its own: n servers behind one balancer let a key through up
 * to n times its limits (docs/internals/ratelimit.md). */
#ifndef PROV_KEYLIMIT_H
#define PROV_KEYLIMIT_H

#include "prov_common.h"

#define PROV_KL_WAYS 8
#define PROV_KL_SLOTS 4096           /* ~1 MiB: 264 bytes a slot */
#define PROV_KL_WINDOW 60            /* seconds of the rate's window */
/* A slot whose in-flight count has not moved for this long is taken to be
 * left by a child that died in the middle of a request: its count starts
 * again from zero. */
#define PROV_KL_STALE 3600

typedef struct prov_keylimit_t prov_keylimit_t;

/* What prov_keylimit_take decided. */
typedef enum {
    PROV_KL_ALLOWED = 0,
    PROV_KL_RATE,                /* rpm requests already in the window */
    PROV_KL_IN_FLIGHT            /* max_in_flight requests already in flight */
} prov_kl_result_e;

typedef struct prov_kl_verdict_t {
    prov_kl_result_e result;
    int retry_after;             /* refused: whole seconds to wait (>= 1) */
    int slot;                    /* allowed with an in-flight count taken: the
                                  * slot to release; else -1 */
    int evicted;                 /* another key's slot was given up for this one */
    int untracked;               /* every slot of the set was in flight: let
                                  * through uncounted */
} prov_kl_verdict_t;

/* The bytes a table of slots (rounded up to whole sets) needs. */
apr_size_t prov_keylimit_size(unsigned slots);
/* Lays a new, empty table over mem (prov_keylimit_size bytes). */
apr_status_t prov_keylimit_init(prov_keylimit_t **t, void *mem, unsigned slots);
/* Counts a request of key_id at now (seconds) against rpm (0: none) and
 * max_in_flight (0: none); a refused request is not counted. The caller
 * serialises calls on one table. */
void prov_keylimit_take(prov_kl_verdict_t *v, prov_keylimit_t *t, apr_int64_t key_id,
                        apr_int64_t rpm, apr_int64_t max_in_flight, apr_int64_t now);
/* Gives back the in-flight count that a verdict's slot holds for key_id
 * (nothing when the slot no longer is that key's). */
void prov_keylimit_release(prov_keylimit_t *t, int slot, apr_int64_t key_id, apr_int64_t now);
/* key_id's requests in flight (for tests and the status page). */
int prov_keylimit_in_flight(prov_keylimit_t *t, apr_int64_t key_id);

#endif
