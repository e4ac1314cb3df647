-- 003_leases.sql (SQLite): billing leases. Under concurrent load a process
-- holds one amount for many requests of a key and model (a lease) instead
-- of one hold per request, and writes those requests' ledger rows later, in
-- groups. A lease counts in the usage buckets and the balance exactly like a
-- hold; this table says whose it is, so that a lease of a process that died
-- is released when it has not been renewed for the hold timeout.
CREATE TABLE billing_leases (
  id       TEXT PRIMARY KEY,
  user_id  BIGINT NOT NULL,
  key_id   BIGINT NOT NULL,
  model_id BIGINT NOT NULL,
  source   TEXT NOT NULL,
  amount   BIGINT NOT NULL,
  at       BIGINT NOT NULL
);
CREATE INDEX billing_leases_at ON billing_leases(at);
