-- The beacon added to a site's custom code on the platform in one click (docs/field.md "One
-- click from Webflow"). scopes are what the platform granted the connection's token (space
-- separated; '' for a connection made before SitePulse asked for custom code: it must be made
-- again to add the script). platform_script_* is the registered script SitePulse applied to
-- the site (its id and version on the platform) and when; cleared when it is removed.
ALTER TABLE platform_connections ADD COLUMN scopes text NOT NULL DEFAULT '';
ALTER TABLE sites ADD COLUMN platform_script_id text;
ALTER TABLE sites ADD COLUMN platform_script_version text;
ALTER TABLE sites ADD COLUMN platform_script_at timestamptz;
