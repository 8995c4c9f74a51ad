-- The scores and Core Web Vitals of each page result, kept beside the full result so that
-- regressions and the worst page of a large scan read a few hundred bytes per page instead of
-- detoasting every audit (store.PageMetrics; the MCP tools). Numbered 005 to leave room for
-- migrations of parallel branches.
ALTER TABLE page_results
    ADD COLUMN scores jsonb GENERATED ALWAYS AS (result->'scores') STORED,
    ADD COLUMN vitals jsonb GENERATED ALWAYS AS (result->'coreWebVitals') STORED;
