-- Migration 018, issue 25: scan summaries kept forever, and retention of page details.
--
-- A completed scan keeps its summary (per strategy: pages, scores and each vital's worst page),
-- written by scan_summary in the transaction that completes it, so the trends read one small
-- value per scan instead of every page row, and survive the pruner. bytes is about how much the
-- scan takes (scan_bytes), recorded when it finishes and lessened as the pruner deletes its page
-- rows; details_pruned_at is when the pruner removed the last of them.
ALTER TABLE scans ADD COLUMN summary jsonb;
ALTER TABLE scans ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE scans ADD COLUMN details_pruned_at timestamptz;

-- page_row_bytes is about how much one page_results row takes: its stored (compressed) result,
-- its text columns and a fixed 150 B for the tuple header, the twelve float8 metric columns and
-- its primary key entry.
CREATE FUNCTION page_row_bytes(r page_results) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT 150 + coalesce(pg_column_size(r.result), 0) + octet_length(r.page_path) + octet_length(r.page_url)
        + octet_length(r.strategy) + octet_length(r.error)
$$;

-- scan_bytes is about how much a finished scan takes: 300 B for its row and summary, and its page rows.
CREATE FUNCTION scan_bytes(scan uuid) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT 300 + coalesce(sum(page_row_bytes(r)), 0)::bigint FROM page_results r WHERE r.scan_id = scan
$$;

-- scan_summary is store.Summarize in SQL, over the scan's successful results: scores are the
-- rounded (half away from zero) mean of the strategy's non-null scores, health the rounded mean
-- of the four; a vital's worst page the highest value, the first path among equals.
CREATE FUNCTION scan_summary(scan uuid) RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('strategies', coalesce(jsonb_agg(jsonb_build_object(
        'strategy', st.strategy, 'pages', st.pages,
        'scores', jsonb_build_object('performance', st.perf, 'seo', st.seo, 'accessibility', st.a11y,
            'bestPractices', st.bp,
            'health', (SELECT round(avg(v)) FROM unnest(ARRAY[st.perf, st.seo, st.a11y, st.bp]) v)),
        'worst', (SELECT coalesce(jsonb_object_agg(w.name, jsonb_build_object('value', w.value, 'pagePath', w.path)), '{}')
            FROM (SELECT DISTINCT ON (m.name) m.name, m.value, r.page_path AS path
                FROM page_results r
                CROSS JOIN LATERAL (VALUES ('lcp', r.m_lcp), ('cls', r.m_cls), ('inp', r.m_inp), ('fcp', r.m_fcp),
                    ('ttfb', r.m_ttfb), ('tbt', r.m_tbt), ('speedIndex', r.m_speed_index), ('tti', r.m_tti)) m(name, value)
                WHERE r.scan_id = scan AND r.strategy = st.strategy AND r.result IS NOT NULL AND m.value IS NOT NULL
                ORDER BY m.name, m.value DESC, r.page_path) w))
        ORDER BY st.strategy <> 'mobile'), '[]'::jsonb))
    FROM (SELECT r.strategy, count(*) AS pages,
            round(sum(r.m_performance)::numeric / nullif(count(r.m_performance), 0)) AS perf,
            round(sum(r.m_seo)::numeric / nullif(count(r.m_seo), 0)) AS seo,
            round(sum(r.m_accessibility)::numeric / nullif(count(r.m_accessibility), 0)) AS a11y,
            round(sum(r.m_best_practices)::numeric / nullif(count(r.m_best_practices), 0)) AS bp
        FROM page_results r WHERE r.scan_id = scan AND r.result IS NOT NULL AND r.strategy IN ('mobile', 'desktop')
        GROUP BY r.strategy) st
$$;

UPDATE scans SET summary = scan_summary(id) WHERE status = 'complete';
UPDATE scans SET bytes = scan_bytes(id) WHERE status IN ('complete', 'failed');

-- The pruner walks the finished scans whose details it has not removed yet.
CREATE INDEX scans_unpruned ON scans (completed_at) WHERE details_pruned_at IS NULL AND status IN ('complete', 'failed');

-- At most one prune job queued or running: every process's scheduler asks for one.
CREATE UNIQUE INDEX jobs_one_prune ON jobs (kind) WHERE kind = 'prune' AND state IN ('available', 'running');
