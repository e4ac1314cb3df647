-- 016_key_controls.sql (SQLite): an API key's own controls (core/account/
-- prov_key_controls.h), set by its owner (PATCH /v1/keys/{id}) or an
-- administrator (providerctl key set); NULL: not set. They are columns of
-- the key's row so that the one query that looks a key up per request
-- (auth_lookup) reads them too: a key with none set costs nothing more.
--   expires_at     seconds since the epoch from which the key is refused
--                  (401 API_KEY_EXPIRED)
--   models         the public model ids it may use, comma-separated
--                  (else 403 MODEL_NOT_ALLOWED)
--   addresses      the client address ranges (CIDR) it may come from,
--                  comma-separated (else 403 ADDRESS_NOT_ALLOWED)
--   rpm            requests a minute (else 429 API_KEY_RATE_LIMITED)
--   max_in_flight  requests at once (else 429 API_KEY_IN_FLIGHT_LIMIT)
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE api_keys ADD COLUMN models TEXT;
ALTER TABLE api_keys ADD COLUMN addresses TEXT;
ALTER TABLE api_keys ADD COLUMN rpm BIGINT;
ALTER TABLE api_keys ADD COLUMN max_in_flight BIGINT;
