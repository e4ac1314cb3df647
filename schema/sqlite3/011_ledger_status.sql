-- 011_ledger_status.sql (SQLite): ledger.status takes only the names of the
-- status table (core/store/prov_ledger.c; docs/internals/billing.md, "Ledger
-- statuses"); the list below is that table's, in its order, and a unit test
-- (test_prov_store) holds the two together. SQLite cannot add a CHECK to an
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
-- (bench/cpucost.sh); 16 comparisons cost a few hundred.
CREATE TRIGGER ledger_status_insert BEFORE INSERT ON ledger WHEN NEW.status <> 'reserved' AND NEW.status <> 'ok' AND NEW.status <> 'no_usage' AND NEW.status <> 'estimated' AND NEW.status <> 'client_cut' AND NEW.status <> 'client_gone' AND NEW.status <> 'cut' AND NEW.status <> 'max_duration' AND NEW.status <> 'timeout' AND NEW.status <> 'error' AND NEW.status <> 'failed' AND NEW.status <> 'refused' AND NEW.status <> 'malformed' AND NEW.status <> 'undelivered' AND NEW.status <> 'expired' AND NEW.status <> 'released' BEGIN SELECT RAISE(ABORT, 'ledger.status: not a ledger status'); END;
CREATE TRIGGER ledger_status_update BEFORE UPDATE OF status ON ledger WHEN NEW.status <> 'reserved' AND NEW.status <> 'ok' AND NEW.status <> 'no_usage' AND NEW.status <> 'estimated' AND NEW.status <> 'client_cut' AND NEW.status <> 'client_gone' AND NEW.status <> 'cut' AND NEW.status <> 'max_duration' AND NEW.status <> 'timeout' AND NEW.status <> 'error' AND NEW.status <> 'failed' AND NEW.status <> 'refused' AND NEW.status <> 'malformed' AND NEW.status <> 'undelivered' AND NEW.status <> 'expired' AND NEW.status <> 'released' BEGIN SELECT RAISE(ABORT, 'ledger.status: not a ledger status'); END;
