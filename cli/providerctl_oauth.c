/* providerctl_oauth.c: the `oauth` group: the clients registered with the
 * service's authorization server (anyone may register one: RFC 7591), how
 * many live grants each holds and when it was last used; ending every
 * grant of a client (each of its users' tokens stops working at once); and
 * the purge the server runs by itself every ProviderPurgeInterval, run to
 * the end by hand (core/store/prov_purge.h says what goes and what stays). */
#include <stdio.h>
#include "providerctl.h"
#include "prov_oauth_admin.h"
#include "prov_purge.h"

static json_object *client_json(const prov_oauth_client_row_t *c)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "client_id", json_object_new_string(c->client_id));
    json_object_object_add(o, "name", ctl_json_str(c->name));
    json_object_object_add(o, "created", ctl_json_time(c->created_at));
    json_object_object_add(o, "live_grants", json_object_new_int(c->live_grants));
    json_object_object_add(o, "last_used", ctl_json_time(c->last_used));
    return o;
}

static int oauth_clients(ctl_t *ctl)
{
    apr_array_header_t *rows = NULL;
    apr_status_t rv = prov_oauth_clients(&rows, ctl->store, prov_now(), ctl->pool);
    int i, unused = ctl_flag(ctl, "unused");
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the OAuth clients");
    if (ctl->json) {
        json_object *a = json_object_new_array();
        for (i = 0; i < rows->nelts; i++) {
            const prov_oauth_client_row_t *c = APR_ARRAY_IDX(rows, i, prov_oauth_client_row_t *);
            if (!unused || !c->last_used)
                json_object_array_add(a, client_json(c));
        }
        ctl_json_print(a);
        return CTL_OK;
    }
    {
        ctl_table_t *t = ctl_table_make(ctl->pool, 5, "CLIENT_ID", "NAME", "REGISTERED",
                                        "LIVE_GRANTS", "LAST_USED");
        for (i = 0; i < rows->nelts; i++) {
            const prov_oauth_client_row_t *c = APR_ARRAY_IDX(rows, i, prov_oauth_client_row_t *);
            if (unused && c->last_used)
                continue;
            ctl_table_row(t, c->client_id, c->name ? c->name : "-",
                          ctl_time(c->created_at, 0, ctl->pool),
                          apr_itoa(ctl->pool, c->live_grants),
                          c->last_used ? ctl_time(c->last_used, 0, ctl->pool) : "never");
        }
        ctl_table_print(t, "no OAuth clients registered");
    }
    return CTL_OK;
}

static int oauth_revoke(ctl_t *ctl)
{
    const char *id = ctl->argv[0];
    int n = 0;
    apr_status_t rv = prov_oauth_client_revoke(&n, ctl->store, id, prov_now(), ctl->pool);
    if (APR_STATUS_IS_NOTFOUND(rv))
        return ctl_fail(ctl, "no OAuth client '%s' (see '" PROG " oauth clients')", id);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "revoke the client's grants");
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "client_id", json_object_new_string(id));
        json_object_object_add(o, "revoked_grants", json_object_new_int(n));
        ctl_json_print(o);
    }
    else {
        printf("revoked %d grant(s) of OAuth client %s\n", n, id);
    }
    return CTL_OK;
}

static int oauth_purge(ctl_t *ctl)
{
    prov_purge_counts_t sum = { 0 }, n;
    apr_status_t rv;
    int rounds;
    for (rounds = 0; rounds < 100000; rounds++) {
        if ((rv = prov_purge_round(&n, ctl->store, prov_now(), PROV_PURGE_BATCH, ctl->pool))
            != APR_SUCCESS)
            return ctl_db_fail(ctl, rv, "purge");
        prov_purge_add(&sum, &n);
        if (!prov_purge_more(&n, PROV_PURGE_BATCH))
            break;
    }
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "signin_states", json_object_new_int(sum.signin_states));
        json_object_object_add(o, "sessions", json_object_new_int(sum.sessions));
        json_object_object_add(o, "codes", json_object_new_int(sum.codes));
        json_object_object_add(o, "tokens", json_object_new_int(sum.tokens));
        json_object_object_add(o, "grants", json_object_new_int(sum.grants));
        json_object_object_add(o, "clients", json_object_new_int(sum.clients));
        ctl_json_print(o);
    }
    else {
        printf("purged %d pre-login record(s), %d session(s), %d OAuth code(s), %d token(s), "
               "%d grant(s) and %d client(s)\n", sum.signin_states, sum.sessions, sum.codes,
               sum.tokens, sum.grants, sum.clients);
    }
    return CTL_OK;
}

static const ctl_opt_t clients_opts[] = {
    { "unused", NULL, 0, "only clients that never obtained a token" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_oauth_cmds[] = {
    { "clients", "", 0, 0, clients_opts, CTL_DB_READY, oauth_clients,
      "list the registered OAuth clients, their live grants and last use",
      "Anyone may register a client (POST /oauth/register, limited per address by\n"
      "ProviderAnonRateLimit register). LIVE_GRANTS counts the users' authorizations\n"
      "that still hold a usable refresh token; LAST_USED is when the client last got\n"
      "a token. A client with no grant and no code a day after it registered is\n"
      "removed by the server's purge (and by 'oauth purge')." },
    { "revoke", "CLIENT_ID", 1, 1, NULL, CTL_DB_READY, oauth_revoke,
      "end every grant of a client: its tokens stop working at once",
      "Every user's grant to CLIENT_ID is revoked: its access and refresh tokens\n"
      "are refused from now on, on every node. The registration stays until the\n"
      "purge removes it (a day after its last grant is gone); the client may ask\n"
      "its users to authorize it again." },
    { "purge", "", 0, 0, NULL, CTL_DB_READY, oauth_purge,
      "remove ended sign-ins, sessions, OAuth codes, tokens, grants and clients now",
      "Runs the server's periodic purge (ProviderPurgeInterval) to the end:\n"
      "pre-login records past their ten minutes; sessions past their refresh term\n"
      "or revoked a day ago; codes a day past their expiry; tokens a day past their\n"
      "expiry or revocation (or their grant's); grants a day old with no token\n"
      "left; clients a day old with no grant and no code. Nothing live goes." },
    { NULL }
};
