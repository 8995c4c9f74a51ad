package postgres_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sitepulse/store/storetest"
)

// Migration 011 splits the scopes: what was granted before it (keys, tokens, consents,
// clients, all "mcp:read" then, which could publish) keeps both scopes; a key inserted after it
// without a scope may only read.
func TestMigration011KeepsOldGrants(t *testing.T) {
	db, err := sql.Open("postgres", storetest.SchemaDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, _ := filepath.Glob("migrations/*.sql")
	slices.Sort(files)
	apply := func(f string) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(b)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	i := slices.IndexFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), "011_") })
	if i < 0 {
		t.Fatal("no migration 011")
	}
	for _, f := range files[:i] {
		apply(f)
	}
	const user = "00000000-0000-4000-8000-000000000001"
	for _, q := range []string{
		`INSERT INTO users (id, email, password_hash, created_at) VALUES ('` + user + `', 'm@example.com', 'x', now())`,
		`INSERT INTO api_keys (id, user_id, name, key_hash, prefix, created_at) VALUES ('00000000-0000-4000-8000-000000000002', '` + user + `', 'old', 'h1', 'svc_x', now())`,
		`INSERT INTO oauth_clients VALUES ('c_1', 'C', '{https://x/cb}', '{authorization_code}', 'none', '', 'mcp:read', now())`,
		`INSERT INTO oauth_tokens (token_hash, kind, client_id, user_id, family_id, scope, created_at, expires_at)
			VALUES ('t1', 'access', 'c_1', '` + user + `', '00000000-0000-4000-8000-000000000003', 'mcp:read', now(), now() + interval '1 day')`,
		`INSERT INTO oauth_codes (code_hash, client_id, user_id, redirect_uri, code_challenge, scope, resource, family_id, created_at, expires_at)
			VALUES ('a1', 'c_1', '` + user + `', 'https://x/cb', 'ch', 'mcp:read', '', '00000000-0000-4000-8000-000000000004', now(), now())`,
		`INSERT INTO oauth_consents VALUES ('` + user + `', 'c_1', 'mcp:read', now())`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, f := range files[i:] {
		apply(f)
	}
	// Since migration 013 a key belongs to a workspace: the user's personal one has the user's id.
	if _, err := db.Exec(`INSERT INTO api_keys (id, user_id, name, key_hash, prefix, created_at, workspace_id) VALUES ('00000000-0000-4000-8000-000000000005', '` + user + `', 'new', 'h2', 'svc_y', now(), '` + user + `')`); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		`SELECT scope FROM api_keys WHERE name = 'old'`: "mcp:read mcp:write",
		`SELECT scope FROM api_keys WHERE name = 'new'`: "mcp:read",
		`SELECT scope FROM oauth_tokens`:                "mcp:read mcp:write",
		`SELECT scope FROM oauth_codes`:                 "mcp:read mcp:write",
		`SELECT scope FROM oauth_consents`:              "mcp:read mcp:write",
		`SELECT scope FROM oauth_clients`:               "mcp:read mcp:write",
	} {
		var got string
		if err := db.QueryRow(q).Scan(&got); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", q, got, err, want)
		}
	}
}
