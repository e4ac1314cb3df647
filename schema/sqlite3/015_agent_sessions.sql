-- 015_agent_sessions.sql (SQLite): the agent session a request belongs to
-- (docs/internals/billing.md, "Agent sessions"): the id a coding agent
-- sends on every request of one session (Claude Code's
-- x-claude-code-session-id, Codex's session-id), validated (1 to 128 token
-- characters, else not recorded), and the client that sent it
-- ('claude-code', 'codex', 'other'); both NULL without one. Only for
-- grouping (GET /v1/usage?by=session, providerctl usage report --by
-- session): written in the same INSERT as the rest of the row. No index:
-- a session report reads a user's or a key's rows of a few days through
-- ledger_user_time or ledger_key_time, as the other reports do. ADD COLUMN
-- with no default rewrites no row.
ALTER TABLE ledger ADD COLUMN agent_session TEXT;
ALTER TABLE ledger ADD COLUMN agent_client TEXT;
