-- The scope mcp:read splits into mcp:read (the read tools) and mcp:write (publishing a report,
-- later starting a scan). Everything granted before the split could publish, so it keeps both:
-- API keys, tokens, codes, pending requests, consents and registered clients. A key made after
-- this migration is read-only unless its creator lets it publish (the column's new default).
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'mcp:read mcp:write';
ALTER TABLE api_keys ALTER COLUMN scope SET DEFAULT 'mcp:read';
UPDATE oauth_tokens SET scope = 'mcp:read mcp:write' WHERE scope = 'mcp:read';
UPDATE oauth_codes SET scope = 'mcp:read mcp:write' WHERE scope = 'mcp:read';
UPDATE oauth_requests SET scope = 'mcp:read mcp:write' WHERE scope = 'mcp:read';
UPDATE oauth_consents SET scope = 'mcp:read mcp:write' WHERE scope = 'mcp:read';
UPDATE oauth_clients SET scope = 'mcp:read mcp:write' WHERE scope = 'mcp:read';
