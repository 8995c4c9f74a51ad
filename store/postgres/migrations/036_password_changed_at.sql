-- When the account's password was last set (issue 44): a password reset and "sign out
-- everywhere" end the OAuth grants made since, which an intruder who had the password or a
-- session may have made. NULL: never changed since the account was made (created_at).
ALTER TABLE users ADD COLUMN password_changed_at timestamptz;
