-- 004_journal.sql (SQLite): what the settlement journal needs. A process
-- writes every settlement that is answered before its ledger row is
-- committed to a journal file of its own first; when the process dies, a
-- surviving one replays that file into this database. The database gets an
-- identity, so that a journal is only ever replayed into the database its
-- records belong to; and a lease records the journal (the process) that holds
-- it, so that the lease of a dead process is returned by the replay at once
-- instead of after the hold timeout.
CREATE TABLE provider_database (
  id TEXT NOT NULL
);
INSERT INTO provider_database (id) VALUES (lower(hex(randomblob(16))));
ALTER TABLE billing_leases ADD COLUMN owner TEXT;
CREATE INDEX billing_leases_owner ON billing_leases(owner);
