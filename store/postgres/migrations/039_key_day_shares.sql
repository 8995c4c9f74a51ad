-- The PSI key's day shared among accounts (issue 44): shares of ACCOUNT_AUDIT_SHARE add up to
-- more than the whole, so past a high-water mark of the key's day (AUDIT_SHARE_MARK) what is
-- left is shared among the accounts that audited, and a reserve (NEWCOMER_RESERVE) is kept for
-- accounts that had not. The rule is store.AdmitAudit (store/fairshare.go); admit_audit below is
-- the same rule in PL/pgSQL, and take_audit applies it to every payer of an audit.

-- Each account's audits taken once the key's day had passed the mark.
ALTER TABLE account_audits ADD COLUMN late int NOT NULL DEFAULT 0;

-- Every account's audits of a UTC day, and how many accounts took one; the row every take locks
-- last. Rows of days before yesterday are deleted by the take.
CREATE TABLE key_audits (
    day    date PRIMARY KEY,
    used   int  NOT NULL,
    askers int  NOT NULL
);
-- An upgrade in the middle of a day starts the key's day from what the workspaces spent.
INSERT INTO key_audits (day, used, askers)
    SELECT u.day, sum(u.used), (SELECT count(*) FROM account_audits a WHERE a.day = u.day AND a.used > 0)
    FROM audit_usage u GROUP BY u.day;

-- audit_payers, admit_audit and take_audit are written twice: store/memory/audits.go and
-- store/fairshare.go are the same rule in Go. The contract tests testAuditBudget,
-- testAccountAuditBudget and testKeyDayShares keep the two equal (see rulesWrittenTwice in
-- store/storetest/twice_test.go): change both, run them on both stores.

-- admit_audit is store.AdmitAudit: '' admits an account's next audit, else the limit it meets
-- ('account', 'day', 'reserve' or 'share'). key_used and askers are the key's day; used and
-- late the account's.
CREATE FUNCTION admit_audit(account_limit int, day_limit int, mark int, reserve int, newcomer int,
    key_used int, askers int, used int, late int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN account_limit <= 0 OR used >= account_limit THEN 'account'
        WHEN day_limit <= 0 THEN ''
        WHEN key_used >= day_limit THEN 'day'
        WHEN key_used < mark THEN ''
        WHEN used = late AND used < newcomer THEN ''
        WHEN key_used >= day_limit - reserve THEN 'reserve'
        WHEN late < (day_limit - reserve - mark) / greatest(askers + (CASE WHEN used = 0 THEN 1 ELSE 0 END), 1) THEN ''
        ELSE 'share'
    END
$$;

-- take_audit spends one audit of workspace ws on day d, and one of each of its payers' accounts
-- and of the key's day, when the workspace has spent fewer than ws_limit and admit_audit admits
-- it for every payer: all or nothing, in one call. It answers '' when it took the audit, the
-- limit met ('workspace', or admit_audit's) otherwise, and NULL when the workspace does not
-- exist. Rows are locked in one order (the workspace's, its payers' by id, then the key's day),
-- so concurrent takes from any process queue on them and never deadlock one another; each sees
-- the counts the one before left. The four-argument take_audit of migration 022 is kept for a
-- process of the version before, and now counts the key's day too (with the day unshared).
CREATE FUNCTION take_audit(ws uuid, d date, ws_limit int, account_limit int,
    day_limit int, mark int, reserve int, newcomer int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    payers  uuid[];
    spent   boolean;
    verdict text;
    key_row key_audits%ROWTYPE;
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
    INSERT INTO key_audits (day, used, askers) VALUES (d, 0, 0) ON CONFLICT DO NOTHING;
    IF FOUND THEN
        DELETE FROM key_audits WHERE day < d - 1;
    END IF;
    -- The locks, in one order, then the counts they guard.
    SELECT used >= ws_limit INTO spent FROM audit_usage WHERE workspace_id = ws AND day = d FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL; -- no such workspace
    ELSIF spent THEN
        RETURN 'workspace';
    END IF;
    PERFORM 1 FROM account_audits WHERE user_id = ANY (payers) AND day = d ORDER BY user_id FOR UPDATE;
    SELECT * INTO key_row FROM key_audits WHERE day = d FOR UPDATE;
    IF account_limit <= 0 THEN
        RETURN 'account';
    END IF;
    SELECT v INTO verdict FROM (
        SELECT admit_audit(account_limit, day_limit, mark, reserve, newcomer, key_row.used, key_row.askers, a.used, a.late) v
        FROM account_audits a WHERE a.user_id = ANY (payers) AND a.day = d ORDER BY a.user_id) a
        WHERE v <> '' LIMIT 1;
    IF verdict IS NOT NULL THEN
        RETURN verdict;
    END IF;
    UPDATE audit_usage SET used = used + 1 WHERE workspace_id = ws AND day = d;
    UPDATE key_audits SET used = used + 1,
        askers = askers + (SELECT count(*) FROM account_audits WHERE user_id = ANY (payers) AND day = d AND used = 0)
        WHERE day = d;
    UPDATE account_audits SET used = used + 1,
        late = late + CASE WHEN day_limit > 0 AND key_row.used >= mark THEN 1 ELSE 0 END
        WHERE user_id = ANY (payers) AND day = d;
    RETURN '';
END
$$;

CREATE OR REPLACE FUNCTION take_audit(ws uuid, d date, ws_limit int, account_limit int) RETURNS text
LANGUAGE sql AS $$
    SELECT take_audit(ws, d, ws_limit, account_limit, 0, 0, 0, 0)
$$;
