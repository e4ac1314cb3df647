/* prov_audit.h: the audit trail (docs/internals/audit.md). One append-only
 * row per change made by an administrator (providerctl), a signed-in user
 * (the cabinet) or an OAuth client, and per sign-in and sign-in refusal:
 * when, who (actor kind and id), what (an action name such as
 * "key.reissue"), on what (target kind and id), for which user, from which
 * address, and a small JSON detail. A row never holds a secret: callers
 * pass no key secret, token, cookie or identity-provider subject, and the
 * detail holds only what they name. providerctl and the glue both write
 * through this file; it reads rows back for `providerctl audit list` and
 * the cabinet's activity list, and removes the oldest rows in batches for
 * the retention purge. */
#ifndef PROV_AUDIT_H
#define PROV_AUDIT_H

#include "prov_store.h"

/* Who made a change. */
typedef enum {
    PROV_AUDIT_ADMIN = 0,      /* the OS user running providerctl */
    PROV_AUDIT_USER,           /* a signed-in user (the cabinet) */
    PROV_AUDIT_OAUTH_CLIENT,   /* an OAuth client acting for a user */
    PROV_AUDIT_SYSTEM          /* the server itself */
} prov_audit_actor_e;

/* One row to write. Strings may be NULL (SQL NULL). */
typedef struct prov_audit_t {
    apr_int64_t at;                 /* seconds; 0: now */
    prov_audit_actor_e actor;
    const char *actor_id;           /* OS user name, user id, client_id */
    const char *action;             /* "key.create", "signin", "signin.refused"... */
    const char *target_kind;        /* "user", "key", "identity", "oauth_client", "model"... */
    const char *target_id;
    apr_int64_t user_id;            /* the user the row concerns; 0: see user_ref */
    const char *user_ref;           /* when user_id is 0: a user id or email, resolved
                                     * when the row is written (after the change: a
                                     * user just added is found); NULL: for a key
                                     * target, the key's user; else none */
    const char *address;            /* the client address, or NULL */
    const char *detail;             /* a JSON object's text (prov_audit_detail), or NULL */
} prov_audit_t;

/* One row read back. */
typedef struct prov_audit_row_t {
    apr_int64_t id, at, user_id;    /* user_id 0: none */
    const char *actor_kind, *actor_id, *action, *target_kind, *target_id, *address, *detail;
} prov_audit_row_t;

/* What to list: 0 / NULL for any. before_id pages back (rows with a smaller
 * id); security_only keeps the actions a user's activity list shows
 * (sign-ins, keys, identities, OAuth clients, sessions). */
typedef struct prov_audit_filter_t {
    apr_int64_t user_id, since, before_id;
    const char *action;             /* an action, or a prefix ending in '.' ("key.") */
    int security_only;
    int limit;                      /* 1..1000 */
} prov_audit_filter_t;

/* The actor kind's name ("admin", "user", "oauth_client", "system"). */
const char *prov_audit_actor_name(prov_audit_actor_e a);
/* A JSON object of string members from name/value pairs ending with a NULL
 * name; a pair with a NULL value is left out. NULL when no member is left. */
const char *prov_audit_detail(apr_pool_t *p, ...);
/* Writes a now: inside the caller's transaction when one is open. */
apr_status_t prov_audit_write(prov_store_t *s, const prov_audit_t *a, apr_pool_t *p);
/* Arms a for the change about to run: the next prov_store_commit on s
 * writes it in its transaction, just before COMMIT (p must last until
 * prov_audit_settle). */
void prov_audit_arm(prov_store_t *s, const prov_audit_t *a, apr_pool_t *p);
/* After the change: when it succeeded (change_rv APR_SUCCESS) and no
 * commit wrote the armed row (the change was one statement, committed on
 * its own), writes it now; disarms in every case. A failure to write is
 * logged and returned. */
apr_status_t prov_audit_settle(prov_store_t *s, apr_status_t change_rv, apr_pool_t *p);
/* Rows matching f, newest first (an array of prov_audit_row_t *). */
apr_status_t prov_audit_list(apr_array_header_t **out, prov_store_t *s,
                             const prov_audit_filter_t *f, apr_pool_t *p);
/* Removes at most batch of the rows written before `before` (seconds);
 * *removed counts them. Callers repeat while *removed == batch. */
apr_status_t prov_audit_purge_before(int *removed, prov_store_t *s, apr_int64_t before,
                                     int batch, apr_pool_t *p);

#endif
