-- Migration 017, issue 21: alert channels belong to the workspace, not to the account that added
-- them. Owners and editors manage them; events of a site go to its workspace's channels.
-- A channel moves into its account's personal workspace, whose id is the account's own id
-- (migration 013), so its sealed URL (bound to that id) still opens.
ALTER TABLE channels ADD COLUMN workspace_id uuid REFERENCES workspaces ON DELETE CASCADE;
UPDATE channels SET workspace_id = user_id;
ALTER TABLE channels ALTER COLUMN workspace_id SET NOT NULL;
-- The account is no longer the owner: a channel outlives the member who added it.
DROP INDEX channels_user;
ALTER TABLE channels DROP COLUMN user_id;
CREATE INDEX channels_workspace ON channels (workspace_id, created_at);
