-- 013_audit.sql (SQLite): the audit trail (issue 34; docs/internals/audit.md,
-- core/store/prov_audit.c): one row per change an administrator, a user or
-- an OAuth client made, and per sign-in and sign-in refusal. actor_kind is
-- admin (actor_id: the OS user running providerctl), user (actor_id: the
-- user id), oauth_client (the client_id) or system. user_id is the user the
-- row concerns (NULL: none known, e.g. a refused sign-in); no foreign key,
-- so that a row never holds up a change to the users table. detail is a
-- small JSON object without secrets. Append-only: an UPDATE is refused; the
-- retention purge deletes the oldest rows in batches.
CREATE TABLE audit (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    actor_kind TEXT NOT NULL CHECK (actor_kind IN ('admin', 'user', 'oauth_client', 'system')),
    actor_id TEXT,
    action TEXT NOT NULL,
    target_kind TEXT,
    target_id TEXT,
    user_id INTEGER,
    address TEXT,
    detail TEXT
);
CREATE INDEX audit_at ON audit(at);
CREATE INDEX audit_user ON audit(user_id, at);
CREATE TRIGGER audit_append_only BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
