-- 009_killed_child.sql (PostgreSQL): what a killed child's holds are charged
-- (docs/internals/broken-streams.md "A killed child"). owner: the journal of
-- the process that took the hold (as billing_leases.owner, migration 004),
-- NULL without a journal; floor_credits: the charge of the request's input
-- estimate alone at the rates of its time. When a dead process's journal is
-- replayed, a hold of its own still reserved that no record of the journal
-- settled is settled 'estimated' at its floor_credits (at most its hold): the
-- gateway had read the prompt. The query goes through the partial index of
-- reserved rows (ledger_reserved, migration 002): no index of its own.
ALTER TABLE ledger ADD COLUMN owner TEXT;
ALTER TABLE ledger ADD COLUMN floor_credits BIGINT NOT NULL DEFAULT 0;
