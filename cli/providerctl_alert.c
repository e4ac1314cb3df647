/* providerctl_alert.c: the `alerts` group: the spend alerts' outbox (table
 * alerts; docs/internals/alerts.md), newest first, with each alert's state
 * (delivered, or pending with its attempts, next try and last error), so
 * that alerts a webhook that is down has not taken yet are visible. The
 * alerts themselves are raised by the server's scan and by `user block`. */
#include <stdio.h>
#include "providerctl.h"
#include "prov_alert.h"
#include "prov_purge.h"

static json_object *alert_json(const void *rec)
{
    const prov_alert_row_t *a = rec;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", ctl_json_str(a->id));
    json_object_object_add(o, "type", ctl_json_str(a->kind));
    json_object_object_add(o, "subject", ctl_json_str(a->subject));
    json_object_object_add(o, "user_id", json_object_new_int64(a->user_id));
    json_object_object_add(o, "window_start", ctl_json_time(a->window_start));
    json_object_object_add(o, "created", ctl_json_time(a->created_at));
    json_object_object_add(o, "state", json_object_new_string(a->sent_at ? "sent" : "pending"));
    json_object_object_add(o, "attempts", json_object_new_int64(a->attempts));
    json_object_object_add(o, "sent", ctl_json_time(a->sent_at));
    json_object_object_add(o, "next_attempt", a->sent_at ? NULL : ctl_json_time(a->next_at));
    json_object_object_add(o, "last_error", ctl_json_str(a->last_error));
    return o;
}

static void alert_row(ctl_table_t *t, const void *rec, apr_pool_t *p)
{
    const prov_alert_row_t *a = rec;
    ctl_table_row(t, a->id, a->kind, a->subject, ctl_time(a->created_at, 0, p),
                  a->sent_at ? "sent" : "pending", prov_i64(a->attempts, p),
                  a->last_error ? a->last_error : "");
}

static int alerts_list(ctl_t *ctl)
{
    apr_array_header_t *rows = NULL;
    apr_int64_t limit = 50, pending = 0, sent = 0;
    const char *l = ctl_opt(ctl, "limit");
    apr_status_t rv;
    int rc;
    if (l && (prov_parse_i64(&limit, l) != APR_SUCCESS || limit < 1 || limit > 100000))
        return ctl_usage(ctl, "'%s' is not a number of alerts from 1 to 100000 (--limit)", l);
    if ((rv = prov_alert_list(&rows, ctl->store, ctl_flag(ctl, "pending"), (int)limit,
                              ctl->pool)) != APR_SUCCESS
        || (rv = prov_alert_counts(&pending, &sent, ctl->store, ctl->pool)) != APR_SUCCESS)
        return ctl_db_fail(ctl, rv, "list the alerts");
    rc = ctl_list_print(ctl, rows, alert_json,
                        ctl_table_make(ctl->pool, 7, "ID", "TYPE", "SUBJECT", "CREATED",
                                       "STATE", "ATTEMPTS", "LAST ERROR"),
                        alert_row, "no alerts");
    if (!ctl->json)
        printf("%" APR_INT64_T_FMT " pending, %" APR_INT64_T_FMT " sent\n", pending, sent);
    return rc;
}

/* The server's retention (mod_provider_purge.c) to the end: delivered
 * alerts created and sent before --before, PROV_PURGE_BATCH a statement. */
static int alerts_purge(ctl_t *ctl)
{
    apr_int64_t removed = 0, before = 0;
    apr_status_t rv;
    int rc, n = 0;
    if ((rc = ctl_parse_retention(ctl, &before, prov_now(), "a crossing of the current "
                                  "week could be alerted again")) != CTL_OK)
        return rc;
    do {
        if ((rv = prov_alert_purge_before(&n, ctl->store, before, PROV_PURGE_BATCH,
                                          ctl->pool)) != APR_SUCCESS)
            return ctl_db_fail(ctl, rv, "remove old alerts");
        removed += n;
    } while (n > 0);
    if (ctl->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "before", ctl_json_time(before));
        json_object_object_add(o, "removed", json_object_new_int64(removed));
        ctl_json_print(o);
    }
    else
        printf("removed %" APR_INT64_T_FMT " delivered alert(s) created and sent before %s\n",
               removed, ctl_time(before, 1, ctl->pool));
    return CTL_OK;
}

static const ctl_opt_t purge_opts[] = {
    { "before", "DATE", 0, "remove alerts delivered before DATE (default: 400 days ago; "
      "never within the last 8 days)" },
    { NULL, NULL, 0, NULL }
};

static const ctl_opt_t list_opts[] = {
    { "pending", NULL, 0, "only the alerts not delivered yet" },
    { "limit", "N", 0, "at most N alerts, newest first (default 50)" },
    { NULL, NULL, 0, NULL }
};

const ctl_cmd_t ctl_alert_cmds[] = {
    { "list", "", 0, 0, list_opts, CTL_DB_READY, alerts_list,
      "list the spend alerts, newest first, delivered or pending",
      "Every crossing (a key at 80 % or 100 % of its weekly budget, a plan\n"
      "window at 90 %, a balance below its threshold, a user blocked) is a row\n"
      "of the alerts' outbox, sent to ProviderAlertWebhook by the server. A\n"
      "pending alert is retried with a growing wait (up to 5 minutes) until the\n"
      "webhook answers 2xx; LAST ERROR says why the last try failed." },
    { "purge", "", 0, 0, purge_opts, CTL_DB_READY, alerts_purge,
      "remove delivered alerts created and sent before a date",
      "Removes the delivered alerts created and sent before DATE, 200 rows a\n"
      "statement, as the server's purge does past ProviderLedgerRetention. An\n"
      "alert not delivered yet is never removed, and a removed alert's crossing\n"
      "is not alerted again; DATE may not be within the last 8 days." },
    { NULL }
};
