-- A workspace's own OpenID provider (docs/sso.md): its owner sets the issuer, the client id and
-- the client secret (sealed). One issuer names one workspace's provider, so a session's issuer
-- finds the provider that re-checks it.
CREATE TABLE workspace_providers (
    workspace_id  uuid PRIMARY KEY REFERENCES workspaces ON DELETE CASCADE,
    issuer        text NOT NULL UNIQUE,
    client_id     text NOT NULL,
    secret_sealed text NOT NULL,
    updated_at    timestamptz NOT NULL
);
