-- 011_ledger_status.sql (SQLite): ledger.status takes only the names of the
-- status table (core/store/prov_ledger.c; docs/internals/billing.md, "Ledger
-- statuses"); the list below is that table's (the most frequent first), and
-- a unit test (test_prov_store) holds the two together. SQLite cannot add a CHECK to an
-- existing column: rebuilding the table would copy every ledger row, its
-- indexes and the views over it inside the migration's transaction (the
-- database locked and its size doubled for the time of the copy of a large
-- ledger). Two triggers check every row written from now on instead, at no
-- cost to the migration; the rows already written were written by code that
-- knew no other name. A statement with another status fails (ABORT: the
-- transaction is rolled back by its owner, as for any constraint). The
-- condition is a chain of comparisons, not NOT IN (...): SQLite builds a
-- list of more than two constants into a temporary b-tree each time the
-- trigger runs, which cost the billing writer ~50,000 instructions a row
-- (bench/cpucost.sh); the chain stops at the first name that matches, and
-- the names most rows have come first (ok, reserved, estimated).
CREATE TRIGGER ledger_status_insert BEFORE INSERT ON ledger WHEN NOT (NEW.status = 'ok' OR NEW.status = 'reserved' OR NEW.status = 'estimated' OR NEW.status = 'no_usage' OR NEW.status = 'client_cut' OR NEW.status = 'client_gone' OR NEW.status = 'cut' OR NEW.status = 'max_duration' OR NEW.status = 'timeout' OR NEW.status = 'error' OR NEW.status = 'failed' OR NEW.status = 'refused' OR NEW.status = 'malformed' OR NEW.status = 'undelivered' OR NEW.status = 'expired' OR NEW.status = 'released') BEGIN SELECT RAISE(ABORT, 'ledger.status: not a ledger status'); END;
CREATE TRIGGER ledger_status_update BEFORE UPDATE OF status ON ledger WHEN NOT (NEW.status = 'ok' OR NEW.status = 'reserved' OR NEW.status = 'estimated' OR NEW.status = 'no_usage' OR NEW.status = 'client_cut' OR NEW.status = 'client_gone' OR NEW.status = 'cut' OR NEW.status = 'max_duration' OR NEW.status = 'timeout' OR NEW.status = 'error' OR NEW.status = 'failed' OR NEW.status = 'refused' OR NEW.status = 'malformed' OR NEW.status = 'undelivered' OR NEW.status = 'expired' OR NEW.status = 'released') BEGIN SELECT RAISE(ABORT, 'ledger.status: not a ledger status'); END;
