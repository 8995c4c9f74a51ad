package postgres_test

import (
	"context"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// Migrations 023-025 (issue 34): e-mails are kept in their canonical form, so the account an
// address typed in any case finds is the one its stored form names, and "\u017fam@" is not
// "sam@"; the holder a co-owner removed from their personal workspace is its owner again; the
// report of a member who left stays with the workspace when that member's account goes.
func TestMigrationCanonicalEmailsAndHolders(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.SchemaDSN(t)
	old, err := postgres.OpenMigratedTo(ctx, dsn, 18)
	if err != nil {
		t.Fatal(err)
	}
	db := old.DB()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ann, co, gone := store.NewID(), store.NewID(), store.NewID()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	exec(`INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, 'Ann@Example.COM', 'h', $4), ($2, 'co@example.com', 'h', $4), ($3, 'gone@example.com', 'h', $4)`, ann, co, gone, now)
	exec(`INSERT INTO workspaces (id, name, created_at) VALUES ($1, 'ann', $4), ($2, 'co', $4), ($3, 'gone', $4)`, ann, co, gone, now)
	// The co-owner removed ann from her own workspace; gone was a member of it and left.
	exec(`INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'owner', $4), ($2, $2, 'owner', $4), ($3, $3, 'owner', $4)`, ann, co, gone, now)
	site, scan := store.NewID(), store.NewID()
	exec(`INSERT INTO sites (id, user_id, workspace_id, name, domain, created_at) VALUES ($1, $2, $2, 'home', 'home.test', $3)`, site, ann, now)
	exec(`INSERT INTO scans (id, site_id, status, strategy, trigger, created_at) VALUES ($1, $2, 'complete', 'both', 'manual', $3)`, scan, site, now)
	exec(`INSERT INTO reports (id, token_hash, scan_id, user_id, workspace_id, title, created_at) VALUES ($1, 'rep', $2, $3, $4, 'r', $5)`, store.NewID(), scan, gone, ann, now)
	exec(`INSERT INTO invitations (id, token_hash, workspace_id, email, role, invited_by, created_at, expires_at) VALUES ($1, 'inv', $2, 'Kim@Example.com', 'viewer', $2, $3, $4)`,
		store.NewID(), co, now, now.Add(time.Hour))
	old.Close()

	s := storetest.Open(t, dsn) // applies 023-025
	u, err := s.UserByEmail(ctx, "ANN@example.com")
	must(t, err)
	if u.ID != ann || u.Email != "ann@example.com" {
		t.Fatalf("UserByEmail = %+v, want ann, stored lower-case", u)
	}
	if _, err := s.UserByEmail(ctx, "\u017fann@example.com"); err == nil {
		t.Fatal("a long s found an account")
	}
	if w, err := s.Workspace(ctx, ann, ann); err != nil || w.Role != store.RoleOwner {
		t.Fatalf("ann's personal workspace after 025: %+v, %v; want her owner again", w, err)
	}
	if inv, err := s.InvitationByHash(ctx, "inv"); err != nil || inv.Email != "kim@example.com" {
		t.Fatalf("invitation %+v, %v", inv, err)
	}
	if _, err := s.DeleteAccount(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReportByHash(ctx, "rep"); err != nil {
		t.Fatalf("the report of a member who left went with their account: %v", err)
	}
}
