-- 012_rollups.sql (SQLite): daily usage rollups and the ledger's retention
-- (issue 34; core/store/prov_rollup.c, docs/internals/billing.md "Rollups
-- and retention"). ledger_rollup: one row per UTC day, user, key, model and
-- transport: the sums of the settled ledger rows of that day (requests, the
-- four token kinds, credits and the plan's part of them, refused and failed
-- requests). ledger_rollup_state, one row: last_id, the highest ledger id
-- rolled up: the rollups hold exactly the ledger rows up to it (settled
-- ones, which never change again), the rows after it are not in them.
-- Readers sum the rollups of whole days and the raw rows after last_id;
-- retention removes only raw rows up to it.
CREATE TABLE ledger_rollup (
  day              BIGINT NOT NULL,
  user_id          BIGINT NOT NULL,
  key_id           BIGINT NOT NULL,
  model_id         BIGINT NOT NULL,
  transport        TEXT NOT NULL,
  requests         BIGINT NOT NULL DEFAULT 0,
  input_tokens     BIGINT NOT NULL DEFAULT 0,
  output_tokens    BIGINT NOT NULL DEFAULT 0,
  cache_tokens     BIGINT NOT NULL DEFAULT 0,
  reasoning_tokens BIGINT NOT NULL DEFAULT 0,
  credits          BIGINT NOT NULL DEFAULT 0,
  plan_credits     BIGINT NOT NULL DEFAULT 0,
  refused          BIGINT NOT NULL DEFAULT 0,
  failed           BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (day, user_id, key_id, model_id, transport)
);
CREATE INDEX ledger_rollup_user ON ledger_rollup(user_id, day);
CREATE INDEX ledger_rollup_key ON ledger_rollup(key_id, day);
CREATE TABLE ledger_rollup_state (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  last_id      BIGINT NOT NULL
);
INSERT INTO ledger_rollup_state (id, last_id) VALUES (1, 0);
