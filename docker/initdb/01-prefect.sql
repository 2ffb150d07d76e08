-- Prefect's own database, beside driftline's history database; Prefect needs pg_trgm.
CREATE DATABASE prefect OWNER driftline;
\connect prefect
CREATE EXTENSION IF NOT EXISTS pg_trgm;
