-- Migration 015, issue 21: publishes, alert channels, deliveries.
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

-- Alert channels and their deliveries (issue 21). Owned by the account until workspaces land;
-- URLs (credentials for Slack and Discord) and webhook secrets are sealed by the application.
CREATE TABLE channels (
    id            uuid PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    kind          text NOT NULL CHECK (kind IN ('slack', 'teams', 'discord', 'webhook', 'email')),
    name          text NOT NULL,
    url_sealed    text NOT NULL DEFAULT '',
    secret_sealed text NOT NULL DEFAULT '',
    events        text[] NOT NULL,
    site_ids      uuid[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL,
    failing_since timestamptz
);
CREATE INDEX channels_user ON channels (user_id, created_at);

CREATE TABLE deliveries (
    id          uuid PRIMARY KEY,
    channel_id  uuid NOT NULL REFERENCES channels ON DELETE CASCADE,
    event_id    text NOT NULL,
    event_type  text NOT NULL,
    state       text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts    int NOT NULL DEFAULT 0,
    next_at     timestamptz,
    last_status int NOT NULL DEFAULT 0,
    last_error  text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    UNIQUE (channel_id, event_id)
);
CREATE INDEX deliveries_channel ON deliveries (channel_id, created_at DESC);

-- The budget state an alert compares with: budget.broken and budget.recovered are transitions,
-- so a site whose budgets stay broken alerts once.
ALTER TABLE sites ADD COLUMN budgets_broken boolean NOT NULL DEFAULT false;
