/* providerctl_hold.c: the `hold` group: what requests in flight hold (their
 * reservations: ledger rows still `reserved`) and what server processes
 * hold (leases), with user, key, model, amount, funding and age; and giving
 * holds back by hand: one by id (its row becomes `released`, a lease is
 * deleted), or every one older than the hold timeout (`expired`, as the
 * server's own expiry does). Either way the balance or the plan's windows
 * get back exactly what was held. */
#include <stdio.h>
#include <string.h>
#include "providerctl.h"
#include "prov_billing.h"

static json_object *hold_json(const prov_hold_t *h, apr_int64_t now)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_string(h->id));
    json_object_object_add(o, "kind", json_object_new_string(h->lease ? "lease" : "request"));
    json_object_object_add(o, "user_id", json_object_new_int64(h->user_id));
    json_object_object_add(o, "email", ctl_json_str(h->email));
    json_object_object_add(o, "key_id", json_object_new_int64(h->key_id));
    json_object_object_add(o, "model", ctl_json_str(h->model));
    json_object_object_add(o, "amount", prov_json_credits(h->amount));
    json_object_object_add(o, "source", json_object_new_string(h->from_plan ? "plan"
                                                                            : "balance"));
    json_object_object_add(o, "since", ctl_json_time(h->since));
    json_object_object_add(o, "age_seconds", json_object_new_int64(now > h->since
                                                                   ? now - h->since : 0));
    return o;
}

static int hold_list(ctl_t *ctl)
{
    apr_array_header_t *holds = NULL;
    prov_user_t *u = NULL;
    apr_int64_t now = prov_now();
    apr_status_t rv;
    int i, rc;

    if (ctl_opt(ctl, "user") && (rc = ctl_find_user(ctl, &u, ctl_opt(ctl, "user"))) != CTL_OK)
        return rc;
    if ((rv = prov_hold_list(&holds, ctl->store, u ? u->id : 0, ctl->pool)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the holds");
    if (ctl->json) {
        json_object *a = json_object_new_array();
        for (i = 0; i < holds->nelts; i++)
            json_object_array_add(a, hold_json(&APR_ARRAY_IDX(holds, i, prov_hold_t), now));
        ctl_json_print(a);
        return CTL_OK;
    }
    {
        ctl_table_t *t = ctl_table_make(ctl->pool, 8, "ID", "KIND", "USER", "KEY", "MODEL",
                                        "AMOUNT", "SOURCE", "AGE");
        for (i = 0; i < holds->nelts; i++) {
            const prov_hold_t *h = &APR_ARRAY_IDX(holds, i, prov_hold_t);
            ctl_table_row(t, h->id, h->lease ? "lease" : "request",
                          h->email ? h->email : prov_i64(h->user_id, ctl->pool),
                          prov_i64(h->key_id, ctl->pool), h->model,
                          ctl_credits(h->amount, ctl->pool), h->from_plan ? "plan" : "balance",
                          ctl_duration(now > h->since ? now - h->since : 0, ctl->pool));
        }
        ctl_table_print(t, "no holds in flight");
    }
    return CTL_OK;
}

/* Gives back every hold and lease older than the timeout (a sweep takes at
 * most 100 of each at a time). */
static int release_stale(ctl_t *ctl, const prov_store_source_t *src)
{
    apr_int64_t secs = PROV_HOLD_TIMEOUT_DEFAULT;
    apr_array_header_t *before = NULL, *after = NULL;
    const char *o = ctl_opt(ctl, "older-than");
    apr_status_t rv;
    int n = 0, holds = 0, leases = 0, i, rounds;

    if (o && (prov_parse_i64(&secs, o) != APR_SUCCESS || secs <= 0))
        return ctl_usage(ctl, "'%s' is not a number of seconds (--older-than)", o);
    if ((rv = prov_hold_list(&before, ctl->store, 0, ctl->pool)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the holds");
    prov_queue_configure(secs);
    for (rounds = 0; rounds < 10000; rounds++) {
        if ((rv = prov_queue_expire(&n, src, prov_now(), ctl->pool)) != APR_SUCCESS)
            return ctl_db_fail(ctl, rv, "release the stale holds");
        holds += n;
        if (n < 100)
            break;
    }
    if ((rv = prov_hold_list(&after, ctl->store, 0, ctl->pool)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the holds");
    for (i = 0; i < before->nelts; i++)
        leases += APR_ARRAY_IDX(before, i, prov_hold_t).lease;
    for (i = 0; i < after->nelts; i++)
        leases -= APR_ARRAY_IDX(after, i, prov_hold_t).lease;
    if (ctl->json) {
        json_object *j = json_object_new_object();
        json_object_object_add(j, "expired_holds", json_object_new_int(holds));
        json_object_object_add(j, "expired_leases", json_object_new_int(leases));
        json_object_object_add(j, "older_than_seconds", json_object_new_int64(secs));
        ctl_json_print(j);
    }
    else {
        printf("expired %d hold(s) and %d lease(s) older than %s\n", holds, leases,
               ctl_duration(secs, ctl->pool));
    }
    return CTL_OK;
}

static int hold_release(ctl_t *ctl)
{
    prov_store_source_t *src = prov_store_source_fixed(ctl->store, ctl->pool);
    apr_array_header_t *holds = NULL;
    const prov_hold_t *h = NULL;
    const char *id = ctl->argc ? ctl->argv[0] : NULL;
    apr_status_t rv;
    int found = 0, i;

    if (!id == !ctl_flag(ctl, "stale"))
        return ctl_usage(ctl, "give either a hold's ID or --stale");
    if (ctl_flag(ctl, "stale"))
        return release_stale(ctl, src);
    if (ctl_opt(ctl, "older-than"))
        return ctl_usage(ctl, "--older-than goes with --stale");
    if ((rv = prov_hold_list(&holds, ctl->store, 0, ctl->pool)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the holds");
    for (i = 0; i < holds->nelts && !h; i++) {
        if (!strcmp(APR_ARRAY_IDX(holds, i, prov_hold_t).id, id))
            h = &APR_ARRAY_IDX(holds, i, prov_hold_t);
    }
    if (h && (rv = prov_hold_release(&found, src, id, PROV_STATUS_RELEASED, prov_now(),
                                     ctl->pool)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "release the hold");
    if (!found)
        return ctl_fail(ctl, "no hold or lease '%s' in flight (settled, expired or unknown; "
                        "see '" PROG " hold list')", id);
    if (ctl->json) {
        json_object *o = hold_json(h, prov_now());
        json_object_object_add(o, "released", json_object_new_boolean(1));
        ctl_json_print(o);
    }
    else {
        printf("released %s %s: %s credits back to %s (%s)\n", h->lease ? "lease" : "hold", id,
               ctl_credits(h->amount, ctl->pool),
               h->email ? h->email : prov_i64(h->user_id, ctl->pool),
               h->from_plan ? "the plan's windows" : "the balance");
    }
    return CTL_OK;
}

static const ctl_opt_t list_opts[] = {
    { "user", "USER", 0, "only this user's holds" },
    { NULL, NULL, 0, NULL }
};

static const ctl_opt_t release_opts[] = {
    { "stale", NULL, 0, "every hold and lease older than the hold timeout" },
    { "older-than", "SECONDS", 0, "the hold timeout for --stale (default 3600, as "
      "ProviderHoldTimeout)" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_hold_cmds[] = {
    { "list", "", 0, 0, list_opts, CTL_DB_READY, hold_list,
      "list the holds in flight: requests' reservations and server processes' leases",
      "A request holds its worst-case cost from its reservation until it is\n"
      "settled (kind request, ID = its request id, as in x-request-id). Under\n"
      "load a server process holds a lease for a key and model, from which its\n"
      "requests draw (kind lease). AGE is the time since the hold was taken (a\n"
      "lease: since it was last renewed); holds older than ProviderHoldTimeout\n"
      "belong to a process that died and are released by the server itself." },
    { "release", "[ID]", 0, 1, release_opts, CTL_DB_READY, hold_release,
      "give back one hold or lease, or every stale one",
      "With ID (a request id or a lease id from 'hold list'), gives that hold\n"
      "back: the request's ledger row becomes 'released' without a charge, or\n"
      "the lease is deleted; the balance or the plan's windows get back exactly\n"
      "what was held. A request whose hold was released and that still\n"
      "completes is not charged: release only what is stale.\n"
      "With --stale, every hold and lease older than --older-than seconds\n"
      "(default 3600) is released as 'expired', as the server does by itself." },
    { NULL }
};
