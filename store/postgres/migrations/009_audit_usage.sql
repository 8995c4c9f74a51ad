-- USER_DAILY_AUDITS holds across replicas: each account's audits of a UTC day are counted here,
-- taken one at a time by an atomic conditional upsert (TakeAudit). Rows of days before yesterday
-- are deleted by the take itself, so the table holds at most two rows per account.
CREATE TABLE audit_usage (
    user_id uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    day     date NOT NULL,
    used    int  NOT NULL,
    PRIMARY KEY (user_id, day)
);
