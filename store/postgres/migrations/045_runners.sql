-- Runners (issue 46 item 2, docs/runners.md): `sitepulse runner` audits where it stands and
-- talks to the service over HTTPS only. A runner token is a workspace's (made by an owner) or
-- the operator's (workspace_id NULL: its runners serve every workspace); only its hash is kept.
CREATE TABLE runner_tokens (
    id           uuid PRIMARY KEY,
    workspace_id uuid REFERENCES workspaces(id) ON DELETE CASCADE,
    name         text NOT NULL,
    token_hash   text NOT NULL UNIQUE,
    prefix       text NOT NULL,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz
);
CREATE INDEX runner_tokens_workspace ON runner_tokens (workspace_id) WHERE revoked_at IS NULL;

-- The runner locations a site is audited from (a site setting; no row: any runner).
CREATE TABLE site_runner_locations (
    site_id   uuid PRIMARY KEY REFERENCES sites(id) ON DELETE CASCADE,
    locations text[] NOT NULL
);

-- One audit (a page x strategy of a scan) handed to runners: the scan's worker enqueues it and
-- waits for its report; a runner leases it (lease_id, lease_until), heartbeats extend the
-- lease, and a lease that expired makes it leasable again. The lease rule is written twice:
-- store/memory/runners.go's LeaseRunnerAudit is the same in Go (contract: store/storetest).
CREATE TABLE runner_audits (
    id           uuid PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    site_id      uuid NOT NULL,
    scan_id      uuid NOT NULL REFERENCES scans(id) ON DELETE CASCADE,
    page_url     text NOT NULL,
    strategy     text NOT NULL,
    locations    text[] NOT NULL DEFAULT '{}',
    avoid        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    state        text NOT NULL DEFAULT 'queued',
    lease_id     uuid UNIQUE,
    token_id     uuid,
    runner       text NOT NULL DEFAULT '',
    location     text NOT NULL DEFAULT '',
    lease_until  timestamptz,
    report       bytea,
    error        text NOT NULL DEFAULT '',
    benchmark    double precision NOT NULL DEFAULT 0
);
CREATE INDEX runner_audits_leasable ON runner_audits (created_at, id) WHERE state IN ('queued', 'leased');
