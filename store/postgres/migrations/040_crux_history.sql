-- CrUX history (issue 45 item 1; DESIGN §19): each site's weekly p75 and histogram per origin
-- or page, device and metric from the CrUX History API, refreshed once a week on the queue.

-- crux_points holds one collection period of one metric: page '' is the origin; p75 NULL is a
-- period the API marks ineligible ("NaN" or null); histogram is [[start, end, density], ...]
-- (end 0: open-ended), NULL for such a period. A refresh upserts on the primary key, so the
-- next week's answer appends its new period and revises the rest without duplicates.
CREATE TABLE crux_points (
    site_id      uuid NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    page         text NOT NULL,
    device       text NOT NULL CHECK (device IN ('phone', 'desktop')),
    metric       text NOT NULL,
    period_start timestamptz NOT NULL,
    period_end   timestamptz NOT NULL,
    p75          double precision,
    histogram    jsonb,
    PRIMARY KEY (site_id, page, device, metric, period_start)
);

-- Retention deletes by the end of the period (PruneCrux).
CREATE INDEX crux_points_end ON crux_points (period_end);

-- crux_fetches is the last answer per site, target and device: found false is the API's 404
-- (not enough Chrome traffic), so a surface can say "no field data" rather than nothing.
CREATE TABLE crux_fetches (
    site_id    uuid NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    page       text NOT NULL,
    device     text NOT NULL CHECK (device IN ('phone', 'desktop')),
    fetched_at timestamptz NOT NULL,
    found      boolean NOT NULL,
    periods    integer NOT NULL DEFAULT 0,
    PRIMARY KEY (site_id, page, device)
);

-- A site's next refresh; NULL: never refreshed, due at once.
ALTER TABLE sites ADD COLUMN crux_next_at timestamptz;
CREATE INDEX sites_crux_due ON sites (crux_next_at NULLS FIRST, id);
