-- Migration 030, issue 38: a site's access setting, for audits of its private pages (DESIGN §17).
-- The setting is sealed by the service before it gets here (AES-256-GCM with PLATFORM_TOKEN_KEY,
-- bound to the site's id, as channel URLs are): no column holds a credential in the clear. A
-- site without a row is audited signed out; the row goes with its site.
CREATE TABLE site_access (
    site_id    uuid PRIMARY KEY REFERENCES sites ON DELETE CASCADE,
    kind       text NOT NULL CHECK (kind IN ('basic', 'cookies', 'form')),
    sealed     text NOT NULL CHECK (sealed <> ''),
    updated_at timestamptz NOT NULL
);
