/* prov_cabinet_requests.c: GET /v1/requests, the user's own recent requests
 * one by one, newest first: the ledger's rows (time (UTC), key (id and
 * name), model, transport, status (the ledger's closed set, with its
 * meaning), the four token kinds, credits and the request id a user quotes
 * to support, the x-request-id of the answer) merged by time with the
 * refusals before a reservation (prov_refusal.h: 401, 402, 403, 404, 429
 * of the checks in front of it; status "refused", their HTTP status and
 * error code, no tokens, no credits; one row may fold several refusals of
 * one key and code within a second: count). Filtered by key and status,
 * paged by the two tables' row ids ("L.R": `before`, the answer's
 * `next`). A row that ProviderLedgerRetention (or the refusals' 30 days)
 * has removed is not here (the ledger's figures stay in the daily rollups
 * the usage reports read). */
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

/* "L.R" (either may be 0: that table from its newest) or "L" alone. */
static int cursor(prov_cabinet_requests_q_t *q, const char *s, apr_pool_t *p)
{
    const char *dot = strchr(s, '.');
    if (!dot)
        return (q->before = positive(s)) > 0;
    q->before = strcmp(apr_pstrmemdup(p, s, (apr_size_t)(dot - s)), "0")
        ? positive(apr_pstrmemdup(p, s, (apr_size_t)(dot - s))) : 0;
    q->before_refusal = strcmp(dot + 1, "0") ? positive(dot + 1) : 0;
    return (q->before > 0 || !strncmp(s, "0.", 2))
        && (q->before_refusal > 0 || !strcmp(dot + 1, "0"));
}

/* status: a ledger status name, an HTTP status or an error code. */
static int status_arg(prov_cabinet_requests_q_t *q, const char *status)
{
    prov_status_e st;
    apr_size_t n = strlen(status);
    if (prov_ledger_status_parse(&st, status) == APR_SUCCESS) {
        q->status = prov_ledger_status_name(st);
        q->refusals = st == PROV_STATUS_REFUSED;
        return 1;
    }
    q->ledger = 0;
    if (n == 3 && strspn(status, "0123456789") == 3) {
        q->http_status = atoi(status);
        return q->http_status >= 400 && q->http_status <= 599;
    }
    if (prov_error_by_name(status)) {
        q->code = status;
        return 1;
    }
    return 0;
}

apr_status_t prov_cabinet_requests_args(prov_cabinet_requests_q_t *q, prov_error_t **err,
                                        const char *key, const char *status, const char *limit,
                                        const char *before, apr_pool_t *p)
{
    memset(q, 0, sizeof(*q));
    q->limit = PROV_CABINET_REQUESTS_DEFAULT;
    q->status = "";
    q->code = "";
    q->ledger = q->refusals = 1;
    if (key && *key && !(q->key_id = positive(key)))
        return bad(err, "key", "key must be a key id (digits).", p);
    if (status && *status && !status_arg(q, status))
        return bad(err, "status", "status must be one of the ledger statuses (ok, "
                   "refused, error, ...), an HTTP status of a refusal (402, 429, ...) or an "
                   "error code (API_KEY_RATE_LIMITED, ...; see the API reference).", p);
    if (limit && ((q->limit = (int)positive(limit)) < 1
                  || q->limit > PROV_CABINET_REQUESTS_MAX))
        return bad(err, "limit", apr_psprintf(p, "limit must be a whole number from 1 to %d.",
                                              PROV_CABINET_REQUESTS_MAX), p);
    if (before && !cursor(q, before, p))
        return bad(err, "before", "before must be the next value of an earlier answer.", p);
    return APR_SUCCESS;
}

/* The columns both tables' rows start with (after their own id): request_id,
 * created_at, key_id, key name, model, transport; a new object. */
static json_object *row_head_json(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    json_object *o = json_object_new_object();
    const char *v;
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
    return o;
}

/* One row: l.id, request_id, created_at, key_id, key name, model, transport,
 * status, the four token kinds, credits, plan_credits, source. */
static json_object *request_json(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    static const char *const tok[] = { "input_tokens", "output_tokens", "cache_tokens",
                                       "reasoning_tokens" };
    json_object *o = row_head_json(s, row, p);
    const char *v;
    prov_status_e st;
    int i;
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
    json_object_object_add(o, "http_status", NULL);
    json_object_object_add(o, "error_code", NULL);
    json_object_object_add(o, "count", json_object_new_int64(1));
    return o;
}

/* One refusal: r.id, request_id, created_at, key_id, key name, model,
 * transport, http_status, code, count. */
static json_object *refusal_json(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    static const char *const tok[] = { "input_tokens", "output_tokens", "cache_tokens",
                                       "reasoning_tokens" };
    json_object *o = row_head_json(s, row, p);
    const char *code = prov_store_get(s, row, 8);
    apr_int64_t http = prov_store_get_i64(s, row, 7, 0);
    int i;
    json_object_object_add(o, "status", json_object_new_string("refused"));
    json_object_object_add(o, "status_text", json_object_new_string(apr_psprintf(
        p, "refused by the service before it reached the gateway (HTTP %" APR_INT64_T_FMT
        " %s): no charge", http, code ? code : "")));
    for (i = 0; i < 4; i++)
        json_object_object_add(o, tok[i], json_object_new_int64(0));
    json_object_object_add(o, "credits", prov_json_credits(0));
    json_object_object_add(o, "plan_credits", prov_json_credits(0));
    json_object_object_add(o, "source", NULL);
    json_object_object_add(o, "http_status", json_object_new_int64(http));
    json_object_object_add(o, "error_code", json_object_new_string(code ? code : ""));
    json_object_object_add(o, "count", json_object_new_int64(prov_store_get_i64(s, row, 9, 1)));
    return o;
}

typedef json_object *(*row_json_fn)(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p);

/* One table's page: its rows (id, time, object), newest first. */
typedef struct side_t {
    apr_int64_t *id, *at;
    const char **rid;           /* request ids: "req_" and the time in hex first */
    json_object **o;
    int n, used;
    apr_int64_t last;           /* the cursor after what was used */
} side_t;

static apr_status_t side_read(side_t *sd, prov_store_t *s, const char *label, int nargs,
                              const char *const *args, int cap, row_json_fn make,
                              apr_pool_t *p)
{
    apr_dbd_results_t *res = NULL;
    apr_dbd_row_t *row = NULL;
    apr_status_t rv = prov_store_select(s, &res, label, nargs, args, p);
    if (rv != APR_SUCCESS)
        return rv;
    sd->id = apr_pcalloc(p, sizeof(*sd->id) * (apr_size_t)cap);
    sd->at = apr_pcalloc(p, sizeof(*sd->at) * (apr_size_t)cap);
    sd->o = apr_pcalloc(p, sizeof(*sd->o) * (apr_size_t)cap);
    sd->rid = apr_pcalloc(p, sizeof(*sd->rid) * (apr_size_t)cap);
    while ((rv = prov_store_row(s, res, &row, p)) == APR_SUCCESS) {
        if (sd->n >= cap)
            continue;           /* read to the end: the driver's cursor closes */
        sd->id[sd->n] = prov_store_get_i64(s, row, 0, 0);
        sd->at[sd->n] = prov_store_get_i64(s, row, 2, 0);
        sd->rid[sd->n] = prov_store_get(s, row, 1);
        sd->o[sd->n++] = make(s, row, p);
    }
    return rv == APR_EOF ? APR_SUCCESS : rv;
}

/* The ledger's next row is the newer: by the second, then by the request
 * ids (prov_secret_request_id: they sort by the microsecond). */
static int ledger_first(const side_t *l, const side_t *r)
{
    const char *a = l->rid[l->used], *b = r->rid[r->used];
    if (l->at[l->used] != r->at[r->used])
        return l->at[l->used] > r->at[r->used];
    return !a || !b || strcmp(a, b) >= 0;
}

static void side_use(side_t *sd, json_object *a)
{
    sd->last = sd->id[sd->used];
    json_object_array_add(a, sd->o[sd->used++]);
}

static void side_free(side_t *sd)
{
    for (; sd->used < sd->n; sd->used++)
        json_object_put(sd->o[sd->used]);
}

apr_status_t prov_cabinet_requests(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                   const prov_cabinet_requests_q_t *q, apr_pool_t *p)
{
    side_t l, r;
    const char *uid, *kid, *lim, *http;
    json_object *o, *a;
    int more;
    apr_status_t rv = APR_SUCCESS;

    if (user_id <= 0 || !q || q->limit < 1 || q->limit > PROV_CABINET_REQUESTS_MAX)
        return APR_EINVAL;
    memset(&l, 0, sizeof(l));
    memset(&r, 0, sizeof(r));
    l.last = q->before;
    r.last = q->before_refusal;
    uid = prov_i64(user_id, p);
    kid = prov_i64(q->key_id, p);
    lim = apr_itoa(p, q->limit + 1);    /* one more than asked: whether there is more */
    http = apr_itoa(p, q->http_status);
    if (q->ledger)
        rv = side_read(&l, s, "cabinet_requests",
                       PROV_ARGS(uid, kid, kid, q->status, q->status, prov_i64(q->before, p),
                                 prov_i64(q->before, p), lim), q->limit + 1, request_json, p);
    if (rv == APR_SUCCESS && q->refusals)
        rv = side_read(&r, s, "cabinet_refusals",
                       PROV_ARGS(uid, kid, kid, http, http, q->code, q->code,
                                 prov_i64(q->before_refusal, p), prov_i64(q->before_refusal, p),
                                 lim), q->limit + 1, refusal_json, p);
    if (rv != APR_SUCCESS) {
        side_free(&l);
        side_free(&r);
        return rv;
    }
    o = prov_json_own(json_object_new_object(), p);
    a = json_object_new_array();
    json_object_object_add(o, "data", a);
    while ((int)json_object_array_length(a) < q->limit && (l.used < l.n || r.used < r.n)) {
        if (r.used >= r.n || (l.used < l.n && ledger_first(&l, &r)))
            side_use(&l, a);
        else
            side_use(&r, a);
    }
    more = l.used < l.n || r.used < r.n;
    side_free(&l);
    side_free(&r);
    json_object_object_add(o, "next", more ? json_object_new_string(apr_psprintf(
        p, "%" APR_INT64_T_FMT ".%" APR_INT64_T_FMT, l.last, r.last)) : NULL);
    *out = o;
    return APR_SUCCESS;
}
