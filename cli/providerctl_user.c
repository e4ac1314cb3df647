/* providerctl_user.c: the `user` group: adding a user by email, listing and
 * showing users (with their balance in credits and their number of live keys),
 * and blocking or unblocking one. USER on the command line is an id or an
 * email (ctl_find_user, in providerctl_common_store.c, finds it). */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"

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

/* The name rules of prov_account.c, checked here so that an invalid email can
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

static int user_show(ctl_t *ctl)
{
    prov_user_t *u = NULL;
    apr_array_header_t *keys = NULL;
    apr_status_t rv;
    int rc = ctl_find_user(ctl, &u, ctl->argv[0]);

    if (rc != CTL_OK)
        return rc;
    rv = prov_apikey_list(&keys, ctl->store, u->id, 0, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the user's keys");
    if (ctl->json) {
        json_object *o = user_json(u);
        json_object_object_add(o, "keys", json_object_new_int(keys->nelts));
        ctl_json_print(o);
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
    return CTL_OK;
}

static int set_blocked(ctl_t *ctl, int blocked)
{
    prov_user_t *u = NULL;
    apr_status_t rv;
    int rc = ctl_find_user(ctl, &u, ctl->argv[0]);

    if (rc != CTL_OK)
        return rc;
    rv = prov_user_set_blocked(ctl->store, u->id, blocked, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, blocked ? "block the user" : "unblock the user");
    u->blocked = blocked;
    if (ctl->json)
        ctl_json_print(user_json(u));
    else
        printf("user %" APR_INT64_T_FMT " (%s) %s\n", u->id, u->email,
               blocked ? "blocked: their keys are refused from now on" : "unblocked");
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
      "show one user (USER is an id or an email)", NULL },
    { "block", "USER", 1, 1, NULL, CTL_DB_READY, user_block,
      "block a user: every key of theirs is refused", NULL },
    { "unblock", "USER", 1, 1, NULL, CTL_DB_READY, user_unblock, "unblock a user", NULL },
    { NULL }
};
