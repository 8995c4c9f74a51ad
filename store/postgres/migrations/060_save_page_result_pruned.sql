-- Migration 060, issue 46 item 4 (ingest): save_page_result (migration 057) as statements that
-- each touch one month. The one statement of 057 found the scan's month (scanned_at) in a common
-- table expression, so the reads of the page's row and pictures (prior, trimmed, pin) could not
-- be pruned to it: every call planned, started and scanned each month of page_results and
-- page_images, more of them every month the database keeps (perf of `loadkit ingest`: starting
-- the executor, ExecInitNode, was 14% of what Postgres spent storing a result). Here the
-- scan's workspace and month are read first, under the lease, into variables: every later
-- statement names its month and is pruned to it when planned. A new row (the common case) is
-- inserted, its pictures inserted without an upsert's checks (page_images references page_results
-- ON DELETE CASCADE: a row that was not there has none) and its scan's count moved; only a row
-- that was there (a retried audit) is updated, its pictures upserted and the ones past this run's
-- number deleted. A run that regressed against no scan pins nothing.
--
-- Same behaviour as 057: the row upserted, the pictures upserted by index and the ones past their
-- number deleted, pinned when the run regressed against p_pin_from (whose pictures of the page
-- are pinned too), pages_done moved when the row is new; it returns the scans it moved (0 for a
-- replaced row or a lost lease, which the caller tells apart). The lease is read by the first
-- statement; the later ones run in the same transaction, microseconds later, as the one statement
-- of 057 ran on one snapshot.
--
-- The result and explain columns are compressed with lz4 where the server has it (Postgres 14 and
-- later built with lz4, as Debian's and the official images are; elsewhere they stay pglz): pglz compressing a result's 4.7 kB of
-- JSON was 7% of what Postgres spent storing it; lz4 is several times faster, its values 9% larger
-- (3,237 bytes against 2,961 on the real report of testdata/psi/home.mobile.json).
-- Rows written before keep pglz (each value says its method); new month partitions inherit it.
--
-- Locks: CREATE OR REPLACE FUNCTION none on any table; SET COMPRESSION takes ACCESS EXCLUSIVE on
-- page_results and each of its partitions for a catalogue change only (no row is read or
-- rewritten): reads and writes of results wait that long.
DO $$
DECLARE
    r record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        RAISE NOTICE 'this server has no lz4 (Postgres before 14, or built without it): results stay compressed with pglz';
        RETURN;
    END IF;
    FOR r IN SELECT 'page_results'::regclass AS rel UNION ALL
        SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'page_results'::regclass LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN result SET COMPRESSION lz4, ALTER COLUMN explain SET COMPRESSION lz4', r.rel);
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION save_page_result(p_job bigint, p_attempt integer, p_scan uuid, p_path text, p_strategy text, p_url text,
    p_result jsonb, p_explain bytea, p_idx smallint[], p_mime text[], p_width integer[], p_height integer[], p_timings text[],
    p_final boolean[], p_pin_from uuid, p_data bytea[])
    RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    ws uuid;
    month timestamptz;
    pin_month timestamptz;
    added integer;
BEGIN
    SELECT s.workspace_id, c.created_at INTO ws, month FROM scans c JOIN sites s ON s.id = c.site_id
        WHERE c.id = p_scan AND EXISTS (SELECT 1 FROM jobs WHERE id = p_job AND attempt = p_attempt AND state = 'running');
    IF NOT FOUND THEN
        RETURN 0; -- a lost lease, or a scan gone
    END IF;
    INSERT INTO page_results (scan_id, page_path, strategy, page_url, result, error, explain, workspace_id, scanned_at)
        VALUES (p_scan, p_path, p_strategy, p_url, p_result, '', p_explain, ws, month)
        ON CONFLICT (scan_id, page_path, strategy, scanned_at) DO NOTHING;
    GET DIAGNOSTICS added = ROW_COUNT;
    IF added = 1 THEN -- a new row: it has no pictures yet, and its scan counts one page more
        INSERT INTO page_images (scan_id, page_path, strategy, idx, mime, width, height, timings, final, pinned, data, workspace_id, scanned_at)
            SELECT p_scan, p_path, p_strategy, i.idx, i.mime, i.width, i.height, i.timings::integer[], i.final, p_pin_from IS NOT NULL,
                i.data, ws, month
            FROM unnest(p_idx, p_mime, p_width, p_height, p_timings, p_final, p_data) AS i(idx, mime, width, height, timings, final, data);
        UPDATE scans SET pages_done = pages_done + 1 WHERE id = p_scan;
    ELSE -- a retried audit replaces the run: the row, its pictures by index, none past their number
        UPDATE page_results SET page_url = p_url, result = p_result, error = '', explain = p_explain
            WHERE scan_id = p_scan AND page_path = p_path AND strategy = p_strategy AND scanned_at = month;
        INSERT INTO page_images (scan_id, page_path, strategy, idx, mime, width, height, timings, final, pinned, data, workspace_id, scanned_at)
            SELECT p_scan, p_path, p_strategy, i.idx, i.mime, i.width, i.height, i.timings::integer[], i.final, p_pin_from IS NOT NULL,
                i.data, ws, month
            FROM unnest(p_idx, p_mime, p_width, p_height, p_timings, p_final, p_data) AS i(idx, mime, width, height, timings, final, data)
            ON CONFLICT (scan_id, page_path, strategy, idx, scanned_at) DO UPDATE
                SET mime = EXCLUDED.mime, width = EXCLUDED.width, height = EXCLUDED.height, timings = EXCLUDED.timings,
                    final = EXCLUDED.final, pinned = page_images.pinned OR EXCLUDED.pinned, data = EXCLUDED.data;
        DELETE FROM page_images WHERE scan_id = p_scan AND page_path = p_path AND strategy = p_strategy
            AND scanned_at = month AND idx >= cardinality(p_idx);
    END IF;
    IF p_pin_from IS NOT NULL THEN
        SELECT created_at INTO pin_month FROM scans WHERE id = p_pin_from;
        UPDATE page_images SET pinned = true
            WHERE scan_id = p_pin_from AND page_path = p_path AND strategy = p_strategy AND scanned_at = pin_month;
    END IF;
    RETURN added;
END $$;
