-- The security log (issue 47, docs/audit-log.md): every security-relevant event of a workspace,
-- who (user id and the e-mail at the time), what (kind, target, small details, never a secret),
-- when and from where (client address, User-Agent). It replaces the activity list (its last 100
-- changes), whose rows move here. No foreign keys: a line outlives the account and the
-- workspace it names, until its retention (AUDIT_LOG_RETENTION_DAYS) prunes it.
CREATE TABLE security_log (
    seq          bigserial PRIMARY KEY,
    workspace_id uuid NOT NULL,
    actor_id     uuid,
    actor_email  text NOT NULL DEFAULT '',
    kind         text NOT NULL,
    target       text NOT NULL DEFAULT '',
    details      jsonb NOT NULL DEFAULT '{}',
    ip           text NOT NULL DEFAULT '',
    user_agent   text NOT NULL DEFAULT '',
    at           timestamptz NOT NULL
);
CREATE INDEX security_log_workspace ON security_log (workspace_id, at DESC, seq DESC);
CREATE INDEX security_log_at ON security_log (at);

INSERT INTO security_log (workspace_id, actor_id, actor_email, kind, target, details, at)
SELECT a.workspace_id, a.actor_id, coalesce(u.email, ''),
    CASE
        WHEN a.action = 'created the workspace' THEN 'workspace.created'
        WHEN a.action LIKE 'invited as %' THEN 'invitation.created'
        WHEN a.action = 'revoked an invitation' THEN 'invitation.revoked'
        WHEN a.action LIKE 'joined as %' THEN 'invitation.accepted'
        WHEN a.action LIKE 'changed the role to %' THEN 'member.role_changed'
        WHEN a.action = 'removed' THEN 'member.removed'
        WHEN a.action = 'left' THEN 'member.left'
        WHEN a.action = 'channel added' THEN 'channel.created'
        WHEN a.action = 'channel deleted' THEN 'channel.deleted'
        WHEN a.action = 'added the site' THEN 'site.added'
        WHEN a.action = 'changed the site' THEN 'site.changed'
        WHEN a.action = 'deleted the site' THEN 'site.deleted'
        WHEN a.action = 'removed the sign-in of the site' THEN 'site.access_removed'
        WHEN a.action LIKE 'set the sign-in of the site%' THEN 'site.access_set'
        WHEN a.action = 'created the API key' THEN 'api_key.created'
        WHEN a.action = 'connected the platform' THEN 'platform.connected'
        WHEN a.action = 'disconnected the platform' THEN 'platform.disconnected'
        WHEN a.action = 'changed the budgets of' THEN 'budget.changed'
        WHEN a.action = 'set an alert rule on' THEN 'budget.rule_added'
        WHEN a.action = 'deleted an alert rule of' THEN 'budget.rule_deleted'
        WHEN a.action LIKE 'set page details%' THEN 'workspace.retention_changed'
        ELSE 'workspace.change'
    END,
    a.subject, jsonb_build_object('action', a.action), a.at
FROM activity a LEFT JOIN users u ON u.id = a.actor_id
ORDER BY a.at, a.id;

DROP TABLE activity;

-- Append-only. The guard refuses every UPDATE, DELETE and TRUNCATE of the log, except a DELETE
-- made inside prune_security_log, the retention, which sets a transaction-local setting the
-- guard reads. It protects the log from the program's own mistakes and from a statement that
-- should not be there; a database owner who can drop the trigger is beyond what a trigger can
-- stop (give the program a role that does not own the table for that).
CREATE FUNCTION security_log_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('sitepulse.security_log_prune', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'security_log is append-only: % refused', TG_OP USING ERRCODE = 'raise_exception';
END $$;
CREATE TRIGGER security_log_append_only BEFORE UPDATE OR DELETE ON security_log
    FOR EACH ROW EXECUTE FUNCTION security_log_guard();
CREATE TRIGGER security_log_no_truncate BEFORE TRUNCATE ON security_log
    FOR EACH STATEMENT EXECUTE FUNCTION security_log_guard();

-- prune_security_log deletes the lines older than before: the log's retention, and its only delete.
CREATE FUNCTION prune_security_log(before timestamptz) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    PERFORM set_config('sitepulse.security_log_prune', 'on', true);
    DELETE FROM security_log WHERE at < before;
    GET DIAGNOSTICS n = ROW_COUNT;
    PERFORM set_config('sitepulse.security_log_prune', 'off', true);
    RETURN n;
END $$;
