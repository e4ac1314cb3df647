/* prov_plans.c: plans and subscriptions as the administrator keeps them. A
 * plan is a name and two quotas in micro-credits (one per rolling 5-hour
 * window, one per rolling 7-day window); a subscription gives an account one
 * plan from a start until an optional end, or until cancelled. Giving a user a
 * new plan ends the one active now in the same write transaction, so that an
 * account never has two active subscriptions. The spend engine (prov_billing.c)
 * reads the windows' use; this file only says which plan applies and when.
 * Duplicates are found by a select inside the write transaction (as in
 * prov_user.c), with a re-check after a failed insert for PostgreSQL, whose
 * BEGIN takes no write lock. */
#include <string.h>
#include <apr_lib.h>
#include "prov_plans.h"
#include "prov_money.h"
#include "prov_log.h"

#define PLAN_NAME_MAX 64

static int plan_name_valid(const char *n)
{
    apr_size_t i;
    if (!n || !*n)
        return 0;
    for (i = 0; n[i]; i++) {
        if (i >= PLAN_NAME_MAX)
            return 0;
        if (!apr_isalnum(n[i]) && !strchr("._-", n[i]))
            return 0;
    }
    return 1;
}

/* A name made only of digits would be read back as an id by prov_plan_find. */
static int all_digits(const char *n)
{
    for (; *n; n++) {
        if (!apr_isdigit(*n))
            return 0;
    }
    return 1;
}

static int quota_valid(prov_micro_t q)
{
    return q > 0 && q <= PROV_AMOUNT_MAX;
}

/* PLAN_COLS: id, name, quota_5h, quota_7d, created_at */
static prov_plan_t *plan_from_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_plan_t *pl = apr_pcalloc(p, sizeof(*pl));
    const char *name = prov_store_get(s, row, 1);
    pl->id = prov_store_get_i64(s, row, 0, 0);
    pl->name = apr_pstrdup(p, name ? name : "");
    pl->quota_5h = prov_store_get_i64(s, row, 2, 0);
    pl->quota_7d = prov_store_get_i64(s, row, 3, 0);
    pl->created_at = prov_store_get_i64(s, row, 4, 0);
    return pl;
}

/* SUB_COLS: s.id, s.user_id, s.plan_id, p.name, p.quota_5h, p.quota_7d,
 * s.starts_at, s.until_at, s.cancelled_at */
static prov_subscription_t *sub_from_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_subscription_t *sub = apr_pcalloc(p, sizeof(*sub));
    const char *name = prov_store_get(s, row, 3);
    sub->id = prov_store_get_i64(s, row, 0, 0);
    sub->user_id = prov_store_get_i64(s, row, 1, 0);
    sub->plan_id = prov_store_get_i64(s, row, 2, 0);
    sub->plan_name = apr_pstrdup(p, name ? name : "");
    sub->quota_5h = prov_store_get_i64(s, row, 4, 0);
    sub->quota_7d = prov_store_get_i64(s, row, 5, 0);
    sub->starts_at = prov_store_get_i64(s, row, 6, 0);
    sub->until_at = prov_store_get_i64(s, row, 7, 0);
    sub->cancelled_at = prov_store_get_i64(s, row, 8, 0);
    return sub;
}

static apr_status_t plan_by_id(prov_plan_t **pl, prov_store_t *s, apr_int64_t id, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select_one(&row, s, "plan_by_id", PROV_ARGS(prov_i64(id, p)), p);
    if (rv == APR_SUCCESS)
        *pl = plan_from_row(s, row, p);
    return rv;
}

/* ---- plans --------------------------------------------------------------- */

apr_status_t prov_plan_add(prov_plan_t **plan, prov_store_t *s, const char *name,
                           prov_micro_t quota_5h, prov_micro_t quota_7d, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_int64_t now = prov_now(), id;
    apr_status_t rv;

    if (!plan_name_valid(name) || all_digits(name) || !quota_valid(quota_5h)
        || !quota_valid(quota_7d))
        return APR_EINVAL;
    rv = prov_store_begin(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = prov_store_select_one(&row, s, "plan_by_name", PROV_ARGS(name), p);
    if (rv == APR_SUCCESS) {
        prov_store_rollback(s, p);
        return APR_EEXIST;
    }
    if (rv != APR_NOTFOUND) {
        prov_store_rollback(s, p);
        return rv;
    }
    rv = prov_store_select_one(&row, s, "plan_add",
                    PROV_ARGS(name, prov_i64(quota_5h, p), prov_i64(quota_7d, p),
                              prov_i64(now, p)), p);
    if (rv == APR_NOTFOUND)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS) {
        prov_store_rollback(s, p);
        if (prov_store_select_one(&row, s, "plan_by_name", PROV_ARGS(name), p) == APR_SUCCESS)
            rv = APR_EEXIST;
        return rv;
    }
    id = prov_store_get_i64(s, row, 0, 0);
    rv = prov_store_commit(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV02301: plan %" APR_INT64_T_FMT " (%s) added", id, name);
    if (plan) {
        prov_plan_t *pl = apr_pcalloc(p, sizeof(*pl));
        pl->id = id;
        pl->name = apr_pstrdup(p, name);
        pl->quota_5h = quota_5h;
        pl->quota_7d = quota_7d;
        pl->created_at = now;
        *plan = pl;
    }
    return APR_SUCCESS;
}

apr_status_t prov_plan_find(prov_plan_t **plan, prov_store_t *s, const char *ref, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    apr_int64_t id;
    apr_status_t rv;

    if (!ref || !*ref)
        return APR_NOTFOUND;
    if (all_digits(ref)) {
        if (prov_parse_i64(&id, ref) != APR_SUCCESS || id <= 0)
            return APR_NOTFOUND;
        return plan_by_id(plan, s, id, p);
    }
    if (!plan_name_valid(ref))
        return APR_NOTFOUND;
    rv = prov_store_select_one(&row, s, "plan_by_name", PROV_ARGS(ref), p);
    if (rv == APR_SUCCESS)
        *plan = plan_from_row(s, row, p);
    return rv;
}

/* A row of plan_list as the list's entity. */
static void *plan_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    return plan_from_row(s, row, p);
}

apr_status_t prov_plan_list(apr_array_header_t **plans, prov_store_t *s, apr_pool_t *p)
{
    return prov_store_list(plans, s, "plan_list", plan_row, p);
}

apr_status_t prov_plan_set(prov_store_t *s, apr_int64_t plan_id, prov_micro_t quota_5h,
                           prov_micro_t quota_7d, apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv;

    if ((quota_5h >= 0 && !quota_valid(quota_5h)) || (quota_7d >= 0 && !quota_valid(quota_7d)))
        return APR_EINVAL;
    if (quota_5h < 0 && quota_7d < 0)
        return APR_EINVAL;
    rv = prov_store_exec(s, &n, "plan_set",
                         PROV_ARGS(quota_5h >= 0 ? prov_i64(quota_5h, p) : NULL,
                                   quota_7d >= 0 ? prov_i64(quota_7d, p) : NULL,
                                   prov_i64(plan_id, p)), p);
    if (rv != APR_SUCCESS)
        return rv;
    if (n == 0)
        return APR_NOTFOUND;
    prov_log(PROV_LOG_INFO, 0, "PROV02302: plan %" APR_INT64_T_FMT " quotas changed", plan_id);
    return APR_SUCCESS;
}

/* ---- subscriptions ------------------------------------------------------- */

apr_status_t prov_subscription_set(prov_subscription_t **sub, prov_store_t *s,
                                   apr_int64_t user_id, apr_int64_t plan_id,
                                   apr_int64_t until_at, apr_int64_t now, apr_pool_t *p)
{
    prov_plan_t *pl = NULL;
    apr_dbd_row_t *row = NULL;
    const char *snow = prov_i64(now, p);
    apr_int64_t id;
    int n = 0;
    apr_status_t rv;

    if (user_id <= 0 || plan_id <= 0 || until_at < 0 || (until_at && until_at <= now))
        return APR_EINVAL;
    rv = prov_store_begin(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    rv = plan_by_id(&pl, s, plan_id, p);
    if (rv != APR_SUCCESS)
        goto fail;
    rv = prov_store_select_one(&row, s, "user_by_id", PROV_ARGS(prov_i64(user_id, p)), p);
    if (rv != APR_SUCCESS)
        goto fail;
    rv = prov_store_exec(s, &n, "sub_cancel",
                         PROV_ARGS(snow, prov_i64(user_id, p), snow, snow), p);
    if (rv != APR_SUCCESS)
        goto fail;
    rv = prov_store_select_one(&row, s, "sub_add",
                    PROV_ARGS(prov_i64(user_id, p), prov_i64(plan_id, p), snow,
                              until_at ? prov_i64(until_at, p) : NULL), p);
    if (rv == APR_NOTFOUND)
        rv = APR_EGENERAL;
    if (rv != APR_SUCCESS)
        goto fail;
    id = prov_store_get_i64(s, row, 0, 0);
    rv = prov_store_commit(s, p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_log(PROV_LOG_INFO, 0, "PROV02303: user %" APR_INT64_T_FMT " subscribed to plan %s"
             "%s", user_id, pl->name, n ? " (the previous subscription ended)" : "");
    if (sub) {
        prov_subscription_t *ns = apr_pcalloc(p, sizeof(*ns));
        ns->id = id;
        ns->user_id = user_id;
        ns->plan_id = plan_id;
        ns->plan_name = pl->name;
        ns->quota_5h = pl->quota_5h;
        ns->quota_7d = pl->quota_7d;
        ns->starts_at = now;
        ns->until_at = until_at;
        *sub = ns;
    }
    return APR_SUCCESS;

fail:
    prov_store_rollback(s, p);
    return rv;
}

apr_status_t prov_subscription_active(prov_subscription_t **sub, prov_store_t *s,
                                      apr_int64_t user_id, apr_int64_t now, apr_pool_t *p)
{
    apr_dbd_row_t *row = NULL;
    const char *snow = prov_i64(now, p);
    apr_status_t rv = prov_store_select_one(&row, s, "sub_active",
                                 PROV_ARGS(prov_i64(user_id, p), snow, snow), p);
    if (rv == APR_SUCCESS)
        *sub = sub_from_row(s, row, p);
    return rv;
}

apr_status_t prov_subscription_cancel(prov_store_t *s, apr_int64_t user_id, apr_int64_t now,
                                      apr_pool_t *p)
{
    const char *snow = prov_i64(now, p);
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "sub_cancel",
                                      PROV_ARGS(snow, prov_i64(user_id, p), snow, snow), p);
    if (rv != APR_SUCCESS)
        return rv;
    if (n == 0)
        return APR_NOTFOUND;
    prov_log(PROV_LOG_INFO, 0, "PROV02304: subscription of user %" APR_INT64_T_FMT
             " cancelled", user_id);
    return APR_SUCCESS;
}
