-- The per-account cap on failed logins (NIST SP 800-63B §5.2.2) holds across replicas: each
-- account's login attempts are counted here, keyed by a hash of the e-mail as typed (an e-mail
-- with no account is counted alike), taken by an atomic conditional upsert before the password
-- is checked (TakeLoginAttempt) and deleted by a success. Rows whose window and wait are over
-- are deleted by later takes.
CREATE TABLE login_attempts (
    account_key text        PRIMARY KEY,
    since       timestamptz NOT NULL, -- the first attempt of the window
    failures    int         NOT NULL,
    next_at     timestamptz NOT NULL  -- past the burst, the next attempt is allowed from here
);
CREATE INDEX login_attempts_since ON login_attempts (since);
