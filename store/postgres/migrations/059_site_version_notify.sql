-- Migration 059, issue 46 item 4: every move of a site's budget_version (migration 003, 058), a
-- move of the site to another workspace and its deletion NOTIFY the channel
-- sitepulse_site_version with the site's id, at the writer's commit. A process that follows the
-- channel on a direct connection (store/postgres/versions.go, FollowSiteVersions) answers a
-- budget check or MCP's latest-scan read from the version it last read while no notification for
-- the site came since, none of its own writes completed since, and for at most KeyCacheFor: no
-- statement for such a read. A process that does not follow it (behind a transaction pooler
-- without DATABASE_DIRECT_URL) reads the version every time, as before.
-- Locks: CREATE TRIGGER takes SHARE ROW EXCLUSIVE on sites for its catalogue rows only (no
-- scan); writes to sites wait that long.
CREATE FUNCTION notify_site_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sitepulse_site_version', OLD.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER site_version_moved AFTER UPDATE ON sites
    FOR EACH ROW WHEN (OLD.budget_version IS DISTINCT FROM NEW.budget_version OR OLD.workspace_id IS DISTINCT FROM NEW.workspace_id)
    EXECUTE FUNCTION notify_site_version();
CREATE TRIGGER site_version_gone AFTER DELETE ON sites
    FOR EACH ROW EXECUTE FUNCTION notify_site_version();
