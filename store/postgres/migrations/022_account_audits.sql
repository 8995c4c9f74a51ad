-- An account's fair share of the PSI key (issue 34): the audits of every workspace an account
-- owns, or created that day, count against the account's daily budget (ACCOUNT_AUDIT_SHARE of
-- PSI_DAILY_LIMIT) as well as the workspace's own (USER_DAILY_AUDITS). The counts are the
-- account's, so they outlive a deleted workspace: deleting and recreating one hands out no
-- fresh budget the same day.

-- Who made a workspace (CreateWorkspace): it pays for the workspace's audits on the day it made
-- it, even once it has handed the workspace over and left. Workspaces made before this
-- migration learn it from their activity; personal ones need none (their holder owns them).
ALTER TABLE workspaces ADD COLUMN created_by uuid REFERENCES users ON DELETE SET NULL;
UPDATE workspaces w SET created_by = a.actor_id
    FROM activity a WHERE a.workspace_id = w.id AND a.action = 'created the workspace' AND a.actor_id IS NOT NULL;

-- Each account's audits of a UTC day; rows of days before yesterday are deleted by the take.
CREATE TABLE account_audits (
    user_id uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    day     date NOT NULL,
    used    int  NOT NULL,
    PRIMARY KEY (user_id, day)
);
-- An upgrade in the middle of a day starts each account from what its workspaces spent.
INSERT INTO account_audits (user_id, day, used)
    SELECT m.user_id, a.day, sum(a.used) FROM audit_usage a
    JOIN memberships m ON m.workspace_id = a.workspace_id AND m.role = 'owner'
    GROUP BY m.user_id, a.day;

-- audit_payers and take_audit are written twice: store/memory/audits.go is the same rule in Go.
-- The contract tests testAuditBudget and testAccountAuditBudget keep the two equal (see
-- rulesWrittenTwice in store/storetest/twice_test.go): change both, run them on both stores.

-- audit_payers are the accounts a workspace's audit of day d counts against: its owners, and the
-- account that created it when it did so on d (UTC).
CREATE FUNCTION audit_payers(ws uuid, d date) RETURNS SETOF uuid LANGUAGE sql STABLE AS $$
    SELECT user_id FROM memberships WHERE workspace_id = ws AND role = 'owner'
    UNION
    SELECT created_by FROM workspaces WHERE id = ws AND created_by IS NOT NULL
        AND created_at >= d::timestamp AT TIME ZONE 'UTC'
$$;

-- take_audit spends one audit of workspace ws on day d, and one of each of its payers' accounts,
-- when the workspace has spent fewer than ws_limit and every payer fewer than account_limit:
-- all or nothing, in one call. It answers '' when it took the audit, 'workspace' or 'account'
-- for the budget that is spent, and NULL when the workspace does not exist. Rows are locked in
-- one order (the workspace's, then its payers' by id), so concurrent takes from any process
-- queue on them and never deadlock one another; each sees the counts the one before left.
CREATE FUNCTION take_audit(ws uuid, d date, ws_limit int, account_limit int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    payers uuid[];
    spent  boolean;
BEGIN
    SELECT coalesce(array_agg(p ORDER BY p), '{}') INTO payers FROM audit_payers(ws, d) p;
    -- The rows to lock, made on a day's first take, which also forgets the days before
    -- yesterday (yesterday's stays: a replica whose clock is a little behind must not count
    -- afresh).
    INSERT INTO audit_usage (workspace_id, day, used) SELECT ws, d, 0 WHERE EXISTS (SELECT 1 FROM workspaces WHERE id = ws)
        ON CONFLICT DO NOTHING;
    IF FOUND THEN
        DELETE FROM audit_usage WHERE workspace_id = ws AND day < d - 1;
    END IF;
    INSERT INTO account_audits (user_id, day, used) SELECT unnest(payers), d, 0 ON CONFLICT DO NOTHING;
    IF FOUND THEN
        DELETE FROM account_audits WHERE user_id = ANY (payers) AND day < d - 1;
    END IF;
    -- The locks, in one order, then the counts they guard.
    SELECT used >= ws_limit INTO spent FROM audit_usage WHERE workspace_id = ws AND day = d FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL; -- no such workspace
    ELSIF spent THEN
        RETURN 'workspace';
    END IF;
    SELECT coalesce(bool_or(used >= account_limit), false) OR account_limit <= 0 INTO spent
        FROM (SELECT used FROM account_audits WHERE user_id = ANY (payers) AND day = d ORDER BY user_id FOR UPDATE) a;
    IF spent THEN
        RETURN 'account';
    END IF;
    UPDATE audit_usage SET used = used + 1 WHERE workspace_id = ws AND day = d;
    UPDATE account_audits SET used = used + 1 WHERE user_id = ANY (payers) AND day = d;
    RETURN '';
END
$$;
