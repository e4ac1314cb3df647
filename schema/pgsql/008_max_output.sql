-- 008_max_output.sql (PostgreSQL): each catalog model's maximum output, in tokens:
-- the cap every request of the model is forwarded with (a client's own cap is
-- lowered to it; a request without one gets it, or less when the limits that
-- pay for it cannot cover it). NULL: the server's ProviderDefaultMaxTokens
-- (32,768 unless configured). Set with providerctl model set ID --max-output N.
ALTER TABLE models ADD COLUMN max_output BIGINT;
