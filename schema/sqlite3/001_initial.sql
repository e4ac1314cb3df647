-- 001_initial.sql (SQLite): the first schema of mod_provider: users and their
-- identities, API keys, the model catalog with its rate card, plans and
-- subscriptions, the ledger, usage buckets (per-window aggregates), balance
-- movements, favorites and cabinet sessions. Amounts are integer micro-credits;
-- times are integer seconds since the epoch. A statement ends with ';' at the
-- end of a line (providerctl splits on that).
CREATE TABLE users (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  email       TEXT NOT NULL UNIQUE,
  name        TEXT,
  blocked     INTEGER NOT NULL DEFAULT 0,
  balance     BIGINT NOT NULL DEFAULT 0,
  created_at  BIGINT NOT NULL
);
CREATE TABLE identities (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id     BIGINT NOT NULL REFERENCES users(id),
  provider    TEXT NOT NULL,
  subject     TEXT NOT NULL,
  created_at  BIGINT NOT NULL,
  UNIQUE (provider, subject)
);
CREATE INDEX identities_user ON identities(user_id);
CREATE TABLE api_keys (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id       BIGINT NOT NULL REFERENCES users(id),
  name          TEXT,
  hash          TEXT NOT NULL UNIQUE,
  display       TEXT NOT NULL,
  weekly_budget BIGINT,
  created_at    BIGINT NOT NULL,
  reissued_at   BIGINT,
  deleted_at    BIGINT
);
CREATE INDEX api_keys_user ON api_keys(user_id);
CREATE TABLE models (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  public_id        TEXT NOT NULL UNIQUE,
  display_name     TEXT NOT NULL,
  upstream_id      TEXT NOT NULL,
  family           TEXT NOT NULL DEFAULT '',
  enabled          INTEGER NOT NULL DEFAULT 1,
  messages_enabled INTEGER NOT NULL DEFAULT 0,
  rate_input       BIGINT,
  rate_output      BIGINT,
  rate_cache       BIGINT,
  rate_reasoning   BIGINT,
  created_at       BIGINT NOT NULL,
  updated_at       BIGINT NOT NULL
);
CREATE TABLE plans (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT NOT NULL UNIQUE,
  quota_5h    BIGINT NOT NULL,
  quota_7d    BIGINT NOT NULL,
  created_at  BIGINT NOT NULL
);
CREATE TABLE subscriptions (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id      BIGINT NOT NULL REFERENCES users(id),
  plan_id      BIGINT NOT NULL REFERENCES plans(id),
  starts_at    BIGINT NOT NULL,
  until_at     BIGINT,
  cancelled_at BIGINT
);
CREATE INDEX subscriptions_user ON subscriptions(user_id);
CREATE TABLE ledger (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  request_id       TEXT NOT NULL UNIQUE,
  user_id          BIGINT NOT NULL,
  key_id           BIGINT NOT NULL,
  model_id         BIGINT NOT NULL,
  transport        TEXT NOT NULL,
  input_tokens     BIGINT NOT NULL DEFAULT 0,
  output_tokens    BIGINT NOT NULL DEFAULT 0,
  cache_tokens     BIGINT NOT NULL DEFAULT 0,
  reasoning_tokens BIGINT NOT NULL DEFAULT 0,
  reserved         BIGINT NOT NULL DEFAULT 0,
  credits          BIGINT NOT NULL DEFAULT 0,
  plan_credits     BIGINT NOT NULL DEFAULT 0,
  source           TEXT NOT NULL DEFAULT 'balance',
  status           TEXT NOT NULL,
  created_at       BIGINT NOT NULL,
  settled_at       BIGINT
);
CREATE INDEX ledger_user_time ON ledger(user_id, created_at);
CREATE INDEX ledger_key_time ON ledger(key_id, created_at);
CREATE INDEX ledger_status ON ledger(status, created_at);
CREATE TABLE usage_buckets (
  scope        TEXT NOT NULL,
  scope_id     BIGINT NOT NULL,
  bucket       BIGINT NOT NULL,
  credits      BIGINT NOT NULL DEFAULT 0,
  plan_credits BIGINT NOT NULL DEFAULT 0,
  requests     BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (scope, scope_id, bucket)
);
CREATE TABLE balance_events (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id     BIGINT NOT NULL REFERENCES users(id),
  amount      BIGINT NOT NULL,
  reason      TEXT,
  created_at  BIGINT NOT NULL
);
CREATE INDEX balance_events_user ON balance_events(user_id);
CREATE TABLE favorites (
  user_id     BIGINT NOT NULL REFERENCES users(id),
  model_id    BIGINT NOT NULL REFERENCES models(id),
  created_at  BIGINT NOT NULL,
  PRIMARY KEY (user_id, model_id)
);
CREATE TABLE sessions (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id         BIGINT NOT NULL REFERENCES users(id),
  active_hash     TEXT NOT NULL UNIQUE,
  refresh_hash    TEXT NOT NULL UNIQUE,
  active_expires  BIGINT NOT NULL,
  refresh_expires BIGINT NOT NULL,
  created_at      BIGINT NOT NULL,
  revoked_at      BIGINT
);
CREATE INDEX sessions_user ON sessions(user_id);
