-- A budget check reads a site's name, budgets, alert rules and latest completed scan (and
-- MCP's get_latest_scan the same and the domain). Each
-- process keeps what it last read per site (store/postgres_budget.go) and, on every check, asks
-- the database only for this number, in the same statement that authenticates the API key.
-- Triggers move it with every write that changes anything the check reads, whoever makes the
-- write, in the write's own transaction: a check sees the change as soon as it is committed.
-- The page results of a completed scan never change (they are written under a running scan's
-- lease), so the scan's completion covers them.
ALTER TABLE sites ADD COLUMN budget_version bigint NOT NULL DEFAULT 0;

CREATE FUNCTION bump_budget_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'sites' THEN
        NEW.budget_version := OLD.budget_version + 1;
        RETURN NEW;
    END IF;
    UPDATE sites SET budget_version = budget_version + 1
        WHERE id = CASE WHEN TG_OP = 'DELETE' THEN OLD.site_id ELSE NEW.site_id END;
    RETURN NULL;
END
$$;

CREATE TRIGGER budget_version_site BEFORE UPDATE OF name, domain ON sites
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.domain IS DISTINCT FROM NEW.domain)
    EXECUTE FUNCTION bump_budget_version();
CREATE TRIGGER budget_version AFTER INSERT OR UPDATE OR DELETE ON budgets
    FOR EACH ROW EXECUTE FUNCTION bump_budget_version();
CREATE TRIGGER budget_version AFTER INSERT OR UPDATE OR DELETE ON alert_rules
    FOR EACH ROW EXECUTE FUNCTION bump_budget_version();
CREATE TRIGGER budget_version_insert AFTER INSERT ON scans
    FOR EACH ROW WHEN (NEW.status = 'complete') EXECUTE FUNCTION bump_budget_version();
CREATE TRIGGER budget_version_update AFTER UPDATE ON scans
    FOR EACH ROW WHEN (OLD.status = 'complete' OR NEW.status = 'complete') EXECUTE FUNCTION bump_budget_version();
CREATE TRIGGER budget_version_delete AFTER DELETE ON scans
    FOR EACH ROW WHEN (OLD.status = 'complete') EXECUTE FUNCTION bump_budget_version();
