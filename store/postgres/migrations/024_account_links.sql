-- E-mailed account links (store.AccountLink): "Forgot password" and the confirmation of a new
-- e-mail address. Only the token's SHA-256 is kept; used_at is set once, by one conditional
-- UPDATE, so a link works once. A user's links go with the user.
CREATE TABLE account_links (
    token_hash text PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users ON DELETE CASCADE,
    purpose    text NOT NULL CHECK (purpose IN ('reset', 'email')),
    email      text NOT NULL DEFAULT '', -- the new address of an e-mail change
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX account_links_user ON account_links (user_id, purpose);
