/* prov_oauth_token.c: the token endpoint, revocation and the access-token
 * check. A code is taken by one statement (UPDATE ... WHERE used_at IS
 * NULL RETURNING), so two redemptions on two nodes cannot both succeed;
 * the loser's replay revokes the grant the winner made (RFC 6749 4.1.2,
 * OAuth 2.1 4.1.3). A refresh token is rotated the same way, and a rotated
 * one presented again revokes its whole grant (OAuth 2.1 4.3.1, the
 * refresh token's reuse detection). The grant carries the resource the
 * code was asked for: the tokens' audience. Every refusal is an RFC 6749
 * 5.2 error of our own words. */
#include <string.h>
#include "prov_oauth.h"
#include "prov_account.h"
#include "prov_json.h"
#include "prov_secret.h"
#include "prov_log.h"
#include "prov_signin_int.h"

static apr_status_t refuse(prov_oauth_err_t *err, const char *error, const char *description)
{
    err->error = error;
    err->description = description;
    return APR_EINVAL;
}

/* Non-zero when v is a PKCE verifier: 43 to 128 unreserved characters. */
static int verifier_ok(const char *v)
{
    apr_size_t n = v ? strlen(v) : 0;
    if (n < 43 || n > 128)
        return 0;
    for (; *v; v++) {
        char c = *v;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || c == '-' || c == '.' || c == '_' || c == '~'))
            return 0;
    }
    return 1;
}

static apr_int64_t earlier(apr_int64_t a, apr_int64_t b)
{
    return a < b ? a : b;
}

/* A new access and refresh token of grant_id (made at granted), stored as
 * their hashes; neither lives past the grant's absolute life. */
static apr_status_t issue(prov_oauth_tokens_t *t, prov_store_t *s, apr_int64_t grant_id,
                          apr_int64_t granted, const char *scope, apr_int64_t now,
                          apr_pool_t *p)
{
    const char *access = NULL, *refresh = NULL, *g = prov_i64(grant_id, p);
    apr_int64_t until = granted + PROV_OAUTH_GRANT_TTL;
    apr_status_t rv;
    if ((rv = prov_secret_token(&access, 32, p)) != APR_SUCCESS
        || (rv = prov_secret_token(&refresh, 32, p)) != APR_SUCCESS)
        return rv;
    rv = prov_store_exec(s, NULL, "oauth_token_add", PROV_ARGS(prov_secret_hash(access, p), g,
                         "access", prov_i64(now, p),
                         prov_i64(earlier(now + PROV_OAUTH_ACCESS_TTL, until), p)), p);
    if (rv == APR_SUCCESS)
        rv = prov_store_exec(s, NULL, "oauth_token_add", PROV_ARGS(prov_secret_hash(refresh, p), g,
                             "refresh", prov_i64(now, p),
                             prov_i64(earlier(now + PROV_OAUTH_REFRESH_TTL, until), p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    t->access_token = access;
    t->refresh_token = refresh;
    t->scope = scope;
    t->expires_in = PROV_OAUTH_ACCESS_TTL;
    t->grant_id = grant_id;
    return APR_SUCCESS;
}

/* A replay of code_hash (a code) or a rotated refresh token: revokes the
 * grant it made; sets t->reused when there was one. */
static apr_status_t replay(prov_oauth_tokens_t *t, prov_store_t *s, const char *label,
                           const char *hash, apr_int64_t now, apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, label, PROV_ARGS(prov_i64(now, p), hash), p);
    if (rv == APR_SUCCESS && n > 0) {
        t->reused = 1;
        prov_log(PROV_LOG_INFO, 0, "PROV00713: a %s was presented again: its grant is revoked",
                 !strcmp(label, "oauth_grant_revoke_code") ? "used authorization code"
                 : "rotated refresh token");
    }
    return rv;
}

static apr_status_t user_live(int *live, prov_store_t *s, const char *user_id, apr_pool_t *p)
{
    prov_user_t *u = NULL;
    apr_status_t rv = prov_user_find(&u, s, user_id, p);
    *live = rv == APR_SUCCESS && !u->blocked;
    return rv == APR_NOTFOUND ? APR_SUCCESS : rv;
}

/* The grant of a code taken from row, and its first tokens. */
static apr_status_t grant_from_code(prov_oauth_tokens_t *t, prov_store_t *s,
                                    const char *code_hash, const char *client_id,
                                    const char *user_id, const char *scope, const char *resource,
                                    apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_begin(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_select_one(&row, s, "oauth_grant_add", PROV_ARGS(client_id, user_id,
                               code_hash, scope, resource, prov_i64(now, p)), p);
    if (rv == APR_SUCCESS)
        rv = issue(t, s, prov_store_get_i64(s, row, 0, 0), now, scope, now, p);
    if (rv != APR_SUCCESS) {
        prov_store_rollback(s, p);
        return rv;
    }
    return prov_store_commit(s, p);
}

static apr_status_t by_code(prov_oauth_tokens_t *t, prov_oauth_err_t *err, prov_store_t *s,
                            const apr_table_t *form, apr_int64_t now, apr_pool_t *p)
{
    const char *code = apr_table_get(form, "code"), *client_id = apr_table_get(form, "client_id");
    const char *verifier = apr_table_get(form, "code_verifier");
    const char *redirect_uri = apr_table_get(form, "redirect_uri");
    const char *resource = apr_table_get(form, "resource"), *hash;
    prov_oauth_client_t *c = NULL;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;
    int live = 0;
    if (!code || !client_id || !redirect_uri)
        return refuse(err, "invalid_request", "code, client_id and redirect_uri are required.");
    if (!verifier)
        return refuse(err, "invalid_request", "code_verifier is required (PKCE).");
    if ((rv = prov_oauth_client_get(&c, s, client_id, p)) == APR_NOTFOUND)
        return refuse(err, "invalid_client", "This client is not registered here.");
    if (rv != APR_SUCCESS)
        return rv;
    if (!prov_signin_token_ok(code))
        return refuse(err, "invalid_grant", "The code is unknown, expired or already used.");
    hash = prov_secret_hash(code, p);
    rv = prov_store_select_one(&row, s, "oauth_code_take", PROV_ARGS(prov_i64(now, p), hash), p);
    if (rv == APR_NOTFOUND) {
        if ((rv = replay(t, s, "oauth_grant_revoke_code", hash, now, p)) != APR_SUCCESS)
            return rv;
        return refuse(err, "invalid_grant", "The code is unknown, expired or already used.");
    }
    if (rv != APR_SUCCESS)
        return rv;
    /* client_id, user_id, redirect_uri, challenge, scope, resource, expires_at */
    if (prov_store_get_i64(s, row, 6, 0) <= now)
        return refuse(err, "invalid_grant", "The code is unknown, expired or already used.");
    if (strcmp(prov_store_get(s, row, 0), client_id)
        || strcmp(prov_store_get(s, row, 2), redirect_uri))
        return refuse(err, "invalid_grant", "The code was issued to another client or "
                      "redirect_uri.");
    if (!verifier_ok(verifier)
        || strcmp(prov_signin_challenge(verifier, p), prov_store_get(s, row, 3)))
        return refuse(err, "invalid_grant", "The code_verifier does not match the "
                      "code_challenge.");
    if (resource && strcmp(resource, prov_store_get(s, row, 5)))
        return refuse(err, "invalid_target", "resource differs from the one authorized.");
    if ((rv = user_live(&live, s, prov_store_get(s, row, 1), p)) != APR_SUCCESS)
        return rv;
    if (!live)
        return refuse(err, "invalid_grant", "The account cannot be used.");
    return grant_from_code(t, s, hash, client_id, prov_store_get(s, row, 1),
                           prov_store_get(s, row, 4), prov_store_get(s, row, 5), now, p);
}

static apr_status_t by_refresh(prov_oauth_tokens_t *t, prov_oauth_err_t *err, prov_store_t *s,
                               const apr_table_t *form, apr_int64_t now, apr_pool_t *p)
{
    const char *refresh = apr_table_get(form, "refresh_token");
    const char *client_id = apr_table_get(form, "client_id");
    const char *resource = apr_table_get(form, "resource"), *scope = apr_table_get(form, "scope");
    const char *hash, *now_s = prov_i64(now, p);
    apr_dbd_row_t *row = NULL;
    apr_status_t rv;
    if (!refresh || !client_id)
        return refuse(err, "invalid_request", "refresh_token and client_id are required.");
    if (!prov_signin_token_ok(refresh))
        return refuse(err, "invalid_grant", "The refresh token is unknown, expired or revoked.");
    hash = prov_secret_hash(refresh, p);
    rv = prov_store_select_one(&row, s, "oauth_refresh_take", PROV_ARGS(now_s, hash, now_s), p);
    if (rv == APR_NOTFOUND) {
        if ((rv = replay(t, s, "oauth_grant_revoke_refresh", hash, now, p)) != APR_SUCCESS)
            return rv;
        return refuse(err, "invalid_grant", "The refresh token is unknown, expired or revoked.");
    }
    if (rv == APR_SUCCESS)
        rv = prov_store_select_one(&row, s, "oauth_grant_get",
                                   PROV_ARGS(prov_store_get(s, row, 0)), p);
    if (rv != APR_SUCCESS)
        return rv;
    /* grant id, client_id, scope, resource, created_at */
    if (now >= prov_store_get_i64(s, row, 4, 0) + PROV_OAUTH_GRANT_TTL)
        return refuse(err, "invalid_grant", "This authorization has reached its longest life "
                      "(90 days): authorize the application again.");
    if (strcmp(prov_store_get(s, row, 1), client_id))
        return refuse(err, "invalid_grant", "The refresh token was issued to another client.");
    if (resource && strcmp(resource, prov_store_get(s, row, 3)))
        return refuse(err, "invalid_target", "resource differs from the one authorized.");
    if (scope && *scope && !prov_oauth_scope_has(prov_store_get(s, row, 2), scope))
        return refuse(err, "invalid_scope", "The scope may not grow on refresh.");
    return issue(t, s, prov_store_get_i64(s, row, 0, 0), prov_store_get_i64(s, row, 4, 0),
                 prov_store_get(s, row, 2), now, p);
}

apr_status_t prov_oauth_token(prov_oauth_tokens_t *t, prov_oauth_err_t *err, prov_store_t *s,
                              const apr_table_t *form, apr_int64_t now, apr_pool_t *p)
{
    const char *grant = apr_table_get(form, "grant_type");
    memset(t, 0, sizeof(*t));
    if (!grant)
        return refuse(err, "invalid_request", "grant_type is required.");
    if (!strcmp(grant, "authorization_code"))
        return by_code(t, err, s, form, now, p);
    if (!strcmp(grant, "refresh_token"))
        return by_refresh(t, err, s, form, now, p);
    return refuse(err, "unsupported_grant_type",
                  "grant_type must be authorization_code or refresh_token.");
}

const char *prov_oauth_tokens_json(const prov_oauth_tokens_t *t, apr_pool_t *p)
{
    json_object *o = prov_json_own(json_object_new_object(), p);
    json_object_object_add(o, "access_token", json_object_new_string(t->access_token));
    json_object_object_add(o, "token_type", json_object_new_string("Bearer"));
    json_object_object_add(o, "expires_in", json_object_new_int64(t->expires_in));
    json_object_object_add(o, "refresh_token", json_object_new_string(t->refresh_token));
    json_object_object_add(o, "scope", json_object_new_string(t->scope));
    return prov_json_dump(o, p);
}

/* ---- revocation and the resource's check ---------------------------------------------- */

apr_status_t prov_oauth_revoke(prov_store_t *s, const char *token, const char *client_id,
                               apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    const char *hash;
    apr_status_t rv;
    if (!prov_signin_token_ok(token))
        return APR_SUCCESS;
    hash = prov_secret_hash(token, p);
    rv = prov_store_select_one(&row, s, "oauth_token_find", PROV_ARGS(hash), p);
    if (rv == APR_NOTFOUND)
        return APR_SUCCESS;
    /* kind, grant id, client_id */
    if (rv != APR_SUCCESS)
        return rv;
    if (!client_id || strcmp(prov_store_get(s, row, 2), client_id))
        return APR_EACCES;
    if (!strcmp(prov_store_get(s, row, 0), "refresh"))
        rv = prov_store_exec(s, NULL, "oauth_grant_revoke", PROV_ARGS(prov_i64(now, p),
                             prov_store_get(s, row, 1)), p);
    else
        rv = prov_store_exec(s, NULL, "oauth_token_revoke", PROV_ARGS(prov_i64(now, p), hash),
                             p);
    if (rv == APR_SUCCESS)
        prov_log(PROV_LOG_INFO, 0, "PROV00714: an OAuth %s token of grant %s was revoked",
                 prov_store_get(s, row, 0), prov_store_get(s, row, 1));
    return rv;
}

apr_status_t prov_oauth_access_check(prov_oauth_access_t **a, prov_store_t *s,
                                     const char *token, apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    prov_oauth_access_t *x;
    apr_status_t rv;
    if (!prov_signin_token_ok(token))
        return APR_NOTFOUND;
    rv = prov_store_select_one(&row, s, "oauth_access_check",
                               PROV_ARGS(prov_secret_hash(token, p), prov_i64(now, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    x = apr_pcalloc(p, sizeof(*x));
    x->grant_id = prov_store_get_i64(s, row, 0, 0);
    x->user_id = prov_store_get_i64(s, row, 1, 0);
    x->client_id = prov_store_get(s, row, 2);
    x->scope = prov_store_get(s, row, 3);
    x->resource = prov_store_get(s, row, 4);
    *a = x;
    return APR_SUCCESS;
}
