/* prov_audit.c: the audit trail's rows (prov_audit.h). A row is written as
 * one INSERT built here with the driver's escaping (as prov_store_billing.c
 * builds its writes), because an armed row travels as text in the store
 * until the change's transaction commits (prov_store_commit sends it just
 * before COMMIT); the user a row concerns may be resolved by a subquery
 * at that moment (a user just added, a key's owner). The list and the
 * purge are labelled statements of the table (prov_sql.c). */
#include <stdarg.h>
#include <string.h>
#include "prov_audit.h"
#include "prov_json.h"
#include "prov_log.h"

static const char *const actor_names[] = { "admin", "user", "oauth_client", "system" };

const char *prov_audit_actor_name(prov_audit_actor_e a)
{
    return (unsigned)a < sizeof(actor_names) / sizeof(actor_names[0]) ? actor_names[a]
                                                                        : "system";
}

const char *prov_audit_detail(apr_pool_t *p, ...)
{
    json_object *o = prov_json_own(json_object_new_object(), p);
    const char *name, *value;
    va_list ap;
    va_start(ap, p);
    while ((name = va_arg(ap, const char *)) != NULL) {
        value = va_arg(ap, const char *);
        if (value)
            json_object_object_add(o, name, json_object_new_string(value));
    }
    va_end(ap);
    return json_object_object_length(o) ? prov_json_dump(o, p) : NULL;
}

/* A quoted, escaped literal, or NULL. */
static const char *lit(prov_store_t *s, const char *v, apr_pool_t *p)
{
    if (!v)
        return "NULL";
    return apr_pstrcat(p, "'", apr_dbd_escape(s->driver, p, v, s->handle), "'", NULL);
}

static int all_digits(const char *v)
{
    if (!v || !*v || strlen(v) > 18)
        return 0;
    for (; *v; v++) {
        if (*v < '0' || *v > '9')
            return 0;
    }
    return 1;
}

/* The user column's SQL: the id, a lookup by id or email, the key's owner. */
static const char *user_sql(prov_store_t *s, const prov_audit_t *a, apr_pool_t *p)
{
    if (a->user_id > 0)
        return prov_i64(a->user_id, p);
    if (a->user_ref && all_digits(a->user_ref))
        return apr_pstrcat(p, "(SELECT id FROM users WHERE id = ", a->user_ref, ")", NULL);
    if (a->user_ref)
        return apr_pstrcat(p, "(SELECT id FROM users WHERE email = ", lit(s, a->user_ref, p),
                           ")", NULL);
    if (a->target_kind && !strcmp(a->target_kind, "key") && all_digits(a->target_id))
        return apr_pstrcat(p, "(SELECT user_id FROM api_keys WHERE id = ", a->target_id, ")", NULL);
    return "NULL";
}

static const char *insert_sql(prov_store_t *s, const prov_audit_t *a, apr_pool_t *p)
{
    const char *user = user_sql(s, a, p);
    /* A user target named by reference: its id, as the user column has it. */
    const char *target = !a->target_id && a->target_kind && !strcmp(a->target_kind, "user")
                         ? apr_pstrcat(p, "CAST(", user, " AS TEXT)", NULL)
                         : lit(s, a->target_id, p);
    return apr_pstrcat(p, "INSERT INTO audit (at, actor_kind, actor_id, action, target_kind, "
                       "target_id, user_id, address, detail) VALUES (",
                       prov_i64(a->at ? a->at : prov_now(), p), ", ",
                       lit(s, prov_audit_actor_name(a->actor), p), ", ",
                       lit(s, a->actor_id, p), ", ", lit(s, a->action ? a->action : "?", p),
                       ", ", lit(s, a->target_kind, p), ", ", target, ", ", user, ", ",
                       lit(s, a->address, p), ", ", lit(s, a->detail, p), ")", NULL);
}

apr_status_t prov_audit_write(prov_store_t *s, const prov_audit_t *a, apr_pool_t *p)
{
    apr_status_t rv = prov_store_write(s, insert_sql(s, a, p), p);
    if (rv != APR_SUCCESS)
        prov_log(PROV_LOG_ERR, rv, "PROV01001: the audit row of %s could not be written",
                 a->action ? a->action : "?");
    return rv;
}

void prov_audit_arm(prov_store_t *s, const prov_audit_t *a, apr_pool_t *p)
{
    s->audit_armed = insert_sql(s, a, p);
}

apr_status_t prov_audit_settle(prov_store_t *s, apr_status_t change_rv, apr_pool_t *p)
{
    const char *sql = s->audit_armed;
    apr_status_t rv = APR_SUCCESS;
    s->audit_armed = NULL;
    if (change_rv == APR_SUCCESS && sql
        && (rv = prov_store_write(s, sql, p)) != APR_SUCCESS)
        prov_log(PROV_LOG_ERR, rv, "PROV01002: an audit row could not be written after its "
                 "change");
    return rv;
}

static prov_audit_row_t *audit_row(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    prov_audit_row_t *a = apr_pcalloc(p, sizeof(*a));
    a->id = prov_store_get_i64(s, row, 0, 0);
    a->at = prov_store_get_i64(s, row, 1, 0);
    a->actor_kind = prov_store_get(s, row, 2);
    a->actor_id = prov_store_get(s, row, 3);
    a->action = prov_store_get(s, row, 4);
    a->target_kind = prov_store_get(s, row, 5);
    a->target_id = prov_store_get(s, row, 6);
    a->user_id = prov_store_get_i64(s, row, 7, 0);
    a->address = prov_store_get(s, row, 8);
    a->detail = prov_store_get(s, row, 9);
    return a;
}

static void *audit_row_fn(prov_store_t *s, apr_dbd_row_t *row, apr_pool_t *p)
{
    return audit_row(s, row, p);
}

apr_status_t prov_audit_list(apr_array_header_t **out, prov_store_t *s,
                             const prov_audit_filter_t *f, apr_pool_t *p)
{
    const char *u = prov_i64(f->user_id, p), *since = prov_i64(f->since, p);
    const char *before = prov_i64(f->before_id, p);
    const char *act = f->action && *f->action ? f->action : NULL, *prefix = NULL;
    int limit = f->limit < 1 ? 50 : f->limit > 1000 ? 1000 : f->limit;
    if (act && act[strlen(act) - 1] == '.')
        prefix = act, act = NULL;
    return prov_store_list_args(out, s, "audit_list",
                                PROV_ARGS(u, u, since, since, before, before, act, act, prefix,
                                          prefix, prefix, apr_itoa(p, f->security_only ? 1 : 0),
                                          apr_itoa(p, limit)),
                                audit_row_fn, p);
}

apr_status_t prov_audit_purge_before(int *removed, prov_store_t *s, apr_int64_t before,
                                     int batch, apr_pool_t *p)
{
    int n = 0;
    apr_status_t rv = prov_store_exec(s, &n, "audit_purge",
                                      PROV_ARGS(prov_i64(before, p), apr_itoa(p, batch)), p);
    if (rv != APR_SUCCESS) {
        prov_log(PROV_LOG_ERR, rv, "PROV01003: the purge of old audit rows failed (it runs "
                 "again later)");
        return rv;
    }
    *removed = n;
    return APR_SUCCESS;
}
