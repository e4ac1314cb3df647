/* core/account/: who may use the service and what they may use. Users, their
 * prepaid balance and their API keys (prov_account.h, this header), their
 * sign-in identities and cabinet sessions as the administrator sees and
 * revokes them (prov_user_access), the secrets behind keys, random and
 * stored as digests (prov_secret), plans and subscriptions (prov_plans), the
 * model catalog and its rate card (prov_models), the public catalog as the
 * gateway offers it right now (prov_catalog), usage reports read from the
 * ledger (prov_usage), and the hot path's small caches of keys and models
 * (prov_cache). It calls base, store, and gateway (for the gateway's model
 * list); never billing or transport. */
/* prov_account.h: users (prov_user.c), their prepaid balance
 * (prov_balance.c) and their API keys (prov_key.c), as the administrator
 * (providerctl) and the cabinet manage them, plus the one lookup on the
 * inference hot path (prov_auth.c): from a presented key to what the checks
 * need. */
#ifndef PROV_ACCOUNT_H
#define PROV_ACCOUNT_H

#include "prov_common.h"
#include "prov_store.h"
#include "prov_key_controls.h"

typedef struct prov_user_t {
    apr_int64_t id;
    const char *email;
    const char *name;         /* may be NULL */
    int blocked;
    prov_micro_t balance;     /* prepaid, micro-credits */
    apr_int64_t created_at;
} prov_user_t;

typedef struct prov_key_t {
    apr_int64_t id;
    apr_int64_t user_id;
    const char *name;         /* may be NULL */
    const char *display;      /* display prefix, never the secret */
    const char *last4;        /* the secret's last 4 characters (NULL: made before 017) */
    int has_budget;
    prov_micro_t weekly_budget;
    apr_int64_t created_at;
    apr_int64_t reissued_at;  /* 0 = never */
    apr_int64_t deleted_at;   /* 0 = live */
    prov_key_controls_t controls; /* expiry, models, addresses, rate, in flight */
} prov_key_t;

/* What the inference checks need about the caller, from one query. */
typedef struct prov_auth_t {
    const char *key_hash;     /* SHA-256 hex of the presented secret */
    apr_int64_t key_id;
    apr_int64_t user_id;
    const char *key_display;
    int user_blocked;
    int has_budget;
    prov_micro_t weekly_budget;
    prov_micro_t balance;
    prov_key_controls_t controls; /* the key's own controls, from the same row */
} prov_auth_t;

/* Non-zero when e is an address prov_user_add takes (a dot-atom local part,
 * a host with a dot and an alphabetic top-level label, at most 254 bytes). */
int prov_user_email_ok(const char *e);
/* A free-text label, a user's or a key's name: at most 400 bytes, no control
 * characters; *out = name, or NULL when it is empty (none). APR_EINVAL. */
apr_status_t prov_user_name_check(const char **out, const char *name);
/* Returns APR_EEXIST when the email is taken, APR_EINVAL when it is malformed. */
apr_status_t prov_user_add(prov_user_t **u, prov_store_t *s, const char *email,
                           const char *name, apr_pool_t *p);
/* ref is a numeric id or an email. APR_NOTFOUND when there is no such user. */
apr_status_t prov_user_find(prov_user_t **u, prov_store_t *s, const char *ref, apr_pool_t *p);
/* One user by id; APR_NOTFOUND. */
apr_status_t prov_user_get(prov_user_t **u, prov_store_t *s, apr_int64_t id, apr_pool_t *p);
/* All users (prov_user_t* elements), by id. */
apr_status_t prov_user_list(apr_array_header_t **users, prov_store_t *s, apr_pool_t *p);
/* Blocks or unblocks; blocking also revokes every live cabinet session of
 * the user in the same transaction (*revoked, may be NULL, counts them; 0
 * when unblocking). APR_NOTFOUND when there is no such user. */
apr_status_t prov_user_set_blocked(int *revoked, prov_store_t *s, apr_int64_t user_id,
                                   int blocked, apr_pool_t *p);

/* Adds amount (may be negative: a correction) to the balance and records the
 * movement with its reason, in one transaction. new_balance may be NULL. */
apr_status_t prov_balance_add(prov_micro_t *new_balance, prov_store_t *s, apr_int64_t user_id,
                              prov_micro_t amount, const char *reason, apr_pool_t *p);

/* The key's controls from a row, its five columns (KEY_CONTROLS in
 * prov_sql.c: expires_at, models, addresses, rpm, max_in_flight) from col on. */
void prov_key_read_controls(prov_key_controls_t *c, prov_store_t *s, apr_dbd_row_t *row,
                            int col, apr_pool_t *p);

/* Creates a key; *secret is the only copy of the key ever produced.
 * APR_EEXIST when another live key of the user has the same name. */
apr_status_t prov_key_create(prov_key_t **k, const char **secret, prov_store_t *s,
                             apr_int64_t user_id, const char *name, int has_budget,
                             prov_micro_t weekly_budget, apr_pool_t *p);
/* Replaces the secret of a live key (the old one stops working at once). */
apr_status_t prov_key_reissue(const char **secret, prov_store_t *s, apr_int64_t key_id,
                              apr_pool_t *p);
/* Marks a key deleted; APR_NOTFOUND when unknown or already deleted. */
apr_status_t prov_key_delete(prov_store_t *s, apr_int64_t key_id, apr_pool_t *p);
/* Sets (has_budget) or clears the weekly budget of a live key. */
apr_status_t prov_key_set_budget(prov_store_t *s, apr_int64_t key_id, int has_budget,
                                 prov_micro_t weekly_budget, apr_pool_t *p);
/* One key by id (deleted ones too); APR_NOTFOUND. */
apr_status_t prov_key_get(prov_key_t **k, prov_store_t *s, apr_int64_t key_id,
                          apr_pool_t *p);
/* Keys (prov_key_t*), of one user when user_id > 0, live ones unless
 * include_deleted. */
apr_status_t prov_key_list(apr_array_header_t **keys, prov_store_t *s, apr_int64_t user_id,
                           int include_deleted, apr_pool_t *p);

/* The hot-path lookup: secret -> key and user. APR_NOTFOUND when the secret is
 * malformed, unknown or deleted (the caller answers 401 for all three). */
apr_status_t prov_auth_lookup(prov_auth_t **a, prov_store_t *s, const char *secret,
                              apr_pool_t *p);

#endif
