/* providerctl_plan.c: the `plan` group (plans with a quota per rolling 5-hour
 * and per rolling 7-day window, in credits: add, list, show, set) and the
 * `subscription` group (give a user a plan from now on, optionally until a
 * date; show; cancel), plus what `balance show` and `subscription show` both
 * print about an account: the balance, what requests in flight hold, the
 * active plan and each window's use, percentage and when capacity returns
 * (as a duration and a UTC time), from the spend engine's account status.
 * "Now" is prov_now(), the clock that tests can set. */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"
#include "prov_plans.h"
#include "prov_billing.h"

/* ---- shared output ------------------------------------------------------- */

/* used / quota in tenths of a percent, without overflow or floating point. */
static apr_int64_t permille(prov_micro_t used, prov_micro_t quota)
{
    if (quota <= 0 || used <= 0)
        return 0;
    while (quota > APR_INT64_MAX / 1000 || used > APR_INT64_MAX / 1000) {
        used /= 1000;
        quota /= 1000;
        if (quota == 0)
            return 0;
    }
    return used * 1000 / quota;
}

static const char *percent_text(apr_int64_t pm, apr_pool_t *p)
{
    if (pm % 10)
        return apr_psprintf(p, "%" APR_INT64_T_FMT ".%d", pm / 10, (int)(pm % 10));
    return prov_i64(pm / 10, p);
}

static json_object *plan_json(const prov_plan_t *pl)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(pl->id));
    json_object_object_add(o, "name", json_object_new_string(pl->name));
    json_object_object_add(o, "quota_5h", prov_json_credits(pl->quota_5h));
    json_object_object_add(o, "quota_7d", prov_json_credits(pl->quota_7d));
    json_object_object_add(o, "created_at", ctl_json_time(pl->created_at));
    return o;
}

static json_object *sub_json(const prov_subscription_t *sub)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(sub->id));
    json_object_object_add(o, "user_id", json_object_new_int64(sub->user_id));
    json_object_object_add(o, "plan", json_object_new_string(sub->plan_name));
    json_object_object_add(o, "plan_id", json_object_new_int64(sub->plan_id));
    json_object_object_add(o, "quota_5h", prov_json_credits(sub->quota_5h));
    json_object_object_add(o, "quota_7d", prov_json_credits(sub->quota_7d));
    json_object_object_add(o, "starts_at", ctl_json_time(sub->starts_at));
    json_object_object_add(o, "until_at", ctl_json_time(sub->until_at));
    json_object_object_add(o, "cancelled_at", ctl_json_time(sub->cancelled_at));
    return o;
}

static json_object *window_json(prov_micro_t quota, prov_micro_t used, apr_int64_t reset,
                                apr_int64_t now, apr_pool_t *p)
{
    json_object *o = json_object_new_object();
    apr_int64_t pm = permille(used, quota);
    json_object_object_add(o, "quota", prov_json_credits(quota));
    json_object_object_add(o, "used", prov_json_credits(used));
    json_object_object_add(o, "percent",
                           json_object_new_double_s((double)pm / 10.0, percent_text(pm, p)));
    json_object_object_add(o, "reset_seconds", json_object_new_int64(used > 0 ? reset : 0));
    json_object_object_add(o, "reset_at", used > 0 ? ctl_json_time(now + reset) : NULL);
    return o;
}

static const char *window_text(prov_micro_t quota, prov_micro_t used, apr_int64_t reset,
                               apr_int64_t now, apr_pool_t *p)
{
    const char *head = apr_psprintf(p, "%s / %s credits (%s%%)", prov_money_format(used, p),
                                    prov_money_format(quota, p),
                                    percent_text(permille(used, quota), p));
    if (used <= 0)
        return apr_pstrcat(p, head, "; nothing used", NULL);
    return apr_psprintf(p, "%s; capacity returns in %s (%s UTC)", head, ctl_duration(reset, p),
                        ctl_time(now + reset, 0, p));
}

static const char *sub_text(const prov_subscription_t *sub, apr_pool_t *p)
{
    return apr_psprintf(p, "%s (since %s, %s)", sub->plan_name, ctl_time(sub->starts_at, 0, p),
                        sub->until_at ? apr_pstrcat(p, "until ", ctl_time(sub->until_at, 0, p),
                                                    " UTC", NULL)
                                      : "open-ended");
}

int ctl_account_print(ctl_t *ctl, const prov_user_t *u)
{
    apr_int64_t now = prov_now();
    prov_account_status_t st;
    prov_subscription_t *sub = NULL;
    const prov_plan_windows_t *w = &st.windows;
    apr_pool_t *p = ctl->pool;
    apr_status_t rv;

    rv = prov_billing_account_status(&st, ctl->store, u->id, now, p);
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "read the account's status");
    rv = prov_subscription_active(&sub, ctl->store, u->id, now, p);
    if (rv != APR_SUCCESS && rv != APR_NOTFOUND)
        return ctl_db_fail(ctl, rv, "read the subscription");
    if (ctl->json) {
        json_object *o = json_object_new_object(), *wo = NULL;
        json_object_object_add(o, "user_id", json_object_new_int64(u->id));
        json_object_object_add(o, "email", json_object_new_string(u->email));
        json_object_object_add(o, "balance", prov_json_credits(st.balance));
        json_object_object_add(o, "held", prov_json_credits(st.held));
        json_object_object_add(o, "subscription", sub ? sub_json(sub) : NULL);
        if (w->has_plan) {
            wo = json_object_new_object();
            json_object_object_add(wo, "5h", window_json(w->quota_5h, w->used_5h, w->reset_5h,
                                                         now, p));
            json_object_object_add(wo, "7d", window_json(w->quota_7d, w->used_7d, w->reset_7d,
                                                         now, p));
        }
        json_object_object_add(o, "windows", wo);
        ctl_json_print(o);
        return CTL_OK;
    }
    printf("balance of %s: %s credits\n", u->email, ctl_credits(st.balance, p));
    if (st.held)
        ctl_kv("held:", apr_pstrcat(p, ctl_credits(st.held, p),
                                    " credits (by requests in flight)", NULL));
    ctl_kv("plan:", sub ? sub_text(sub, p) : "none (requests are paid from the balance)");
    if (w->has_plan) {
        ctl_kv("5-hour window:", window_text(w->quota_5h, w->used_5h, w->reset_5h, now, p));
        ctl_kv("7-day window:", window_text(w->quota_7d, w->used_7d, w->reset_7d, now, p));
    }
    return CTL_OK;
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

static int plan_list(ctl_t *ctl)
{
    apr_array_header_t *plans = NULL;
    ctl_table_t *t;
    int i;
    apr_status_t rv = prov_plan_list(&plans, ctl->store, ctl->pool);

    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the plans");
    if (ctl->json) {
        json_object *a = json_object_new_array();
        for (i = 0; i < plans->nelts; i++)
            json_object_array_add(a, plan_json(APR_ARRAY_IDX(plans, i, prov_plan_t *)));
        ctl_json_print(a);
        return CTL_OK;
    }
    t = ctl_table_make(ctl->pool, 5, "ID", "NAME", "5-HOUR QUOTA", "7-DAY QUOTA", "CREATED");
    for (i = 0; i < plans->nelts; i++) {
        const prov_plan_t *pl = APR_ARRAY_IDX(plans, i, prov_plan_t *);
        ctl_table_row(t, prov_i64(pl->id, ctl->pool), pl->name,
                      ctl_credits(pl->quota_5h, ctl->pool), ctl_credits(pl->quota_7d, ctl->pool),
                      ctl_time(pl->created_at, 0, ctl->pool));
    }
    ctl_table_print(t, "no plans");
    return CTL_OK;
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
        ctl_json_print(sub_json(sub));
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
        ctl_json_print(sub_json(sub));
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
