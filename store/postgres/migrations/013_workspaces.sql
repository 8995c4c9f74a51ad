-- Workspaces (DESIGN §9): ownership moves from the user to the workspace. Every user gets a
-- personal workspace whose id is the user's own id, so each existing row moves into its owner's
-- workspace by copying user_id, and every old id, key, token and report link keeps working.

CREATE TABLE workspaces (
    id             uuid PRIMARY KEY,
    name           text NOT NULL,
    created_at     timestamptz NOT NULL,
    retention_days int  NOT NULL DEFAULT 400
);

CREATE TABLE memberships (
    workspace_id       uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    user_id            uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    role               text NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    created_at         timestamptz NOT NULL,
    notify_regressions boolean NOT NULL DEFAULT true,
    PRIMARY KEY (workspace_id, user_id)
);
-- Every scoped read asks "which workspaces is this user a member of".
CREATE INDEX memberships_user ON memberships (user_id, workspace_id);

-- Invitations: the token is stored hashed; used_at is set once, atomically, by the accept.
CREATE TABLE invitations (
    id           uuid PRIMARY KEY,
    token_hash   text NOT NULL UNIQUE,
    workspace_id uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    email        text NOT NULL,
    role         text NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
    invited_by   uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz,
    used_by      uuid REFERENCES users ON DELETE SET NULL,
    revoked_at   timestamptz
);
CREATE INDEX invitations_workspace ON invitations (workspace_id, created_at DESC);

-- Who did what in a workspace: membership and settings changes, newest first.
CREATE TABLE activity (
    id           bigserial PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    actor_id     uuid REFERENCES users ON DELETE SET NULL,
    action       text NOT NULL,
    subject      text NOT NULL DEFAULT '',
    at           timestamptz NOT NULL
);
CREATE INDEX activity_workspace ON activity (workspace_id, at DESC, id DESC);

-- A personal workspace for every user, named after the e-mail's local part ("ada's workspace"),
-- the user its owner, with the user's regression e-mail setting.
INSERT INTO workspaces (id, name, created_at)
    SELECT id, split_part(email, '@', 1) || '''s workspace', created_at FROM users;
INSERT INTO memberships (workspace_id, user_id, role, created_at, notify_regressions)
    SELECT id, id, 'owner', created_at, notify_regressions FROM users;

-- The rows move into their owner's personal workspace. user_id stays: who created the row.
ALTER TABLE sites ADD COLUMN workspace_id uuid REFERENCES workspaces ON DELETE CASCADE;
UPDATE sites SET workspace_id = user_id;
ALTER TABLE sites ALTER COLUMN workspace_id SET NOT NULL;
CREATE INDEX sites_workspace ON sites (workspace_id, name);

ALTER TABLE api_keys ADD COLUMN workspace_id uuid REFERENCES workspaces ON DELETE CASCADE;
UPDATE api_keys SET workspace_id = user_id;
ALTER TABLE api_keys ALTER COLUMN workspace_id SET NOT NULL;

ALTER TABLE reports ADD COLUMN workspace_id uuid REFERENCES workspaces ON DELETE CASCADE;
UPDATE reports SET workspace_id = user_id;
ALTER TABLE reports ALTER COLUMN workspace_id SET NOT NULL;
CREATE INDEX reports_workspace ON reports (workspace_id);

-- The platform connection is the workspace's: its owners connect, import and disconnect.
-- Pending connects stay the user's, and say which workspace they connect.
ALTER TABLE platform_connections DROP CONSTRAINT platform_connections_user_id_fkey;
ALTER TABLE platform_connections RENAME COLUMN user_id TO workspace_id;
ALTER TABLE platform_connections ADD FOREIGN KEY (workspace_id) REFERENCES workspaces ON DELETE CASCADE;
ALTER TABLE platform_states ADD COLUMN workspace_id uuid REFERENCES workspaces ON DELETE CASCADE;
UPDATE platform_states SET workspace_id = user_id;
ALTER TABLE platform_states ALTER COLUMN workspace_id SET NOT NULL;

-- USER_DAILY_AUDITS is a workspace's budget: the day's counts move to the personal workspace.
ALTER TABLE audit_usage DROP CONSTRAINT audit_usage_user_id_fkey;
ALTER TABLE audit_usage RENAME COLUMN user_id TO workspace_id;
ALTER TABLE audit_usage ADD FOREIGN KEY (workspace_id) REFERENCES workspaces ON DELETE CASCADE;
