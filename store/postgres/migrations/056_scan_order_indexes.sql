-- The size SitePulse is sized for (issue 46: 2,000 sites, 730,000 scans a year). The reads of a
-- site's scans order by (completed_at DESC, id DESC) or (created_at DESC, id DESC) with a LIMIT
-- (the latest scan, the latest two, the trend, the history, the sites list's latest scan, the
-- month drop's latest two of every site): indexes on (site_id, time) alone left Postgres an
-- incremental sort and a heap visit per candidate row; with id in the key the LIMIT reads just
-- its rows. The month drop's check reads only the scans whose details are not pruned yet
-- (scans_unpruned_created): a month whose details are all pruned is checked without reading its
-- 60,000 scans.
-- Locks: each CREATE INDEX holds a SHARE lock on scans while it builds (reads go on; a scan's
-- insert or update waits), 1-2 s at 730,000 scans (.ci/README.md, "Partitions").
CREATE INDEX scans_site_completed_id ON scans (site_id, completed_at DESC, id DESC) WHERE status = 'complete';
DROP INDEX scans_site_completed;
ALTER INDEX scans_site_completed_id RENAME TO scans_site_completed;
CREATE INDEX scans_site_created_id ON scans (site_id, created_at DESC, id DESC);
DROP INDEX scans_site_created;
ALTER INDEX scans_site_created_id RENAME TO scans_site_created;
CREATE INDEX scans_unpruned_created ON scans (created_at) INCLUDE (id, site_id, status, completed_at) WHERE details_pruned_at IS NULL;
