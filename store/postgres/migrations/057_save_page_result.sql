-- save_page_result is SavePageResult's one statement (store/postgres/queue.go) as a PL/pgSQL
-- function (issue 46 item 4), as migration 026 made the hot reads: sent as a statement, its six
-- common table expressions over two partitioned tables were parsed, analysed and planned again
-- for every result, 40% of what Postgres spent storing one (perf, `loadkit ingest`); a function
-- keeps the plan per server connection, whichever client calls it (a transaction pooler breaks a
-- named prepared statement, not this).
--
-- It stores a result, its explain data and its pictures under the lease (p_job, p_attempt): the
-- row (upserted), the pictures (upserted by index, the ones past their number deleted: a retried
-- audit replaces the run), pinned when the run regressed against scan p_pin_from, whose pictures
-- of the same page it pins too; pages_done moves when the row is new. It returns the number of
-- scans it moved (0 for a replaced row or a lost lease, which the caller tells apart).
-- Locks: none taken by the migration beyond the catalog's (no table is touched).
CREATE FUNCTION save_page_result(p_job bigint, p_attempt integer, p_scan uuid, p_path text, p_strategy text, p_url text,
    p_result jsonb, p_explain bytea, p_idx smallint[], p_mime text[], p_width integer[], p_height integer[], p_timings text[],
    p_final boolean[], p_pin_from uuid, p_data bytea[])
    RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    moved integer;
BEGIN
    WITH lease AS (SELECT 1 FROM jobs WHERE id = p_job AND attempt = p_attempt AND state = 'running'),
    scan_key AS (SELECT s.workspace_id, c.created_at AS scanned_at FROM scans c JOIN sites s ON s.id = c.site_id WHERE c.id = p_scan),
    prior AS (SELECT 1 FROM page_results WHERE scan_id = p_scan AND page_path = p_path AND strategy = p_strategy),
    up AS (INSERT INTO page_results (scan_id, page_path, strategy, page_url, result, error, explain, workspace_id, scanned_at)
        SELECT p_scan, p_path, p_strategy, p_url, p_result, '', p_explain, k.workspace_id, k.scanned_at FROM lease, scan_key k
        ON CONFLICT (scan_id, page_path, strategy, scanned_at) DO UPDATE
            SET page_url = EXCLUDED.page_url, result = EXCLUDED.result, error = '', explain = EXCLUDED.explain
        RETURNING NOT EXISTS (SELECT 1 FROM prior) AS inserted),
    img AS (INSERT INTO page_images (scan_id, page_path, strategy, idx, mime, width, height, timings, final, pinned, data, workspace_id, scanned_at)
        SELECT p_scan, p_path, p_strategy, i.idx, i.mime, i.width, i.height, i.timings::integer[], i.final, p_pin_from IS NOT NULL, i.data,
            k.workspace_id, k.scanned_at
        FROM lease, scan_key k, unnest(p_idx, p_mime, p_width, p_height, p_timings, p_final, p_data)
            AS i(idx, mime, width, height, timings, final, data)
        ON CONFLICT (scan_id, page_path, strategy, idx, scanned_at) DO UPDATE
            SET mime = EXCLUDED.mime, width = EXCLUDED.width, height = EXCLUDED.height, timings = EXCLUDED.timings,
                final = EXCLUDED.final, pinned = page_images.pinned OR EXCLUDED.pinned, data = EXCLUDED.data),
    trimmed AS (DELETE FROM page_images WHERE scan_id = p_scan AND page_path = p_path AND strategy = p_strategy
        AND idx >= cardinality(p_idx) AND EXISTS (SELECT 1 FROM lease)),
    pin AS (UPDATE page_images SET pinned = true WHERE scan_id = p_pin_from AND page_path = p_path AND strategy = p_strategy
        AND EXISTS (SELECT 1 FROM lease))
    UPDATE scans SET pages_done = pages_done + 1 FROM up WHERE id = p_scan AND up.inserted;
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END $$;
