/* prov_keylimit.c: the per-key rate and in-flight table (prov_keylimit.h):
 * its layout over the caller's memory, the set a key id hashes to, a
 * slot's ring of 60 per-second counters brought up to the present at each
 * request, the Retry-After of a refused rate (when enough of the window's
 * oldest seconds have passed), and the slot given up when a set is full.
 * Nothing here locks: the module calls it under its global mutex. */
#include <string.h>
#include "prov_keylimit.h"

#define MAGIC APR_UINT64_C(0x70726f766b6c3031)  /* "provkl01" */

typedef struct slot_t {
    apr_int64_t key_id;          /* 0: free */
    apr_int64_t stamp;           /* the second of the last count brought up to date */
    apr_int64_t moved;           /* the second in_flight last changed */
    apr_int32_t in_flight;
    apr_int32_t pad;
    apr_uint32_t count[PROV_KL_WINDOW];  /* requests of second s at s % WINDOW */
} slot_t;

struct prov_keylimit_t {
    apr_uint64_t magic;
    apr_uint64_t sets;
    slot_t slot[];               /* sets * PROV_KL_WAYS */
};

static apr_uint64_t sets_of(unsigned slots)
{
    apr_uint64_t sets = (slots + PROV_KL_WAYS - 1) / PROV_KL_WAYS;
    return sets ? sets : 1;
}

apr_size_t prov_keylimit_size(unsigned slots)
{
    return sizeof(prov_keylimit_t) + sets_of(slots) * PROV_KL_WAYS * sizeof(slot_t);
}

apr_status_t prov_keylimit_init(prov_keylimit_t **t, void *mem, unsigned slots)
{
    prov_keylimit_t *k = mem;
    if (!mem)
        return APR_EINVAL;
    memset(k, 0, prov_keylimit_size(slots));
    k->magic = MAGIC;
    k->sets = sets_of(slots);
    *t = k;
    return APR_SUCCESS;
}

static slot_t *set_of(prov_keylimit_t *t, apr_int64_t key_id)
{
    /* Fibonacci hashing spreads consecutive ids over the sets. */
    apr_uint64_t h = (apr_uint64_t)key_id * APR_UINT64_C(0x9E3779B97F4A7C15);
    return &t->slot[((h >> 32) % t->sets) * PROV_KL_WAYS];
}

/* Clears the counters of the seconds between the slot's stamp and now. */
static void bring_up(slot_t *s, apr_int64_t now)
{
    apr_int64_t sec;
    if (now - s->stamp >= PROV_KL_WINDOW || now < s->stamp)
        memset(s->count, 0, sizeof(s->count));
    else
        for (sec = s->stamp + 1; sec <= now; sec++)
            s->count[sec % PROV_KL_WINDOW] = 0;
    s->stamp = now;
    if (s->in_flight > 0 && now - s->moved >= PROV_KL_STALE)
        s->in_flight = 0;
}

static int idle(const slot_t *s, apr_int64_t now)
{
    return s->in_flight <= 0 && (now - s->stamp >= PROV_KL_WINDOW || now < s->stamp);
}

/* key_id's slot (made when missing), or NULL when all are in flight. */
static slot_t *find(prov_kl_verdict_t *v, prov_keylimit_t *t, apr_int64_t key_id,
                    apr_int64_t now)
{
    slot_t *set = set_of(t, key_id), *pick = NULL;
    int i;
    for (i = 0; i < PROV_KL_WAYS; i++) {
        if (set[i].key_id == key_id)
            return &set[i];
    }
    for (i = 0; i < PROV_KL_WAYS; i++) {
        slot_t *s = &set[i];
        if (s->key_id == 0 || idle(s, now)) {
            pick = s;
            break;
        }
        if (s->in_flight <= 0 && (!pick || s->stamp < pick->stamp))
            pick = s;
    }
    if (!pick)
        return NULL;
    v->evicted = pick->key_id != 0 && !idle(pick, now);
    memset(pick, 0, sizeof(*pick));
    pick->key_id = key_id;
    pick->stamp = pick->moved = now;
    return pick;
}

/* The seconds until fewer than rpm remain in the window. */
static int rate_retry(const slot_t *s, apr_int64_t rpm, apr_int64_t now)
{
    apr_int64_t sum = 0, sec;
    int k;
    for (sec = now - PROV_KL_WINDOW + 1; sec <= now; sec++)
        sum += s->count[((sec % PROV_KL_WINDOW) + PROV_KL_WINDOW) % PROV_KL_WINDOW];
    for (k = 1; k <= PROV_KL_WINDOW; k++) {
        sec = now - PROV_KL_WINDOW + k;          /* leaves the window at now + k */
        sum -= s->count[((sec % PROV_KL_WINDOW) + PROV_KL_WINDOW) % PROV_KL_WINDOW];
        if (sum < rpm)
            return k;
    }
    return PROV_KL_WINDOW;
}

void prov_keylimit_take(prov_kl_verdict_t *v, prov_keylimit_t *t, apr_int64_t key_id,
                        apr_int64_t rpm, apr_int64_t max_in_flight, apr_int64_t now)
{
    slot_t *s;
    apr_int64_t sum = 0;
    int i;
    memset(v, 0, sizeof(*v));
    v->slot = -1;
    if ((rpm <= 0 && max_in_flight <= 0) || !t || t->magic != MAGIC)
        return;
    if (!(s = find(v, t, key_id, now))) {
        v->untracked = 1;
        return;
    }
    bring_up(s, now);
    for (i = 0; i < PROV_KL_WINDOW; i++)
        sum += s->count[i];
    if (rpm > 0 && sum >= rpm) {
        v->result = PROV_KL_RATE;
        v->retry_after = rate_retry(s, rpm, now);
        return;
    }
    if (max_in_flight > 0 && s->in_flight >= max_in_flight) {
        v->result = PROV_KL_IN_FLIGHT;
        v->retry_after = 1;
        return;
    }
    s->count[now % PROV_KL_WINDOW]++;
    if (max_in_flight > 0) {
        s->in_flight++;
        s->moved = now;
        v->slot = (int)(s - t->slot);
    }
}

void prov_keylimit_release(prov_keylimit_t *t, int slot, apr_int64_t key_id, apr_int64_t now)
{
    slot_t *s;
    if (!t || slot < 0 || (apr_uint64_t)slot >= t->sets * PROV_KL_WAYS)
        return;
    s = &t->slot[slot];
    if (s->key_id != key_id || s->in_flight <= 0)
        return;
    s->in_flight--;
    s->moved = now;
}

int prov_keylimit_in_flight(prov_keylimit_t *t, apr_int64_t key_id)
{
    slot_t *set = set_of(t, key_id);
    int i;
    for (i = 0; i < PROV_KL_WAYS; i++) {
        if (set[i].key_id == key_id)
            return set[i].in_flight;
    }
    return 0;
}
