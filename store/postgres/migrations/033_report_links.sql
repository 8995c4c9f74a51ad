-- A client report's link kept sealed (AES-GCM under PLATFORM_TOKEN_KEY, bound to the report's
-- id) beside its hash, so the Reports list can show and copy a live report's link again
-- (issue 37). NULL: a report made before, or without the key; its link cannot be shown.
ALTER TABLE reports ADD COLUMN token_sealed text;
