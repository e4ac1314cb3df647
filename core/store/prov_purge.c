/* prov_purge.c: one round of the purge (prov_purge.h): six statements of
 * the statement table, each deleting at most a batch of one table's rows
 * chosen by a subquery (SQLite's DELETE has no LIMIT), in an order that
 * frees the next: tokens before the grants they hold, grants and codes
 * before the clients they hold. Each statement commits on its own. */
#include <string.h>
#include "prov_purge.h"
#include "prov_log.h"

apr_status_t prov_purge_round(prov_purge_counts_t *out, prov_store_t *s, apr_int64_t now,
                              int batch, apr_pool_t *p)
{
    const char *n = prov_i64(now, p), *day = prov_i64(now - PROV_PURGE_GRACE, p);
    const char *b = apr_itoa(p, batch);
    apr_status_t rv;

    memset(out, 0, sizeof(*out));
    if ((rv = prov_store_exec(s, &out->signin_states, "purge_signin_states",
                              PROV_ARGS(n, b), p)) != APR_SUCCESS
        || (rv = prov_store_exec(s, &out->sessions, "purge_sessions", PROV_ARGS(n, day, b), p))
           != APR_SUCCESS
        || (rv = prov_store_exec(s, &out->codes, "purge_oauth_codes", PROV_ARGS(day, b), p))
           != APR_SUCCESS
        || (rv = prov_store_exec(s, &out->tokens, "purge_oauth_tokens",
                                 PROV_ARGS(day, day, day, b), p)) != APR_SUCCESS
        || (rv = prov_store_exec(s, &out->grants, "purge_oauth_grants", PROV_ARGS(day, b), p))
           != APR_SUCCESS
        || (rv = prov_store_exec(s, &out->clients, "purge_oauth_clients", PROV_ARGS(day, b), p))
           != APR_SUCCESS) {
        prov_log(PROV_LOG_ERR, rv, "PROV00790: the purge of ended sign-ins, sessions and "
                 "OAuth rows failed (it runs again later)");
        return rv;
    }
    return APR_SUCCESS;
}

int prov_purge_more(const prov_purge_counts_t *c, int batch)
{
    return c->signin_states >= batch || c->sessions >= batch || c->codes >= batch
           || c->tokens >= batch || c->grants >= batch || c->clients >= batch;
}

int prov_purge_total(const prov_purge_counts_t *c)
{
    return c->signin_states + c->sessions + c->codes + c->tokens + c->grants + c->clients;
}

void prov_purge_add(prov_purge_counts_t *sum, const prov_purge_counts_t *c)
{
    sum->signin_states += c->signin_states;
    sum->sessions += c->sessions;
    sum->codes += c->codes;
    sum->tokens += c->tokens;
    sum->grants += c->grants;
    sum->clients += c->clients;
}
