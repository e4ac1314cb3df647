/* prov_ratelimit.c: the anonymous endpoints' token buckets (prov_ratelimit.h):
 * the table's layout over the caller's memory, the keyed hash that picks a
 * set, a bucket's refill in milli-tokens from the microseconds since its
 * last request, the least-recently-used slot given up when a set is full,
 * and the key an address counts by. Nothing here locks: the module calls
 * it under its global mutex. */
#include <string.h>
#include <arpa/inet.h>
#include <apr_general.h>
#include "prov_ratelimit.h"

#define MAGIC APR_UINT64_C(0x70726f76726c3031)  /* "provrl01" */

typedef struct slot_t {
    apr_uint64_t hash;           /* 0: free */
    apr_int64_t stamp;           /* microseconds of the last request */
    apr_int64_t tat;             /* when the bucket is full again */
    apr_int64_t refused;         /* the last request was refused */
} slot_t;

struct prov_ratelimit_t {
    apr_uint64_t magic;
    apr_uint64_t seed;           /* the hash key */
    apr_uint64_t sets;
    apr_uint64_t pad;
    slot_t slot[];               /* sets * PROV_RL_WAYS */
};

static const struct {
    const char *name;
    prov_rl_limit_t limit;
} classes[PROV_RL_CLASSES] = {
    /* A client registers once per installation: a few a minute. */
    [PROV_RL_REGISTER]  = { "register",  { 10, 20 } },
    /* Codes exchanged and tokens refreshed: each an hour per client. */
    [PROV_RL_TOKEN]     = { "token",     { 60, 60 } },
    [PROV_RL_AUTHORIZE] = { "authorize", { 30, 30 } },
    /* Starts and callbacks of sign-ins and links: two per sign-in. */
    [PROV_RL_SIGNIN]    = { "signin",    { 30, 30 } },
    /* The public documentation tools of an agent at work. */
    [PROV_RL_MCP]       = { "mcp",       { 120, 60 } },
};

const char *prov_rl_class_name(prov_rl_class_e c)
{
    return (unsigned)c < PROV_RL_CLASSES ? classes[c].name : NULL;
}

apr_status_t prov_rl_class_parse(prov_rl_class_e *c, const char *name)
{
    int i;
    for (i = 0; i < PROV_RL_CLASSES; i++) {
        if (name && !strcasecmp(name, classes[i].name)) {
            *c = (prov_rl_class_e)i;
            return APR_SUCCESS;
        }
    }
    return APR_EINVAL;
}

prov_rl_limit_t prov_rl_default(prov_rl_class_e c)
{
    static const prov_rl_limit_t none = { 0, 0 };
    return (unsigned)c < PROV_RL_CLASSES ? classes[c].limit : none;
}

static apr_uint64_t sets_of(unsigned slots)
{
    if (slots < PROV_RL_SLOTS_MIN)
        slots = PROV_RL_SLOTS_MIN;
    return (slots + PROV_RL_WAYS - 1) / PROV_RL_WAYS;
}

apr_size_t prov_ratelimit_size(unsigned slots)
{
    return sizeof(prov_ratelimit_t) + sets_of(slots) * PROV_RL_WAYS * sizeof(slot_t);
}

apr_status_t prov_ratelimit_init(prov_ratelimit_t **out, void *mem, unsigned slots)
{
    prov_ratelimit_t *t = mem;
    apr_status_t rv;
    memset(t, 0, prov_ratelimit_size(slots));
    rv = apr_generate_random_bytes((unsigned char *)&t->seed, sizeof(t->seed));
    if (rv != APR_SUCCESS)
        return rv;
    t->sets = sets_of(slots);
    t->magic = MAGIC;
    *out = t;
    return APR_SUCCESS;
}

/* FNV-1a over the key, the class and the text, then a 64-bit finaliser
 * (splitmix64's) so that every bit of the set index depends on all of it. */
static apr_uint64_t key_hash(apr_uint64_t seed, prov_rl_class_e c, const char *key)
{
    apr_uint64_t h = APR_UINT64_C(0xcbf29ce484222325) ^ seed;
    const unsigned char *k = (const unsigned char *)key;
    h = (h ^ (apr_uint64_t)(c + 1)) * APR_UINT64_C(0x100000001b3);
    for (; *k; k++)
        h = (h ^ *k) * APR_UINT64_C(0x100000001b3);
    h ^= h >> 30;
    h *= APR_UINT64_C(0xbf58476d1ce4e5b9);
    h ^= h >> 27;
    h *= APR_UINT64_C(0x94d049bb133111eb);
    h ^= h >> 31;
    return h ? h : 1;
}

/* The slot of hash in its set: its own, else a free one, else the least
 * recently used (*evicted when that one's bucket was not yet full again). */
static slot_t *find(prov_ratelimit_t *t, apr_uint64_t hash, apr_time_t now, int *fresh,
                    int *evicted)
{
    slot_t *set = &t->slot[(hash % t->sets) * PROV_RL_WAYS], *old = set;
    int i;
    *fresh = 1;
    *evicted = 0;
    for (i = 0; i < PROV_RL_WAYS; i++) {
        if (set[i].hash == hash) {
            *fresh = 0;
            return &set[i];
        }
        if (!set[i].hash)
            return &set[i];
        if (set[i].stamp < old->stamp)
            old = &set[i];
    }
    *evicted = old->tat > now;
    return old;
}

/* The bucket as a generic cell rate (GCRA, RFC 2697's idea): the slot
 * keeps the time at which its bucket is full again (tat, "theoretical
 * arrival time"); each request allowed moves it one interval (60 s /
 * per_minute) on; a request is refused while tat is more than
 * (burst - 1) intervals ahead of now, until exactly the moment it is not
 * (Retry-After). Integer microseconds: no fraction is lost. */
void prov_ratelimit_take(prov_rl_verdict_t *v, prov_ratelimit_t *t, prov_rl_class_e c,
                         const prov_rl_limit_t *limit, const char *key, apr_time_t now)
{
    apr_int64_t interval, tolerance, tat;
    slot_t *s;
    int fresh;

    memset(v, 0, sizeof(*v));
    v->allowed = 1;
    if (!t || t->magic != MAGIC || limit->per_minute <= 0)
        return;
    interval = 60 * APR_USEC_PER_SEC / limit->per_minute;
    tolerance = (apr_int64_t)(limit->burst > 1 ? limit->burst - 1 : 0) * interval;
    s = find(t, key_hash(t->seed, c, key ? key : ""), now, &fresh, &v->evicted);
    if (fresh) {
        s->hash = key_hash(t->seed, c, key ? key : "");
        s->tat = now;
        s->refused = 0;
    }
    s->stamp = now;
    tat = s->tat > now ? s->tat : now;
    if (tat - now <= tolerance) {
        s->tat = tat + interval;
        s->refused = 0;
        return;
    }
    v->allowed = 0;
    v->first = !s->refused;
    s->refused = 1;
    v->retry_after = (int)((tat - tolerance - now + APR_USEC_PER_SEC - 1) / APR_USEC_PER_SEC);
    if (v->retry_after < 1)
        v->retry_after = 1;
}

const char *prov_ratelimit_key(const char *addr, apr_pool_t *p)
{
    unsigned char a6[16];
    char buf[INET6_ADDRSTRLEN];
    static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
    if (!addr || !strchr(addr, ':') || inet_pton(AF_INET6, addr, a6) != 1)
        return addr ? addr : "";
    if (!memcmp(a6, mapped, sizeof(mapped))) {
        if (!inet_ntop(AF_INET, a6 + 12, buf, sizeof(buf)))
            return addr;
        return apr_pstrdup(p, buf);
    }
    memset(a6 + 8, 0, 8);
    if (!inet_ntop(AF_INET6, a6, buf, sizeof(buf)))
        return addr;
    return apr_pstrcat(p, buf, "/64", NULL);
}
