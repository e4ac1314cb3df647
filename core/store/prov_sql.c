/* prov_sql.c: the statement table. Every SQL statement that the module or
 * providerctl runs at request time is here, by label, with apr_dbd "%s"
 * placeholders (arguments are always passed as strings; SQL NULL as a NULL
 * pointer). The same text runs on SQLite and PostgreSQL: both accept
 * RETURNING and ON CONFLICT ... DO UPDATE. What differs between the two
 * dialects (transaction start, pragmas, DDL) lives in prov_store.c and in
 * schema/, not here; the billing statements built at run time (many rows
 * to one statement) in prov_store_billing.c; the books kept beside the
 * ledger (rollups and retention, the audit trail, spend alerts) in
 * prov_sql_books.c. */
#include "prov_store.h"

#define USER_COLS  "id, email, name, blocked, balance, created_at"
/* A key's controls (prov_key_controls.h), read with the key wherever it is. */
#define KEY_CONTROLS "expires_at, models, addresses, rpm, max_in_flight"
#define KEY_COLS   "id, user_id, name, display, weekly_budget, created_at, reissued_at, deleted_at, " \
                   KEY_CONTROLS ", last4"
#define MODEL_COLS "id, public_id, display_name, upstream_id, family, enabled, messages_enabled, " \
                   "rate_input, rate_output, rate_cache, rate_reasoning, max_output, created_at"
/* A complete ledger row (bill_ledger_complete*): its columns and values. */
#define LEDGER_INSERT "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, " \
    "input_tokens, output_tokens, cache_tokens, reasoning_tokens, reserved, credits, " \
    "plan_credits, source, status, created_at, settled_at, agent_session, agent_client) VALUES "
#define LEDGER_ROW "(%s, %lld, %lld, %lld, %s, %lld, %lld, %lld, %lld, %lld, %lld, %lld, " \
    "%s, %s, %lld, %lld, %s, %s)"
#define LEDGER_ROWS4 LEDGER_ROW ", " LEDGER_ROW ", " LEDGER_ROW ", " LEDGER_ROW
#define LEDGER_ROWS16 LEDGER_ROWS4 ", " LEDGER_ROWS4 ", " LEDGER_ROWS4 ", " LEDGER_ROWS4
#define SESSION_COLS "id, user_id, active_expires, refresh_expires, created_at"
#define PLAN_COLS  "id, name, quota_5h, quota_7d, created_at"
#define SUB_COLS   "s.id, s.user_id, s.plan_id, p.name, p.quota_5h, p.quota_7d, s.starts_at, " \
                   "s.until_at, s.cancelled_at"
/* The usage reports (prov_usage.c): the daily rollups hold exactly the
 * ledger rows up to ledger_rollup_state.last_id (prov_rollup.h), the raw
 * rows after it are the rest; a report sums the rollups of the whole UTC
 * days of its range [A, B), the rolled-up raw rows of its partial first and
 * last days ([since, min(until, A)) and [max(A, B), until): the _e
 * statements, for a range that does not start and end at midnight), and
 * the raw rows not rolled up yet in [since, until), in one statement (one
 * snapshot). A report has a shape: its driving filter is an equality the
 * ledger's and the rollups' indexes serve (KEY: key, then user and model,
 * 0 = any; USER: user, then model; ANY: model), so that a user's or a
 * key's report reads only its own rows, and the rows not rolled up are a
 * range of ids. */
#define USAGE_F_KEY(x) x ".key_id = %lld AND (CAST(%lld AS BIGINT) = 0 OR " x ".user_id = %lld) " \
    "AND (CAST(%lld AS BIGINT) = 0 OR " x ".model_id = %lld)"
#define USAGE_F_USER(x) x ".user_id = %lld AND (CAST(%lld AS BIGINT) = 0 OR " x ".model_id = %lld)"
#define USAGE_F_ANY(x) "(CAST(%lld AS BIGINT) = 0 OR " x ".model_id = %lld)"
#define USAGE_LAST "(SELECT last_id FROM ledger_rollup_state WHERE id = 1)"
#define USAGE_RAW "SELECT l.created_at / 86400 * 86400, l.key_id, l.model_id, 1, l.input_tokens, " \
    "l.output_tokens, l.cache_tokens, l.reasoning_tokens, l.credits FROM ledger l " \
    "WHERE l.status <> 'reserved' AND "
#define USAGE_ROLLED(F) "SELECT r.day AS day, r.key_id AS key_id, r.model_id AS model_id, " \
    "r.requests AS n, r.input_tokens AS i, r.output_tokens AS o, r.cache_tokens AS c, " \
    "r.reasoning_tokens AS rt, r.credits AS cr FROM ledger_rollup r WHERE " F("r") \
    " AND r.day >= %lld AND r.day < %lld"
#define USAGE_EDGES(F) \
    " UNION ALL " USAGE_RAW F("l") " AND l.id <= " USAGE_LAST \
    " AND l.created_at >= %lld AND l.created_at < %lld" \
    " UNION ALL " USAGE_RAW F("l") " AND l.id <= " USAGE_LAST \
    " AND l.created_at >= %lld AND l.created_at < %lld"
#define USAGE_NEW(F) \
    " UNION ALL " USAGE_RAW F("l") " AND l.id > " USAGE_LAST \
    " AND l.created_at >= %lld AND l.created_at < %lld"
#define USAGE_SUMS "COALESCE(SUM(u.n), 0), COALESCE(SUM(u.i), 0), COALESCE(SUM(u.o), 0), " \
    "COALESCE(SUM(u.c), 0), COALESCE(SUM(u.rt), 0), COALESCE(SUM(u.cr), 0)"
#define USAGE_STMT(group, shape, SRC, head, tail) \
    { "usage_" group "_" shape, "SELECT " head USAGE_SUMS " FROM (" SRC ") u" tail, NULL }
#define USAGE_GROUPS(shape, SRC) \
    USAGE_STMT("total", shape, SRC, "", ""), \
    USAGE_STMT("by_day", shape, SRC, "u.day, ", " GROUP BY u.day ORDER BY 1"), \
    USAGE_STMT("by_key", shape, SRC, "u.key_id, ", " GROUP BY u.key_id ORDER BY u.key_id"), \
    USAGE_STMT("by_model", shape, SRC, "COALESCE(m.public_id, CAST(u.model_id AS TEXT)), ", \
               " LEFT JOIN models m ON m.id = u.model_id GROUP BY u.model_id, m.public_id " \
               "ORDER BY 1")
#define USAGE_STMTS(shape, F) \
    USAGE_GROUPS(shape, USAGE_ROLLED(F) USAGE_NEW(F)), \
    USAGE_GROUPS(shape "_e", USAGE_ROLLED(F) USAGE_EDGES(F) USAGE_NEW(F))

/* The session report's columns (the sums from the 7th) and the rest of it;
 * its LIMIT is prov_usage.h's PROV_USAGE_SESSIONS_MAX (test_prov_agent's
 * report test reads one session more than it). */
/* The agent sessions' report reads raw rows (sessions are not in the
 * rollups): its sums and filter (args: user, key, model, since, until,
 * each twice, 0 = any). */
#define USAGE_RAW_SUMS "COUNT(*), COALESCE(SUM(l.input_tokens), 0), " \
    "COALESCE(SUM(l.output_tokens), 0), COALESCE(SUM(l.cache_tokens), 0), " \
    "COALESCE(SUM(l.reasoning_tokens), 0), COALESCE(SUM(l.credits), 0)"
#define USAGE_WHERE "WHERE l.status <> 'reserved' " \
    "AND (CAST(%lld AS BIGINT) = 0 OR l.user_id = %lld) " \
    "AND (CAST(%lld AS BIGINT) = 0 OR l.key_id = %lld) " \
    "AND (CAST(%lld AS BIGINT) = 0 OR l.model_id = %lld) " \
    "AND (CAST(%lld AS BIGINT) = 0 OR l.created_at >= %lld) " \
    "AND (CAST(%lld AS BIGINT) = 0 OR l.created_at < %lld) "
#define USAGE_SESSION_COLS "l.agent_session, l.agent_client, l.user_id, l.key_id, " \
    "MIN(l.created_at), MAX(l.created_at), " USAGE_RAW_SUMS
#define USAGE_MODEL "COALESCE(m.public_id, CAST(l.model_id AS TEXT))"
#define USAGE_SESSION_FROM "FROM ledger l LEFT JOIN models m ON m.id = l.model_id " \
    USAGE_WHERE "AND l.agent_session IS NOT NULL " \
    "GROUP BY l.agent_session, l.agent_client, l.user_id, l.key_id " \
    "ORDER BY MAX(l.created_at) DESC, l.agent_session LIMIT 50"

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
    /* a user's sign-in identities and cabinet sessions as the administrator
     * sees them (prov_user_access.c): never a subject, never a token hash.
     * Live sessions: not revoked, refresh term not over; args user, now. */
    { "user_identities",
      "SELECT provider, created_at FROM identities WHERE user_id = %lld ORDER BY created_at, id" },
    { "user_sessions",
      "SELECT id, created_at, active_expires, refresh_expires FROM sessions "
      "WHERE user_id = %lld AND revoked_at IS NULL AND refresh_expires > %lld "
      "ORDER BY created_at, id" },
    /* args: revoked_at, user, now: ends every live session of the user */
    { "user_sessions_revoke",
      "UPDATE sessions SET revoked_at = %lld WHERE user_id = %lld AND revoked_at IS NULL "
      "AND refresh_expires > %lld" },

    /* API keys */
    { "key_add",
      "INSERT INTO api_keys (user_id, name, hash, display, weekly_budget, created_at, last4) "
      "VALUES (%lld, %s, %s, %s, %lld, %lld, %s) RETURNING id" },
    { "key_get", "SELECT " KEY_COLS " FROM api_keys WHERE id = %lld" },
    /* args: user, name: a live key of the user already named so */
    { "key_name_taken",
      "SELECT COUNT(*) FROM api_keys WHERE user_id = %lld AND name = %s AND deleted_at IS NULL" },
    /* args: user filter (0 = all), user id, include deleted (0/1). The flags
     * are CAST: SQLite binds every argument as text, and compares a text '0'
     * with the literal 0 as unequal. */
    { "key_list",
      "SELECT " KEY_COLS " FROM api_keys WHERE (CAST(%lld AS INTEGER) = 0 OR user_id = %lld) "
      "AND (CAST(%d AS INTEGER) = 1 OR deleted_at IS NULL) ORDER BY id" },
    { "key_reissue",
      "UPDATE api_keys SET hash = %s, display = %s, reissued_at = %lld, last4 = %s "
      "WHERE id = %lld AND deleted_at IS NULL" },
    { "key_delete",
      "UPDATE api_keys SET deleted_at = %lld WHERE id = %lld AND deleted_at IS NULL" },
    { "key_budget",
      "UPDATE api_keys SET weekly_budget = %lld WHERE id = %lld AND deleted_at IS NULL" },
    /* args: expires, models, addresses, rpm, in flight (NULL: none), id */
    { "key_controls",
      "UPDATE api_keys SET expires_at = %lld, models = %s, addresses = %s, rpm = %lld, "
      "max_in_flight = %lld WHERE id = %lld AND deleted_at IS NULL" },
    { "auth_lookup",
      "SELECT k.id, k.user_id, k.display, u.blocked, k.weekly_budget, u.balance, "
      "k.expires_at, k.models, k.addresses, k.rpm, k.max_in_flight "
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
      /* max_output: 0 leaves it, a negative figure clears it (NULL: the default) */
      "max_output = CASE WHEN CAST(%lld AS BIGINT) = 0 THEN max_output "
      "WHEN CAST(%lld AS BIGINT) < 0 THEN NULL ELSE CAST(%lld AS BIGINT) END, "
      "updated_at = %lld WHERE public_id = %s" },
    { "model_price",
      "UPDATE models SET rate_input = %lld, rate_output = %lld, rate_cache = %lld, "
      "rate_reasoning = %lld, updated_at = %lld WHERE public_id = %s" },

    /* favorites (prov_models.c): a user's starred catalog models. args of
     * favorite_list: user, enabled only (0/1, CAST as in key_list) */
    { "favorite_add",
      "INSERT INTO favorites (user_id, model_id, created_at) VALUES (%lld, %lld, %lld) "
      "ON CONFLICT (user_id, model_id) DO NOTHING" },
    { "favorite_remove", "DELETE FROM favorites WHERE user_id = %lld AND model_id = %lld" },
    { "favorite_list",
      "SELECT " MODEL_COLS " FROM models WHERE id IN (SELECT model_id FROM favorites "
      "WHERE user_id = %lld) AND (CAST(%d AS INTEGER) = 0 OR enabled = 1) ORDER BY public_id" },

    /* plans and subscriptions (prov_plans.c) */
    { "plan_add",
      "INSERT INTO plans (name, quota_5h, quota_7d, created_at) VALUES (%s, %lld, %lld, %lld) "
      "RETURNING id" },
    { "plan_by_id",   "SELECT " PLAN_COLS " FROM plans WHERE id = %lld" },
    { "plan_by_name", "SELECT " PLAN_COLS " FROM plans WHERE name = %s" },
    { "plan_list",    "SELECT " PLAN_COLS " FROM plans ORDER BY name" },
    /* args: quota_5h, quota_7d (NULL = keep), id */
    { "plan_set",
      "UPDATE plans SET quota_5h = COALESCE(%lld, quota_5h), "
      "quota_7d = COALESCE(%lld, quota_7d) WHERE id = %lld" },
    { "sub_add",
      "INSERT INTO subscriptions (user_id, plan_id, starts_at, until_at) "
      "VALUES (%lld, %lld, %lld, %lld) RETURNING id" },
    /* args: user id, now, now. The newest one wins should two overlap. */
    { "sub_active",
      "SELECT " SUB_COLS " FROM subscriptions s JOIN plans p ON p.id = s.plan_id "
      "WHERE s.user_id = %lld AND s.starts_at <= %lld AND s.cancelled_at IS NULL "
      "AND (s.until_at IS NULL OR s.until_at > %lld) "
      "ORDER BY s.starts_at DESC, s.id DESC LIMIT 1" },
    /* args: cancelled_at, user id, now, now: ends every subscription active now */
    { "sub_cancel",
      "UPDATE subscriptions SET cancelled_at = %lld WHERE user_id = %lld "
      "AND starts_at <= %lld AND cancelled_at IS NULL "
      "AND (until_at IS NULL OR until_at > %lld)" },

    /* usage reports (prov_usage.c): rollups and raw rows, by shape */
    USAGE_STMTS("key", USAGE_F_KEY),
    USAGE_STMTS("user", USAGE_F_USER),
    USAGE_STMTS("any", USAGE_F_ANY),
    /* agent sessions (prov_usage_session.c): one row per session, client,
     * user and key, the newest last request first, the models it used as
     * one comma-separated text (each dialect's aggregate); args: USAGE_WHERE's */
    { "usage_by_session",
      "SELECT " USAGE_SESSION_COLS ", GROUP_CONCAT(DISTINCT " USAGE_MODEL ") "
      USAGE_SESSION_FROM,
      "SELECT " USAGE_SESSION_COLS ", string_agg(DISTINCT " USAGE_MODEL ", ',') "
      USAGE_SESSION_FROM },
    /* the cabinet's recent requests (prov_cabinet_requests.c); args: user,
     * key (0 = any) twice, status ('' = any) twice, before (0 = newest)
     * twice, how many rows */
    { "cabinet_requests",
      "SELECT l.id, l.request_id, l.created_at, l.key_id, k.name, "
      "COALESCE(m.public_id, CAST(l.model_id AS TEXT)), l.transport, l.status, "
      "l.input_tokens, l.output_tokens, l.cache_tokens, l.reasoning_tokens, l.credits, "
      "l.plan_credits, l.source FROM ledger l LEFT JOIN models m ON m.id = l.model_id "
      "LEFT JOIN api_keys k ON k.id = l.key_id WHERE l.user_id = %lld "
      "AND (CAST(%lld AS BIGINT) = 0 OR l.key_id = %lld) "
      "AND (CAST(%s AS TEXT) = '' OR l.status = %s) "
      "AND (CAST(%lld AS BIGINT) = 0 OR l.id < %lld) ORDER BY l.id DESC LIMIT %d" },

    /* billing: the batch writer (core/billing/prov_batch*.c). An account's
     * row is locked first in every billing transaction (SQLite's BEGIN
     * IMMEDIATE already holds the whole database), so that two processes or
     * nodes cannot both pass a check that only one of them fits. */
    { "bill_account",
      "SELECT balance, blocked FROM users WHERE id = %lld",
      "SELECT balance, blocked FROM users WHERE id = %lld FOR UPDATE" },
    /* args: key: what a reservation re-reads of the key (a lookup cache may
     * be a moment old): still live, the same secret, its budget */
    { "bill_key",
      "SELECT hash, deleted_at, weekly_budget FROM api_keys WHERE id = %lld" },
    { "bill_model", "SELECT enabled FROM models WHERE id = %lld" },
    /* args: key: what a draw from a lease that nothing else of the key is
     * using re-reads, without a transaction: the key still live, its
     * secret, its account's block */
    { "bill_admit",
      "SELECT k.hash, u.blocked FROM api_keys k JOIN users u ON u.id = k.user_id "
      "WHERE k.id = %lld AND k.deleted_at IS NULL" },
    /* args: user, now, now: the subscription active now with its quotas */
    { "bill_subscription",
      "SELECT p.quota_5h, p.quota_7d, p.name, s.until_at FROM subscriptions s "
      "JOIN plans p ON p.id = s.plan_id WHERE s.user_id = %lld AND s.starts_at <= %lld "
      "AND s.cancelled_at IS NULL AND (s.until_at IS NULL OR s.until_at > %lld) "
      "ORDER BY s.starts_at DESC LIMIT 1" },
    /* args: scope, id, first bucket still in the window: the check path's sums
     * and the oldest buckets with usage (when capacity starts to return) */
    { "bill_bucket_sum",
      "SELECT COALESCE(SUM(credits), 0), COALESCE(SUM(plan_credits), 0), "
      "MIN(CASE WHEN credits > 0 THEN bucket END), "
      "MIN(CASE WHEN plan_credits > 0 THEN bucket END) FROM usage_buckets "
      "WHERE scope = %s AND scope_id = %lld AND bucket >= %lld" },
    /* args: scope, id, first bucket still in the window: oldest first */
    { "bill_buckets",
      "SELECT bucket, credits, plan_credits FROM usage_buckets "
      "WHERE scope = %s AND scope_id = %lld AND bucket >= %lld ORDER BY bucket" },
    { "bill_balance_add", "UPDATE users SET balance = balance + %lld WHERE id = %lld" },
    /* One bucket's change (SQLite; PostgreSQL gets a batch's buckets in one
     * statement). args: scope, id, bucket, credits, plan credits, requests */
    { "bill_bucket_add",
      "INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests) "
      "VALUES (%s, %lld, %lld, %lld, %lld, %lld) ON CONFLICT (scope, scope_id, bucket) "
      "DO UPDATE SET credits = usage_buckets.credits + excluded.credits, "
      "plan_credits = usage_buckets.plan_credits + excluded.plan_credits, "
      "requests = usage_buckets.requests + excluded.requests" },
    /* args: id, user, key, model, transport, hold, source, created, owner (the
     * holding process's journal, or NULL), floor (the charge of the input
     * estimate: what the replay of a dead owner's journal charges a hold no
     * record of it settled), agent session and client (NULL: none) */
    { "bill_ledger_reserve",
      "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, reserved, "
      "plan_credits, source, status, created_at, owner, floor_credits, agent_session, "
      "agent_client) "
      "VALUES (%s, %lld, %lld, %lld, %s, %lld, 0, %s, 'reserved', %lld, %s, %lld, %s, %s)" },
    { "bill_ledger_settle",
      "UPDATE ledger SET input_tokens = %lld, output_tokens = %lld, cache_tokens = %lld, "
      "reasoning_tokens = %lld, credits = %lld, "
      "plan_credits = CASE WHEN source = 'plan' THEN %lld ELSE 0 END, "
      "status = %s, settled_at = %lld WHERE request_id = %s AND status = 'reserved'" },
    /* The same for a row the sweep expired while its request still ran (a
     * late settlement, prov_batch_books.c): the row leaves 'expired' in the
     * statement that finds it, so that it is completed once. */
    { "bill_ledger_settle_late",
      "UPDATE ledger SET input_tokens = %lld, output_tokens = %lld, cache_tokens = %lld, "
      "reasoning_tokens = %lld, credits = %lld, "
      "plan_credits = CASE WHEN source = 'plan' THEN %lld ELSE 0 END, "
      "status = %s, settled_at = %lld WHERE request_id = %s AND status = 'expired'" },
    /* A request drawn from a lease, written once it is settled: the whole
     * row at once (SQLite; PostgreSQL gets many rows per statement). args:
     * id, user, key, model, transport, tokens x4, hold, charge, plan charge,
     * source, status, created, settled, agent session, agent client */
    { "bill_ledger_complete", LEDGER_INSERT LEDGER_ROW },
    /* The same, several rows to a statement (SQLite only: one statement
     * costs SQLite less than as many rows one at a time, the AUTOINCREMENT
     * counter read and written once) */
    { "bill_ledger_complete4", LEDGER_INSERT LEDGER_ROWS4, "" },
    { "bill_ledger_complete16", LEDGER_INSERT LEDGER_ROWS16, "" },
    { "bill_ledger_complete64", LEDGER_INSERT LEDGER_ROWS16 ", " LEDGER_ROWS16 ", "
      LEDGER_ROWS16 ", " LEDGER_ROWS16, "" },
    /* A journal record of a drawn request (prov_replay.c): the same
     * row, unless it was written before the process died. */
    { "bill_ledger_replay",
      "INSERT INTO ledger (request_id, user_id, key_id, model_id, transport, input_tokens, "
      "output_tokens, cache_tokens, reasoning_tokens, reserved, credits, plan_credits, source, "
      "status, created_at, settled_at, agent_session, agent_client) VALUES (%s, %lld, %lld, "
      "%lld, %s, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %s, %s, %lld, %lld, %s, %s) "
      "ON CONFLICT (request_id) DO NOTHING" },
    /* arg: key: what its open leases hold (prov_billing_key_status shows a
     * key's week without their undrawn rest) */
    { "bill_key_leased",
      "SELECT COALESCE(SUM(amount), 0) FROM billing_leases WHERE key_id = %lld" },
    /* leases (prov_batch_lease.c): args id, user, key, model, source, amount, at, owner
     * (the holding process's journal, or NULL) */
    { "bill_lease_insert",
      "INSERT INTO billing_leases (id, user_id, key_id, model_id, source, amount, at, owner) "
      "VALUES (%s, %lld, %lld, %lld, %s, %lld, %lld, %s)" },
    /* args: amount, at, id */
    { "bill_lease_update", "UPDATE billing_leases SET amount = %lld, at = %lld WHERE id = %s" },
    { "bill_lease_delete", "DELETE FROM billing_leases WHERE id = %s" },
    /* arg: older than: leases of processes that stopped renewing them */
    { "bill_stale_leases",
      "SELECT id, user_id, key_id, source, amount, at FROM billing_leases WHERE at < %lld "
      "ORDER BY at LIMIT 100" },
    /* arg: a journal: the leases of its process (which died) */
    { "bill_owner_leases",
      "SELECT id, user_id, key_id, source, amount, at FROM billing_leases WHERE owner = %s "
      "ORDER BY at" },
    /* arg: a journal: the holds its process (which died) took and nobody
     * settled (through the partial index of reserved rows). The three read
     * the same columns (prov_batch_expire.c) */
    { "bill_owner_holds",
      "SELECT request_id, user_id, key_id, source, reserved, created_at, floor_credits "
      "FROM ledger WHERE status = 'reserved' AND owner = %s ORDER BY created_at" },
    /* the database's identity: journals are replayed only into theirs */
    { "bill_database_id", "SELECT id FROM provider_database" },
    /* args: a hold (request id) or a lease id: what `providerctl hold release`
     * gives back */
    { "bill_hold_by_id",
      "SELECT request_id, user_id, key_id, source, reserved, created_at, floor_credits "
      "FROM ledger WHERE request_id = %s AND status = 'reserved'" },
    { "bill_lease_by_id",
      "SELECT id, user_id, key_id, source, amount, at FROM billing_leases WHERE id = %s" },
    /* arg: user (0 = all): the holds and leases in flight, oldest first
     * (`providerctl hold list`) */
    { "bill_hold_list",
      "SELECT l.request_id, 'request', l.user_id, u.email, l.key_id, m.public_id, l.reserved, "
      "l.source, l.created_at FROM ledger l LEFT JOIN users u ON u.id = l.user_id "
      "LEFT JOIN models m ON m.id = l.model_id WHERE l.status = 'reserved' "
      "AND (CAST(%lld AS BIGINT) = 0 OR l.user_id = %lld) "
      "UNION ALL "
      "SELECT b.id, 'lease', b.user_id, u.email, b.key_id, m.public_id, b.amount, b.source, "
      "b.at FROM billing_leases b LEFT JOIN users u ON u.id = b.user_id "
      "LEFT JOIN models m ON m.id = b.model_id "
      "WHERE (CAST(%lld AS BIGINT) = 0 OR b.user_id = %lld) ORDER BY 9, 1" },
    /* arg: older than: holds whose worker never came back, a batch at a time */
    { "bill_stale_holds",
      "SELECT request_id, user_id, key_id, source, reserved, created_at, floor_credits "
      "FROM ledger WHERE status = 'reserved' AND created_at < %lld ORDER BY created_at "
      "LIMIT 100" },
    { "user_by_id_balance", "SELECT balance FROM users WHERE id = %lld" },
    /* args: user: what requests in flight hold of the balance */
    { "bill_held",
      "SELECT COALESCE(SUM(reserved), 0) + (SELECT COALESCE(SUM(amount), 0) "
      "FROM billing_leases WHERE user_id = %lld AND source = 'balance') FROM ledger "
      "WHERE user_id = %lld AND status = 'reserved' AND source = 'balance'" },

    /* sign-in (core/identity/prov_signin.c): pre-login records, found by the
     * SHA-256 of their state and taken whole by one statement, so that two
     * callbacks with one state (two nodes, a replay) cannot both get it */
    { "signin_state_add",
      "INSERT INTO signin_states (state_hash, provider, sealed, return_path, link_session, "
      "created_at, expires_at, client_key) VALUES (%s, %s, %s, %s, %lld, %lld, %lld, %s)" },
    { "signin_state_take",
      "DELETE FROM signin_states WHERE state_hash = %s "
      "RETURNING provider, sealed, return_path, link_session, expires_at" },
    /* arg: now */
    { "signin_state_purge", "DELETE FROM signin_states WHERE expires_at <= %lld" },

    /* cabinet sessions (core/identity/prov_session.c). Tokens are found by
     * their SHA-256; a lookup extends the active term (never past the
     * refresh term) in the statement that checks it, so that a revocation
     * or a block is seen by the next request on any node. */
    { "session_add",
      "INSERT INTO sessions (user_id, active_hash, refresh_hash, active_expires, "
      "refresh_expires, created_at) VALUES (%lld, %s, %s, %lld, %lld, %lld) RETURNING id" },
    /* args: new active expiry x2, active hash, now, now */
    { "session_touch",
      "UPDATE sessions SET active_expires = CASE WHEN refresh_expires < %lld "
      "THEN refresh_expires ELSE %lld END "
      "WHERE active_hash = %s AND revoked_at IS NULL AND active_expires > %lld "
      "AND refresh_expires > %lld AND EXISTS (SELECT 1 FROM users u "
      "WHERE u.id = sessions.user_id AND u.blocked = 0) "
      "RETURNING " SESSION_COLS },
    /* args: new active hash, new active expiry x2, refresh hash, now */
    { "session_renew",
      "UPDATE sessions SET active_hash = %s, active_expires = CASE WHEN refresh_expires < %lld "
      "THEN refresh_expires ELSE %lld END "
      "WHERE refresh_hash = %s AND revoked_at IS NULL AND refresh_expires > %lld "
      "AND EXISTS (SELECT 1 FROM users u WHERE u.id = sessions.user_id AND u.blocked = 0) "
      "RETURNING " SESSION_COLS },
    { "session_revoke",
      "UPDATE sessions SET revoked_at = %lld WHERE id = %lld AND revoked_at IS NULL" },
    /* args: now, a token's hash twice: the session of either cookie */
    { "session_revoke_token",
      "UPDATE sessions SET revoked_at = %lld WHERE (active_hash = %s OR refresh_hash = %s) "
      "AND revoked_at IS NULL" },
    { "session_purge", "DELETE FROM sessions WHERE refresh_expires <= %lld" },

    /* the OAuth authorization server (core/oauth/). Codes and tokens are
     * found by their SHA-256; a code or a refresh token is taken by the one
     * statement that marks it used, so that it serves once across nodes. */
    { "oauth_client_add",
      "INSERT INTO oauth_clients (client_id, name, redirect_uris, created_at) "
      "VALUES (%s, %s, %s, %lld)" },
    { "oauth_client_get",
      "SELECT client_id, name, redirect_uris, created_at FROM oauth_clients WHERE client_id = %s" },
    { "oauth_code_add",
      "INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, challenge, scope, "
      "resource, created_at, expires_at) VALUES (%s, %s, %lld, %s, %s, %s, %s, %lld, %lld)" },
    /* arg: the oldest expiry kept */
    { "oauth_code_purge", "DELETE FROM oauth_codes WHERE expires_at <= %lld" },
    /* args: now, hash */
    { "oauth_code_take",
      "UPDATE oauth_codes SET used_at = %lld WHERE code_hash = %s AND used_at IS NULL "
      "RETURNING client_id, user_id, redirect_uri, challenge, scope, resource, expires_at" },
    { "oauth_grant_add",
      "INSERT INTO oauth_grants (client_id, user_id, code_hash, scope, resource, created_at) "
      "VALUES (%s, %lld, %s, %s, %s, %lld) RETURNING id" },
    { "oauth_token_add",
      "INSERT INTO oauth_tokens (token_hash, grant_id, kind, created_at, expires_at) "
      "VALUES (%s, %lld, %s, %lld, %lld)" },
    /* args: now, hash, now: a live refresh token of a live grant of a user
     * not blocked, marked used (rotated) */
    { "oauth_refresh_take",
      "UPDATE oauth_tokens SET used_at = %lld WHERE token_hash = %s AND kind = 'refresh' "
      "AND used_at IS NULL AND revoked_at IS NULL AND expires_at > %lld "
      "AND EXISTS (SELECT 1 FROM oauth_grants g JOIN users u ON u.id = g.user_id "
      "WHERE g.id = oauth_tokens.grant_id AND g.revoked_at IS NULL AND u.blocked = 0) "
      "RETURNING grant_id" },
    { "oauth_grant_get",
      "SELECT id, client_id, scope, resource, created_at FROM oauth_grants WHERE id = %lld" },
    /* args: now, hash: the grant made from a code presented again */
    { "oauth_grant_revoke_code",
      "UPDATE oauth_grants SET revoked_at = %lld WHERE code_hash = %s AND revoked_at IS NULL" },
    /* args: now, hash: the grant of a rotated refresh token presented again */
    { "oauth_grant_revoke_refresh",
      "UPDATE oauth_grants SET revoked_at = %lld WHERE revoked_at IS NULL AND id = "
      "(SELECT grant_id FROM oauth_tokens WHERE token_hash = %s AND kind = 'refresh' "
      "AND used_at IS NOT NULL)" },
    { "oauth_grant_revoke",
      "UPDATE oauth_grants SET revoked_at = %lld WHERE id = %lld AND revoked_at IS NULL" },
    /* args: now, user: a block ends every grant of the user */
    { "oauth_grants_revoke_user",
      "UPDATE oauth_grants SET revoked_at = %lld WHERE user_id = %lld AND revoked_at IS NULL" },
    { "oauth_token_find",
      "SELECT t.kind, t.grant_id, g.client_id FROM oauth_tokens t "
      "JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = %s" },
    { "oauth_token_revoke",
      "UPDATE oauth_tokens SET revoked_at = %lld WHERE token_hash = %s AND revoked_at IS NULL" },
    /* args: user, now: the clients of the user's grants that hold a live
     * refresh token (the cabinet's list) */
    { "oauth_user_clients",
      "SELECT g.client_id, c.name, MIN(g.created_at), MAX(t.created_at) FROM oauth_grants g "
      "JOIN oauth_clients c ON c.client_id = g.client_id "
      "JOIN oauth_tokens t ON t.grant_id = g.id "
      "WHERE g.user_id = %lld AND g.revoked_at IS NULL AND EXISTS (SELECT 1 FROM oauth_tokens r "
      "WHERE r.grant_id = g.id AND r.kind = 'refresh' AND r.used_at IS NULL "
      "AND r.revoked_at IS NULL AND r.expires_at > %lld) "
      "GROUP BY g.client_id, c.name ORDER BY MIN(g.created_at), g.client_id" },
    /* args: now, user, client */
    { "oauth_user_revoke",
      "UPDATE oauth_grants SET revoked_at = %lld WHERE user_id = %lld AND client_id = %s "
      "AND revoked_at IS NULL" },
    /* args: hash, now */
    { "oauth_access_check",
      "SELECT g.id, g.user_id, g.client_id, g.scope, g.resource FROM oauth_tokens t "
      "JOIN oauth_grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id "
      "WHERE t.token_hash = %s AND t.kind = 'access' AND t.revoked_at IS NULL "
      "AND g.revoked_at IS NULL AND t.expires_at > %lld AND u.blocked = 0" },

    /* linked identities (core/identity/prov_identity.c). The subject is
     * only ever compared, never selected. */
    { "identity_user",
      "SELECT user_id FROM identities WHERE provider = %s AND subject = %s" },
    /* A conflict (another node made the same identity, or the same email,
     * at once) inserts nothing instead of failing: the driver's error would
     * quote the subject or the address in the log. */
    { "identity_add",
      "INSERT INTO identities (user_id, provider, subject, created_at) VALUES (%lld, %s, %s, %lld) "
      "ON CONFLICT (provider, subject) DO NOTHING" },
    { "identity_user_add",
      "INSERT INTO users (email, name, created_at) VALUES (%s, %s, %lld) "
      "ON CONFLICT (email) DO NOTHING RETURNING id" },
    /* args: provider, user: how many identities the user has, and of provider */
    { "identity_count",
      "SELECT COUNT(*), COALESCE(SUM(CASE WHEN provider = %s THEN 1 ELSE 0 END), 0) "
      "FROM identities WHERE user_id = %lld" },
    { "identity_delete", "DELETE FROM identities WHERE user_id = %lld AND provider = %s" },
    /* an unlink's check and delete hold the user's row (SQLite's BEGIN
     * IMMEDIATE holds the whole database), so that two unlinks cannot
     * together remove the last identity */
    { "identity_lock_user",
      "SELECT id FROM users WHERE id = %lld",
      "SELECT id FROM users WHERE id = %lld FOR UPDATE" },

    /* the purge of what anonymous and finished flows leave
     * (core/store/prov_purge.c), each at most %d rows a statement so that
     * no transaction is long. args: the oldest time kept (now for the
     * pre-login records, now - a day for the rest), then the batch. */
    { "purge_signin_states",
      "DELETE FROM signin_states WHERE state_hash IN (SELECT state_hash FROM signin_states "
      "WHERE expires_at <= %lld LIMIT %d)" },
    /* args: now (past the refresh term), a day ago (revoked), batch */
    { "purge_sessions",
      "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE refresh_expires <= %lld "
      "OR revoked_at <= %lld LIMIT %d)" },
    { "purge_oauth_codes",
      "DELETE FROM oauth_codes WHERE code_hash IN (SELECT code_hash FROM oauth_codes "
      "WHERE expires_at <= %lld LIMIT %d)" },
    /* args: a day ago three times, batch: tokens expired, revoked, or of a
     * grant revoked, a day ago (a rotated refresh token presented again
     * within its term still revokes its grant) */
    { "purge_oauth_tokens",
      "DELETE FROM oauth_tokens WHERE token_hash IN (SELECT token_hash FROM oauth_tokens "
      "WHERE expires_at <= %lld OR revoked_at <= %lld OR grant_id IN (SELECT id FROM "
      "oauth_grants WHERE revoked_at <= %lld) LIMIT %d)" },
    /* grants a day old without a token left (their codes' replays are
     * caught for a day after the code's expiry: the grant is still there) */
    { "purge_oauth_grants",
      "DELETE FROM oauth_grants WHERE id IN (SELECT g.id FROM oauth_grants g "
      "WHERE g.created_at <= %lld AND NOT EXISTS (SELECT 1 FROM oauth_tokens t "
      "WHERE t.grant_id = g.id) LIMIT %d)" },
    /* clients registered a day ago that hold no grant and no code: never
     * used, or every grant over */
    { "purge_oauth_clients",
      "DELETE FROM oauth_clients WHERE id IN (SELECT c.id FROM oauth_clients c "
      "WHERE c.created_at <= %lld AND NOT EXISTS (SELECT 1 FROM oauth_grants g "
      "WHERE g.client_id = c.client_id) AND NOT EXISTS (SELECT 1 FROM oauth_codes k "
      "WHERE k.client_id = c.client_id) LIMIT %d)" },
    /* the operator's view of the registered clients (providerctl oauth
     * clients). arg: now. Live grants: not revoked, with a live refresh
     * token; last used: the newest token's time. */
    { "oauth_clients_list",
      "SELECT c.client_id, c.name, c.created_at, "
      "(SELECT COUNT(*) FROM oauth_grants g WHERE g.client_id = c.client_id "
      "AND g.revoked_at IS NULL AND EXISTS (SELECT 1 FROM oauth_tokens r "
      "WHERE r.grant_id = g.id AND r.kind = 'refresh' AND r.used_at IS NULL "
      "AND r.revoked_at IS NULL AND r.expires_at > %lld)), "
      "(SELECT MAX(t.created_at) FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id "
      "WHERE g.client_id = c.client_id) "
      "FROM oauth_clients c ORDER BY c.created_at, c.id" },
    /* args: now, client: every grant of the client ends */
    { "oauth_client_revoke",
      "UPDATE oauth_grants SET revoked_at = %lld WHERE client_id = %s AND revoked_at IS NULL" },
    /* args: client, client, the cap - 1 (prov_signin.c): a client address
     * keeps its newest pre-login records only */
    { "signin_state_cap",
      "DELETE FROM signin_states WHERE client_key = %s AND state_hash NOT IN (SELECT state_hash "
      "FROM signin_states WHERE client_key = %s ORDER BY created_at DESC, state_hash LIMIT %d)" },
    { NULL, NULL, NULL }
};

const prov_stmt_def_t *prov_store_statements(void)
{
    return statements;
}
