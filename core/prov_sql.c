/* prov_sql.c: the statement table. Every SQL statement that the module or
 * providerctl runs at request time is here, by label, with apr_dbd "%s"
 * placeholders (arguments are always passed as strings; SQL NULL as a NULL
 * pointer). The same text runs on SQLite and PostgreSQL: both accept
 * RETURNING and ON CONFLICT ... DO UPDATE. What differs between the two
 * dialects (transaction start, pragmas, DDL) lives in prov_store.c and in
 * schema/, not here. */
#include "prov_store.h"

#define USER_COLS  "id, email, name, blocked, balance, created_at"
#define KEY_COLS   "id, user_id, name, display, weekly_budget, created_at, reissued_at, deleted_at"
#define MODEL_COLS "id, public_id, display_name, upstream_id, family, enabled, messages_enabled, " \
                   "rate_input, rate_output, rate_cache, rate_reasoning"

static const prov_stmt_def_t statements[] = {
    /* users and balance */
    { "user_add",
      "INSERT INTO users (email, name, created_at) VALUES (%s, %s, %s) RETURNING id" },
    { "user_by_id",    "SELECT " USER_COLS " FROM users WHERE id = %s" },
    { "user_by_email", "SELECT " USER_COLS " FROM users WHERE email = %s" },
    { "user_list",     "SELECT " USER_COLS " FROM users ORDER BY id" },
    { "user_set_blocked", "UPDATE users SET blocked = %s WHERE id = %s" },
    { "balance_add",
      "UPDATE users SET balance = balance + %s WHERE id = %s RETURNING balance" },
    { "balance_event_add",
      "INSERT INTO balance_events (user_id, amount, reason, created_at) VALUES (%s, %s, %s, %s)" },

    /* API keys */
    { "key_add",
      "INSERT INTO api_keys (user_id, name, hash, display, weekly_budget, created_at) "
      "VALUES (%s, %s, %s, %s, %s, %s) RETURNING id" },
    { "key_get", "SELECT " KEY_COLS " FROM api_keys WHERE id = %s" },
    /* args: user filter (0 = all), user id, include deleted (0/1). The flags
     * are CAST: SQLite compares a bound text '0' with the literal 0 as unequal. */
    { "key_list",
      "SELECT " KEY_COLS " FROM api_keys WHERE (CAST(%s AS INTEGER) = 0 OR user_id = %s) "
      "AND (CAST(%s AS INTEGER) = 1 OR deleted_at IS NULL) ORDER BY id" },
    { "key_reissue",
      "UPDATE api_keys SET hash = %s, display = %s, reissued_at = %s "
      "WHERE id = %s AND deleted_at IS NULL" },
    { "key_delete",
      "UPDATE api_keys SET deleted_at = %s WHERE id = %s AND deleted_at IS NULL" },
    { "key_budget",
      "UPDATE api_keys SET weekly_budget = %s WHERE id = %s AND deleted_at IS NULL" },
    { "auth_lookup",
      "SELECT k.id, k.user_id, k.display, u.blocked, k.weekly_budget, u.balance "
      "FROM api_keys k JOIN users u ON u.id = k.user_id "
      "WHERE k.hash = %s AND k.deleted_at IS NULL" },

    /* the catalog */
    { "model_add",
      "INSERT INTO models (public_id, display_name, upstream_id, family, enabled, "
      "messages_enabled, created_at, updated_at) VALUES (%s, %s, %s, %s, 1, %s, %s, %s) "
      "RETURNING id" },
    { "model_find", "SELECT " MODEL_COLS " FROM models WHERE public_id = %s" },
    /* arg: enabled only (0/1), CAST as in key_list */
    { "model_list",
      "SELECT " MODEL_COLS " FROM models WHERE (CAST(%s AS INTEGER) = 0 OR enabled = 1) "
      "ORDER BY public_id" },
    { "model_set",
      "UPDATE models SET display_name = COALESCE(%s, display_name), "
      "upstream_id = COALESCE(%s, upstream_id), family = COALESCE(%s, family), "
      "enabled = COALESCE(%s, enabled), messages_enabled = COALESCE(%s, messages_enabled), "
      "updated_at = %s WHERE public_id = %s" },
    { "model_price",
      "UPDATE models SET rate_input = %s, rate_output = %s, rate_cache = %s, "
      "rate_reasoning = %s, updated_at = %s WHERE public_id = %s" },

    /* billing: reserve, settle, release (prov_billing.c) */
    { "bill_key_window",
      "SELECT COALESCE(SUM(credits), 0) FROM usage_buckets "
      "WHERE scope = 'key' AND scope_id = %s AND bucket > %s" },
    { "bill_hold_balance",
      "UPDATE users SET balance = balance - %s WHERE id = %s AND blocked = 0 AND balance >= %s" },
    { "bill_adjust_balance", "UPDATE users SET balance = balance + %s WHERE id = %s" },
    { "bill_bucket_add",
      "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests) "
      "VALUES (%s, %s, %s, %s, 0, %s) ON CONFLICT (scope, scope_id, bucket) DO UPDATE SET "
      "credits = usage_buckets.credits + excluded.credits, "
      "requests = usage_buckets.requests + excluded.requests" },
    { "bill_ledger_reserve",
      "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, reserved, "
      "source, status, created_at) VALUES (%s, %s, %s, %s, %s, %s, 'balance', 'reserved', %s)" },
    { "bill_ledger_settle",
      "UPDATE ledger SET input_tokens = %s, output_tokens = %s, cache_tokens = %s, "
      "reasoning_tokens = %s, credits = %s, status = %s, settled_at = %s "
      "WHERE request_id = %s AND status = 'reserved'" },

    { NULL, NULL }
};

const prov_stmt_def_t *prov_store_statements(void)
{
    return statements;
}
