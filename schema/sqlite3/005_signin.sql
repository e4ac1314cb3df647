-- 005_signin.sql (SQLite): what sign-in through external identity providers
-- needs beyond 001's identities and sessions. A pre-login record holds one
-- authorization request between its start (GET /v1/auth/NAME/login or /link)
-- and its callback, shared by every node: found by the SHA-256 of its state,
-- taken (deleted) by the callback that uses it, so it serves once; its PKCE
-- verifier and nonce are sealed under a key derived from the state and the
-- browser's binding cookie, neither of which is stored. link_session is the
-- session a link was started from (NULL for a sign-in). Sessions past their
-- refresh term are purged by it (and providerctl lists the live ones by it).
CREATE TABLE signin_states (
  state_hash    TEXT PRIMARY KEY,
  provider      TEXT NOT NULL,
  sealed        TEXT NOT NULL,
  return_path   TEXT,
  link_session  BIGINT,
  created_at    BIGINT NOT NULL,
  expires_at    BIGINT NOT NULL
);
CREATE INDEX signin_states_expires ON signin_states(expires_at);
CREATE INDEX sessions_refresh_expires ON sessions(refresh_expires);
