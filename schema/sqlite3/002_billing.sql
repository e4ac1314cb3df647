-- 002_billing.sql (SQLite): the billing engine's shape. Usage buckets come in
-- two sizes now, told apart by scope: 'key:h' (a key's spend per hour, for
-- its rolling 7-day budget), 'user:m' (an account's plan spend per 5
-- minutes, for the 5-hour window) and 'user:h' (per hour, for the 7-day
-- window); they are rebuilt from the ledger, which is the truth. Unsettled
-- reservations are found through a partial index.
DROP INDEX IF EXISTS ledger_status;
CREATE INDEX ledger_reserved ON ledger(created_at) WHERE status = 'reserved';
CREATE INDEX ledger_reserved_user ON ledger(user_id) WHERE status = 'reserved';
CREATE INDEX subscriptions_active ON subscriptions(user_id, starts_at);
DELETE FROM usage_buckets;
INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests)
  SELECT 'key:h', key_id, created_at - created_at % 3600, SUM(credits), SUM(plan_credits),
         COUNT(*)
  FROM ledger WHERE status <> 'reserved' GROUP BY key_id, created_at - created_at % 3600;
INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests)
  SELECT 'user:h', user_id, created_at - created_at % 3600, SUM(credits), SUM(plan_credits),
         COUNT(*)
  FROM ledger WHERE status <> 'reserved' GROUP BY user_id, created_at - created_at % 3600;
INSERT INTO usage_buckets (scope, scope_id, bucket, credits, plan_credits, requests)
  SELECT 'user:m', user_id, created_at - created_at % 300, SUM(credits), SUM(plan_credits),
         COUNT(*)
  FROM ledger WHERE status <> 'reserved' GROUP BY user_id, created_at - created_at % 300;
