/* providerctl_user.c: the `user` group: adding a user by email, listing and
 * showing users (with their balance in credits, their number of live keys,
 * their sign-in identities and live cabinet sessions), revoking every
 * session of one, linking an identity the operator names to one and
 * unlinking one of their identities (never the last), and
 * blocking (which revokes their sessions too) or
 * unblocking one, and their favorite models (listed, added, removed as the
 * cabinet's star does). USER on the command line is an id or an email
 * (ctl_find_user, in providerctl_common_store.c, finds it). No subject and
 * no session token or hash is ever printed: the core does not read them. */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"
#include "prov_alert.h"
#include "prov_user_access.h"
#include "prov_identity.h"
#include "prov_models.h"

static json_object *user_json(const void *rec)
{
    const prov_user_t *u = rec;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(u->id));
    json_object_object_add(o, "email", json_object_new_string(u->email));
    json_object_object_add(o, "name", ctl_json_str(u->name));
    json_object_object_add(o, "blocked", json_object_new_boolean(u->blocked));
    json_object_object_add(o, "balance", prov_json_credits(u->balance));
    json_object_object_add(o, "created_at", ctl_json_time(u->created_at));
    return o;
}

/* The name rules of prov_user.c, checked here so that an invalid email can
 * be told apart from an invalid name. */
static int name_ok(const char *n)
{
    const unsigned char *c;
    if (strlen(n) > 200)
        return 0;
    for (c = (const unsigned char *)n; *c; c++) {
        if (*c < 0x20 || *c == 0x7f)
            return 0;
    }
    return 1;
}

static int user_add(ctl_t *ctl)
{
    const char *email = ctl->argv[0], *name = ctl_opt(ctl, "name");
    prov_user_t *u = NULL;
    apr_status_t rv;

    if (name && !name_ok(name))
        return ctl_usage(ctl, "the name must be at most 200 characters without control "
                         "characters");
    rv = prov_user_add(&u, ctl->store, email, name, ctl->pool);
    if (rv == APR_EINVAL)
        return ctl_usage(ctl, "'%s' is not a valid email address", email);
    if (rv == APR_EEXIST)
        return ctl_fail(ctl, "user '%s' already exists", email);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "add the user");
    if (ctl->json)
        ctl_json_print(user_json(u));
    else
        printf("user %" APR_INT64_T_FMT " added: %s\n", u->id, u->email);
    return CTL_OK;
}

static void user_row(ctl_table_t *t, const void *rec, apr_pool_t *p)
{
    const prov_user_t *u = rec;
    ctl_table_row(t, prov_i64(u->id, p), u->email, u->name, ctl_credits(u->balance, p),
                  u->blocked ? "yes" : "no", ctl_time(u->created_at, 0, p));
}

static int user_list(ctl_t *ctl)
{
    apr_array_header_t *users = NULL;
    apr_status_t rv = prov_user_list(&users, ctl->store, ctl->pool);

    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the users");
    return ctl_list_print(ctl, users, user_json,
                          ctl_table_make(ctl->pool, 6, "ID", "EMAIL", "NAME", "BALANCE",
                                         "BLOCKED", "CREATED"),
                          user_row, "no users");
}

static json_object *identity_json(const prov_user_identity_t *id)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "provider", json_object_new_string(id->provider));
    json_object_object_add(o, "created_at", ctl_json_time(id->created_at));
    return o;
}

static json_object *session_json(const prov_user_session_t *ses, apr_int64_t now)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(ses->id));
    json_object_object_add(o, "created_at", ctl_json_time(ses->created_at));
    json_object_object_add(o, "active", json_object_new_boolean(ses->active_expires > now));
    json_object_object_add(o, "active_until", ctl_json_time(ses->active_expires));
    json_object_object_add(o, "expires_at", ctl_json_time(ses->refresh_expires));
    return o;
}

/* "  idp1            linked 2030-01-10 09:00" lines under "identities:". */
static void identities_print(const apr_array_header_t *ids, apr_pool_t *p)
{
    int i;
    ctl_kv("identities:", ids->nelts ? apr_itoa(p, ids->nelts) : "none");
    for (i = 0; i < ids->nelts; i++) {
        const prov_user_identity_t *id = APR_ARRAY_IDX(ids, i, prov_user_identity_t *);
        ctl_kv(apr_pstrcat(p, "  ", id->provider, NULL),
               apr_pstrcat(p, "linked ", ctl_time(id->created_at, 0, p), NULL));
    }
}

/* "  session 7       created ..., active until ... (or idle since ...),
 * expires ..." lines under "sessions:". */
static void sessions_print(const apr_array_header_t *sessions, apr_int64_t now, apr_pool_t *p)
{
    int i;
    ctl_kv("sessions:", sessions->nelts ? apr_psprintf(p, "%d live", sessions->nelts) : "none");
    for (i = 0; i < sessions->nelts; i++) {
        const prov_user_session_t *ses = APR_ARRAY_IDX(sessions, i, prov_user_session_t *);
        ctl_kv(apr_psprintf(p, "  session %" APR_INT64_T_FMT, ses->id),
               apr_pstrcat(p, "created ", ctl_time(ses->created_at, 0, p),
                           ses->active_expires > now ? ", active until " : ", idle since ",
                           ctl_time(ses->active_expires, 0, p), ", expires ",
                           ctl_time(ses->refresh_expires, 0, p), NULL));
    }
}

static json_object *access_json(json_object *o, const apr_array_header_t *ids,
                                const apr_array_header_t *sessions, apr_int64_t now)
{
    json_object *a = json_object_new_array();
    int i;
    for (i = 0; i < ids->nelts; i++)
        json_object_array_add(a, identity_json(APR_ARRAY_IDX(ids, i, prov_user_identity_t *)));
    json_object_object_add(o, "identities", a);
    a = json_object_new_array();
    for (i = 0; i < sessions->nelts; i++)
        json_object_array_add(a, session_json(APR_ARRAY_IDX(sessions, i, prov_user_session_t *),
                                              now));
    json_object_object_add(o, "sessions", a);
    return o;
}

static int user_show(ctl_t *ctl)
{
    prov_user_t *u = NULL;
    apr_array_header_t *keys = NULL, *ids = NULL, *sessions = NULL;
    apr_int64_t now = prov_now();
    apr_status_t rv;
    int rc = ctl_find_user(ctl, &u, ctl->argv[0]);

    if (rc != CTL_OK)
        return rc;
    rv = prov_key_list(&keys, ctl->store, u->id, 0, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the user's keys");
    rv = prov_user_identities(&ids, ctl->store, u->id, ctl->pool);
    if (rv == APR_SUCCESS)
        rv = prov_user_sessions(&sessions, ctl->store, u->id, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the user's identities and sessions");
    if (ctl->json) {
        json_object *o = user_json(u);
        json_object_object_add(o, "keys", json_object_new_int(keys->nelts));
        ctl_json_print(access_json(o, ids, sessions, now));
        return CTL_OK;
    }
    ctl_kv("id:", prov_i64(u->id, ctl->pool));
    ctl_kv("email:", u->email);
    ctl_kv("name:", u->name);
    ctl_kv("blocked:", u->blocked ? "yes" : "no");
    ctl_kv("balance:", apr_pstrcat(ctl->pool, ctl_credits(u->balance, ctl->pool),
                                   " credits", NULL));
    ctl_kv("live keys:", apr_itoa(ctl->pool, keys->nelts));
    ctl_kv("created:", ctl_time(u->created_at, 0, ctl->pool));
    identities_print(ids, ctl->pool);
    sessions_print(sessions, now, ctl->pool);
    return CTL_OK;
}

static int set_blocked(ctl_t *ctl, int blocked)
{
    prov_user_t *u = NULL;
    apr_status_t rv;
    int revoked = 0;
    int rc = ctl_find_user(ctl, &u, ctl->argv[0]);

    if (rc != CTL_OK)
        return rc;
    rv = prov_user_set_blocked(&revoked, ctl->store, u->id, blocked, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, blocked ? "block the user" : "unblock the user");
    /* A block is a spend alert (the webhook's outbox; a second block of a
     * blocked user is not). */
    if (blocked && !u->blocked
        && (rv = prov_alert_user_blocked(ctl->store, u->id, prov_now(), ctl->pool)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "record the block's alert");
    u->blocked = blocked;
    if (ctl->json) {
        json_object *o = user_json(u);
        if (blocked)
            json_object_object_add(o, "sessions_revoked", json_object_new_int(revoked));
        ctl_json_print(o);
    }
    else if (blocked)
        printf("user %" APR_INT64_T_FMT " (%s) blocked: their keys are refused, they cannot "
               "sign in, and %d cabinet session(s) were revoked\n", u->id, u->email, revoked);
    else
        printf("user %" APR_INT64_T_FMT " (%s) unblocked\n", u->id, u->email);
    return CTL_OK;
}

/* `user sessions revoke USER`: the one action of `user sessions` so far. */
static int user_sessions(ctl_t *ctl)
{
    prov_user_t *u = NULL;
    apr_status_t rv;
    int revoked = 0, rc;

    if (strcmp(ctl->argv[0], "revoke") != 0)
        return ctl_usage(ctl, "unknown action '%s' (user sessions revoke USER)", ctl->argv[0]);
    if ((rc = ctl_find_user(ctl, &u, ctl->argv[1])) != CTL_OK)
        return rc;
    rv = prov_user_sessions_revoke(&revoked, ctl->store, u->id, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "revoke the user's sessions");
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "user_id", json_object_new_int64(u->id));
        json_object_object_add(o, "email", json_object_new_string(u->email));
        json_object_object_add(o, "sessions_revoked", json_object_new_int(revoked));
        ctl_json_print(o);
    }
    else
        printf("user %" APR_INT64_T_FMT " (%s): %d cabinet session(s) revoked; the user "
               "must sign in again\n", u->id, u->email, revoked);
    return CTL_OK;
}

/* `user link USER PROVIDER SUBJECT`: an identity given by the operator
 * (a user made before sign-in existed, the demo's user) joins USER; one
 * that is another user's is refused, as the cabinet's link refuses it. */
static int user_link(ctl_t *ctl)
{
    prov_user_t *u = NULL;
    const char *provider = ctl->argv[1];
    apr_status_t rv;
    int added = 0, rc = ctl_find_user(ctl, &u, ctl->argv[0]);

    if (rc != CTL_OK)
        return rc;
    if (!*provider || strlen(provider) > PROV_IDP_NAME_MAX || !*ctl->argv[2])
        return ctl_usage(ctl, "PROVIDER and SUBJECT must not be empty");
    rv = prov_identity_link(&added, ctl->store, u->id, provider, ctl->argv[2], prov_now(),
                            ctl->pool);
    if (APR_STATUS_IS_EEXIST(rv))
        return ctl_fail(ctl, "that identity at '%s' belongs to another user", provider);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "link the identity");
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "user_id", json_object_new_int64(u->id));
        json_object_object_add(o, "email", json_object_new_string(u->email));
        json_object_object_add(o, "linked", json_object_new_string(provider));
        json_object_object_add(o, "added", json_object_new_boolean(added));
        ctl_json_print(o);
    }
    else
        printf("user %" APR_INT64_T_FMT " (%s): %s identity at %s\n", u->id, u->email,
               added ? "linked an" : "already had this", provider);
    return CTL_OK;
}

/* `user unlink USER PROVIDER`: the user's identity at PROVIDER removed
 * (core refuses the last one, which would leave no way to sign in). */
static int user_unlink(ctl_t *ctl)
{
    prov_user_t *u = NULL;
    const char *provider = ctl->argv[1];
    apr_status_t rv;
    int rc = ctl_find_user(ctl, &u, ctl->argv[0]);

    if (rc != CTL_OK)
        return rc;
    rv = prov_identity_unlink(ctl->store, u->id, provider, ctl->pool);
    if (APR_STATUS_IS_NOTFOUND(rv))
        return ctl_fail(ctl, "user %" APR_INT64_T_FMT " (%s) has no identity at '%s'", u->id,
                        u->email, provider);
    if (APR_STATUS_IS_EBUSY(rv))
        return ctl_fail(ctl, "the identity at '%s' is the last way user %" APR_INT64_T_FMT
                        " (%s) can sign in: it is kept", provider, u->id, u->email);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "unlink the identity");
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "user_id", json_object_new_int64(u->id));
        json_object_object_add(o, "email", json_object_new_string(u->email));
        json_object_object_add(o, "unlinked", json_object_new_string(provider));
        ctl_json_print(o);
    }
    else
        printf("user %" APR_INT64_T_FMT " (%s): the identity at %s unlinked\n", u->id,
               u->email, provider);
    return CTL_OK;
}

/* ---- favorites ------------------------------------------------------------ */

static void favorite_row(ctl_table_t *t, const void *rec, apr_pool_t *p)
{
    const prov_model_t *m = rec;
    (void)p;
    ctl_table_row(t, m->public_id, m->display_name, m->enabled ? "yes" : "no");
}

/* `user favorites USER`: every favorite, disabled models too (the cabinet
 * shows only the enabled ones the gateway offers). */
static int user_favorites(ctl_t *ctl)
{
    prov_user_t *u = NULL;
    apr_array_header_t *models = NULL;
    apr_status_t rv;
    int rc = ctl_find_user(ctl, &u, ctl->argv[0]);

    if (rc != CTL_OK)
        return rc;
    rv = prov_favorite_list(&models, ctl->store, u->id, 0, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the user's favorites");
    return ctl_list_print(ctl, models, ctl_model_json,
                          ctl_table_make(ctl->pool, 3, "PUBLIC ID", "NAME", "ENABLED"),
                          favorite_row, "no favorites");
}

/* `user favorite add|remove USER MODEL`: as the cabinet's star does it
 * (idempotent; adding needs an enabled model). */
static int user_favorite(ctl_t *ctl)
{
    const char *action = ctl->argv[0], *model = ctl->argv[2];
    int add = !strcmp(action, "add");
    prov_user_t *u = NULL;
    apr_status_t rv;
    int rc;

    if (!add && strcmp(action, "remove"))
        return ctl_usage(ctl, "unknown action '%s' (user favorite add|remove USER MODEL)",
                         action);
    if ((rc = ctl_find_user(ctl, &u, ctl->argv[1])) != CTL_OK)
        return rc;
    rv = add ? prov_favorite_add(ctl->store, u->id, model, ctl->pool)
             : prov_favorite_remove(ctl->store, u->id, model, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, add ? "unknown or disabled model '%s'" : "unknown model '%s'",
                        model);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, add ? "add the favorite" : "remove the favorite");
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "user_id", json_object_new_int64(u->id));
        json_object_object_add(o, "model", json_object_new_string(model));
        json_object_object_add(o, "favorite", json_object_new_boolean(add));
        ctl_json_print(o);
    }
    else
        printf("user %" APR_INT64_T_FMT " (%s): %s %s the favorites\n", u->id, u->email, model,
               add ? "is among" : "is not among");
    return CTL_OK;
}

static int user_block(ctl_t *ctl)
{
    return set_blocked(ctl, 1);
}

static int user_unblock(ctl_t *ctl)
{
    return set_blocked(ctl, 0);
}

static const ctl_opt_t add_opts[] = {
    { "name", "NAME", 0, "a display name for the user" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_user_cmds[] = {
    { "add", "EMAIL", 1, 1, add_opts, CTL_DB_READY, user_add, "add a user",
      "EMAIL is stored in lower case; it must be unique." },
    { "list", "", 0, 0, NULL, CTL_DB_READY, user_list, "list all users", NULL },
    { "show", "USER", 1, 1, NULL, CTL_DB_READY, user_show,
      "show one user (USER is an id or an email)",
      "Also lists the user's sign-in identities (provider, when linked; never the\n"
      "subject) and live cabinet sessions (when made, until when active or since\n"
      "when idle, when the 30-day refresh term ends)." },
    { "sessions", "revoke USER", 2, 2, NULL, CTL_DB_READY, user_sessions,
      "revoke every cabinet session of a user",
      "Every live session of the user ends at once, on every server sharing the\n"
      "database: the cabinet asks them to sign in again. Keys are not affected." },
    { "link", "USER PROVIDER SUBJECT", 3, 3, NULL, CTL_DB_READY, user_link,
      "link a sign-in identity (PROVIDER's user id SUBJECT) to a user",
      "The next sign-in through PROVIDER with that identity signs in as USER.\n"
      "An identity that is another user's is refused; nothing is merged." },
    { "unlink", "USER PROVIDER", 2, 2, NULL, CTL_DB_READY, user_unlink,
      "unlink a user's sign-in identity at PROVIDER",
      "PROVIDER is the identity provider's name (as `user show` lists it). The\n"
      "user's last identity is kept: they could not sign in again without it." },
    { "block", "USER", 1, 1, NULL, CTL_DB_READY, user_block,
      "block a user: keys refused, sessions revoked, no sign-in",
      "Every key of the user is refused, every cabinet session of theirs is\n"
      "revoked at once, and a blocked user cannot sign in until unblocked." },
    { "unblock", "USER", 1, 1, NULL, CTL_DB_READY, user_unblock, "unblock a user", NULL },
    { "favorites", "USER", 1, 1, NULL, CTL_DB_READY, user_favorites,
      "list a user's favorite models",
      "Every model the user starred in the cabinet, disabled ones too (the cabinet\n"
      "shows only the enabled models the gateway offers now)." },
    { "favorite", "add|remove USER MODEL", 3, 3, NULL, CTL_DB_READY, user_favorite,
      "star or unstar a model for a user",
      "Both are idempotent, as in the cabinet: adding a favorite twice or removing\n"
      "one that is not there changes nothing. Adding needs an enabled model." },
    { NULL }
};
