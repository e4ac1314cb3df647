/* providerctl_key.c: the `key` group: creating a key for a user and reissuing
 * one (the only two moments a secret is ever printed), listing keys by their
 * display prefix, showing and deleting one, and setting or clearing its weekly
 * budget (its other controls: `key set`, providerctl_keyset.c). `key show`
 * and `key list` also show what a key has used (today and
 * the last seven days, from the ledger) and, for show, its spend in the
 * rolling week with when it returns. KEY on the command line is the numeric
 * key id, never the secret. */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"
#include "prov_billing.h"

static json_object *key_json(const prov_key_t *k, const char *email, apr_pool_t *p)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(k->id));
    json_object_object_add(o, "user_id", json_object_new_int64(k->user_id));
    if (email)
        json_object_object_add(o, "email", json_object_new_string(email));
    json_object_object_add(o, "name", ctl_json_str(k->name));
    json_object_object_add(o, "prefix", json_object_new_string(k->display));
    json_object_object_add(o, "weekly_budget",
                           k->has_budget ? prov_json_credits(k->weekly_budget) : NULL);
    json_object_object_add(o, "created_at", ctl_json_time(k->created_at));
    json_object_object_add(o, "reissued_at", ctl_json_time(k->reissued_at));
    json_object_object_add(o, "deleted_at", ctl_json_time(k->deleted_at));
    prov_key_controls_json(o, &k->controls, p);
    return o;
}

static const char *budget_text(const prov_key_t *k, apr_pool_t *p)
{
    return k->has_budget ? ctl_credits(k->weekly_budget, p) : "none";
}

/* Prints a freshly made secret: the only time it is ever shown. */
static void print_secret(ctl_t *ctl, const prov_key_t *k, const char *email,
                         const char *secret, const char *what)
{
    if (ctl->json) {
        json_object *o = key_json(k, email, ctl->pool);
        json_object_object_add(o, "secret", json_object_new_string(secret));
        ctl_json_print(o);
        return;
    }
    printf("key %" APR_INT64_T_FMT " %s for %s (prefix %s, weekly budget %s):\n", k->id, what,
           email, k->display, budget_text(k, ctl->pool));
    printf("%s\n", secret);
    printf("This secret will not be shown again: store it now.%s\n",
           strcmp(what, "reissued") ? "" : " The old secret no longer works.");
}

/* Finds a key by its id argument; with live set, a deleted key is a failure. */
static int find_key(ctl_t *ctl, prov_key_t **k, const char *arg, int live)
{
    apr_int64_t id = 0;
    apr_status_t rv;
    int rc = ctl_parse_id(ctl, &id, arg, "key id");
    if (rc != CTL_OK)
        return rc;
    rv = prov_key_get(k, ctl->store, id, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "unknown key %s", arg);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "look up the key");
    if (live && (*k)->deleted_at)
        return ctl_fail(ctl, "key %s is deleted", arg);
    return CTL_OK;
}

static const char *owner_email(ctl_t *ctl, apr_int64_t user_id)
{
    prov_user_t *u = NULL;
    if (prov_user_find(&u, ctl->store, prov_i64(user_id, ctl->pool), ctl->pool) != APR_SUCCESS)
        return "?";
    return u->email;
}

/* The key's usage summary at now; CTL_OK or CTL_FAIL after saying why. */
static int key_usage(ctl_t *ctl, prov_usage_key_t *ku, const prov_key_t *k)
{
    apr_status_t rv = prov_usage_key_summary(ku, ctl->store, k->id, prov_now(), ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the key's usage");
    return CTL_OK;
}

static json_object *key_usage_json(const prov_usage_key_t *ku)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "today", prov_usage_fields(json_object_new_object(), &ku->today));
    json_object_object_add(o, "7d", prov_usage_fields(json_object_new_object(), &ku->week));
    return o;
}

static const char *usage_text(const prov_usage_row_t *r, apr_pool_t *p)
{
    return apr_psprintf(p, "%s credits, %" APR_INT64_T_FMT " requests (tokens: %"
                        APR_INT64_T_FMT " input, %" APR_INT64_T_FMT " output, %"
                        APR_INT64_T_FMT " cache, %" APR_INT64_T_FMT " reasoning)",
                        prov_money_format(r->credits, p), r->requests, r->tokens.input,
                        r->tokens.output, r->tokens.cache, r->tokens.reasoning);
}

static int key_create(ctl_t *ctl)
{
    const char *name = ctl_opt(ctl, "name"), *budget = ctl_opt(ctl, "budget"), *secret = NULL;
    prov_micro_t amount = 0;
    prov_user_t *u = NULL;
    prov_key_t *k = NULL;
    apr_status_t rv;
    int rc;

    if (budget && strcmp(budget, "none")
        && (rc = ctl_parse_credits(ctl, &amount, budget, 0, "the budget")) != CTL_OK)
        return rc;
    if ((rc = ctl_find_user(ctl, &u, ctl->argv[0])) != CTL_OK)
        return rc;
    rv = prov_key_create(&k, &secret, ctl->store, u->id, name,
                         budget && strcmp(budget, "none"), amount, ctl->pool);
    if (rv == APR_EINVAL)
        return ctl_usage(ctl, "the key name must be at most 200 characters without control "
                         "characters");
    if (rv == APR_EEXIST) {
        fprintf(stderr, "providerctl: %s already has a key named '%s'; choose another name "
                "(providerctl key list --user %s)\n", u->email, name, u->email);
        return CTL_FAIL;
    }
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "create the key");
    print_secret(ctl, k, u->email, secret, "created");
    return CTL_OK;
}

static int key_list(ctl_t *ctl)
{
    const char *uref = ctl_opt(ctl, "user");
    apr_array_header_t *keys = NULL, *users = NULL;
    apr_hash_t *emails = apr_hash_make(ctl->pool);
    prov_user_t *u = NULL;
    ctl_table_t *t;
    apr_status_t rv;
    int i, rc;

    if (uref && (rc = ctl_find_user(ctl, &u, uref)) != CTL_OK)
        return rc;
    rv = prov_key_list(&keys, ctl->store, u ? u->id : 0, ctl_flag(ctl, "all"), ctl->pool);
    if (rv == APR_SUCCESS)
        rv = prov_user_list(&users, ctl->store, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the keys");
    for (i = 0; i < users->nelts; i++) {
        const prov_user_t *x = APR_ARRAY_IDX(users, i, prov_user_t *);
        apr_hash_set(emails, &x->id, sizeof(x->id), x->email);
    }
    if (ctl->json) {
        json_object *a = json_object_new_array();
        for (i = 0; i < keys->nelts; i++) {
            const prov_key_t *k = APR_ARRAY_IDX(keys, i, prov_key_t *);
            json_object *o = key_json(k, apr_hash_get(emails, &k->user_id,
                                                          sizeof(k->user_id)), ctl->pool);
            prov_usage_key_t ku;
            if ((rc = key_usage(ctl, &ku, k)) != CTL_OK) {
                json_object_put(o);
                json_object_put(a);
                return rc;
            }
            json_object_object_add(o, "usage", key_usage_json(&ku));
            json_object_array_add(a, o);
        }
        ctl_json_print(a);
        return CTL_OK;
    }
    t = ctl_table_make(ctl->pool, 9, "ID", "USER", "NAME", "PREFIX", "WEEKLY BUDGET",
                       "TODAY", "7 DAYS", "CREATED", "STATUS");
    for (i = 0; i < keys->nelts; i++) {
        const prov_key_t *k = APR_ARRAY_IDX(keys, i, prov_key_t *);
        const char *email = apr_hash_get(emails, &k->user_id, sizeof(k->user_id));
        prov_usage_key_t ku;
        if ((rc = key_usage(ctl, &ku, k)) != CTL_OK)
            return rc;
        ctl_table_row(t, prov_i64(k->id, ctl->pool), email, k->name,
                      apr_pstrcat(ctl->pool, k->display, "...", NULL),
                      budget_text(k, ctl->pool), ctl_credits(ku.today.credits, ctl->pool),
                      ctl_credits(ku.week.credits, ctl->pool),
                      ctl_time(k->created_at, 0, ctl->pool), k->deleted_at ? "deleted" : "live");
    }
    ctl_table_print(t, "no keys");
    return CTL_OK;
}

static int key_show(ctl_t *ctl)
{
    prov_key_t *k = NULL;
    prov_usage_key_t ku;
    prov_micro_t spent = 0;
    apr_int64_t reset = 0, now = prov_now();
    const char *email, *week;
    apr_status_t rv;
    int rc = find_key(ctl, &k, ctl->argv[0], 0);

    if (rc != CTL_OK)
        return rc;
    email = owner_email(ctl, k->user_id);
    rv = prov_billing_key_status(&spent, &reset, ctl->store, k->id, now, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the key's spend");
    if ((rc = key_usage(ctl, &ku, k)) != CTL_OK)
        return rc;
    if (ctl->json) {
        json_object *o = key_json(k, email, ctl->pool);
        int returns = k->has_budget && spent > 0;
        json_object_object_add(o, "spent_7d", prov_json_credits(spent));
        json_object_object_add(o, "budget_reset_seconds",
                               returns ? json_object_new_int64(reset) : NULL);
        json_object_object_add(o, "budget_reset_at", returns ? ctl_json_time(now + reset) : NULL);
        json_object_object_add(o, "usage", key_usage_json(&ku));
        ctl_json_print(o);
        return CTL_OK;
    }
    week = apr_pstrcat(ctl->pool, ctl_credits(spent, ctl->pool), " credits", NULL);
    if (k->has_budget)
        week = apr_psprintf(ctl->pool, "%s of %s%s", week, ctl_credits(k->weekly_budget,
                                                                       ctl->pool),
                            spent > 0 ? apr_psprintf(ctl->pool, "; capacity returns in %s "
                                                     "(%s UTC)", ctl_duration(reset, ctl->pool),
                                                     ctl_time(now + reset, 0, ctl->pool))
                                      : "");
    ctl_kv("id:", prov_i64(k->id, ctl->pool));
    ctl_kv("user:", apr_psprintf(ctl->pool, "%s (id %" APR_INT64_T_FMT ")", email, k->user_id));
    ctl_kv("name:", k->name);
    ctl_kv("prefix:", apr_pstrcat(ctl->pool, k->display, "...", NULL));
    ctl_kv("weekly budget:", budget_text(k, ctl->pool));
    ctl_kv("week's spend:", week);
    ctl_key_controls_print(&k->controls, ctl->pool);
    ctl_kv("used today:", usage_text(&ku.today, ctl->pool));
    ctl_kv("used 7 days:", usage_text(&ku.week, ctl->pool));
    ctl_kv("created:", ctl_time(k->created_at, 0, ctl->pool));
    ctl_kv("reissued:", ctl_time(k->reissued_at, 0, ctl->pool));
    ctl_kv("status:", k->deleted_at ? apr_pstrcat(ctl->pool, "deleted ",
                                                  ctl_time(k->deleted_at, 0, ctl->pool), NULL)
                                    : "live");
    return CTL_OK;
}

static int key_reissue(ctl_t *ctl)
{
    prov_key_t *k = NULL;
    const char *secret = NULL;
    apr_status_t rv;
    int rc = find_key(ctl, &k, ctl->argv[0], 1);

    if (rc != CTL_OK)
        return rc;
    rv = prov_key_reissue(&secret, ctl->store, k->id, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "key %s is deleted", ctl->argv[0]);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "reissue the key");
    /* Read back: the display prefix and reissue time have changed. */
    if (prov_key_get(&k, ctl->store, k->id, ctl->pool) != APR_SUCCESS)
        return ctl_fail(ctl, "key %s was reissued but cannot be read back", ctl->argv[0]);
    print_secret(ctl, k, owner_email(ctl, k->user_id), secret, "reissued");
    return CTL_OK;
}

static int key_delete(ctl_t *ctl)
{
    prov_key_t *k = NULL;
    apr_status_t rv;
    int rc = find_key(ctl, &k, ctl->argv[0], 1);

    if (rc != CTL_OK)
        return rc;
    rv = prov_key_delete(ctl->store, k->id, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "key %s is deleted", ctl->argv[0]);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "delete the key");
    if (ctl->json) {
        if (prov_key_get(&k, ctl->store, k->id, ctl->pool) != APR_SUCCESS)
            return ctl_fail(ctl, "key %s was deleted but cannot be read back", ctl->argv[0]);
        ctl_json_print(key_json(k, owner_email(ctl, k->user_id), ctl->pool));
    }
    else {
        printf("key %" APR_INT64_T_FMT " (%s...) deleted\n", k->id, k->display);
    }
    return CTL_OK;
}

static int key_budget(ctl_t *ctl)
{
    prov_key_t *k = NULL;
    prov_micro_t amount = 0;
    int clear = !strcmp(ctl->argv[1], "none");
    apr_status_t rv;
    int rc;

    if (!clear && (rc = ctl_parse_credits(ctl, &amount, ctl->argv[1], 0, "the budget")) != CTL_OK)
        return rc;
    if ((rc = find_key(ctl, &k, ctl->argv[0], 1)) != CTL_OK)
        return rc;
    rv = prov_key_set_budget(ctl->store, k->id, !clear, amount, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "key %s is deleted", ctl->argv[0]);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "set the budget");
    k->has_budget = !clear;
    k->weekly_budget = clear ? 0 : amount;
    if (ctl->json)
        ctl_json_print(key_json(k, owner_email(ctl, k->user_id), ctl->pool));
    else if (clear)
        printf("key %" APR_INT64_T_FMT ": no weekly budget\n", k->id);
    else
        printf("key %" APR_INT64_T_FMT ": weekly budget %s credits\n", k->id,
               ctl_credits(amount, ctl->pool));
    return CTL_OK;
}

static const ctl_opt_t create_opts[] = {
    { "name", "NAME", 0, "a label for the key (e.g. the application using it)" },
    { "budget", "CREDITS", 0, "a weekly budget in credits (a rolling 7-day window)" },
    { NULL, NULL, 0, NULL }
};

static const ctl_opt_t list_opts[] = {
    { "user", "USER", 0, "only the keys of this user (id or email)" },
    { "all", NULL, 0, "include deleted keys" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_key_cmds[] = {
    { "create", "USER", 1, 1, create_opts, CTL_DB_READY, key_create,
      "create a key for a user and print its secret once",
      "The secret is printed now and never again; only its SHA-256 is stored." },
    { "list", "", 0, 0, list_opts, CTL_DB_READY, key_list,
      "list keys by id and display prefix (never the secrets)",
      "TODAY is the credits used since 00:00 UTC, 7 DAYS those of the last 7 days." },
    { "show", "KEY", 1, 1, NULL, CTL_DB_READY, key_show,
      "show one key, its week's spend and its usage",
      "Shows the key's spend in its rolling 7-day window and, with a budget, when\n"
      "capacity returns (usage starts leaving the window); and the requests,\n"
      "tokens and credits of today (since 00:00 UTC) and of the last 7 days." },
    { "reissue", "KEY", 1, 1, NULL, CTL_DB_READY, key_reissue,
      "give a key a new secret (printed once); the old one stops working", NULL },
    { "delete", "KEY", 1, 1, NULL, CTL_DB_READY, key_delete, "delete a key", NULL },
    { "budget", "KEY CREDITS|none", 2, 2, NULL, CTL_DB_READY, key_budget,
      "set a key's weekly budget in credits, or clear it with 'none'", NULL },
    { "set", "KEY", 1, 1, ctl_key_set_opts, CTL_DB_READY, ctl_key_set,
      "set or clear a key's expiry, models, addresses, rate and in-flight limit",
      "Each option given is set (none, all or any clears it); the others are kept.\n"
      "A refused request answers 401 API_KEY_EXPIRED, 403 MODEL_NOT_ALLOWED,\n"
      "403 ADDRESS_NOT_ALLOWED, 429 API_KEY_RATE_LIMITED or API_KEY_IN_FLIGHT_LIMIT.\n"
      "rpm and max-in-flight are counted by each server on its own." },
    { NULL }
};
