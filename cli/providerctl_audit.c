/* providerctl_audit.c: the `audit` group: the audit trail read back (`audit
 * list`), newest first, filtered by user, time and action
 * (core/store/prov_audit.h says what a row holds; providerctl_audit_log.c
 * writes providerctl's own rows). */
#include <stdio.h>
#include "providerctl.h"
#include "prov_audit.h"

static json_object *row_json(const void *rec)
{
    const prov_audit_row_t *a = rec;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(a->id));
    json_object_object_add(o, "time", ctl_json_time(a->at));
    json_object_object_add(o, "actor_kind", ctl_json_str(a->actor_kind));
    json_object_object_add(o, "actor_id", ctl_json_str(a->actor_id));
    json_object_object_add(o, "action", ctl_json_str(a->action));
    json_object_object_add(o, "target_kind", ctl_json_str(a->target_kind));
    json_object_object_add(o, "target_id", ctl_json_str(a->target_id));
    json_object_object_add(o, "user_id", a->user_id ? json_object_new_int64(a->user_id) : NULL);
    json_object_object_add(o, "address", ctl_json_str(a->address));
    json_object_object_add(o, "detail", a->detail ? json_tokener_parse(a->detail) : NULL);
    return o;
}

static void row_table(ctl_table_t *t, const void *rec, apr_pool_t *p)
{
    const prov_audit_row_t *a = rec;
    ctl_table_row(t, ctl_time(a->at, 1, p),
                  apr_pstrcat(p, a->actor_kind, a->actor_id ? ":" : "", a->actor_id, NULL),
                  a->action,
                  a->target_kind ? apr_pstrcat(p, a->target_kind, a->target_id ? ":" : "",
                                               a->target_id, NULL) : NULL,
                  a->user_id ? prov_i64(a->user_id, p) : NULL, a->address, a->detail);
}

static int audit_list(ctl_t *ctl)
{
    prov_audit_filter_t f = { 0 };
    apr_array_header_t *rows = NULL;
    const char *v;
    apr_int64_t n = 0;
    apr_status_t rv;
    int rc;
    if ((v = ctl_opt(ctl, "user"))) {
        prov_user_t *u = NULL;
        if ((rc = ctl_find_user(ctl, &u, v)) != CTL_OK)
            return rc;
        f.user_id = u->id;
    }
    if ((v = ctl_opt(ctl, "since")) && (rc = ctl_parse_time(ctl, &f.since, v, "--since"))
        != CTL_OK)
        return rc;
    if ((v = ctl_opt(ctl, "limit"))) {
        if (prov_parse_i64(&n, v) != APR_SUCCESS || n < 1 || n > 1000)
            return ctl_usage(ctl, "--limit takes a number from 1 to 1000");
        f.limit = (int)n;
    }
    f.action = ctl_opt(ctl, "action");
    f.limit = f.limit ? f.limit : 100;
    if ((rv = prov_audit_list(&rows, ctl->store, &f, ctl->pool)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the audit trail");
    return ctl_list_print(ctl, rows, row_json,
                          ctl_table_make(ctl->pool, 7, "TIME", "ACTOR", "ACTION", "TARGET",
                                         "USER", "ADDRESS", "DETAIL"),
                          row_table, "no audit rows");
}

static const ctl_opt_t list_opts[] = {
    { "user", "USER", 0, "only rows about this user (id or email)" },
    { "since", "T", 0, "from T on (inclusive)" },
    { "action", "A", 0, "only this action (e.g. key.reissue), or a prefix ending in '.' "
      "(key.)" },
    { "limit", "N", 0, "at most N rows, newest first (default 100, at most 1000)" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_audit_cmds[] = {
    { "list", "", 0, 0, list_opts, CTL_DB_READY, audit_list,
      "list the audit trail: who changed what, sign-ins and refusals",
      "One row per change made with providerctl (the actor is the OS user that ran\n"
      "it), in the cabinet (the user) or by an OAuth client, and per sign-in and\n"
      "refused sign-in, newest first: time, actor, action, target, the user it\n"
      "concerns, the client address and a small JSON detail. Rows never hold a key\n"
      "secret, a token, a cookie or an identity provider's subject. They are kept\n"
      "as long as the ledger's rows (ProviderLedgerRetention, 400 days by default;\n"
      "the server's periodic purge removes older ones)." },
    { NULL }
};
