/* core/alert/: spend alerts (docs/internals/alerts.md, docs/reference/alerts.md).
 * What crosses (a key's weekly budget at 80 % and 100 %, a plan window at
 * 90 %, a balance below a threshold, a user blocked), the outbox row each
 * crossing becomes (table alerts, unique by subject, kind and window), the
 * signed JSON POST that delivers it (libcurl) with retries, and a user's
 * own threshold. It calls store and base only; the glue's thread
 * (mod_provider_alert.c) and providerctl call it. Nothing here runs on a
 * request's path. */
/* prov_alert.h: the alert room's API. */
#ifndef PROV_ALERT_H
#define PROV_ALERT_H

#include "prov_common.h"
#include "prov_money.h"
#include "prov_store.h"
#include "prov_error.h"

/* The closed set of alert kinds; prov_alert_kind_name gives the wire name
 * ("budget_80", ...), the body's "type" and the outbox's kind column. */
typedef enum {
    PROV_ALERT_BUDGET_80 = 0,   /* a key's weekly spend reached 80 % of its budget */
    PROV_ALERT_BUDGET_100,      /* ... 100 % */
    PROV_ALERT_PLAN_5H_90,      /* the plan's 5-hour window reached 90 % of its quota */
    PROV_ALERT_PLAN_7D_90,      /* the plan's 7-day window reached 90 % */
    PROV_ALERT_BALANCE_BELOW,   /* the balance fell below the threshold */
    PROV_ALERT_USER_BLOCKED,    /* the user was blocked (providerctl user block) */
    PROV_ALERT_KINDS
} prov_alert_kind_e;

/* The signature header's name. */
#define PROV_ALERT_SIG_HEADER "X-Provider-Signature"
/* Alerts one delivery round claims at most (the in-memory queue's bound). */
#define PROV_ALERT_BATCH 16
/* Seconds a claimed alert is leased to its node before another may retry it. */
#define PROV_ALERT_LEASE 60
/* The longest wait between two attempts, seconds. */
#define PROV_ALERT_BACKOFF_MAX 300

const char *prov_alert_kind_name(prov_alert_kind_e k);
/* The threshold percent of a usage kind (80, 100, 90), 0 for the others. */
int prov_alert_kind_percent(prov_alert_kind_e k);

/* One crossing, before it is written. */
typedef struct prov_alert_t {
    prov_alert_kind_e kind;
    apr_int64_t user_id;
    apr_int64_t key_id;         /* 0: not a key's alert */
    apr_int64_t window_start;   /* with subject and kind: the dedupe key */
    apr_int64_t at;             /* when it was seen */
    prov_micro_t used;          /* the window's spend, or the balance */
    prov_micro_t limit;         /* the budget or quota, or the threshold */
} prov_alert_t;

/* ---- the arithmetic (prov_alert.c) ---- */
/* Non-zero when used has reached percent % of limit (limit > 0), exact
 * in integers whatever the amounts. */
int prov_alert_reached(prov_micro_t used, prov_micro_t limit, int percent);
/* The window a usage kind's crossing at `now` belongs to: a key's budget
 * and the 7-day plan window by the UTC week from Monday 00:00, the 5-hour
 * window by the 5-hour period from 00:00 UTC; the same on every node. */
apr_int64_t prov_alert_window_start(prov_alert_kind_e k, apr_int64_t now);
/* The wait before attempt `attempts` + 1: 1, 2, 4 ... seconds, at most
 * PROV_ALERT_BACKOFF_MAX. */
apr_int64_t prov_alert_backoff(int attempts);

/* ---- signing (prov_alert.c) ---- */
/* The X-Provider-Signature value "t=<t>,v1=<hex HMAC-SHA256(secret,
 * "<t>.<body>")>" (OpenSSL HMAC), in p. */
apr_status_t prov_alert_sign(const char **value, const char *secret, apr_size_t secret_len,
                             apr_int64_t t, const char *body, apr_size_t len, apr_pool_t *p);

/* ---- the outbox (prov_alert_outbox.c) ---- */
/* Writes a crossing as an outbox row with its JSON body; *created is 1 when
 * this call wrote it, 0 when the row of that subject, kind and window was
 * there already (another node, an earlier scan). */
apr_status_t prov_alert_raise(int *created, prov_store_t *s, const prov_alert_t *a,
                              apr_pool_t *p);
/* A user blocked at `now`: its alert (providerctl user block). */
apr_status_t prov_alert_user_blocked(prov_store_t *s, apr_int64_t user_id, apr_int64_t now,
                                     apr_pool_t *p);

/* An outbox row as listed. */
typedef struct prov_alert_row_t {
    const char *id, *kind, *subject, *last_error;
    apr_int64_t user_id, window_start, created_at, attempts, next_at, sent_at;
} prov_alert_row_t;
/* The newest `limit` rows (pending only: those not delivered), newest first. */
apr_status_t prov_alert_list(apr_array_header_t **rows, prov_store_t *s, int pending_only,
                             int limit, apr_pool_t *p);
/* Counts of the outbox's rows not delivered yet and delivered. */
apr_status_t prov_alert_counts(apr_int64_t *pending, apr_int64_t *sent, prov_store_t *s,
                               apr_pool_t *p);

/* Removes up to `batch` delivered rows created and sent before `before`
 * (the retention's cut, ProviderLedgerRetention: at least 8 days, longer
 * than any alert's window), oldest first; a row not delivered yet is never
 * removed. *removed counts them. A removed row's crossing is never raised
 * again: its window is over, a balance alert stays disarmed until a
 * top-up, a block is raised by the block itself. */
apr_status_t prov_alert_purge_before(int *removed, prov_store_t *s, apr_int64_t before,
                                     int batch, apr_pool_t *p);

/* ---- the scan (prov_alert_scan.c) ---- */
/* Takes the scan's turn when it is free (one node at a time, for `every`
 * seconds) and raises every crossing it finds: keys with a budget and plans
 * with usage in the last two hours, balances below their threshold (the
 * user's own, else default_below; 0: none). *raised counts rows written;
 * *ran is 0 when another node had the turn. */
apr_status_t prov_alert_scan(int *ran, int *raised, prov_store_t *s, apr_int64_t now,
                             apr_int64_t every, prov_micro_t default_below, apr_pool_t *p);

/* ---- delivery (prov_alert_send.c) ---- */
typedef struct prov_alert_hook_t {
    const char *url;
    const char *secret;         /* never logged, never in a body */
    apr_size_t secret_len;
    long timeout;               /* seconds per POST */
} prov_alert_hook_t;
/* Claims up to PROV_ALERT_BATCH due rows (a compare-and-set on next_at, so
 * one node sends each), POSTs each signed, and marks it sent (a 2xx) or due
 * again after the backoff with its error. *sent and *failed count them. */
apr_status_t prov_alert_deliver(int *sent, int *failed, prov_store_t *s,
                                const prov_alert_hook_t *hook, apr_int64_t now, apr_pool_t *p);

/* ---- a user's own threshold (prov_alert_outbox.c) ---- */
/* The user's balance_below (*set 0: none, the operator's default applies). */
apr_status_t prov_alert_setting_get(int *set, prov_micro_t *below, prov_store_t *s,
                                    apr_int64_t user_id, apr_pool_t *p);
/* Sets it (set 0: back to the default); re-arms the balance alert. */
apr_status_t prov_alert_setting_put(prov_store_t *s, apr_int64_t user_id, int set,
                                    prov_micro_t below, apr_pool_t *p);
/* Parses {"balance_below": CREDITS | null}: 400 errors in *err. */
apr_status_t prov_alert_setting_parse(int *set, prov_micro_t *below, prov_error_t **err,
                                      const char *body, apr_size_t len, apr_pool_t *p);
/* {"balance_below": "12.5" | null, "default_balance_below": ... | null}. */
struct json_object *prov_alert_setting_json(int set, prov_micro_t below,
                                            prov_micro_t default_below, apr_pool_t *p);

#endif
