-- Issue 45 follow-up. beacon_days is each site's beacons seen per UTC day (kept or sampled away)
-- by every process of the service: the count BEACON_DAILY_CAP's sampling is decided on, so N
-- web processes keep what one would, and a restart does not reset the day. One row per site and
-- day; it goes with the site and with retention, as the bins do.
CREATE TABLE beacon_days (
    site_id uuid   NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    day     date   NOT NULL,
    seen    bigint NOT NULL,
    PRIMARY KEY (site_id, day)
);

-- The daily field check (KindField): when a site's next check is due; EnqueueDueField moves it
-- to the next UTC day as it enqueues the site's job, so one job is made a day whoever asks.
ALTER TABLE sites ADD COLUMN field_next_at timestamptz;
