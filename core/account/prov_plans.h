/* prov_plans.h: plans (a quota per rolling 5-hour and per rolling 7-day
 * window, in micro-credits) and the subscriptions that give an account a
 * plan from a start until an optional end, or until cancelled. */
#ifndef PROV_PLANS_H
#define PROV_PLANS_H

#include "prov_common.h"
#include "prov_store.h"

typedef struct prov_plan_t {
    apr_int64_t id;
    const char *name;
    prov_micro_t quota_5h;
    prov_micro_t quota_7d;
    apr_int64_t created_at;
} prov_plan_t;

typedef struct prov_subscription_t {
    apr_int64_t id;
    apr_int64_t user_id;
    apr_int64_t plan_id;
    const char *plan_name;
    prov_micro_t quota_5h;
    prov_micro_t quota_7d;
    apr_int64_t starts_at;
    apr_int64_t until_at;       /* 0 = open-ended */
    apr_int64_t cancelled_at;   /* 0 = not cancelled */
} prov_subscription_t;

/* Plan names: 1-64 of [A-Za-z0-9._-]. Quotas > 0. APR_EEXIST on a duplicate
 * name, APR_EINVAL on a bad name or quota. */
apr_status_t prov_plan_add(prov_plan_t **plan, prov_store_t *s, const char *name,
                           prov_micro_t quota_5h, prov_micro_t quota_7d, apr_pool_t *p);
/* ref is a numeric id or a name; APR_NOTFOUND. */
apr_status_t prov_plan_find(prov_plan_t **plan, prov_store_t *s, const char *ref, apr_pool_t *p);
/* All plans (prov_plan_t*) by name. */
apr_status_t prov_plan_list(apr_array_header_t **plans, prov_store_t *s, apr_pool_t *p);
/* Changes the quotas (a value < 0 leaves it as is). */
apr_status_t prov_plan_set(prov_store_t *s, apr_int64_t plan_id, prov_micro_t quota_5h,
                           prov_micro_t quota_7d, apr_pool_t *p);

/* Gives the user the plan from now until until_at (0 = open-ended), ending
 * (cancelling) any subscription active now, in one transaction. */
apr_status_t prov_subscription_set(prov_subscription_t **sub, prov_store_t *s,
                                   apr_int64_t user_id, apr_int64_t plan_id,
                                   apr_int64_t until_at, apr_int64_t now, apr_pool_t *p);
/* The subscription active at now (started, not past until_at, not
 * cancelled); APR_NOTFOUND when none. */
apr_status_t prov_subscription_active(prov_subscription_t **sub, prov_store_t *s,
                                      apr_int64_t user_id, apr_int64_t now, apr_pool_t *p);
/* Cancels the active subscription; APR_NOTFOUND when none. */
apr_status_t prov_subscription_cancel(prov_store_t *s, apr_int64_t user_id, apr_int64_t now,
                                      apr_pool_t *p);

#endif
