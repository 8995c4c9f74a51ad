-- The first-party beacon (issue 45 items 2 and 3, DESIGN §19). A site's public beacon id names
-- it to the public ingest; what the ingest keeps are counts in fixed log-spaced histogram bins
-- (store.BeaconBin) per site, UTC day, page path, device class and metric, so a page's rows for a
-- day are bounded by its bins whatever the traffic. Nothing identifies a visitor: no address,
-- cookie or user agent is anywhere here.

CREATE TABLE beacon_keys (
    site_id    uuid PRIMARY KEY REFERENCES sites(id) ON DELETE CASCADE,
    public_id  text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- count is scaled by the day's sampling (a beacon kept 1 in 4 counts 4); kept is the beacons
-- themselves. path '' is the site-wide figure. metric 'nav' counts page views, its bin the
-- navigation type (store.BeaconNavigations).
CREATE TABLE beacon_bins (
    site_id uuid     NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    day     date     NOT NULL,
    device  text     NOT NULL,
    metric  text     NOT NULL,
    path    text     NOT NULL,
    bin     smallint NOT NULL,
    count   double precision NOT NULL,
    kept    bigint   NOT NULL,
    PRIMARY KEY (site_id, path, day, device, metric, bin)
);
CREATE INDEX beacon_bins_day ON beacon_bins (day);

-- The slowest interactions: per site, day, page and device at most store.MaxBeaconInteractions
-- (selector, event type) pairs, each with a histogram per part (the INP value and its phases).
CREATE TABLE beacon_interactions (
    site_id    uuid     NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    day        date     NOT NULL,
    path       text     NOT NULL,
    device     text     NOT NULL,
    selector   text     NOT NULL,
    event_type text     NOT NULL,
    part       text     NOT NULL,
    bin        smallint NOT NULL,
    count      double precision NOT NULL,
    seen       timestamptz NOT NULL,
    PRIMARY KEY (site_id, path, day, device, selector, event_type, part, bin)
);
CREATE INDEX beacon_interactions_day ON beacon_interactions (day);
