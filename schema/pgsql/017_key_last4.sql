-- 017_key_last4.sql (PostgreSQL): api_keys.last4, the last four characters of
-- a key's secret, shown with its display prefix ("sk-prov-ab12…wxyz") so
-- that keys are told apart by more than four characters (issue 36). Four
-- of a secret's 43 random characters: the rest (some 234 bits) still
-- cannot be guessed. NULL for keys made before this migration (the
-- cabinet then shows the prefix alone) until they are reissued.
ALTER TABLE api_keys ADD COLUMN last4 TEXT;
