package postgres_test

import (
	"context"
	"testing"
	"time"

	"sitepulse/store"
)

// Migration 013 moves a populated database from users owning rows to workspaces owning them:
// a copy as the release before it left it is built with raw SQL, then Open applies 013 and
// every old id, key, session, token and report link still works, each row in its owner's
// personal workspace, nothing lost or renamed.
func TestMigrationMovesRowsIntoPersonalWorkspaces(t *testing.T) {
	ctx := context.Background()
	exec, upgrade := olderSchema(t, 12)
	var (
		ada, bob       = store.NewID(), store.NewID()
		adaSite, bobSt = store.NewID(), store.NewID()
		scan, report   = store.NewID(), store.NewID()
		keyID          = store.NewID()
		now            = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	)
	exec(`INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, 'ada@example.com', 'h', $3), ($2, 'bob@example.com', 'h', $3)`, ada, bob, now)
	exec(`INSERT INTO sessions (token_hash, user_id, csrf, created_at, expires_at, seen_at) VALUES ('sess-ada', $1, 'c', $2, $3, $2)`, ada, now, now.Add(time.Hour))
	exec(`INSERT INTO api_keys (id, user_id, name, key_hash, prefix, created_at) VALUES ($1, $2, 'ci', 'key-ada', 'svc_ab', $3)`, keyID, ada, now)
	exec(`INSERT INTO sites (id, user_id, name, domain, pages, created_at) VALUES ($1, $3, 'Ada shop', 'ada.test', '{/}', $5), ($2, $4, 'Bob blog', 'bob.test', '{/}', $5)`,
		adaSite, bobSt, ada, bob, now)
	exec(`INSERT INTO budgets (site_id, metric, threshold) VALUES ($1, 'performance', 90)`, adaSite)
	exec(`INSERT INTO scans (id, site_id, status, strategy, trigger, pages_total, pages_done, scores, created_at, completed_at)
		VALUES ($1, $2, 'complete', 'mobile', 'manual', 1, 1, '{"performance": 91}', $3, $3)`, scan, adaSite, now)
	exec(`INSERT INTO page_results (scan_id, page_path, strategy, page_url, result) VALUES ($1, '/', 'mobile', 'https://ada.test/', '{"scores": {"performance": 91}}')`, scan)
	exec(`INSERT INTO reports (id, token_hash, scan_id, user_id, title, created_at) VALUES ($1, 'report-ada', $2, $3, 'For the client', $4)`, report, scan, ada, now)
	exec(`INSERT INTO oauth_clients (id, name, redirect_uris, grant_types, auth_method, scope, created_at) VALUES ('client-1', 'Claude', '{https://c.test/cb}', '{authorization_code}', 'none', 'mcp', $1)`, now)
	exec(`INSERT INTO oauth_tokens (token_hash, kind, client_id, user_id, family_id, scope, created_at, expires_at) VALUES ('tok-ada', 'access', 'client-1', $1, $2, 'mcp', $3, $4)`,
		ada, store.NewID(), now, now.Add(time.Hour))
	exec(`INSERT INTO platform_connections (user_id, token_sealed, created_at) VALUES ($1, 'k1.sealed', $2)`, ada, now)
	exec(`INSERT INTO audit_usage (user_id, day, used) VALUES ($1, $2, 7)`, ada, now)
	s := upgrade() // applies 013 and on

	for _, u := range []struct{ id, email, site, name string }{{ada, "ada@example.com", adaSite, "Ada shop"}, {bob, "bob@example.com", bobSt, "Bob blog"}} {
		ws, err := s.WorkspacesOf(ctx, u.id)
		must(t, err)
		if len(ws) != 1 || ws[0].ID != u.id || ws[0].Role != store.RoleOwner || ws[0].Name != store.PersonalWorkspaceName(u.email) {
			t.Fatalf("%s: workspaces %+v, want one personal workspace owned by them", u.email, ws)
		}
		site, err := s.Site(ctx, u.id, u.site)
		must(t, err)
		if site.Name != u.name || site.WorkspaceID != u.id || site.UserID != u.id {
			t.Fatalf("%s: site %+v moved wrong", u.email, site)
		}
	}
	if _, err := s.Site(ctx, bob, adaSite); err == nil {
		t.Fatal("bob reads ada's site after the migration")
	}
	if _, err := s.SessionByHash(ctx, "sess-ada", now); err != nil {
		t.Fatalf("old session: %v", err)
	}
	k, err := s.APIKeyByHash(ctx, "key-ada", now)
	must(t, err)
	if k.ID != keyID || k.WorkspaceID != ada {
		t.Fatalf("old key %+v, want it in ada's workspace", k)
	}
	in, err := s.BudgetInputsByKey(ctx, "key-ada", adaSite, now)
	must(t, err)
	if in.Scan == nil || in.Scan.ID != scan || in.Budgets["performance"].Threshold != 90 {
		t.Fatalf("budget inputs by the old key %+v", in)
	}
	if _, err := s.Token(ctx, "tok-ada"); err != nil {
		t.Fatalf("old OAuth token: %v", err)
	}
	r, err := s.ReportByHash(ctx, "report-ada")
	must(t, err)
	if r.ID != report || r.WorkspaceID != ada {
		t.Fatalf("old report %+v", r)
	}
	if _, _, results, err := s.ReportScan(ctx, r); err != nil || len(results) != 1 {
		t.Fatalf("old report's scan: %d results, %v", len(results), err)
	}
	if c, err := s.PlatformConnection(ctx, ada); err != nil || c.TokenSealed != "k1.sealed" {
		t.Fatalf("old platform connection %+v, %v", c, err)
	}
	// Migration 022 starts each account from what its workspaces spent that day.
	if n, err := s.AuditsTaken(ctx, ada, now); err != nil || n != (store.AuditUsage{Workspace: 7, Account: 7, Key: 7, Askers: 1}) {
		t.Fatalf("audits taken %+v, %v; want the day's 7 kept, the workspace's, its owner's and the key's day's (migration 039)", n, err)
	}
	// A new account after the migration gets its own personal workspace.
	carol := store.User{ID: store.NewID(), Email: "carol@example.com", PasswordHash: "h", CreatedAt: now}
	must(t, s.CreateUser(ctx, carol))
	if _, err := s.Workspace(ctx, carol.ID, carol.ID); err != nil {
		t.Fatalf("new account's personal workspace: %v", err)
	}
}
