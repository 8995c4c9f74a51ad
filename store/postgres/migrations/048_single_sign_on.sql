-- Single sign-on (DESIGN §21): identities at OpenID providers, named by (issuer, subject) and
-- never by e-mail; the sessions they made, bound to the provider's last vouch; and each
-- workspace's rule (a verified domain, whether SSO is required, the just-in-time role).
CREATE TABLE sso_identities (
    issuer         text NOT NULL,
    subject        text NOT NULL,
    user_id        uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    email          text NOT NULL DEFAULT '',
    refresh_sealed text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL,
    checked_at     timestamptz NOT NULL,
    lost_at        timestamptz,
    PRIMARY KEY (issuer, subject)
);
CREATE UNIQUE INDEX sso_identities_user ON sso_identities (user_id, issuer);

ALTER TABLE sessions ADD COLUMN sso_issuer text NOT NULL DEFAULT '',
    ADD COLUMN sso_subject text NOT NULL DEFAULT '',
    ADD COLUMN sso_checked_at timestamptz;
CREATE INDEX sessions_sso ON sessions (sso_issuer, sso_subject) WHERE sso_issuer <> '';

CREATE TABLE workspace_sso (
    workspace_id uuid PRIMARY KEY REFERENCES workspaces ON DELETE CASCADE,
    domain       text NOT NULL DEFAULT '',
    token        text NOT NULL DEFAULT '',
    verified_at  timestamptz,
    required_at  timestamptz,
    jit_role     text NOT NULL DEFAULT '' CHECK (jit_role IN ('', 'editor', 'viewer')),
    updated_at   timestamptz NOT NULL
);
-- One workspace holds a verified domain: the just-in-time join must not have two answers.
CREATE UNIQUE INDEX workspace_sso_domain ON workspace_sso (domain) WHERE verified_at IS NOT NULL AND domain <> '';
