-- The statements on the hot path of every API request, as PL/pgSQL functions (issue 36). They
-- were named prepared statements, which a transaction pooler breaks (a statement prepared on one
-- server connection is gone on the next). A PL/pgSQL function keeps the plans of its queries per
-- server connection, whichever client calls it, so each call parses and plans only itself.

-- budget_key and api_key_by_hash are written twice: store/memory/users.go (APIKeyByHash) and
-- store/memory/budget.go (BudgetInputsByKey) are the same rules in Go: a key works while its maker
-- is a member of its workspace, and reads that workspace's sites only. The contract tests
-- testKeyWorkspace, testBudgetInputsByKey and testAPIKeys keep them equal (rulesWrittenTwice in
-- store/storetest/twice_test.go): change both, run them on both stores.

-- budget_key authenticates an unrevoked API key by hash whose maker is still a member of its
-- workspace, and finds site `site` in that workspace: no row means no caller; a NULL version
-- means the site is not the key's to read (budgetKeySQL in store/postgres/budget.go); with the
-- key's workspace, for the checks that find the key in the process's cache.
CREATE FUNCTION budget_key(site uuid, hash text)
    RETURNS TABLE (key_id uuid, key_user uuid, key_used timestamptz, site_version bigint, key_workspace uuid)
    LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY SELECT k.id, k.user_id, k.last_used_at, s.budget_version, k.workspace_id FROM api_keys k
        LEFT JOIN sites s ON s.id = site AND s.workspace_id = k.workspace_id
        WHERE k.key_hash = hash AND k.revoked_at IS NULL
            AND EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = k.workspace_id AND m.user_id = k.user_id);
END $$;

-- api_key_by_hash is an unrevoked API key by hash whose maker is still a member of its
-- workspace, with the workspace's name (APIKeyByHash: MCP and the other API-key routes).
CREATE FUNCTION api_key_by_hash(hash text)
    RETURNS TABLE (key_id uuid, key_user uuid, key_name text, key_hash text, key_prefix text, key_scope text,
        key_created timestamptz, key_used timestamptz, key_workspace uuid, workspace_name text)
    LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY SELECT k.id, k.user_id, k.name, k.key_hash, k.prefix, k.scope, k.created_at, k.last_used_at, k.workspace_id, w.name
        FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
        WHERE k.key_hash = hash AND k.revoked_at IS NULL
            AND EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = k.workspace_id AND m.user_id = k.user_id);
END $$;

-- site_version is site `site`'s budget_version when it is in workspace `workspace`, else NULL:
-- the one statement of a budget check whose key the process found less than half a second ago
-- (KeyCacheFor). A scalar function is the cheapest statement to parse and plan, and its query's
-- plan is kept.
CREATE FUNCTION site_version(site uuid, workspace uuid) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT s.budget_version FROM sites s WHERE s.id = site AND s.workspace_id = workspace);
END $$;
