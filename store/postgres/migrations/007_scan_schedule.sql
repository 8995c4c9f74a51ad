-- Scheduled scans: a site scanned daily or weekly whether or not it is published, and when its
-- next scheduled scan is due (NULL when the schedule is off). Every process's scheduler claims
-- due sites with FOR UPDATE SKIP LOCKED through the partial index.
ALTER TABLE sites
    ADD COLUMN scan_schedule text NOT NULL DEFAULT 'off' CHECK (scan_schedule IN ('off', 'daily', 'weekly')),
    ADD COLUMN next_scan_at  timestamptz;
CREATE INDEX sites_next_scan ON sites (next_scan_at) WHERE next_scan_at IS NOT NULL;
