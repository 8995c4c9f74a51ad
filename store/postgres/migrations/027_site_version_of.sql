-- site_version_of is site `site`'s budget_version when user `member` is a member of its
-- workspace, else NULL: the one statement of a read whose inputs the process holds (MCP's
-- get_latest_scan and the other reads of store.BudgetInputs, issue 36). The statement that
-- loads the inputs is long, and a pooled connection parses and plans it on every call, whether
-- or not it then answers "held"; a scalar PL/pgSQL function is parsed in a moment and keeps its
-- query's plan per server connection.
CREATE FUNCTION site_version_of(site uuid, member uuid) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT s.budget_version FROM sites s WHERE s.id = site
        AND s.workspace_id IN (SELECT workspace_id FROM memberships WHERE user_id = member));
END $$;
