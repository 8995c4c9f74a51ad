-- Migration 058, issue 46 item 4: a member's departure or role change moves the version of every
-- site of the workspace (budget_version, migration 003), in the change's own transaction.
-- A process that found a user a member of a site's workspace at version V (site_version_of,
-- migration 027) then knows, whenever it reads the site at V again, that the user still is:
-- MCP's read asks the site's version alone (site_version, migration 026: one index lookup, the
-- budget check's statement) and site_version_of only when the version moved
-- (store/postgres/budget.go, BudgetInputs). A site's inputs are read again after such a
-- change, as after any other. Joining a workspace grants and moves nothing.
-- Locks: CREATE TRIGGER takes SHARE ROW EXCLUSIVE on memberships for its catalogue rows only
-- (no scan), writes wait that long; nothing else.
CREATE FUNCTION bump_workspace_versions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sites SET budget_version = budget_version + 1 WHERE workspace_id = OLD.workspace_id;
    IF TG_OP = 'UPDATE' AND NEW.workspace_id <> OLD.workspace_id THEN
        UPDATE sites SET budget_version = budget_version + 1 WHERE workspace_id = NEW.workspace_id;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER budget_version_member_left AFTER DELETE ON memberships
    FOR EACH ROW EXECUTE FUNCTION bump_workspace_versions();
CREATE TRIGGER budget_version_member_changed AFTER UPDATE ON memberships
    FOR EACH ROW WHEN (OLD.role IS DISTINCT FROM NEW.role OR OLD.workspace_id <> NEW.workspace_id OR OLD.user_id <> NEW.user_id)
    EXECUTE FUNCTION bump_workspace_versions();
