-- Migration 028, issue 35: a CI pipeline that starts a scan with an API key records its deploy
-- like a publish (who published, and the commit it deployed), shown on the scan page and the
-- trend. Lower-case hex, or '' for a platform's publish (store.Publish.Normalize).
ALTER TABLE publishes ADD COLUMN commit_sha text NOT NULL DEFAULT '';
