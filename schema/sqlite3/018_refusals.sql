-- 018_refusals.sql (SQLite): refusals, the requests of a known key refused
-- before a reservation (402, 429, 404 of an unknown model, 403, 401 of an
-- expired key, ...), so that GET /v1/requests lists them beside the ledger's
-- rows (issue 36). Written in batches by each child's refusal writer
-- (mod_provider_refusal.c), never one transaction per request: a row folds
-- the refusals of one key and error code in one second (count), and a
-- batch has a hard cap of rows. The purge thread removes rows older than
-- 30 days (or ProviderLedgerRetention when shorter). model is the model
-- as the client sent it (it may name nothing in the catalog).
CREATE TABLE refusals (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at  BIGINT NOT NULL,
  user_id     BIGINT NOT NULL,
  key_id      BIGINT NOT NULL,
  transport   TEXT NOT NULL,
  model       TEXT,
  http_status INTEGER NOT NULL,
  code        TEXT NOT NULL,
  request_id  TEXT NOT NULL,
  count       BIGINT NOT NULL DEFAULT 1
);
CREATE INDEX refusals_user ON refusals(user_id, id);
CREATE INDEX refusals_time ON refusals(created_at);
