/* prov_batch_reserve.c: a reservation inside a batch. The user must not be
 * blocked, the key still live with the secret the request showed, the model
 * enabled; then the hold is checked against the key's rolling week (when it
 * has a budget), the plan's 5-hour and 7-day windows, then the balance, each
 * as the database has it plus what earlier operations of the batch took.
 * A request whose output cap the service chooses (op->hold_min below
 * op->hold) is held for less when a limit cannot hold it all: for as much as
 * the key's week and the more generous of the plan and the balance have
 * room for, down to hold_min. A refusal says why and when capacity returns;
 * a hold writes the reserved ledger row (with the journal of the process
 * that took it and the charge of its input estimate, for the replay of a
 * process that dies under it) and adds itself to the books. */
#include <stdarg.h>
#include <string.h>
#include "prov_batch_int.h"

static prov_error_t *refuse(prov_op_t *op, prov_errcode_e code, apr_int64_t retry_after,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static prov_error_t *refuse(prov_op_t *op, prov_errcode_e code, apr_int64_t retry_after,
                            const char *fmt, ...)
{
    prov_error_t *e = prov_error_make(op->p, code, NULL, "%s", "");
    va_list ap;
    va_start(ap, fmt);
    e->message = apr_pvsprintf(op->p, fmt, ap);
    va_end(ap);
    e->retry_after = retry_after > 0 ? retry_after : 0;
    return e;
}

static const char *when(apr_int64_t seconds, apr_pool_t *p)
{
    if (seconds <= 0)
        return "";
    if (seconds < 120)
        return apr_psprintf(p, " Capacity returns in %" APR_INT64_T_FMT " seconds.", seconds);
    if (seconds < 7200)
        return apr_psprintf(p, " Capacity returns in %" APR_INT64_T_FMT " minutes.",
                            (seconds + 59) / 60);
    return apr_psprintf(p, " Capacity returns in %" APR_INT64_T_FMT " hours.",
                        (seconds + 3599) / 3600);
}

/* How a refusal names the hold: a request whose cap the service chooses
 * needs at least hold_min; another may cost up to its hold. */
static const char *cost_words(const prov_op_t *op)
{
    return op->hold_min < op->hold ? "needs at least" : "may cost up to";
}

/* The user is not blocked, the key still live with the request's secret,
 * the model enabled (else op->err). */
static apr_status_t admit(acct_t **pa, keyw_t **pk, batch_t *b, prov_op_t *op)
{
    const prov_auth_t *auth = op->auth;
    int enabled = 0;
    apr_status_t rv;

    if ((rv = prov_batch_account(pa, b, auth->user_id)) != APR_SUCCESS)
        return rv;
    if ((*pa)->blocked) {
        op->err = refuse(op, PROV_E_USER_BLOCKED, 0,
                         "This account is blocked. Contact the service's administrator.");
        return APR_SUCCESS;
    }
    if ((rv = prov_batch_key(pk, b, auth->key_id)) != APR_SUCCESS)
        return rv;
    /* The caller's lookup may come from a cache: the key must still be live
     * with the same secret, and its budget is the one the database has. */
    if (!(*pk)->live || !(*pk)->hash || (auth->key_hash && strcmp((*pk)->hash, auth->key_hash))) {
        op->err = refuse(op, PROV_E_INVALID_API_KEY, 0, "Invalid API key.");
        return APR_SUCCESS;
    }
    if ((rv = prov_batch_model(&enabled, b, op->model_id)) != APR_SUCCESS)
        return rv;
    if (!enabled) {
        op->err = refuse(op, PROV_E_MODEL_NOT_FOUND, 0,
                         "The model does not exist or is not available; GET /v1/models lists "
                         "the models you can use.");
        return APR_SUCCESS;
    }
    return APR_SUCCESS;
}

/* The key's rolling week has room for *hold, or for less down to hold_min
 * (*hold lowered; else op->err, or op->retry while a lease of the account is
 * held here). */
static apr_status_t check_budget(prov_micro_t *phold, batch_t *b, prov_op_t *op, keyw_t *k)
{
    prov_micro_t hold = *phold;
    apr_pool_t *p = op->p;
    apr_int64_t ra;
    apr_status_t rv;

    if (!k->has_budget || prov_i64_add_sat(k->w.sum, hold) <= k->budget)
        return APR_SUCCESS;
    if (op->retry_ok) {
        op->retry = 1;               /* first return this process's lease */
        return APR_SUCCESS;
    }
    if (prov_i64_add_sat(k->w.sum, op->hold_min) <= k->budget) {
        *phold = prov_i64_sub_sat(k->budget, k->w.sum);
        return APR_SUCCESS;
    }
    hold = op->hold_min;
    if ((rv = prov_window_list(&k->w, b->s, b->p)) != APR_SUCCESS)
        return rv;
    ra = prov_window_retry_after(&k->w, hold, k->budget, b->now);
    op->err = refuse(op, PROV_E_KEY_BUDGET_EXCEEDED, ra,
        "This API key's weekly credit budget is used up: %s of %s credits in the last "
        "7 days, and this request %s %s. Raise this key's budget in the cabinet "
        "(/cabinet), or wait: capacity returns as earlier usage leaves the 7-day window; "
        "the budget limits this key even where the plan or the balance has room.%s",
        prov_money_format(k->w.sum, p), prov_money_format(k->budget, p),
        cost_words(op), prov_money_format(hold, p), ra > 0 ? when(ra, p)
            : " This request alone costs more than the whole budget.");
    return APR_SUCCESS;
}

/* The room of the plan's windows (-1 without a plan). */
static prov_micro_t plan_room(const acct_t *a)
{
    prov_micro_t r5, r7;
    if (!a->plan.has_plan)
        return -1;
    r5 = prov_i64_sub_sat(a->plan.quota_5h, a->w5.sum);
    r7 = prov_i64_sub_sat(a->plan.quota_7d, a->w7.sum);
    return r5 < r7 ? r5 : r7;
}

/* Less than *hold, down to hold_min, from the more generous of the plan and
 * the balance: non-zero when one has room for hold_min (*hold lowered). */
static int lower_hold(prov_micro_t *hold, int *from_plan, const prov_op_t *op, const acct_t *a)
{
    prov_micro_t plan = plan_room(a), room;
    *from_plan = a->plan.has_plan && plan >= a->balance;
    room = *from_plan ? plan : a->balance;
    if (op->hold_min >= *hold || room < op->hold_min)
        return 0;
    *hold = room < *hold ? room : *hold;
    return 1;
}

/* Who pays: the plan when both of its windows have room, else the balance,
 * else the more generous of them for less (lower_hold); else op->err, or
 * op->retry while a lease of the account is held here. */
static apr_status_t choose_funds(int *from_plan, prov_micro_t *phold, batch_t *b, prov_op_t *op,
                                 acct_t *a)
{
    prov_micro_t hold = *phold;
    apr_pool_t *p = op->p;
    apr_status_t rv;

    if (a->plan.has_plan && prov_i64_add_sat(a->w5.sum, hold) <= a->plan.quota_5h
        && prov_i64_add_sat(a->w7.sum, hold) <= a->plan.quota_7d) {
        *from_plan = 1;
        return APR_SUCCESS;
    }
    if (a->balance >= hold) {
        *from_plan = 0;
        return APR_SUCCESS;
    }
    if (op->retry_ok) {
        op->retry = 1;
        return APR_SUCCESS;
    }
    if (lower_hold(phold, from_plan, op, a))
        return APR_SUCCESS;
    hold = op->hold_min;
    if (a->plan.has_plan) {
        apr_int64_t r5, r7, ra;
        if ((rv = prov_window_list(&a->w5, b->s, b->p)) != APR_SUCCESS
            || (rv = prov_window_list(&a->w7, b->s, b->p)) != APR_SUCCESS)
            return rv;
        r5 = prov_window_retry_after(&a->w5, hold, a->plan.quota_5h, b->now);
        r7 = prov_window_retry_after(&a->w7, hold, a->plan.quota_7d, b->now);
        ra = (r5 < 0 || r7 < 0) ? -1 : (r5 > r7 ? r5 : r7);
        op->err = refuse(op, PROV_E_QUOTA_EXCEEDED, ra,
            "The plan's quota is used up: %s of %s credits in the last 5 hours, %s of %s "
            "in the last 7 days, and this request %s %s; the balance (%s) "
            "does not cover it either.%s",
            prov_money_format(a->w5.sum, p), prov_money_format(a->plan.quota_5h, p),
            prov_money_format(a->w7.sum, p), prov_money_format(a->plan.quota_7d, p),
            cost_words(op), prov_money_format(hold, p), prov_money_format(a->balance, p),
            ra > 0 ? when(ra, p) : " This request alone costs more than the plan's quota.");
    }
    else {
        op->err = refuse(op, PROV_E_INSUFFICIENT_CREDITS, 0,
            "Not enough credits: this request %s %s credits and the balance is "
            "%s. Add credits, or lower max_tokens.",
            cost_words(op), prov_money_format(hold, p), prov_money_format(a->balance, p));
    }
    return APR_SUCCESS;
}

/* Writes the reserved row, adds the hold to the books and gives the
 * caller its reservation (op->out). */
static apr_status_t take_hold(batch_t *b, prov_op_t *op, acct_t *a, keyw_t *k, int from_plan,
                             prov_micro_t hold)
{
    const prov_auth_t *auth = op->auth;
    apr_pool_t *p = op->p;
    prov_reservation_t *r;
    apr_status_t rv;

    rv = prov_store_exec(b->s, NULL, "bill_ledger_reserve",
        PROV_ARGS(op->request_id, prov_i64(auth->user_id, b->p), prov_i64(auth->key_id, b->p),
                  prov_i64(op->model_id, b->p), op->transport, prov_i64(hold, b->p),
                  from_plan ? "plan" : "balance", prov_i64(b->now, b->p), op->hold_owner,
                  prov_i64(op->floor, b->p)), b->p);
    if (rv != APR_SUCCESS)
        return rv;
    prov_batch_usage(b, auth->user_id, auth->key_id, b->now, hold, from_plan, 1);
    prov_window_add(&k->w, b->now, hold, b->p);
    if (from_plan) {
        prov_window_add(&a->w5, b->now, hold, b->p);
        prov_window_add(&a->w7, b->now, hold, b->p);
    }
    else {
        a->balance = prov_i64_sub_sat(a->balance, hold);
        prov_batch_balance(b, auth->user_id, prov_i64_sub_sat(0, hold));
    }

    r = apr_pcalloc(p, sizeof(*r));
    r->row.request_id = apr_pstrdup(p, op->request_id);
    r->row.user_id = auth->user_id;
    r->row.key_id = auth->key_id;
    r->row.model_id = op->model_id;
    r->row.transport = apr_pstrdup(p, op->transport);
    r->row.hold = hold;
    r->row.floor = op->floor;
    r->row.from_plan = from_plan;
    r->row.created_at = b->now;
    if (a->plan.has_plan) {
        r->windows = a->plan;
        r->windows.plan_name = a->plan.plan_name ? apr_pstrdup(p, a->plan.plan_name) : NULL;
        r->windows.used_5h = a->w5.sum;
        r->windows.used_7d = a->w7.sum;
        r->windows.reset_5h = prov_window_reset(&a->w5, b->now);
        r->windows.reset_7d = prov_window_reset(&a->w7, b->now);
    }
    op->out = r;
    return APR_SUCCESS;
}

apr_status_t prov_batch_reserve(batch_t *b, prov_op_t *op)
{
    acct_t *a = NULL;
    keyw_t *k = NULL;
    prov_micro_t hold = op->hold;
    int from_plan = 0;
    apr_status_t rv;

    if (op->hold_min <= 0 || op->hold_min > op->hold)
        op->hold_min = op->hold;     /* not set: the hold as it is */
    /* Each step decides (a refusal, or a retry once a lease is returned)
     * or leaves it to the next, the hold perhaps lowered. */
    if ((rv = admit(&a, &k, b, op)) != APR_SUCCESS || op->err)
        return rv;
    if ((rv = check_budget(&hold, b, op, k)) != APR_SUCCESS || op->err || op->retry)
        return rv;
    if ((rv = choose_funds(&from_plan, &hold, b, op, a)) != APR_SUCCESS || op->err || op->retry)
        return rv;
    return take_hold(b, op, a, k, from_plan, hold);
}
