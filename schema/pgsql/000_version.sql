-- 000_version.sql (PostgreSQL): the table that records which migrations ran.
-- providerctl creates it before anything else; it is not a numbered migration.
CREATE TABLE IF NOT EXISTS schema_version (
  version     INTEGER PRIMARY KEY,
  applied_at  BIGINT NOT NULL
);
