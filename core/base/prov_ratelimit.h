/* prov_ratelimit.h: per-client-address limits for the anonymous endpoints
 * (register, token, authorize, sign-in, the public MCP): a token bucket per
 * (class, address) in a fixed table laid over memory the caller provides
 * (the module: shared memory that every child of a server sees, under one
 * global mutex; the unit tests: plain memory). The table never grows: it
 * is a set-associative cache of PROV_RL_WAYS slots per set, the set chosen
 * by a keyed hash of the class and the address (the key drawn at
 * prov_ratelimit_init, so that nobody can aim addresses at one set). A new
 * address takes a free slot of its set, or else the slot of the set used
 * least recently: the only way an address loses its state is for WAYS
 * other addresses of its set to come after it, and an evicted address
 * starts again with a full bucket (docs/internals/ratelimit.md sizes it).
 * An IPv6 address counts by its /64, which one subscriber usually holds. */
#ifndef PROV_RATELIMIT_H
#define PROV_RATELIMIT_H

#include "prov_common.h"

/* The endpoint classes, each with its own limit. */
typedef enum {
    PROV_RL_REGISTER = 0,        /* POST /oauth/register */
    PROV_RL_TOKEN,               /* /oauth/token, /oauth/revoke */
    PROV_RL_AUTHORIZE,           /* /oauth/authorize */
    PROV_RL_SIGNIN,              /* /v1/auth/NAME/login, /link and /callback */
    PROV_RL_MCP,                 /* the public POST /v1/mcp */
    PROV_RL_CLASSES
} prov_rl_class_e;

#define PROV_RL_WAYS 8
#define PROV_RL_SLOTS_DEFAULT 16384  /* 512 KiB: 32 bytes a slot */
#define PROV_RL_SLOTS_MIN 64
#define PROV_RL_RATE_MAX 60000       /* per_minute and burst at most */

/* A class's limit: a sustained rate and the burst allowed above it (the
 * bucket's size). per_minute 0: no limit. */
typedef struct prov_rl_limit_t {
    int per_minute;
    int burst;
} prov_rl_limit_t;

typedef struct prov_ratelimit_t prov_ratelimit_t;

/* The class's directive name ("register", "token", "authorize", "signin",
 * "mcp"), or NULL past the last. */
const char *prov_rl_class_name(prov_rl_class_e c);
/* The class named name; APR_EINVAL for an unknown name. */
apr_status_t prov_rl_class_parse(prov_rl_class_e *c, const char *name);
/* The default limit of class c. */
prov_rl_limit_t prov_rl_default(prov_rl_class_e c);

/* The bytes a table of slots (rounded up to whole sets) needs. */
apr_size_t prov_ratelimit_size(unsigned slots);
/* Lays a new, empty table of slots over mem (prov_ratelimit_size bytes),
 * with a fresh hash key. */
apr_status_t prov_ratelimit_init(prov_ratelimit_t **t, void *mem, unsigned slots);

/* The answer of prov_ratelimit_take. */
typedef struct prov_rl_verdict_t {
    int allowed;
    int retry_after;             /* refused: whole seconds until a token is back (>= 1) */
    int first;                   /* refused, and the address's previous request was not */
    int evicted;                 /* a live slot of another address made room for this one */
} prov_rl_verdict_t;

/* Takes a token of class c for the client key at now (microseconds, any
 * monotonic origin) under limit. The caller serialises calls on one table
 * (the module's global mutex). */
void prov_ratelimit_take(prov_rl_verdict_t *v, prov_ratelimit_t *t, prov_rl_class_e c,
                         const prov_rl_limit_t *limit, const char *key, apr_time_t now);

/* The key an address counts by: an IPv4 address as it is (an IPv4-mapped
 * IPv6 one as IPv4), an IPv6 one as its /64 ("2001:db8:1:2::/64");
 * anything else as it is. */
const char *prov_ratelimit_key(const char *addr, apr_pool_t *p);

#endif
