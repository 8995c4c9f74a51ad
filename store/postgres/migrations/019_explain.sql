-- Migration 019, issue 33: what explains a run, kept beside its result.
--
-- explain is store.Explain in the compact form store.EncodeExplain makes (a version byte, then
-- DEFLATE-compressed JSON): the run's requests, bytes by type and party, LCP phases and element,
-- layout shifts, main-thread time, costliest scripts and failing audits. It is written by the
-- statement that stores the result, and goes with the row when retention prunes it. NULL for a
-- result stored before this migration.
ALTER TABLE page_results ADD COLUMN explain bytea;

-- page_row_bytes counts it with the rest of the row.
CREATE OR REPLACE FUNCTION page_row_bytes(r page_results) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT 150 + coalesce(pg_column_size(r.result), 0) + coalesce(pg_column_size(r.explain), 0)
        + octet_length(r.page_path) + octet_length(r.page_url) + octet_length(r.strategy) + octet_length(r.error)
$$;
