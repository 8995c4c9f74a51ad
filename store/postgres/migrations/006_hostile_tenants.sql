-- Hostile tenants. Fair use: a user's pending authorization requests are trimmed at every new one,
-- and never-used clients are found by the client_id of every OAuth table.
CREATE INDEX oauth_requests_user ON oauth_requests (user_id, created_at);
CREATE INDEX oauth_requests_client ON oauth_requests (client_id);
CREATE INDEX oauth_codes_client ON oauth_codes (client_id);
CREATE INDEX oauth_tokens_client ON oauth_tokens (client_id);
CREATE INDEX oauth_consents_client ON oauth_consents (client_id);

-- Sessions end after SESSION_IDLE_MINUTES without a request: when one was last seen.
ALTER TABLE sessions ADD COLUMN seen_at timestamptz;
UPDATE sessions SET seen_at = created_at;
ALTER TABLE sessions ALTER COLUMN seen_at SET NOT NULL;
