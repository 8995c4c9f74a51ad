-- Connections to the site-builder platform. A platform site id is set on a site only
-- through a verified connection (platform_verified); a manual id from before keeps working until
-- a verified connection imports the same platform site. platform_webhook_id is the site_publish
-- webhook SitePulse registered for the site, deleted on disconnect.
ALTER TABLE sites ADD COLUMN platform_verified boolean NOT NULL DEFAULT false;
ALTER TABLE sites ADD COLUMN platform_webhook_id text;

-- One connection per user: the platform access token, sealed with AES-GCM under
-- PLATFORM_TOKEN_KEY (key id inside the sealed text), never stored in clear. disabled_at is set
-- when the platform answered 401: the user must reconnect.
CREATE TABLE platform_connections (
    user_id      uuid PRIMARY KEY REFERENCES users ON DELETE CASCADE,
    token_sealed text NOT NULL,
    disabled_at  timestamptz,
    created_at   timestamptz NOT NULL
);

-- Pending connects: the hash of the OAuth state sent to the platform, single use, short-lived.
CREATE TABLE platform_states (
    state_hash text PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    expires_at timestamptz NOT NULL
);
