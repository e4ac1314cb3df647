/* providerctl_audit_log.c: the audit rows of providerctl's changes. A table
 * names every command that changes something, the action its row records,
 * what it acts on and which of its arguments and options go into the row's
 * detail (never a secret: `user link`'s SUBJECT is left out). The dispatch
 * arms the row before the command runs (ctl_audit_arm) and settles it after
 * (ctl_audit_settle): the row is written in the change's own transaction
 * when the change commits one, else right after its single statement, and
 * not at all when the command failed (core/store/prov_audit.h). The actor
 * is the administrator: the OS user running providerctl. */
#include <pwd.h>
#include <string.h>
#include <unistd.h>
#include "providerctl.h"
#include "prov_audit.h"

#define AUDIT_OPTS 5

typedef struct audited_t {
    const char *group, *verb;
    const char *action;        /* NULL: "GROUP.VERB"; "+": GROUP "." the first argument */
    const char *target_kind;   /* "user": the user argument is the target */
    int target;                /* the positional naming the target, -1: none */
    int user;                  /* the positional naming the user (id or email), -1: none */
    const char *arg_names[3];  /* detail names of the positionals (NULL: left out) */
    const char *opts[AUDIT_OPTS]; /* options copied into the detail */
} audited_t;

static const audited_t audited[] = {
    { "balance", "add", NULL, "user", -1, 0, { NULL, "amount" }, { "reason" } },
    { "hold", "release", NULL, "hold", 0, -1, { NULL }, { "stale", "older-than" } },
    { "key", "create", NULL, "user", -1, 0, { NULL }, { "name", "budget" } },
    { "key", "reissue", NULL, "key", 0, -1, { NULL }, { NULL } },
    { "key", "delete", NULL, "key", 0, -1, { NULL }, { NULL } },
    { "key", "budget", NULL, "key", 0, -1, { NULL, "budget" }, { NULL } },
    { "model", "add", NULL, "model", 0, -1, { NULL },
      { "upstream", "name", "family", "messages" } },
    { "model", "set", NULL, "model", 0, -1, { NULL },
      { "name", "upstream", "family", "messages", "max-output" } },
    { "model", "price", NULL, "model", 0, -1, { NULL },
      { "input", "output", "cache", "reasoning" } },
    { "model", "enable", NULL, "model", 0, -1, { NULL }, { NULL } },
    { "model", "disable", NULL, "model", 0, -1, { NULL }, { NULL } },
    { "oauth", "revoke", NULL, "oauth_client", 0, -1, { NULL }, { NULL } },
    { "plan", "add", NULL, "plan", 0, -1, { NULL }, { "5h", "7d" } },
    { "plan", "set", NULL, "plan", 0, -1, { NULL }, { "5h", "7d" } },
    { "subscription", "set", NULL, "user", -1, 0, { NULL, "plan" }, { "until" } },
    { "subscription", "cancel", NULL, "user", -1, 0, { NULL }, { NULL } },
    { "user", "add", NULL, "user", -1, 0, { NULL }, { "name" } },
    { "user", "sessions", "session.revoke_all", "user", -1, 1, { NULL }, { NULL } },
    { "user", "link", "identity.link", "user", -1, 0, { NULL, "provider" }, { NULL } },
    { "user", "unlink", "identity.unlink", "user", -1, 0, { NULL, "provider" }, { NULL } },
    { "user", "block", NULL, "user", -1, 0, { NULL }, { NULL } },
    { "user", "unblock", NULL, "user", -1, 0, { NULL }, { NULL } },
    { "user", "favorite", "+", "user", -1, 1, { NULL, NULL, "model" }, { NULL } },
    { NULL }
};

static const audited_t *audited_find(const char *group, const char *verb)
{
    const audited_t *a;
    for (a = audited; a->group; a++) {
        if (!strcmp(a->group, group) && !strcmp(a->verb, verb))
            return a;
    }
    return NULL;
}

/* The OS user running providerctl (its uid when it has no name). */
static const char *admin_name(apr_pool_t *p)
{
    struct passwd *pw = getpwuid(geteuid());
    return pw && pw->pw_name ? apr_pstrdup(p, pw->pw_name)
                             : apr_psprintf(p, "uid %ld", (long)geteuid());
}

static const char *detail(ctl_t *ctl, const audited_t *d)
{
    json_object *o = json_object_new_object();
    const char *text;
    int i;
    for (i = 0; i < 3 && i < ctl->argc; i++) {
        if (d->arg_names[i])
            json_object_object_add(o, d->arg_names[i], json_object_new_string(ctl->argv[i]));
    }
    for (i = 0; i < AUDIT_OPTS && d->opts[i]; i++) {
        const char *v = ctl_opt(ctl, d->opts[i]);
        if (v)
            json_object_object_add(o, d->opts[i], json_object_new_string(*v ? v : "true"));
    }
    text = json_object_object_length(o)
           ? apr_pstrdup(ctl->pool, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN))
           : NULL;
    json_object_put(o);
    return text;
}

void ctl_audit_arm(ctl_t *ctl)
{
    const audited_t *d;
    prov_audit_t a;
    if (!ctl->store || ctl->cmd->db != CTL_DB_READY
        || !(d = audited_find(ctl->group->name, ctl->cmd->verb)))
        return;
    memset(&a, 0, sizeof(a));
    a.actor = PROV_AUDIT_ADMIN;
    a.actor_id = admin_name(ctl->pool);
    a.action = !d->action ? apr_pstrcat(ctl->pool, d->group, ".", d->verb, NULL)
             : strcmp(d->action, "+") ? d->action
             : apr_pstrcat(ctl->pool, d->verb, ".", ctl->argc ? ctl->argv[0] : "?", NULL);
    a.target_kind = d->target_kind;
    if (d->target >= 0 && d->target < ctl->argc)
        a.target_id = ctl->argv[d->target];
    if (d->user >= 0 && d->user < ctl->argc)
        a.user_ref = ctl->argv[d->user];
    a.detail = detail(ctl, d);
    prov_audit_arm(ctl->store, &a, ctl->pool);
}

int ctl_audit_settle(ctl_t *ctl, int rc)
{
    if (!ctl->store || !ctl->store->audit_armed)
        return rc;
    if (prov_audit_settle(ctl->store, rc == CTL_OK ? APR_SUCCESS : APR_EGENERAL, ctl->pool)
        != APR_SUCCESS && rc == CTL_OK)
        return ctl_fail(ctl, "the change was made but its audit row could not be written");
    return rc;
}
