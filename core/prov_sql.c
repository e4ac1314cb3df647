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
    /* users and balance. Integer parameters are %lld / %d: the values are
     * still passed as strings, but apr_dbd's pgsql driver declares a %s
     * parameter as varchar, which PostgreSQL will not compare with or assign
     * to a bigint column. */
    { "user_add",
      "INSERT INTO users (email, name, created_at) VALUES (%s, %s, %lld) RETURNING id" },
    { "user_by_id",    "SELECT " USER_COLS " FROM users WHERE id = %lld" },
    { "user_by_email", "SELECT " USER_COLS " FROM users WHERE email = %s" },
    { "user_list",     "SELECT " USER_COLS " FROM users ORDER BY id" },
    { "user_set_blocked", "UPDATE users SET blocked = %d WHERE id = %lld" },
    { "balance_add",
      "UPDATE users SET balance = balance + %lld WHERE id = %lld RETURNING balance" },
    { "balance_event_add",
      "INSERT INTO balance_events (user_id, amount, reason, created_at) "
      "VALUES (%lld, %lld, %s, %lld)" },

    /* API keys */
    { "key_add",
      "INSERT INTO api_keys (user_id, name, hash, display, weekly_budget, created_at) "
      "VALUES (%lld, %s, %s, %s, %lld, %lld) RETURNING id" },
    { "key_get", "SELECT " KEY_COLS " FROM api_keys WHERE id = %lld" },
    /* args: user filter (0 = all), user id, include deleted (0/1). The flags
     * are CAST: SQLite binds every argument as text, and compares a text '0'
     * with the literal 0 as unequal. */
    { "key_list",
      "SELECT " KEY_COLS " FROM api_keys WHERE (CAST(%lld AS INTEGER) = 0 OR user_id = %lld) "
      "AND (CAST(%d AS INTEGER) = 1 OR deleted_at IS NULL) ORDER BY id" },
    { "key_reissue",
      "UPDATE api_keys SET hash = %s, display = %s, reissued_at = %lld "
      "WHERE id = %lld AND deleted_at IS NULL" },
    { "key_delete",
      "UPDATE api_keys SET deleted_at = %lld WHERE id = %lld AND deleted_at IS NULL" },
    { "key_budget",
      "UPDATE api_keys SET weekly_budget = %lld WHERE id = %lld AND deleted_at IS NULL" },
    { "auth_lookup",
      "SELECT k.id, k.user_id, k.display, u.blocked, k.weekly_budget, u.balance "
      "FROM api_keys k JOIN users u ON u.id = k.user_id "
      "WHERE k.hash = %s AND k.deleted_at IS NULL" },

    /* the catalog */
    { "model_add",
      "INSERT INTO models (public_id, display_name, upstream_id, family, enabled, "
      "messages_enabled, created_at, updated_at) VALUES (%s, %s, %s, %s, 1, %d, %lld, %lld) "
      "RETURNING id" },
    { "model_find", "SELECT " MODEL_COLS " FROM models WHERE public_id = %s" },
    /* arg: enabled only (0/1), CAST as in key_list */
    { "model_list",
      "SELECT " MODEL_COLS " FROM models WHERE (CAST(%d AS INTEGER) = 0 OR enabled = 1) "
      "ORDER BY public_id" },
    { "model_set",
      "UPDATE models SET display_name = COALESCE(%s, display_name), "
      "upstream_id = COALESCE(%s, upstream_id), family = COALESCE(%s, family), "
      "enabled = COALESCE(%d, enabled), messages_enabled = COALESCE(%d, messages_enabled), "
      "updated_at = %lld WHERE public_id = %s" },
    { "model_price",
      "UPDATE models SET rate_input = %lld, rate_output = %lld, rate_cache = %lld, "
      "rate_reasoning = %lld, updated_at = %lld WHERE public_id = %s" },

    /* billing: reserve, settle, release (prov_billing.c) */
    { "bill_key_window",
      "SELECT COALESCE(SUM(credits), 0) FROM usage_buckets "
      "WHERE scope = 'key' AND scope_id = %lld AND bucket > %lld" },
    { "bill_hold_balance",
      "UPDATE users SET balance = balance - %lld "
      "WHERE id = %lld AND blocked = 0 AND balance >= %lld" },
    { "bill_adjust_balance", "UPDATE users SET balance = balance + %lld WHERE id = %lld" },
    { "bill_bucket_add",
      "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests) "
      "VALUES (%s, %lld, %lld, %lld, 0, %lld) ON CONFLICT (scope, scope_id, bucket) DO UPDATE "
      "SET credits = usage_buckets.credits + excluded.credits, "
      "requests = usage_buckets.requests + excluded.requests" },
    { "bill_ledger_reserve",
      "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, reserved, "
      "source, status, created_at) "
      "VALUES (%s, %lld, %lld, %lld, %s, %lld, 'balance', 'reserved', %lld)" },
    { "bill_ledger_settle",
      "UPDATE ledger SET input_tokens = %lld, output_tokens = %lld, cache_tokens = %lld, "
      "reasoning_tokens = %lld, credits = %lld, status = %s, settled_at = %lld "
      "WHERE request_id = %s AND status = 'reserved'" },

    { NULL, NULL }
};

const prov_stmt_def_t *prov_store_statements(void)
{
    return statements;
}
