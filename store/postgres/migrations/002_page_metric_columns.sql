-- The twelve numbers of store.PageMetrics as plain float8 columns computed at insert, so reading
-- a scan's metrics (regressions, the worst page) does no jsonb work at all: extracting and
-- casting 12 jsonb values per row was most of that query's execution time. A value that is
-- missing or not a JSON number is NULL, so a malformed result never fails its insert.
ALTER TABLE page_results
    ADD COLUMN m_performance    float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'scores'->'performance') = 'number' THEN (result->'scores'->'performance')::float8 END) STORED,
    ADD COLUMN m_seo            float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'scores'->'seo') = 'number' THEN (result->'scores'->'seo')::float8 END) STORED,
    ADD COLUMN m_accessibility  float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'scores'->'accessibility') = 'number' THEN (result->'scores'->'accessibility')::float8 END) STORED,
    ADD COLUMN m_best_practices float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'scores'->'bestPractices') = 'number' THEN (result->'scores'->'bestPractices')::float8 END) STORED,
    ADD COLUMN m_lcp            float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'coreWebVitals'->'lcp') = 'number' THEN (result->'coreWebVitals'->'lcp')::float8 END) STORED,
    ADD COLUMN m_cls            float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'coreWebVitals'->'cls') = 'number' THEN (result->'coreWebVitals'->'cls')::float8 END) STORED,
    ADD COLUMN m_inp            float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'coreWebVitals'->'inp') = 'number' THEN (result->'coreWebVitals'->'inp')::float8 END) STORED,
    ADD COLUMN m_fcp            float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'coreWebVitals'->'fcp') = 'number' THEN (result->'coreWebVitals'->'fcp')::float8 END) STORED,
    ADD COLUMN m_ttfb           float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'coreWebVitals'->'ttfb') = 'number' THEN (result->'coreWebVitals'->'ttfb')::float8 END) STORED,
    ADD COLUMN m_tbt            float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'coreWebVitals'->'tbt') = 'number' THEN (result->'coreWebVitals'->'tbt')::float8 END) STORED,
    ADD COLUMN m_speed_index    float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'coreWebVitals'->'speedIndex') = 'number' THEN (result->'coreWebVitals'->'speedIndex')::float8 END) STORED,
    ADD COLUMN m_tti            float8 GENERATED ALWAYS AS (CASE WHEN jsonb_typeof(result->'coreWebVitals'->'tti') = 'number' THEN (result->'coreWebVitals'->'tti')::float8 END) STORED;
