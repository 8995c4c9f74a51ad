-- SitePulse schema. Secrets are stored as hex SHA-256 only.

CREATE TABLE users (
    id                 uuid PRIMARY KEY,
    email              text NOT NULL,
    password_hash      text NOT NULL,
    notify_regressions boolean NOT NULL DEFAULT true,
    created_at         timestamptz NOT NULL
);
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE sessions (
    token_hash text PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    csrf       text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    name         text NOT NULL,
    key_hash     text NOT NULL UNIQUE,
    prefix       text NOT NULL,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_keys_user ON api_keys (user_id);

CREATE TABLE sites (
    id               uuid PRIMARY KEY,
    user_id          uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    name             text NOT NULL,
    domain           text NOT NULL,
    platform_site_id text UNIQUE,
    founding         boolean NOT NULL DEFAULT false,
    health_score     integer,
    last_published   timestamptz,
    pages            text[] NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL
);
CREATE INDEX sites_user ON sites (user_id);

CREATE TABLE budgets (
    site_id   uuid NOT NULL REFERENCES sites ON DELETE CASCADE,
    metric    text NOT NULL,
    threshold double precision NOT NULL,
    PRIMARY KEY (site_id, metric)
);

CREATE TABLE alert_rules (
    id         uuid PRIMARY KEY,
    site_id    uuid NOT NULL REFERENCES sites ON DELETE CASCADE,
    metric     text NOT NULL,
    operator   text NOT NULL CHECK (operator IN ('min', 'max')),
    threshold  double precision NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX alert_rules_site ON alert_rules (site_id);

CREATE TABLE scans (
    id           uuid PRIMARY KEY,
    site_id      uuid NOT NULL REFERENCES sites ON DELETE CASCADE,
    status       text NOT NULL CHECK (status IN ('queued', 'running', 'complete', 'failed')),
    strategy     text NOT NULL CHECK (strategy IN ('mobile', 'desktop', 'both')),
    trigger      text NOT NULL,
    pages_total  integer NOT NULL DEFAULT 0,
    pages_done   integer NOT NULL DEFAULT 0,
    scores       jsonb NOT NULL DEFAULT '{}',
    error        text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    started_at   timestamptz,
    completed_at timestamptz
);
-- The in-flight rule: at most one queued or running scan per site (SCAN_ALREADY_ACTIVE).
CREATE UNIQUE INDEX scans_in_flight ON scans (site_id) WHERE status IN ('queued', 'running');
CREATE INDEX scans_site_created ON scans (site_id, created_at DESC);
CREATE INDEX scans_site_completed ON scans (site_id, completed_at DESC) WHERE status = 'complete';

-- One row per audited page and strategy: a result, or the error that stopped it.
CREATE TABLE page_results (
    scan_id    uuid NOT NULL REFERENCES scans ON DELETE CASCADE,
    page_path  text NOT NULL,
    strategy   text NOT NULL,
    page_url   text NOT NULL,
    result     jsonb,
    error      text NOT NULL DEFAULT '',
    PRIMARY KEY (scan_id, page_path, strategy)
);

CREATE TABLE jobs (
    id           bigserial PRIMARY KEY,
    queue        text NOT NULL,
    scan_id      uuid NOT NULL REFERENCES scans ON DELETE CASCADE,
    state        text NOT NULL CHECK (state IN ('available', 'running', 'completed', 'discarded')),
    attempt      integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL DEFAULT 3,
    run_at       timestamptz NOT NULL,
    heartbeat_at timestamptz,
    locked_by    text NOT NULL DEFAULT '',
    last_error   text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL
);
CREATE INDEX jobs_runnable ON jobs (queue, run_at, id) WHERE state = 'available';
CREATE INDEX jobs_running ON jobs (heartbeat_at) WHERE state = 'running';

CREATE TABLE oauth_clients (
    id            text PRIMARY KEY,
    name          text NOT NULL,
    redirect_uris text[] NOT NULL,
    grant_types   text[] NOT NULL,
    auth_method   text NOT NULL,
    secret_hash   text NOT NULL DEFAULT '',
    scope         text NOT NULL,
    created_at    timestamptz NOT NULL
);

CREATE TABLE oauth_requests (
    id_hash        text PRIMARY KEY,
    user_id        uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    client_id      text NOT NULL REFERENCES oauth_clients ON DELETE CASCADE,
    redirect_uri   text NOT NULL,
    state          text NOT NULL,
    code_challenge text NOT NULL,
    scope          text NOT NULL,
    resource       text NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL
);

CREATE TABLE oauth_codes (
    code_hash      text PRIMARY KEY,
    client_id      text NOT NULL REFERENCES oauth_clients ON DELETE CASCADE,
    user_id        uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    redirect_uri   text NOT NULL,
    code_challenge text NOT NULL,
    scope          text NOT NULL,
    resource       text NOT NULL,
    family_id      uuid NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz
);

CREATE TABLE oauth_tokens (
    token_hash text PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('access', 'refresh')),
    client_id  text NOT NULL REFERENCES oauth_clients ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    family_id  uuid NOT NULL,
    scope      text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    revoked_at timestamptz
);
CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id);
CREATE INDEX oauth_tokens_user_client ON oauth_tokens (user_id, client_id);

CREATE TABLE oauth_consents (
    user_id    uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    client_id  text NOT NULL REFERENCES oauth_clients ON DELETE CASCADE,
    scope      text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, client_id)
);

CREATE TABLE reports (
    id         uuid PRIMARY KEY,
    token_hash text NOT NULL UNIQUE,
    scan_id    uuid NOT NULL REFERENCES scans ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    title      text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz,
    revoked_at timestamptz
);
CREATE INDEX reports_user ON reports (user_id);

-- The publish webhook's replay guard: the hash of each signed body and when it was last seen.
CREATE TABLE webhook_deliveries (
    body_hash text PRIMARY KEY,
    seen_at   timestamptz NOT NULL
);
