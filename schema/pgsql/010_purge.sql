-- 010_purge.sql (PostgreSQL): what bounds the rows anonymous requests leave
-- (issue 31; docs/internals/ratelimit.md). client_key: the client address a
-- pre-login record was started from (its /64 for IPv6, as the rate limits
-- count), so that one address keeps at most its newest few (NULL: a record of
-- an older server, purged by its expiry like every other). The indexes serve
-- the server's periodic purge (core/store/prov_purge.c): expired tokens, old
-- clients without a grant or a code, and the grants and codes of a client.
ALTER TABLE signin_states ADD COLUMN client_key TEXT;
CREATE INDEX signin_states_client ON signin_states(client_key, created_at);
CREATE INDEX oauth_tokens_expires ON oauth_tokens(expires_at);
CREATE INDEX oauth_clients_created ON oauth_clients(created_at);
CREATE INDEX oauth_grants_client ON oauth_grants(client_id);
CREATE INDEX oauth_codes_client ON oauth_codes(client_id);
