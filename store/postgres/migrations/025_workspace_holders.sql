-- Repairs of what members could do to each other before issue 34:
--
-- A co-owner could remove the holder of a personal workspace (the workspace whose id is the
-- account's), leaving the account without its home, sites and keys. Such holders are members
-- and owners of their personal workspace again.
INSERT INTO memberships (workspace_id, user_id, role, created_at, notify_regressions)
    SELECT u.id, u.id, 'owner', now(), u.notify_regressions
    FROM users u JOIN workspaces w ON w.id = u.id
    WHERE NOT EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = u.id AND m.user_id = u.id);
UPDATE memberships SET role = 'owner' WHERE workspace_id = user_id AND role <> 'owner';

-- A report stayed its maker's when the maker left the workspace, and reports go with their
-- user's account (ON DELETE CASCADE): the reports of members who left pass to the workspace's
-- oldest owner, as RemoveMember now does.
UPDATE reports r SET user_id = (SELECT m.user_id FROM memberships m
        WHERE m.workspace_id = r.workspace_id AND m.role = 'owner' ORDER BY m.created_at, m.user_id LIMIT 1)
    WHERE NOT EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = r.workspace_id AND m.user_id = r.user_id)
    AND EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = r.workspace_id AND m.role = 'owner');
