-- 011_ledger_status.sql (PostgreSQL): ledger.status takes only the names of
-- the status table (core/store/prov_ledger.c; docs/internals/billing.md,
-- "Ledger statuses"); the list below is that table's, in its order, and a
-- unit test (test_prov_store) holds the two together. NOT VALID: every row
-- written from now on is checked, and the migration does not scan a large
-- ledger under the ACCESS EXCLUSIVE lock that ADD CONSTRAINT takes (the rows
-- already written were written by code that knew no other name). An
-- operator may check them too, online (SHARE UPDATE EXCLUSIVE: writes go
-- on): ALTER TABLE ledger VALIDATE CONSTRAINT ledger_status_known;
ALTER TABLE ledger ADD CONSTRAINT ledger_status_known CHECK (status IN ('reserved', 'ok', 'no_usage', 'estimated', 'client_cut', 'client_gone', 'cut', 'max_duration', 'timeout', 'error', 'failed', 'refused', 'malformed', 'undelivered', 'expired', 'released')) NOT VALID;
