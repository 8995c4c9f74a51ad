-- Who published what (issue 21): each publish the platform reported, and the scan it started,
-- so pages, the trend chart, alerts and get_regression_report can say "Published by Ana".
CREATE TABLE publishes (
    id                uuid PRIMARY KEY,
    site_id           uuid NOT NULL REFERENCES sites ON DELETE CASCADE,
    platform_event_id text NOT NULL DEFAULT '',
    published_by      text NOT NULL DEFAULT '',
    published_on      timestamptz NOT NULL,
    domains           text[] NOT NULL DEFAULT '{}',
    scan_id           uuid REFERENCES scans ON DELETE SET NULL
);
CREATE INDEX publishes_site_on ON publishes (site_id, published_on);
CREATE UNIQUE INDEX publishes_scan ON publishes (scan_id) WHERE scan_id IS NOT NULL;
