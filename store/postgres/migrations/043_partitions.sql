-- Migration 043, issue 46: page results and their pictures, range-partitioned by month.
--
-- The two tables that grow with every audit (page_results: the result, its explain data and
-- metric columns; page_images: the screenshots) are partitioned by scanned_at, the created_at
-- of the row's scan copied onto the row, in one partition per calendar month (UTC) named
-- page_results_pYYYYMM / page_images_pYYYYMM, and a DEFAULT partition each for a row of a month
-- that has none (a clock far off, or a pruner that has not run for months): it is pruned row by
-- row. The pruner (store PruneMonths) makes the months ahead and drops a whole month when no
-- scan of it is kept under its workspace's retention (DETACH, then DROP: the space goes back to
-- the disk at once); a month that straddles a workspace's window is pruned row by row as before.
--
-- Choices:
-- * The key is the scan's created_at, not the time the row was written: every row of a scan
--   lands in one partition, so a month is droppable when its scans are (the scans table,
--   indexed on created_at here, answers that without reading the partition), and a retried
--   audit's upsert finds its row (the primary key must hold the partition key: it is
--   (scan_id, page_path, strategy, scanned_at); the same scan always gives the same scanned_at).
-- * page_images references page_results with the partition key in the foreign key, and both
--   are partitioned alike, so a month's pictures go with its rows (the pictures' partition is
--   dropped first). Nothing else references either table; scans stays one table (one small row
--   per scan, kept for ever with its summary).
-- * workspace_id is on every row of both (sites never change workspace), for a sharded
--   Postgres that distributes by tenant (docs/operations.md, "Partitions").
-- * The twelve metric columns of migration 002 are plain columns filled by a trigger
--   (page_result_metrics) instead of generated ones: the copy below moves their values as they
--   are, where generated columns would read every result again, twelve times a row.
-- * In place: the rows are copied into the partitioned tables in this migration's one
--   transaction, which holds the old tables' locks until it commits: the reads and writes of
--   page details wait for it (the pause measured in .ci/README.md, "Partitions").

-- The functions take the tables' row types: they go with the old tables and come back below.
DROP FUNCTION page_row_bytes(page_results);
DROP FUNCTION page_image_bytes(page_images);
ALTER TABLE page_images RENAME TO page_images_unpartitioned;
ALTER TABLE page_results RENAME TO page_results_unpartitioned;
ALTER TABLE page_results_unpartitioned RENAME CONSTRAINT page_results_pkey TO page_results_unpartitioned_pkey;
ALTER TABLE page_images_unpartitioned RENAME CONSTRAINT page_images_pkey TO page_images_unpartitioned_pkey;

CREATE TABLE page_results (
    scan_id      uuid NOT NULL REFERENCES scans ON DELETE CASCADE,
    page_path    text NOT NULL,
    strategy     text NOT NULL,
    page_url     text NOT NULL,
    result       jsonb,
    error        text NOT NULL DEFAULT '',
    m_performance    float8,
    m_seo            float8,
    m_accessibility  float8,
    m_best_practices float8,
    m_lcp            float8,
    m_cls            float8,
    m_inp            float8,
    m_fcp            float8,
    m_ttfb           float8,
    m_tbt            float8,
    m_speed_index    float8,
    m_tti            float8,
    explain      bytea,
    workspace_id uuid NOT NULL,
    scanned_at   timestamptz NOT NULL,
    PRIMARY KEY (scan_id, page_path, strategy, scanned_at)
) PARTITION BY RANGE (scanned_at);

CREATE TABLE page_images (
    scan_id      uuid NOT NULL,
    page_path    text NOT NULL,
    strategy     text NOT NULL,
    idx          smallint NOT NULL CHECK (idx >= 0),
    mime         text NOT NULL CHECK (mime IN ('image/jpeg', 'image/webp', 'image/png')),
    width        integer NOT NULL DEFAULT 0,
    height       integer NOT NULL DEFAULT 0,
    timings      integer[] NOT NULL DEFAULT '{}',
    final        boolean NOT NULL DEFAULT false,
    pinned       boolean NOT NULL DEFAULT false,
    data         bytea NOT NULL,
    workspace_id uuid NOT NULL,
    scanned_at   timestamptz NOT NULL,
    PRIMARY KEY (scan_id, page_path, strategy, idx, scanned_at),
    FOREIGN KEY (scan_id, page_path, strategy, scanned_at) REFERENCES page_results ON DELETE CASCADE
) PARTITION BY RANGE (scanned_at);
ALTER TABLE page_images ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE page_results_default PARTITION OF page_results DEFAULT;
CREATE TABLE page_images_default PARTITION OF page_images DEFAULT;

-- One partition per month from the oldest scan's to two months ahead of now.
DO $$
DECLARE
    m timestamptz := date_trunc('month', coalesce((SELECT min(created_at) FROM scans), now()), 'UTC');
BEGIN
    WHILE m < date_trunc('month', now(), 'UTC') + interval '3 months' LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF page_results FOR VALUES FROM (%L) TO (%L)',
            'page_results_p' || to_char(m AT TIME ZONE 'UTC', 'YYYYMM'), m, (m AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC');
        EXECUTE format('CREATE TABLE %I PARTITION OF page_images FOR VALUES FROM (%L) TO (%L)',
            'page_images_p' || to_char(m AT TIME ZONE 'UTC', 'YYYYMM'), m, (m AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC');
        m := (m AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC';
    END LOOP;
END $$;

-- The metric columns are copied as they are (no result is read again: the copy is a copy of
-- bytes), and the trigger below fills them for the rows written from now on.
INSERT INTO page_results (scan_id, page_path, strategy, page_url, result, error, explain, workspace_id, scanned_at,
        m_performance, m_seo, m_accessibility, m_best_practices, m_lcp, m_cls, m_inp, m_fcp, m_ttfb, m_tbt, m_speed_index, m_tti)
    SELECT r.scan_id, r.page_path, r.strategy, r.page_url, r.result, r.error, r.explain, s.workspace_id, c.created_at,
        r.m_performance, r.m_seo, r.m_accessibility, r.m_best_practices, r.m_lcp, r.m_cls, r.m_inp, r.m_fcp, r.m_ttfb, r.m_tbt, r.m_speed_index, r.m_tti
    FROM page_results_unpartitioned r JOIN scans c ON c.id = r.scan_id JOIN sites s ON s.id = c.site_id;
INSERT INTO page_images (scan_id, page_path, strategy, idx, mime, width, height, timings, final, pinned, data, workspace_id, scanned_at)
    SELECT i.scan_id, i.page_path, i.strategy, i.idx, i.mime, i.width, i.height, i.timings, i.final, i.pinned, i.data, s.workspace_id, c.created_at
    FROM page_images_unpartitioned i JOIN scans c ON c.id = i.scan_id JOIN sites s ON s.id = c.site_id;
DROP TABLE page_images_unpartitioned;
DROP TABLE page_results_unpartitioned;

-- page_result_metrics is migration 002's generated columns as a trigger: the same twelve
-- numbers (NULL when missing or not a JSON number), but the result is read once a row where
-- twelve generated expressions read it twelve times each; and a copy (above) needs none of it.
CREATE FUNCTION page_result_metrics() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s jsonb := NEW.result->'scores';
    v jsonb := NEW.result->'coreWebVitals';
BEGIN
    NEW.m_performance    := CASE WHEN jsonb_typeof(s->'performance') = 'number' THEN (s->'performance')::float8 END;
    NEW.m_seo            := CASE WHEN jsonb_typeof(s->'seo') = 'number' THEN (s->'seo')::float8 END;
    NEW.m_accessibility  := CASE WHEN jsonb_typeof(s->'accessibility') = 'number' THEN (s->'accessibility')::float8 END;
    NEW.m_best_practices := CASE WHEN jsonb_typeof(s->'bestPractices') = 'number' THEN (s->'bestPractices')::float8 END;
    NEW.m_lcp            := CASE WHEN jsonb_typeof(v->'lcp') = 'number' THEN (v->'lcp')::float8 END;
    NEW.m_cls            := CASE WHEN jsonb_typeof(v->'cls') = 'number' THEN (v->'cls')::float8 END;
    NEW.m_inp            := CASE WHEN jsonb_typeof(v->'inp') = 'number' THEN (v->'inp')::float8 END;
    NEW.m_fcp            := CASE WHEN jsonb_typeof(v->'fcp') = 'number' THEN (v->'fcp')::float8 END;
    NEW.m_ttfb           := CASE WHEN jsonb_typeof(v->'ttfb') = 'number' THEN (v->'ttfb')::float8 END;
    NEW.m_tbt            := CASE WHEN jsonb_typeof(v->'tbt') = 'number' THEN (v->'tbt')::float8 END;
    NEW.m_speed_index    := CASE WHEN jsonb_typeof(v->'speedIndex') = 'number' THEN (v->'speedIndex')::float8 END;
    NEW.m_tti            := CASE WHEN jsonb_typeof(v->'tti') = 'number' THEN (v->'tti')::float8 END;
    RETURN NEW;
END $$;
CREATE TRIGGER page_result_metrics BEFORE INSERT OR UPDATE OF result ON page_results
    FOR EACH ROW EXECUTE FUNCTION page_result_metrics();

-- As in 019 and 020, on the new row types.
CREATE FUNCTION page_row_bytes(r page_results) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT 150 + coalesce(pg_column_size(r.result), 0) + coalesce(pg_column_size(r.explain), 0)
        + octet_length(r.page_path) + octet_length(r.page_url) + octet_length(r.strategy) + octet_length(r.error)
$$;
CREATE FUNCTION page_image_bytes(i page_images) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT 100 + pg_column_size(i.data)::bigint + octet_length(i.page_path)
$$;

-- The pruner asks which scans a month holds and whether any is kept: with the columns that tell
-- (prunableSQL's), read from the index alone (a month is 60,000 scans at 2,000 sites).
CREATE INDEX scans_created ON scans (created_at) INCLUDE (id, site_id, status, completed_at, details_pruned_at);
