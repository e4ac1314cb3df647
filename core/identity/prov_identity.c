/* prov_identity.c: linked identities (prov_identity.h). A first sign-in
 * makes the user and the identity in one write transaction; should two
 * nodes make the same identity at once, the unique (provider, subject) key
 * lets one win (the other's insert does nothing, so no driver error quotes
 * the subject in a log) and the other finds its user after rolling back. An unlink
 * holds the user's row while it counts, so two unlinks cannot take the
 * last identity. The subject never reaches a log line; user ids and
 * provider names do. */
#include <string.h>
#include <apr_lib.h>
#include "prov_identity.h"
#include "prov_secret.h"
#include "prov_log.h"

#define EMAIL_MAX 254

int prov_identity_email_is_placeholder(const char *email)
{
    apr_size_t n = email ? strlen(email) : 0, d = sizeof(PROV_IDENTITY_NOMAIL_DOMAIN) - 1;
    return n > d && email[n - d - 1] == '@'
        && !strcmp(email + n - d, PROV_IDENTITY_NOMAIL_DOMAIN);
}

apr_status_t prov_identity_user(apr_int64_t *user_id, prov_store_t *s, const char *provider,
                                const char *subject, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;
    if (!provider || !subject || !*subject)
        return APR_NOTFOUND;
    rv = prov_store_select_one(&row, s, "identity_user", PROV_ARGS(provider, subject), p);
    if (rv == APR_SUCCESS)
        *user_id = prov_store_get_i64(s, row, 0, 0);
    return rv;
}

/* The claims' name made fit for users.name: control characters become
 * spaces, and it is cut at PROV_IDENTITY_NAME_MAX bytes on a character
 * boundary; NULL when nothing is left. */
static const char *name_fit(const char *name, apr_pool_t *p)
{
    char *n;
    apr_size_t len, i;
    if (!name)
        return NULL;
    n = apr_pstrdup(p, name);
    for (i = 0; n[i]; i++) {
        if ((unsigned char)n[i] < 0x20 || n[i] == 0x7f)
            n[i] = ' ';
    }
    len = strlen(n);
    if (len > PROV_IDENTITY_NAME_MAX) {
        len = PROV_IDENTITY_NAME_MAX;
        while (len > 0 && ((unsigned char)n[len] & 0xc0) == 0x80)
            len--;
        n[len] = '\0';
    }
    while (len > 0 && n[len - 1] == ' ')
        n[--len] = '\0';
    return len ? n : NULL;
}

/* The new user's email (see prov_identity.h), inside the transaction. */
static apr_status_t email_for(const char **email, prov_store_t *s, const prov_claims_t *c,
                              int allow_claim, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    unsigned char rnd[12];
    apr_status_t rv;
    apr_size_t i;
    char hex[25];

    /* only a verified address becomes the account's (unique, a lookup key) */
    if (allow_claim && c->email && c->email_verified == 1 && strlen(c->email) <= EMAIL_MAX
        && prov_user_email_ok(c->email)) {
        char *folded = apr_pstrdup(p, c->email), *f;
        for (f = folded; *f; f++)
            *f = (char)apr_tolower(*f);
        rv = prov_store_select_one(&row, s, "user_by_email", PROV_ARGS(folded), p);
        if (rv == APR_NOTFOUND) {
            *email = folded;
            return APR_SUCCESS;
        }
        if (rv != APR_SUCCESS)
            return rv;
    }
    if ((rv = prov_secret_bytes(rnd, sizeof(rnd))) != APR_SUCCESS)
        return rv;
    for (i = 0; i < sizeof(rnd); i++) {
        hex[2 * i] = "0123456789abcdef"[rnd[i] >> 4];
        hex[2 * i + 1] = "0123456789abcdef"[rnd[i] & 15];
    }
    hex[24] = '\0';
    *email = apr_pstrcat(p, "signin-", hex, "@", PROV_IDENTITY_NOMAIL_DOMAIN, NULL);
    return APR_SUCCESS;
}

/* One attempt at making the user and the identity; the caller rolls back
 * on failure (APR_NOTFOUND or APR_EEXIST: another node took the email or
 * made the identity meanwhile). */
static apr_status_t create(prov_user_t **user, prov_store_t *s, const char *provider,
                           const prov_claims_t *c, int allow_claim, apr_int64_t now,
                           apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    const char *email = NULL, *name = name_fit(c->name, p);
    prov_user_t *u;
    int n = 0;
    apr_status_t rv;

    if ((rv = email_for(&email, s, c, allow_claim, p)) != APR_SUCCESS)
        return rv;
    rv = prov_store_select_one(&row, s, "identity_user_add",
                               PROV_ARGS(email, name, prov_i64(now, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    u = apr_pcalloc(p, sizeof(*u));
    u->id = prov_store_get_i64(s, row, 0, 0);
    u->email = email;
    u->name = name;
    u->created_at = now;
    rv = prov_store_exec(s, &n, "identity_add", PROV_ARGS(prov_i64(u->id, p), provider,
                                                          c->subject, prov_i64(now, p)), p);
    if (rv == APR_SUCCESS && n != 1)
        rv = APR_EEXIST;
    if (rv == APR_SUCCESS)
        *user = u;
    return rv;
}

/* The user of an identity found; refused when blocked. */
static apr_status_t found(prov_user_t **user, prov_store_t *s, apr_int64_t id, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    apr_status_t rv = prov_user_find(&u, s, prov_i64(id, p), p);
    if (rv != APR_SUCCESS)
        return rv;
    if (u->blocked)
        return APR_EACCES;
    *user = u;
    return APR_SUCCESS;
}

apr_status_t prov_identity_signin(prov_user_t **user, int *created, prov_store_t *s,
                                  const char *provider, const prov_claims_t *c,
                                  apr_int64_t now, apr_pool_t *p)
{
    apr_int64_t id = 0;
    apr_status_t rv;
    int attempt;

    if (!c || !c->subject || !*c->subject)
        return APR_EINVAL;
    *created = 0;
    rv = prov_identity_user(&id, s, provider, c->subject, p);
    if (rv != APR_NOTFOUND)
        return rv == APR_SUCCESS ? found(user, s, id, p) : rv;
    /* a second attempt follows a lost race (PostgreSQL: another node made
     * this identity, or took the email, between our checks and inserts) */
    for (attempt = 0; attempt < 2; attempt++) {
        prov_user_t *u = NULL;
        if ((rv = prov_store_begin(s, p)) != APR_SUCCESS)
            return rv;
        rv = prov_identity_user(&id, s, provider, c->subject, p);
        if (rv == APR_NOTFOUND && (rv = create(&u, s, provider, c, attempt == 0, now, p))
            == APR_SUCCESS && (rv = prov_store_commit(s, p)) == APR_SUCCESS) {
            prov_log(PROV_LOG_INFO, 0, "PROV00540: user %" APR_INT64_T_FMT " created by a "
                     "first sign-in through %s", u->id, provider);
            *user = u;
            *created = 1;
            return APR_SUCCESS;
        }
        if (rv == APR_SUCCESS) {            /* found inside the transaction */
            prov_store_rollback(s, p);
            return found(user, s, id, p);
        }
        if (s->in_txn)
            prov_store_rollback(s, p);
        if (prov_identity_user(&id, s, provider, c->subject, p) == APR_SUCCESS)
            return found(user, s, id, p);
    }
    if (rv == APR_NOTFOUND || rv == APR_EEXIST)
        rv = APR_EGENERAL;
    prov_log(PROV_LOG_ERR, rv, "PROV00541: a first sign-in through %s could not create its "
             "user", provider);
    return rv;
}

apr_status_t prov_identity_link(int *added, prov_store_t *s, apr_int64_t user_id,
                                const char *provider, const char *subject, apr_int64_t now,
                                apr_pool_t *p)
{
    apr_int64_t owner = 0;
    int n = 0, attempt;
    apr_status_t rv = APR_EGENERAL;

    if (!subject || !*subject || !provider)
        return APR_EINVAL;
    for (attempt = 0; attempt < 2; attempt++) {
        rv = prov_identity_user(&owner, s, provider, subject, p);
        if (rv == APR_SUCCESS) {
            *added = 0;
            if (owner == user_id)
                return APR_SUCCESS;
            prov_log(PROV_LOG_INFO, 0, "PROV00542: user %" APR_INT64_T_FMT " tried to link an "
                     "identity at %s that belongs to another user", user_id, provider);
            return APR_EEXIST;
        }
        if (rv != APR_NOTFOUND)
            return rv;
        /* a failed insert is a concurrent link of the same identity: look again */
        rv = prov_store_exec(s, &n, "identity_add",
                             PROV_ARGS(prov_i64(user_id, p), provider, subject,
                                       prov_i64(now, p)), p);
        if (rv == APR_SUCCESS && n == 1) {
            *added = 1;
            prov_log(PROV_LOG_INFO, 0, "PROV00543: user %" APR_INT64_T_FMT " linked an "
                     "identity at %s", user_id, provider);
            return APR_SUCCESS;
        }
    }
    return rv == APR_SUCCESS ? APR_EGENERAL : rv;
}

apr_status_t prov_identity_unlink(prov_store_t *s, apr_int64_t user_id, const char *provider,
                                  apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_int64_t all, mine;
    int n = 0;
    apr_status_t rv = prov_store_begin(s, p);

    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_select_one(&row, s, "identity_lock_user", PROV_ARGS(prov_i64(user_id, p)),
                               p);
    if (rv == APR_SUCCESS)
        rv = prov_store_select_one(&row, s, "identity_count",
                                   PROV_ARGS(provider, prov_i64(user_id, p)), p);
    if (rv != APR_SUCCESS)
        goto fail;
    all = prov_store_get_i64(s, row, 0, 0);
    mine = prov_store_get_i64(s, row, 1, 0);
    if (mine == 0 || all <= mine) {
        rv = mine == 0 ? APR_NOTFOUND : APR_EBUSY;
        goto fail;
    }
    rv = prov_store_exec(s, &n, "identity_delete", PROV_ARGS(prov_i64(user_id, p), provider), p);
    if (rv != APR_SUCCESS || (rv = prov_store_commit(s, p)) != APR_SUCCESS)
        goto fail;
    prov_log(PROV_LOG_INFO, 0, "PROV00544: user %" APR_INT64_T_FMT " unlinked %d identit%s "
             "at %s", user_id, n, n == 1 ? "y" : "ies", provider);
    return APR_SUCCESS;
fail:
    if (s->in_txn)
        prov_store_rollback(s, p);
    return rv;
}
