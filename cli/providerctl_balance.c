/* providerctl_balance.c: the `balance` group: crediting a user's prepaid
 * balance (or correcting it with a negative amount), each movement recorded
 * with its reason, and showing the balance together with what requests in
 * flight hold, the plan and its windows' use (ctl_account_print in
 * providerctl_common_store.c, shared with `subscription show`). Amounts are
 * decimal credits. */
#include <stdio.h>
#include "providerctl.h"

static void print_balance(ctl_t *ctl, const prov_user_t *u, prov_micro_t balance,
                          const prov_micro_t *amount)
{
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "user_id", json_object_new_int64(u->id));
        json_object_object_add(o, "email", json_object_new_string(u->email));
        if (amount)
            json_object_object_add(o, "amount", prov_json_credits(*amount));
        json_object_object_add(o, "balance", prov_json_credits(balance));
        ctl_json_print(o);
        return;
    }
    if (amount)
        printf("balance of %s: %s credits (%s%s)\n", u->email, ctl_credits(balance, ctl->pool),
               *amount > 0 ? "+" : "", ctl_credits(*amount, ctl->pool));
    else
        printf("balance of %s: %s credits\n", u->email, ctl_credits(balance, ctl->pool));
}

static int balance_add(ctl_t *ctl)
{
    prov_user_t *u = NULL;
    prov_micro_t amount = 0, after = 0;
    apr_status_t rv;
    int rc = ctl_parse_credits(ctl, &amount, ctl->argv[1], 1, "the amount");

    if (rc != CTL_OK)
        return rc;
    if (amount == 0)
        return ctl_usage(ctl, "amount must not be zero");
    if ((rc = ctl_find_user(ctl, &u, ctl->argv[0])) != CTL_OK)
        return rc;
    rv = prov_balance_add(&after, ctl->store, u->id, amount, ctl_opt(ctl, "reason"), ctl->pool);
    if (rv == APR_ERANGE)
        return ctl_fail(ctl, "the balance of %s would overflow", u->email);
    if (rv == APR_EINVAL)
        return ctl_usage(ctl, "the amount is too large or the reason is longer than "
                         "1000 characters");
    if (rv != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "change the balance");
    print_balance(ctl, u, after, &amount);
    return CTL_OK;
}

static int balance_show(ctl_t *ctl)
{
    prov_user_t *u = NULL;
    int rc = ctl_find_user(ctl, &u, ctl->argv[0]);
    if (rc != CTL_OK)
        return rc;
    return ctl_account_print(ctl, u);
}

static const ctl_opt_t add_opts[] = {
    { "reason", "TEXT", 0, "why (kept with the movement, e.g. an invoice number)" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_balance_cmds[] = {
    { "add", "USER CREDITS", 2, 2, add_opts, CTL_DB_READY, balance_add,
      "add credits to a user's prepaid balance (negative to correct)",
      "CREDITS is a decimal (12.5); a negative amount corrects a mistake and\n"
      "may leave the balance below zero. Every movement is recorded." },
    { "show", "USER", 1, 1, NULL, CTL_DB_READY, balance_show,
      "show a user's balance, plan and both windows' use",
      "Prints the prepaid balance, what requests in flight hold of it, the\n"
      "active plan and, for each of its windows, the credits used of the quota,\n"
      "the percentage and when capacity returns (as a duration and a UTC time)." },
    { NULL }
};
