/* providerctl_plan.c: the `plan` group (plans with a quota per rolling 5-hour
 * and per rolling 7-day window, in credits: add, list, show, set) and the
 * `subscription` group (give a user a plan from now on, optionally until a
 * date; show; cancel). What `subscription show` prints about an account (the
 * balance, the plan and both windows' use) is ctl_account_print, which
 * `balance show` shares (providerctl_common_store.c). "Now" is prov_now(), the
 * clock that tests can set. */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"
#include "prov_plans.h"

static json_object *plan_json(const void *rec)
{
    const prov_plan_t *pl = rec;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(pl->id));
    json_object_object_add(o, "name", json_object_new_string(pl->name));
    json_object_object_add(o, "quota_5h", prov_json_credits(pl->quota_5h));
    json_object_object_add(o, "quota_7d", prov_json_credits(pl->quota_7d));
    json_object_object_add(o, "created_at", ctl_json_time(pl->created_at));
    return o;
}

/* ---- plans --------------------------------------------------------------- */

/* A quota option: a positive credit amount. */
static int parse_quota(ctl_t *ctl, prov_micro_t *out, const char *opt, const char *what)
{
    int rc = ctl_parse_credits(ctl, out, ctl_opt(ctl, opt), 0, what);
    if (rc != CTL_OK)
        return rc;
    if (*out == 0)
        return ctl_usage(ctl, "%s must be greater than zero", what);
    if (*out > PROV_AMOUNT_MAX)
        return ctl_usage(ctl, "%s is too large", what);
    return CTL_OK;
}

static int find_plan(ctl_t *ctl, prov_plan_t **pl, const char *ref)
{
    apr_status_t rv = prov_plan_find(pl, ctl->store, ref, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "unknown plan '%s' (see '" PROG " plan list')", ref);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "look up the plan");
    return CTL_OK;
}

static void print_plan(ctl_t *ctl, const prov_plan_t *pl, const char *what)
{
    if (ctl->json) {
        ctl_json_print(plan_json(pl));
        return;
    }
    if (what) {
        printf("plan %s %s: %s credits per 5 hours, %s credits per 7 days\n", pl->name, what,
               ctl_credits(pl->quota_5h, ctl->pool), ctl_credits(pl->quota_7d, ctl->pool));
        return;
    }
    ctl_kv("id:", prov_i64(pl->id, ctl->pool));
    ctl_kv("name:", pl->name);
    ctl_kv("5-hour quota:", apr_pstrcat(ctl->pool, ctl_credits(pl->quota_5h, ctl->pool),
                                        " credits (rolling)", NULL));
    ctl_kv("7-day quota:", apr_pstrcat(ctl->pool, ctl_credits(pl->quota_7d, ctl->pool),
                                       " credits (rolling)", NULL));
    ctl_kv("created:", ctl_time(pl->created_at, 0, ctl->pool));
}

static int plan_add(ctl_t *ctl)
{
    const char *name = ctl->argv[0];
    prov_micro_t q5 = 0, q7 = 0;
    prov_plan_t *pl = NULL;
    apr_status_t rv;
    int rc;

    if ((rc = parse_quota(ctl, &q5, "5h", "the 5-hour quota")) != CTL_OK
        || (rc = parse_quota(ctl, &q7, "7d", "the 7-day quota")) != CTL_OK)
        return rc;
    rv = prov_plan_add(&pl, ctl->store, name, q5, q7, ctl->pool);
    if (rv == APR_EINVAL)
        return ctl_usage(ctl, "'%s' is not a valid plan name (1-64 letters, digits, '.', '_' "
                         "or '-', not only digits)", name);
    if (rv == APR_EEXIST)
        return ctl_fail(ctl, "plan '%s' already exists", name);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "add the plan");
    print_plan(ctl, pl, "added");
    return CTL_OK;
}

static void plan_row(ctl_table_t *t, const void *rec, apr_pool_t *p)
{
    const prov_plan_t *pl = rec;
    ctl_table_row(t, prov_i64(pl->id, p), pl->name, ctl_credits(pl->quota_5h, p),
                  ctl_credits(pl->quota_7d, p), ctl_time(pl->created_at, 0, p));
}

static int plan_list(ctl_t *ctl)
{
    apr_array_header_t *plans = NULL;
    apr_status_t rv = prov_plan_list(&plans, ctl->store, ctl->pool);

    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the plans");
    return ctl_list_print(ctl, plans, plan_json,
                          ctl_table_make(ctl->pool, 5, "ID", "NAME", "5-HOUR QUOTA",
                                         "7-DAY QUOTA", "CREATED"),
                          plan_row, "no plans");
}

static int plan_show(ctl_t *ctl)
{
    prov_plan_t *pl = NULL;
    int rc = find_plan(ctl, &pl, ctl->argv[0]);
    if (rc != CTL_OK)
        return rc;
    print_plan(ctl, pl, NULL);
    return CTL_OK;
}

static int plan_set(ctl_t *ctl)
{
    prov_micro_t q5 = -1, q7 = -1;
    prov_plan_t *pl = NULL;
    apr_status_t rv;
    int rc;

    if (!ctl_opt(ctl, "5h") && !ctl_opt(ctl, "7d"))
        return ctl_usage(ctl, "nothing to change: give --5h or --7d");
    if ((ctl_opt(ctl, "5h") && (rc = parse_quota(ctl, &q5, "5h", "the 5-hour quota")) != CTL_OK)
        || (ctl_opt(ctl, "7d") && (rc = parse_quota(ctl, &q7, "7d", "the 7-day quota"))
            != CTL_OK))
        return rc;
    if ((rc = find_plan(ctl, &pl, ctl->argv[0])) != CTL_OK)
        return rc;
    rv = prov_plan_set(ctl->store, pl->id, q5, q7, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "unknown plan '%s'", ctl->argv[0]);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "change the plan");
    if (q5 >= 0)
        pl->quota_5h = q5;
    if (q7 >= 0)
        pl->quota_7d = q7;
    print_plan(ctl, pl, "changed");
    return CTL_OK;
}

/* ---- subscriptions ------------------------------------------------------- */

static int sub_set(ctl_t *ctl)
{
    const char *until = ctl_opt(ctl, "until");
    apr_int64_t now = prov_now(), until_at = 0;
    prov_subscription_t *sub = NULL;
    prov_user_t *u = NULL;
    prov_plan_t *pl = NULL;
    apr_status_t rv;
    int rc;

    if (until && (rc = ctl_parse_time(ctl, &until_at, until, "--until date")) != CTL_OK)
        return rc;
    if (until_at && until_at <= now)
        return ctl_usage(ctl, "--until %s is not in the future (now is %s UTC)", until,
                         ctl_time(now, 0, ctl->pool));
    if ((rc = ctl_find_user(ctl, &u, ctl->argv[0])) != CTL_OK
        || (rc = find_plan(ctl, &pl, ctl->argv[1])) != CTL_OK)
        return rc;
    rv = prov_subscription_set(&sub, ctl->store, u->id, pl->id, until_at, now, ctl->pool);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "set the subscription");
    if (ctl->json) {
        ctl_json_print(ctl_subscription_json(sub));
        return CTL_OK;
    }
    printf("%s is subscribed to plan %s (%s credits per 5 hours, %s per 7 days) from %s UTC, "
           "%s\n", u->email, pl->name, ctl_credits(pl->quota_5h, ctl->pool),
           ctl_credits(pl->quota_7d, ctl->pool), ctl_time(now, 0, ctl->pool),
           until_at ? apr_pstrcat(ctl->pool, "until ", ctl_time(until_at, 0, ctl->pool),
                                  " UTC", NULL)
                    : "open-ended");
    return CTL_OK;
}

static int sub_show(ctl_t *ctl)
{
    prov_user_t *u = NULL;
    int rc = ctl_find_user(ctl, &u, ctl->argv[0]);
    if (rc != CTL_OK)
        return rc;
    return ctl_account_print(ctl, u);
}

static int sub_cancel(ctl_t *ctl)
{
    apr_int64_t now = prov_now();
    prov_subscription_t *sub = NULL;
    prov_user_t *u = NULL;
    apr_status_t rv;
    int rc = ctl_find_user(ctl, &u, ctl->argv[0]);

    if (rc != CTL_OK)
        return rc;
    rv = prov_subscription_active(&sub, ctl->store, u->id, now, ctl->pool);
    if (rv == APR_SUCCESS)
        rv = prov_subscription_cancel(ctl->store, u->id, now, ctl->pool);
    if (rv == APR_NOTFOUND)
        return ctl_fail(ctl, "%s has no active subscription", u->email);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "cancel the subscription");
    sub->cancelled_at = now;
    if (ctl->json)
        ctl_json_print(ctl_subscription_json(sub));
    else
        printf("subscription of %s to plan %s cancelled\n", u->email, sub->plan_name);
    return CTL_OK;
}

static const ctl_opt_t add_opts[] = {
    { "5h", "CREDITS", 1, "the quota per rolling 5-hour window" },
    { "7d", "CREDITS", 1, "the quota per rolling 7-day window" },
    { NULL, NULL, 0, NULL }
};

static const ctl_opt_t set_opts[] = {
    { "5h", "CREDITS", 0, "a new quota per rolling 5-hour window" },
    { "7d", "CREDITS", 0, "a new quota per rolling 7-day window" },
    { NULL, NULL, 0, NULL }
};

static const ctl_opt_t sub_opts[] = {
    { "until", "DATE", 0, "end then (YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z in UTC, or epoch "
      "seconds); default open-ended" },
    { NULL, NULL, 0, NULL }
};

#define WINDOWS_HELP \
    "Both quotas apply together, to all keys of the account, over windows that\n" \
    "roll: nothing resets at midnight or on a renewal date; capacity comes back\n" \
    "as earlier usage leaves the window. When the plan is exhausted, requests\n" \
    "are paid from the prepaid balance."

const ctl_cmd_t ctl_plan_cmds[] = {
    { "add", "NAME", 1, 1, add_opts, CTL_DB_READY, plan_add,
      "add a plan with a 5-hour and a 7-day quota in credits",
      "NAME is 1-64 letters, digits, '.', '_' or '-' (not only digits).\n" WINDOWS_HELP },
    { "list", "", 0, 0, NULL, CTL_DB_READY, plan_list, "list the plans", NULL },
    { "show", "PLAN", 1, 1, NULL, CTL_DB_READY, plan_show, "show one plan (by name or id)",
      NULL },
    { "set", "PLAN", 1, 1, set_opts, CTL_DB_READY, plan_set,
      "change a plan's quotas (its subscribers get them at once)", WINDOWS_HELP },
    { NULL }
};

const ctl_cmd_t ctl_subscription_cmds[] = {
    { "set", "USER PLAN", 2, 2, sub_opts, CTL_DB_READY, sub_set,
      "give a user a plan from now on (ends the current subscription)",
      "The new subscription starts now and replaces the active one, if any.\n"
      "The windows count the account's usage, so the new plan starts with the\n"
      "usage already in them: changing plans gives no fresh quota." },
    { "show", "USER", 1, 1, NULL, CTL_DB_READY, sub_show,
      "show a user's plan, balance and both windows' use",
      "For each window: credits used of the quota, the percentage, and when\n"
      "capacity returns (usage starts leaving the window), as a duration and a\n"
      "UTC time." },
    { "cancel", "USER", 1, 1, NULL, CTL_DB_READY, sub_cancel,
      "end a user's active subscription now", NULL },
    { NULL }
};
