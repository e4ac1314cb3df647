/* prov_cabinet_requests.c: GET /v1/requests, the user's own recent requests
 * one by one, newest first, as the ledger holds them: time (UTC), key (id
 * and name), model, transport, status (the ledger's closed set, with its
 * meaning), the four token kinds, credits and the request id a user quotes
 * to support (the x-request-id of the answer). Filtered by key and status,
 * paged by the ledger row id (`before`, the answer's `next`). Only requests
 * that reached a reservation have a row: a refusal before it (401, 402,
 * 404, 429 of the checks in front of the reservation) is not in the ledger
 * and not here; nor is a row that ProviderLedgerRetention has removed
 * (its figures stay in the daily rollups the usage reports read). */
#include <stdlib.h>
#include <string.h>
#include "prov_cabinet_int.h"
#include "prov_ledger.h"

static apr_status_t bad(prov_error_t **err, const char *field, const char *msg, apr_pool_t *p)
{
    *err = prov_error_make(p, PROV_E_INVALID_REQUEST, field, "%s", msg);
    return APR_EINVAL;
}

/* 1-18 digits, not 0; 0 when s is not one. */
static apr_int64_t positive(const char *s)
{
    apr_size_t n = strlen(s);
    apr_int64_t v = 0;
    if (n < 1 || n > 18 || strspn(s, "0123456789") != n)
        return 0;
    for (; *s; s++)
        v = v * 10 + (*s - '0');
    return v;
}

apr_status_t prov_cabinet_requests_args(prov_cabinet_requests_q_t *q, prov_error_t **err,
                                        const char *key, const char *status, const char *limit,
                                        const char *before, apr_pool_t *p)
{
    prov_status_e st;
    memset(q, 0, sizeof(*q));
    q->limit = PROV_CABINET_REQUESTS_DEFAULT;
    q->status = "";
    if (key && *key && !(q->key_id = positive(key)))
        return bad(err, "key", "key must be a key id (digits).", p);
    if (status && *status) {
        if (prov_ledger_status_parse(&st, status) != APR_SUCCESS)
            return bad(err, "status", "status must be one of the ledger statuses (ok, "
                       "refused, error, ...; see the API reference).", p);
        q->status = prov_ledger_status_name(st);
    }
    if (limit && ((q->limit = (int)positive(limit)) < 1
                  || q->limit > PROV_CABINET_REQUESTS_MAX))
        return bad(err, "limit", apr_psprintf(p, "limit must be a whole number from 1 to %d.",
                                              PROV_CABINET_REQUESTS_MAX), p);
    if (before && !(q->before = positive(before)))
        return bad(err, "before", "before must be the next value of an earlier answer.", p);
    return APR_SUCCESS;
}

/* One row: l.id, request_id, created_at, key_id, key name, model, transport,
 * status, the four token kinds, credits, plan_credits, source. */
static json_object *request_json(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    static const char *const tok[] = { "input_tokens", "output_tokens", "cache_tokens",
                                       "reasoning_tokens" };
    json_object *o = json_object_new_object();
    const char *v;
    prov_status_e st;
    int i;
    json_object_object_add(o, "request_id", json_object_new_string(
                               (v = prov_store_get(s, row, 1)) ? v : ""));
    json_object_object_add(o, "created_at", json_object_new_string(
                               prov_cabinet_time(prov_store_get_i64(s, row, 2, 0), p)));
    json_object_object_add(o, "key_id", prov_cabinet_id(prov_store_get_i64(s, row, 3, 0), p));
    v = prov_store_get(s, row, 4);
    json_object_object_add(o, "key_name", v && *v ? json_object_new_string(v) : NULL);
    json_object_object_add(o, "model", json_object_new_string(
                               (v = prov_store_get(s, row, 5)) ? v : ""));
    json_object_object_add(o, "transport", json_object_new_string(
                               (v = prov_store_get(s, row, 6)) ? v : ""));
    v = prov_store_get(s, row, 7);
    json_object_object_add(o, "status", json_object_new_string(v ? v : ""));
    json_object_object_add(o, "status_text", v && prov_ledger_status_parse(&st, v) == APR_SUCCESS
                           ? json_object_new_string(prov_ledger_status_info(st)->meaning)
                           : NULL);
    for (i = 0; i < 4; i++)
        json_object_object_add(o, tok[i], json_object_new_int64(
                                   prov_store_get_i64(s, row, 8 + i, 0)));
    json_object_object_add(o, "credits", prov_json_credits(prov_store_get_i64(s, row, 12, 0)));
    json_object_object_add(o, "plan_credits",
                           prov_json_credits(prov_store_get_i64(s, row, 13, 0)));
    json_object_object_add(o, "source", json_object_new_string(
                               (v = prov_store_get(s, row, 14)) ? v : ""));
    return o;
}

apr_status_t prov_cabinet_requests(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                   const prov_cabinet_requests_q_t *q, apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_int64_t last = 0;
    const char *uid, *kid, *before;
    json_object *o, *a;
    int n = 0;
    apr_status_t rv;

    if (user_id <= 0 || !q || q->limit < 1 || q->limit > PROV_CABINET_REQUESTS_MAX)
        return APR_EINVAL;
    uid = prov_i64(user_id, p);
    kid = prov_i64(q->key_id, p);
    before = prov_i64(q->before, p);
    /* one more than asked: whether there is a next page */
    rv = prov_store_select(s, &res, "cabinet_requests",
                           PROV_ARGS(uid, kid, kid, q->status, q->status, before, before,
                                     apr_itoa(p, q->limit + 1)), p);
    if (rv != APR_SUCCESS)
        return rv;
    o = prov_json_own(json_object_new_object(), p);
    a = json_object_new_array();
    json_object_object_add(o, "data", a);
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        if (++n > q->limit)
            continue;           /* read to the end: the driver's cursor closes */
        last = prov_store_get_i64(s, row, 0, 0);
        json_object_array_add(a, request_json(s, row, p));
    }
    if (rv != APR_EOF)
        return rv;
    json_object_object_add(o, "next", n > q->limit ? json_object_new_string(prov_i64(last, p))
                                                   : NULL);
    *out = o;
    return APR_SUCCESS;
}
