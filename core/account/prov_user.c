/* prov_user.c: users (prov_account.h), on top of the labelled statements of
 * prov_sql.c: their addresses and names checked, added, found, listed,
 * blocked. A new user is added in one write transaction; a duplicate is
 * found by a select inside it, which is simpler and more portable than
 * decoding each driver's unique-constraint error. Blocking revokes the
 * user's sessions and grants in the same transaction. */
#include <string.h>
#include <apr_lib.h>
#include "prov_account.h"
#include "prov_log.h"
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

apr_status_t prov_user_name_check(const char **out, const char *name)
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

/* USER_COLS: id, email, name, blocked, balance, created_at */
static prov_user_t *user_from_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_user_t *u = apr_pcalloc(p, sizeof(*u));
    u->id = prov_store_get_i64(s, row, 0, 0);
    u->email = apr_pstrdup(p, prov_store_get(s, row, 1));
    u->name = apr_pstrdup(p, prov_store_get(s, row, 2));
    u->blocked = prov_store_get_i64(s, row, 3, 0) != 0;
    u->balance = prov_store_get_i64(s, row, 4, 0);
    u->created_at = prov_store_get_i64(s, row, 5, 0);
    if (!u->email)
        u->email = "";
    return u;
}

apr_status_t prov_user_get(prov_user_t **u, prov_store_t *s, apr_int64_t id, apr_pool_t *p)
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

    if (!prov_user_email_ok(email) || prov_user_name_check(&nm, name) != APR_SUCCESS)
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
        return prov_user_get(u, s, id, p);
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
