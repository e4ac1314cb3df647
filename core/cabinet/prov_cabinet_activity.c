/* prov_cabinet_activity.c: GET /v1/account/activity without HTTP: a
 * signed-in user's own security activity from the audit trail
 * (core/store/prov_audit.h), newest first, a page at a time: sign-ins and
 * refused sign-ins of their account, their keys made, reissued, deleted or
 * given a budget, identities linked and unlinked, OAuth clients authorized
 * and revoked, sessions ended, the account blocked or unblocked, by
 * themselves or by an administrator (named only as "admin": the operator's
 * own account name stays in `providerctl audit list`). */
#include <string.h>
#include "prov_cabinet_int.h"
#include "prov_cabinet_activity.h"
#include "prov_audit.h"

static apr_status_t bad(prov_error_t **err, const char *field, const char *msg, apr_pool_t *p)
{
    *err = prov_error_make(p, PROV_E_INVALID_REQUEST, field, "%s", msg);
    return APR_EINVAL;
}

/* A positive whole number of at most 18 digits; 0 when it is not one. */
static apr_int64_t whole(const char *v)
{
    apr_int64_t n = 0;
    apr_size_t len = v ? strlen(v) : 0;
    if (len < 1 || len > 18 || strspn(v, "0123456789") != len
        || prov_parse_i64(&n, v) != APR_SUCCESS)
        return 0;
    return n;
}

apr_status_t prov_cabinet_activity_args(int *limit, apr_int64_t *before, prov_error_t **err,
                                        const char *limit_arg, const char *before_arg,
                                        apr_pool_t *p)
{
    apr_int64_t n = PROV_CABINET_ACTIVITY_PAGE, b = 0;
    if (limit_arg && ((n = whole(limit_arg)) < 1 || n > PROV_CABINET_ACTIVITY_MAX))
        return bad(err, "limit", apr_psprintf(p, "limit must be a whole number from 1 to %d.",
                                              PROV_CABINET_ACTIVITY_MAX), p);
    if (before_arg && (b = whole(before_arg)) < 1)
        return bad(err, "before", "before must be an id from a previous page's next_before.",
                   p);
    *limit = (int)n;
    *before = b;
    return APR_SUCCESS;
}

static json_object *entry(const prov_audit_row_t *a, apr_pool_t *p)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", prov_cabinet_id(a->id, p));
    json_object_object_add(o, "time", json_object_new_string(prov_cabinet_time(a->at, p)));
    json_object_object_add(o, "action", json_object_new_string(a->action));
    json_object_object_add(o, "actor", json_object_new_string(a->actor_kind));
    json_object_object_add(o, "target_kind", a->target_kind
                           ? json_object_new_string(a->target_kind) : NULL);
    json_object_object_add(o, "target_id", a->target_id
                           ? json_object_new_string(a->target_id) : NULL);
    json_object_object_add(o, "address", a->address ? json_object_new_string(a->address)
                                                    : NULL);
    json_object_object_add(o, "detail", a->detail ? json_tokener_parse(a->detail) : NULL);
    return o;
}

apr_status_t prov_cabinet_activity(json_object **out, prov_store_t *s, apr_int64_t user_id,
                                   int limit, apr_int64_t before, apr_pool_t *p)
{
    prov_audit_filter_t f = { 0 };
    apr_array_header_t *rows = NULL;
    json_object *o, *data;
    apr_status_t rv;
    int i;
    f.user_id = user_id;
    f.before_id = before;
    f.security_only = 1;
    f.limit = limit + 1;   /* one more: is there a next page? */
    if ((rv = prov_audit_list(&rows, s, &f, p)) != APR_SUCCESS)
        return rv;
    o = prov_json_own(json_object_new_object(), p);
    data = json_object_new_array();
    for (i = 0; i < rows->nelts && i < limit; i++)
        json_object_array_add(data, entry(APR_ARRAY_IDX(rows, i, prov_audit_row_t *), p));
    json_object_object_add(o, "data", data);
    json_object_object_add(o, "next_before", rows->nelts > limit
        ? prov_cabinet_id(APR_ARRAY_IDX(rows, limit - 1, prov_audit_row_t *)->id, p) : NULL);
    *out = o;
    return APR_SUCCESS;
}
