/* prov_account.c: users, their prepaid balance and their API keys, on top of
 * the labelled statements of prov_sql.c. Administrative changes that must not
 * race (a new user, a balance movement with its event row) run in one write
 * transaction; a duplicate is found by a select inside it, which is simpler and
 * more portable than decoding each driver's unique-constraint error. The one
 * hot-path function, prov_auth_lookup, is a single prepared query by key hash.
 * Secrets never reach a log line: at most the display prefix does. */
#include <string.h>
#include <apr_lib.h>
#include "prov_account.h"
#include "prov_secret.h"
#include "prov_log.h"
#include "prov_money.h"
#include "prov_user_access.h"

#define EMAIL_MAX   254
/* Bytes: room for the cabinet's 100 characters of any script (providerctl
 * keeps its own 200-byte limit). */
#define LABEL_MAX   400

/* ---- validation ---------------------------------------------------------- */

static int local_char_ok(char c)
{
    return apr_isalnum(c) || (c && strchr("!#$%&'*+/=?^_`{|}~.-", c));
}

/* something@something.tld: a dot-atom local part, a host of DNS labels with at
 * least one dot and an alphabetic top-level label of two letters or more. */
int prov_user_email_ok(const char *e)
{
    const char *at, *c, *label;
    apr_size_t len;

    if (!e || (len = strlen(e)) == 0 || len > EMAIL_MAX)
        return 0;
    at = strchr(e, '@');
    if (!at || at == e || strchr(at + 1, '@') || at - e > 64)
        return 0;
    if (e[0] == '.' || at[-1] == '.')
        return 0;
    for (c = e; c < at; c++) {
        if (!local_char_ok(*c) || (c[0] == '.' && c[1] == '.'))
            return 0;
    }
    if (!strchr(at + 1, '.'))
        return 0;
    label = at + 1;
    for (c = at + 1;; c++) {
        if (*c == '.' || *c == '\0') {
            apr_size_t n = (apr_size_t)(c - label);
            if (n == 0 || n > 63 || label[0] == '-' || c[-1] == '-')
                return 0;
            if (*c == '\0')
                break;
            label = c + 1;
        }
        else if (!apr_isalnum(*c) && *c != '-') {
            return 0;
        }
    }
    if (strlen(label) < 2)
        return 0;
    for (c = label; *c; c++) {
        if (!apr_isalpha(*c))
            return 0;
    }
    return 1;
}

/* Addresses are kept in lower case so that sign-in and the CLI find one user
 * whatever case an identity provider or an administrator used. */
static char *email_fold(const char *e, apr_pool_t *p)
{
    char *f = apr_pstrdup(p, e), *c;
    for (c = f; *c; c++)
        *c = (char)apr_tolower(*c);
    return f;
}

/* A free-text label (user or key name): at most LABEL_MAX bytes, no control
 * characters. Empty means none. */
static apr_status_t name_check(const char **out, const char *name)
{
    const unsigned char *c;
    if (!name || !*name) {
        *out = NULL;
        return APR_SUCCESS;
    }
    if (strlen(name) > LABEL_MAX)
        return APR_EINVAL;
    for (c = (const unsigned char *)name; *c; c++) {
        if (*c < 0x20 || *c == 0x7f)
            return APR_EINVAL;
    }
    *out = name;
    return APR_SUCCESS;
}

/* ---- rows ---------------------------------------------------------------- */

static const char *dup_or_null(const char *v, apr_pool_t *p)
{
    return v ? apr_pstrdup(p, v) : NULL;
}

/* USER_COLS: id, email, name, blocked, balance, created_at */
static prov_user_t *user_from_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_user_t *u = apr_pcalloc(p, sizeof(*u));
    u->id = prov_store_get_i64(s, row, 0, 0);
    u->email = dup_or_null(prov_store_get(s, row, 1), p);
    u->name = dup_or_null(prov_store_get(s, row, 2), p);
    u->blocked = prov_store_get_i64(s, row, 3, 0) != 0;
    u->balance = prov_store_get_i64(s, row, 4, 0);
    u->created_at = prov_store_get_i64(s, row, 5, 0);
    if (!u->email)
        u->email = "";
    return u;
}

/* The key's controls, KEY_CONTROLS's five columns from col on. */
static void controls_from_row(prov_key_controls_t *c, prov_store_t *s, apr_dbd_row_t *row,
                              int col, apr_pool_t *p)
{
    c->expires_at = prov_store_get_i64(s, row, col, 0);
    c->models = dup_or_null(prov_store_get(s, row, col + 1), p);
    c->addresses = dup_or_null(prov_store_get(s, row, col + 2), p);
    c->rpm = prov_store_get_i64(s, row, col + 3, 0);
    c->max_in_flight = prov_store_get_i64(s, row, col + 4, 0);
}

/* KEY_COLS: id, user_id, name, display, weekly_budget, created_at, reissued_at,
 * deleted_at, then KEY_CONTROLS */
static prov_key_t *key_from_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_key_t *k = apr_pcalloc(p, sizeof(*k));
    k->id = prov_store_get_i64(s, row, 0, 0);
    k->user_id = prov_store_get_i64(s, row, 1, 0);
    k->name = dup_or_null(prov_store_get(s, row, 2), p);
    k->display = dup_or_null(prov_store_get(s, row, 3), p);
    k->has_budget = prov_store_get(s, row, 4) != NULL;
    k->weekly_budget = k->has_budget ? prov_store_get_i64(s, row, 4, 0) : 0;
    k->created_at = prov_store_get_i64(s, row, 5, 0);
    k->reissued_at = prov_store_get_i64(s, row, 6, 0);
    k->deleted_at = prov_store_get_i64(s, row, 7, 0);
    controls_from_row(&k->controls, s, row, 8, p);
    if (!k->display)
        k->display = "";
    return k;
}

static apr_status_t user_by_id(prov_user_t **u, prov_store_t *s, apr_int64_t id, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "user_by_id", PROV_ARGS(prov_i64(id, p)), p);
    if (rv == APR_SUCCESS)
        *u = user_from_row(s, row, p);
    return rv;
}

/* ---- users --------------------------------------------------------------- */

apr_status_t prov_user_add(prov_user_t **u, prov_store_t *s, const char *email,
                           const char *name, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    const char *folded, *nm = NULL;
    apr_int64_t now = prov_now();
    apr_status_t rv;

    if (!prov_user_email_ok(email) || name_check(&nm, name) != APR_SUCCESS)
        return APR_EINVAL;
    folded = email_fold(email, p);

    rv = prov_store_begin(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_select_one(&row, s, "user_by_email", PROV_ARGS(folded), p);
    if (rv == APR_SUCCESS) {
        rv = APR_EEXIST;
        goto fail;
    }
    if (rv != APR_NOTFOUND)
        goto fail;
    rv = prov_store_select_one(&row, s, "user_add", PROV_ARGS(folded, nm, prov_i64(now, p)), p);
    if (rv == APR_NOTFOUND)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS) {
        /* A concurrent add on PostgreSQL (whose BEGIN takes no write lock)
         * can win between the check and the insert: then it is a duplicate. */
        prov_store_rollback(s, p);
        if (prov_store_select_one(&row, s, "user_by_email", PROV_ARGS(folded), p) == APR_SUCCESS)
            rv = APR_EEXIST;
        return rv;
    }
    {
        apr_int64_t id = prov_store_get_i64(s, row, 0, 0);
        rv = prov_store_commit(s, p);
        if (rv != APR_SUCCESS)
            return rv;
        prov_log(PROV_LOG_INFO, 0, "PROV02101: user %" APR_INT64_T_FMT " added", id);
        if (u) {
            prov_user_t *nu = apr_pcalloc(p, sizeof(*nu));
            nu->id = id;
            nu->email = folded;
            nu->name = nm ? apr_pstrdup(p, nm) : NULL;
            nu->created_at = now;
            *u = nu;
        }
    }
    return APR_SUCCESS;

fail:
    prov_store_rollback(s, p);
    return rv;
}

apr_status_t prov_user_find(prov_user_t **u, prov_store_t *s, const char *ref, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_int64_t id;
    apr_status_t rv;

    if (!ref || !*ref)
        return APR_NOTFOUND;
    if (!strchr(ref, '@')) {
        if (prov_parse_i64(&id, ref) != APR_SUCCESS || id <= 0)
            return APR_NOTFOUND;
        return user_by_id(u, s, id, p);
    }
    if (strlen(ref) > EMAIL_MAX)
        return APR_NOTFOUND;
    rv = prov_store_select_one(&row, s, "user_by_email", PROV_ARGS(email_fold(ref, p)), p);
    if (rv == APR_SUCCESS)
        *u = user_from_row(s, row, p);
    return rv;
}

/* A row of user_list as the list's entity. */
static void *user_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    return user_from_row(s, row, p);
}

apr_status_t prov_user_list(apr_array_header_t **users, prov_store_t *s, apr_pool_t *p)
{
    return prov_store_list(users, s, "user_list", user_row, p);
}

apr_status_t prov_user_set_blocked(int *revoked, prov_store_t *s, apr_int64_t user_id,
                                   int blocked, apr_pool_t *p)
{
    int n = 0, ended = 0;
    apr_status_t rv = prov_store_begin(s, p);

    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_exec(s, &n, "user_set_blocked",
                         PROV_ARGS(blocked ? "1" : "0", prov_i64(user_id, p)), p);
    if (rv == APR_SUCCESS && n == 0)
        rv = APR_NOTFOUND;
    /* In the same transaction: no session or OAuth grant outlives the block. */
    if (rv == APR_SUCCESS && blocked)
        rv = prov_user_sessions_revoke(&ended, s, user_id, p);
    if (rv == APR_SUCCESS && blocked)
        rv = prov_store_exec(s, NULL, "oauth_grants_revoke_user",
                             PROV_ARGS(prov_i64(prov_now(), p), prov_i64(user_id, p)), p);
    if (rv != APR_SUCCESS) {
        prov_store_rollback(s, p);
        return rv;
    }
    rv = prov_store_commit(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV02102: user %" APR_INT64_T_FMT " %s", user_id,
             blocked ? "blocked" : "unblocked");
    if (revoked)
        *revoked = ended;
    return APR_SUCCESS;
}

/* ---- balance ------------------------------------------------------------- */

apr_status_t prov_balance_add(prov_micro_t *new_balance, prov_store_t *s, apr_int64_t user_id,
                              prov_micro_t amount, const char *reason, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    apr_dbd_row_t *row = NULL;
    const char *why = NULL;
    prov_micro_t after;
    int n = 0;
    apr_status_t rv;

    if (amount == 0 || amount > PROV_AMOUNT_MAX || amount < -PROV_AMOUNT_MAX)
        return APR_EINVAL;
    if (reason && *reason && strlen(reason) > 1000)
        return APR_EINVAL;
    why = (reason && *reason) ? reason : NULL;

    rv = prov_store_begin(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = user_by_id(&u, s, user_id, p);
    if (rv != APR_SUCCESS)
        goto fail;
    /* Both bounded by PROV_AMOUNT_MAX-sized steps, but a balance built from
     * many of them could still approach the int64 limit. */
    if (prov_i64_add(&after, u->balance, amount) != APR_SUCCESS) {
        rv = APR_ERANGE;
        goto fail;
    }
    rv = prov_store_select_one(&row, s, "balance_add",
                    PROV_ARGS(prov_i64(amount, p), prov_i64(user_id, p)), p);
    if (rv == APR_NOTFOUND)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS)
        goto fail;
    after = prov_store_get_i64(s, row, 0, 0);
    rv = prov_store_exec(s, &n, "balance_event_add",
                         PROV_ARGS(prov_i64(user_id, p), prov_i64(amount, p), why,
                                   prov_i64(prov_now(), p)), p);
    if (rv == APR_SUCCESS && n != 1)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS)
        goto fail;
    rv = prov_store_commit(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV02103: balance of user %" APR_INT64_T_FMT
             " changed by %s micro-credits", user_id, prov_i64(amount, p));
    if (new_balance)
        *new_balance = after;
    return APR_SUCCESS;

fail:
    prov_store_rollback(s, p);
    return rv;
}

/* ---- API keys ------------------------------------------------------------ */

apr_status_t prov_key_create(prov_key_t **k, const char **secret, prov_store_t *s,
                             apr_int64_t user_id, const char *name, int has_budget,
                             prov_micro_t weekly_budget, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    apr_dbd_row_t *row = NULL;
    const char *sec, *hash, *display, *nm = NULL;
    apr_int64_t now = prov_now();
    apr_status_t rv;

    if (name_check(&nm, name) != APR_SUCCESS)
        return APR_EINVAL;
    if (has_budget && (weekly_budget < 0 || weekly_budget > PROV_AMOUNT_MAX))
        return APR_EINVAL;
    rv = user_by_id(&u, s, user_id, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_secret_generate(&sec, &hash, &display, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_select_one(&row, s, "key_add",
                    PROV_ARGS(prov_i64(user_id, p), nm, hash, display,
                              has_budget ? prov_i64(weekly_budget, p) : NULL,
                              prov_i64(now, p)), p);
    if (rv == APR_NOTFOUND)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS)
        return rv;
    {
        prov_key_t *nk = apr_pcalloc(p, sizeof(*nk));
        nk->id = prov_store_get_i64(s, row, 0, 0);
        nk->user_id = user_id;
        nk->name = nm ? apr_pstrdup(p, nm) : NULL;
        nk->display = display;
        nk->has_budget = has_budget != 0;
        nk->weekly_budget = has_budget ? weekly_budget : 0;
        nk->created_at = now;
        prov_log(PROV_LOG_INFO, 0, "PROV02104: key %" APR_INT64_T_FMT " (%s...) created for "
                 "user %" APR_INT64_T_FMT, nk->id, display, user_id);
        if (k)
            *k = nk;
    }
    *secret = sec;
    return APR_SUCCESS;
}

apr_status_t prov_key_reissue(const char **secret, prov_store_t *s, apr_int64_t key_id,
                              apr_pool_t *p)
{
    const char *sec, *hash, *display;
    int n = 0;
    apr_status_t rv = prov_secret_generate(&sec, &hash, &display, p);

    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_exec(s, &n, "key_reissue",
                         PROV_ARGS(hash, display, prov_i64(prov_now(), p),
                                   prov_i64(key_id, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    if (n == 0)
        return APR_NOTFOUND;
    prov_log(PROV_LOG_INFO, 0, "PROV02105: key %" APR_INT64_T_FMT " reissued (now %s...)",
             key_id, display);
    *secret = sec;
    return APR_SUCCESS;
}

apr_status_t prov_key_delete(prov_store_t *s, apr_int64_t key_id, apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "key_delete",
                                      PROV_ARGS(prov_i64(prov_now(), p), prov_i64(key_id, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    if (n == 0)
        return APR_NOTFOUND;
    prov_log(PROV_LOG_INFO, 0, "PROV02106: key %" APR_INT64_T_FMT " deleted", key_id);
    return APR_SUCCESS;
}

apr_status_t prov_key_set_budget(prov_store_t *s, apr_int64_t key_id, int has_budget,
                                 prov_micro_t weekly_budget, apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv;

    if (has_budget && (weekly_budget < 0 || weekly_budget > PROV_AMOUNT_MAX))
        return APR_EINVAL;
    rv = prov_store_exec(s, &n, "key_budget",
                         PROV_ARGS(has_budget ? prov_i64(weekly_budget, p) : NULL,
                                   prov_i64(key_id, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    return n == 0 ? APR_NOTFOUND : APR_SUCCESS;
}

apr_status_t prov_key_get(prov_key_t **k, prov_store_t *s, apr_int64_t key_id,
                          apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "key_get", PROV_ARGS(prov_i64(key_id, p)), p);
    if (rv == APR_SUCCESS)
        *k = key_from_row(s, row, p);
    return rv;
}

apr_status_t prov_key_list(apr_array_header_t **keys, prov_store_t *s, apr_int64_t user_id,
                           int include_deleted, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_array_header_t *arr;
    const char *uid = user_id > 0 ? prov_i64(user_id, p) : "0";
    apr_status_t rv = prov_store_select(s, &res, "key_list",
                                        PROV_ARGS(uid, uid, include_deleted ? "1" : "0"), p);
    if (rv != APR_SUCCESS)
        return rv;
    arr = apr_array_make(p, 8, sizeof(prov_key_t *));
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS)
        APR_ARRAY_PUSH(arr, prov_key_t *) = key_from_row(s, row, p);
    if (rv != APR_EOF)
        return rv;
    *keys = arr;
    return APR_SUCCESS;
}

/* ---- the hot path -------------------------------------------------------- */

apr_status_t prov_auth_lookup(prov_auth_t **a, prov_store_t *s, const char *secret,
                              apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    const char *hash;
    prov_auth_t *r;
    apr_status_t rv;

    /* A malformed value never reaches the database (and costs no hash). */
    if (!prov_secret_wellformed(secret))
        return APR_NOTFOUND;
    hash = prov_secret_hash(secret, p);
    if (!hash)
        return APR_EGENERAL;
    /* k.id, k.user_id, k.display, u.blocked, k.weekly_budget, u.balance,
     * then the key's controls: one query whether or not any is set */
    rv = prov_store_select_one(&row, s, "auth_lookup", PROV_ARGS(hash), p);
    if (rv != APR_SUCCESS)
        return rv;
    r = apr_pcalloc(p, sizeof(*r));
    r->key_hash = hash;
    r->key_id = prov_store_get_i64(s, row, 0, 0);
    r->user_id = prov_store_get_i64(s, row, 1, 0);
    r->key_display = dup_or_null(prov_store_get(s, row, 2), p);
    r->user_blocked = prov_store_get_i64(s, row, 3, 0) != 0;
    r->has_budget = prov_store_get(s, row, 4) != NULL;
    r->weekly_budget = r->has_budget ? prov_store_get_i64(s, row, 4, 0) : 0;
    r->balance = prov_store_get_i64(s, row, 5, 0);
    controls_from_row(&r->controls, s, row, 6, p);
    if (!r->key_display)
        r->key_display = "";
    *a = r;
    return APR_SUCCESS;
}
