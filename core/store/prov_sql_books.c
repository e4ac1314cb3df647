/* prov_sql_books.c: the statement table of the books kept beside the ledger:
 * its daily rollups and retention (prov_rollup.c), the audit trail
 * (prov_audit.c) and the spend alerts' outbox (core/alert/). The same rules
 * as prov_sql.c's table, whose companion this is: labels, apr_dbd
 * placeholders, one text for both dialects unless a second is given. */
#include "prov_store.h"

static const prov_stmt_def_t statements[] = {
    /* spend alerts (core/alert/, docs/internals/alerts.md) */
    /* args: until, now: the scan's turn, taken when free */
    { "alert_turn",
      "UPDATE alert_turns SET until_at = %lld WHERE name = 'scan' AND until_at < %lld" },
    /* args: the week's first bucket, the first recent bucket: keys with a
     * budget and usage lately, their spend in the budget's window */
    { "alert_scan_budgets",
      "SELECT k.id, k.user_id, k.weekly_budget, COALESCE(SUM(b.credits), 0) "
      "FROM api_keys k JOIN usage_buckets b ON b.scope = 'key:h' AND b.scope_id = k.id "
      "AND b.bucket >= %lld WHERE k.weekly_budget > 0 AND k.deleted_at IS NULL "
      "AND EXISTS (SELECT 1 FROM usage_buckets a WHERE a.scope = 'key:h' "
      "AND a.scope_id = k.id AND a.bucket >= %lld) GROUP BY k.id, k.user_id, k.weekly_budget" },
    /* args: the 5-hour and 7-day windows' first buckets, now, now, the first
     * recent bucket: plans with usage lately, their windows' plan spend */
    { "alert_scan_plans",
      "SELECT s.user_id, p.quota_5h, p.quota_7d, "
      "(SELECT COALESCE(SUM(m.plan_credits), 0) FROM usage_buckets m WHERE m.scope = 'user:m' "
      "AND m.scope_id = s.user_id AND m.bucket >= %lld), "
      "(SELECT COALESCE(SUM(h.plan_credits), 0) FROM usage_buckets h WHERE h.scope = 'user:h' "
      "AND h.scope_id = s.user_id AND h.bucket >= %lld) "
      "FROM subscriptions s JOIN plans p ON p.id = s.plan_id WHERE s.starts_at <= %lld "
      "AND s.cancelled_at IS NULL AND (s.until_at IS NULL OR s.until_at > %lld) "
      "AND EXISTS (SELECT 1 FROM usage_buckets a WHERE a.scope = 'user:h' "
      "AND a.scope_id = s.user_id AND a.bucket >= %lld)" },
    /* args: now, default, default: arms the balance alert of every user
     * whose balance is at or above their threshold */
    { "alert_arm",
      "INSERT INTO alert_settings (user_id, balance_below, armed_at) "
      "SELECT u.id, a.balance_below, CAST(%lld AS BIGINT) FROM users u "
      "LEFT JOIN alert_settings a ON a.user_id = u.id WHERE a.armed_at IS NULL "
      "AND COALESCE(a.balance_below, CAST(%lld AS BIGINT)) > 0 "
      "AND u.balance >= COALESCE(a.balance_below, CAST(%lld AS BIGINT)) "
      "ON CONFLICT (user_id) DO UPDATE SET armed_at = excluded.armed_at" },
    /* What holds and leases take now, by key, user and funding: counted in
     * the buckets and the balance until settled, left out of a crossing */
    { "alert_held",
      "SELECT key_id, user_id, source, SUM(amount) FROM billing_leases "
      "GROUP BY key_id, user_id, source UNION ALL "
      "SELECT key_id, user_id, source, SUM(reserved) FROM ledger WHERE status = 'reserved' "
      "GROUP BY key_id, user_id, source" },
    /* args: default, default: armed users now below their threshold */
    { "alert_balance_due",
      "SELECT a.user_id, u.balance, COALESCE(a.balance_below, CAST(%lld AS BIGINT)), a.armed_at "
      "FROM alert_settings a JOIN users u ON u.id = a.user_id WHERE a.armed_at IS NOT NULL "
      "AND u.balance < COALESCE(a.balance_below, CAST(%lld AS BIGINT))" },
    { "alert_disarm",
      "UPDATE alert_settings SET armed_at = NULL WHERE user_id = %lld AND armed_at = %lld" },
    /* args: key id (0: none), user id */
    { "alert_subject",
      "SELECT u.email, k.name, k.display FROM users u LEFT JOIN api_keys k ON k.id = %lld "
      "WHERE u.id = %lld" },
    { "alert_insert",
      "INSERT INTO alerts (id, subject, kind, window_start, user_id, key_id, body, created_at, "
      "next_at) VALUES (%s, %s, %s, %lld, %lld, %lld, %s, %lld, %lld) "
      "ON CONFLICT (subject, kind, window_start) DO NOTHING" },
    /* args: now, limit */
    { "alert_due",
      "SELECT id, body, attempts, next_at FROM alerts WHERE sent_at IS NULL AND next_at <= %lld "
      "ORDER BY next_at LIMIT %d" },
    /* args: lease end, id, next_at as read: one node wins the row */
    { "alert_claim",
      "UPDATE alerts SET next_at = %lld, attempts = attempts + 1 WHERE id = %s "
      "AND next_at = %lld AND sent_at IS NULL" },
    { "alert_sent", "UPDATE alerts SET sent_at = %lld, last_error = NULL WHERE id = %s" },
    { "alert_retry", "UPDATE alerts SET next_at = %lld, last_error = %s WHERE id = %s" },
    /* args: pending only (0/1), limit */
    { "alert_list",
      "SELECT id, kind, subject, user_id, window_start, created_at, attempts, next_at, sent_at, "
      "last_error FROM alerts WHERE (CAST(%d AS INTEGER) = 0 OR sent_at IS NULL) "
      "ORDER BY created_at DESC, id LIMIT %d" },
    { "alert_counts",
      "SELECT COALESCE(SUM(CASE WHEN sent_at IS NULL THEN 1 ELSE 0 END), 0), "
      "COALESCE(SUM(CASE WHEN sent_at IS NULL THEN 0 ELSE 1 END), 0) FROM alerts" },
    /* args: the oldest time kept twice, batch: delivered rows created and
     * sent before it, oldest first (a row not delivered is never removed) */
    { "alert_purge",
      "DELETE FROM alerts WHERE id IN (SELECT id FROM alerts WHERE created_at < %lld "
      "AND sent_at IS NOT NULL AND sent_at < %lld ORDER BY created_at LIMIT %d)" },
    { "alert_setting_get", "SELECT balance_below FROM alert_settings WHERE user_id = %lld" },
    /* args: user, threshold (NULL: the default); a new threshold re-arms */
    { "alert_setting_put",
      "INSERT INTO alert_settings (user_id, balance_below, armed_at) VALUES (%lld, %lld, NULL) "
      "ON CONFLICT (user_id) DO UPDATE SET balance_below = excluded.balance_below, "
      "armed_at = NULL" },

    /* the audit trail (core/store/prov_audit.c; rows are written as text
     * built there). args: user twice, since twice, before id twice (0: any),
     * action twice (NULL: any), an action prefix three times (NULL: any),
     * security only (1: the actions a user's activity list shows), limit */
    { "audit_list",
      "SELECT id, at, actor_kind, actor_id, action, target_kind, target_id, user_id, address, "
      "detail FROM audit WHERE (CAST(%lld AS BIGINT) = 0 OR user_id = %lld) "
      "AND (CAST(%lld AS BIGINT) = 0 OR at >= %lld) "
      "AND (CAST(%lld AS BIGINT) = 0 OR id < %lld) "
      "AND (CAST(%s AS TEXT) IS NULL OR action = %s) "
      "AND (CAST(%s AS TEXT) IS NULL OR substr(action, 1, length(%s)) = %s) "
      "AND (CAST(%d AS INTEGER) = 0 OR substr(action, 1, 6) = 'signin' "
      "OR substr(action, 1, 4) = 'key.' OR substr(action, 1, 9) = 'identity.' "
      "OR substr(action, 1, 6) = 'oauth.' OR substr(action, 1, 8) = 'session.' "
      "OR action IN ('user.block', 'user.unblock')) ORDER BY id DESC LIMIT %d" },
    /* refusals before a reservation (prov_refusal.c; migration 018). args:
     * created_at, user, key, transport, model, http status, code, request
     * id, count */
    { "refusal_insert",
      "INSERT INTO refusals (created_at, user_id, key_id, transport, model, http_status, code, "
      "request_id, count) VALUES (%lld, %lld, %lld, %s, %s, %d, %s, %s, %lld)" },
    /* the cabinet's recent requests: the refusals beside the ledger rows
     * (prov_cabinet_requests.c; migration 018); args: user, key (0 = any)
     * twice, HTTP status (0 = any) twice, code ('' = any) twice, before
     * (0 = newest) twice, how many rows */
    { "cabinet_refusals",
      "SELECT r.id, r.request_id, r.created_at, r.key_id, k.name, r.model, r.transport, "
      "r.http_status, r.code, r.count FROM refusals r "
      "LEFT JOIN api_keys k ON k.id = r.key_id WHERE r.user_id = %lld "
      "AND (CAST(%lld AS BIGINT) = 0 OR r.key_id = %lld) "
      "AND (CAST(%d AS INTEGER) = 0 OR r.http_status = %d) "
      "AND (CAST(%s AS TEXT) = '' OR r.code = %s) "
      "AND (CAST(%lld AS BIGINT) = 0 OR r.id < %lld) ORDER BY r.id DESC LIMIT %d" },
    /* args: the oldest time kept, batch */
    { "refusal_purge",
      "DELETE FROM refusals WHERE id IN (SELECT id FROM refusals WHERE created_at < %lld "
      "ORDER BY id LIMIT %d)" },
    /* args: the oldest time kept, batch */
    { "audit_purge",
      "DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < %lld ORDER BY id "
      "LIMIT %d)" },
    /* rollups and retention (prov_rollup.c; migration 012). The state row,
     * locked on PostgreSQL so that two nodes never roll the same rows */
    { "rollup_state", "SELECT last_id FROM ledger_rollup_state WHERE id = 1",
      "SELECT last_id FROM ledger_rollup_state WHERE id = 1 FOR UPDATE" },
    /* args: last id, last id + cap, cutoff: the first row that stops a step
     * (still reserved, or of a day not closed yet) */
    { "rollup_stop",
      "SELECT id FROM ledger WHERE id > %lld AND id <= %lld "
      "AND (status = 'reserved' OR created_at >= %lld) ORDER BY id LIMIT 1" },
    { "rollup_max_id", "SELECT COALESCE(MAX(id), 0) FROM ledger" },
    /* args: from (exclusive), to (inclusive): the rows' sums added to their days */
    { "rollup_add",
      "INSERT INTO ledger_rollup (day, user_id, key_id, model_id, transport, requests, "
      "input_tokens, output_tokens, cache_tokens, reasoning_tokens, credits, plan_credits, "
      "refused, failed) SELECT created_at / 86400 * 86400, user_id, key_id, model_id, transport, "
      "COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cache_tokens), "
      "SUM(reasoning_tokens), SUM(credits), SUM(plan_credits), "
      "SUM(CASE WHEN status = 'refused' THEN 1 ELSE 0 END), "
      "SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) "
      "FROM ledger WHERE id > %lld AND id <= %lld "
      "GROUP BY created_at / 86400 * 86400, user_id, key_id, model_id, transport "
      "ON CONFLICT (day, user_id, key_id, model_id, transport) DO UPDATE SET "
      "requests = ledger_rollup.requests + excluded.requests, "
      "input_tokens = ledger_rollup.input_tokens + excluded.input_tokens, "
      "output_tokens = ledger_rollup.output_tokens + excluded.output_tokens, "
      "cache_tokens = ledger_rollup.cache_tokens + excluded.cache_tokens, "
      "reasoning_tokens = ledger_rollup.reasoning_tokens + excluded.reasoning_tokens, "
      "credits = ledger_rollup.credits + excluded.credits, "
      "plan_credits = ledger_rollup.plan_credits + excluded.plan_credits, "
      "refused = ledger_rollup.refused + excluded.refused, "
      "failed = ledger_rollup.failed + excluded.failed" },
    { "rollup_set", "UPDATE ledger_rollup_state SET last_id = %lld WHERE id = 1" },
    /* args: batch, before: of the oldest rows by id, the rolled-up ones
     * created before before */
    { "ledger_compact",
      "DELETE FROM ledger WHERE id IN (SELECT id FROM ledger ORDER BY id LIMIT %d) "
      "AND created_at < %lld AND status <> 'reserved' "
      "AND id <= (SELECT last_id FROM ledger_rollup_state WHERE id = 1)" },
    { "ledger_status",
      "SELECT (SELECT COUNT(*) FROM ledger), (SELECT created_at FROM ledger ORDER BY id LIMIT 1), "
      "s.last_id, (SELECT COUNT(*) FROM ledger WHERE id > s.last_id), "
      "(SELECT MIN(day) FROM ledger_rollup), (SELECT MAX(day) FROM ledger_rollup), "
      "(SELECT COUNT(*) FROM ledger_rollup) FROM ledger_rollup_state s WHERE s.id = 1" },
    { "db_size",
      "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
      "SELECT pg_database_size(current_database())" },


    { NULL, NULL, NULL }
};

const prov_stmt_def_t *prov_store_statements_books(void)
{
    return statements;
}
