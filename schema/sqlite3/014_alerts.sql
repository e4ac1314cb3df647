-- 014_alerts.sql (SQLite): spend alerts (issue 34, item 3;
-- docs/internals/alerts.md). alerts is the outbox: one row per crossing,
-- unique by (subject, kind, window_start), so that two nodes on one database
-- that see the same crossing write one row; the row carries the JSON body
-- as it is sent and its delivery state (next_at is both the next attempt
-- and the lease of the node that claimed it; sent_at is set once the
-- receiver answered 2xx). alert_settings holds what a user set for
-- themselves (balance_below, micro-credits; NULL: the operator's default)
-- and the balance alert's arming (armed_at: when the balance was last seen
-- at or above the threshold, NULL once an alert fired). alert_turns is the
-- scan's lease: one node scans at a time.
CREATE TABLE alerts (
  id           TEXT PRIMARY KEY,
  subject      TEXT NOT NULL,
  kind         TEXT NOT NULL,
  window_start BIGINT NOT NULL,
  user_id      BIGINT NOT NULL,
  key_id       BIGINT,
  body         TEXT NOT NULL,
  created_at   BIGINT NOT NULL,
  attempts     INTEGER NOT NULL DEFAULT 0,
  next_at      BIGINT NOT NULL,
  sent_at      BIGINT,
  last_error   TEXT,
  UNIQUE (subject, kind, window_start)
);
CREATE INDEX alerts_due ON alerts(next_at) WHERE sent_at IS NULL;
CREATE INDEX alerts_created ON alerts(created_at);
CREATE TABLE alert_settings (
  user_id       BIGINT PRIMARY KEY REFERENCES users(id),
  balance_below BIGINT,
  armed_at      BIGINT
);
CREATE TABLE alert_turns (
  name     TEXT PRIMARY KEY,
  until_at BIGINT NOT NULL
);
INSERT INTO alert_turns (name, until_at) VALUES ('scan', 0);
