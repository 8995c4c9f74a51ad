-- How many pages discovery found for a scan (the saved list, the sitemap's or the platform's)
-- before MAX_PAGES_PER_SCAN cut it, and how many the scan audits, so the scan and site pages
-- can say "50 of 80 pages audited" where the cap applies; 0 for scans from before they were
-- recorded.
ALTER TABLE scans ADD COLUMN pages_found int NOT NULL DEFAULT 0;
ALTER TABLE scans ADD COLUMN pages_audited int NOT NULL DEFAULT 0;
