-- 007_oauth.sql (SQLite): the service's own OAuth 2.1 authorization server
-- (core/oauth/), for the MCP account endpoint. Clients are public (no
-- secret), registered dynamically with their redirect URIs (one per line).
-- A code is stored by its SHA-256 with the PKCE challenge, the redirect URI,
-- the scope and the resource it was asked for; it lives 60 seconds and is
-- taken once (used_at), and kept a day so that a replay is still caught and
-- revokes the grant made from it (oauth_grants.code_hash). A grant is one
-- authorization of one client by one user for one resource (the tokens'
-- audience); its access tokens (1 hour) and refresh tokens (30 days,
-- rotated: used_at) are stored as SHA-256 only. Revoking a grant, or
-- blocking its user, ends every token of it at once on every node.
CREATE TABLE oauth_clients (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  client_id      TEXT NOT NULL UNIQUE,
  name           TEXT,
  redirect_uris  TEXT NOT NULL,
  created_at     BIGINT NOT NULL
);
CREATE TABLE oauth_codes (
  code_hash      TEXT PRIMARY KEY,
  client_id      TEXT NOT NULL,
  user_id        BIGINT NOT NULL REFERENCES users(id),
  redirect_uri   TEXT NOT NULL,
  challenge      TEXT NOT NULL,
  scope          TEXT NOT NULL,
  resource       TEXT NOT NULL,
  created_at     BIGINT NOT NULL,
  expires_at     BIGINT NOT NULL,
  used_at        BIGINT
);
CREATE INDEX oauth_codes_expires ON oauth_codes(expires_at);
CREATE TABLE oauth_grants (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  client_id      TEXT NOT NULL,
  user_id        BIGINT NOT NULL REFERENCES users(id),
  code_hash      TEXT UNIQUE,
  scope          TEXT NOT NULL,
  resource       TEXT NOT NULL,
  created_at     BIGINT NOT NULL,
  revoked_at     BIGINT
);
CREATE INDEX oauth_grants_user ON oauth_grants(user_id);
CREATE TABLE oauth_tokens (
  token_hash     TEXT PRIMARY KEY,
  grant_id       BIGINT NOT NULL REFERENCES oauth_grants(id),
  kind           TEXT NOT NULL,
  created_at     BIGINT NOT NULL,
  expires_at     BIGINT NOT NULL,
  used_at        BIGINT,
  revoked_at     BIGINT
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens(grant_id);
