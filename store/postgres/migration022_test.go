package postgres_test

import (
	"context"
	"testing"
	"time"

	"sitepulse/store"
)

// Migration 022 starts each account's daily count from what its workspaces spent that day (an
// upgrade at noon hands out no fresh account budget), and a workspace made before it learns its
// creator from its activity, so the creator pays for its audits on that day even after leaving.
func TestMigrationStartsAccountBudgets(t *testing.T) {
	ctx := context.Background()
	exec, upgrade := olderSchema(t, 21)
	ada, bob, agency := store.NewID(), store.NewID(), store.NewID()
	now := time.Now().UTC()
	exec(`INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, 'ada@example.com', 'h', $3), ($2, 'bob@example.com', 'h', $3)`, ada, bob, now)
	exec(`INSERT INTO workspaces (id, name, created_at) VALUES ($1, 'ada', $4), ($2, 'bob', $4), ($3, 'Agency', $4)`, ada, bob, agency, now)
	// Ada made the agency today and handed it to Bob; her own workspace spent 6, the agency 2.
	exec(`INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES ($1, $1, 'owner', $4), ($2, $2, 'owner', $4), ($3, $2, 'owner', $4)`, ada, bob, agency, now)
	exec(`INSERT INTO activity (workspace_id, actor_id, action, subject, at) VALUES ($1, $2, 'created the workspace', 'Agency', $3)`, agency, ada, now)
	exec(`INSERT INTO audit_usage (workspace_id, day, used) VALUES ($1, $3, 6), ($2, $3, 2)`, ada, agency, now.Format(time.DateOnly))
	s := upgrade() // applies 022
	if u, err := s.AuditsTaken(ctx, ada, now); err != nil || u != (store.AuditUsage{Workspace: 6, Account: 6, Key: 8, Askers: 2}) {
		t.Errorf("ada's workspace: %+v, %v; want 6 of its own and of ada's account, and the key's day (migration 039) the 8 both workspaces spent, by 2 accounts", u, err)
	}
	// The agency's payers are Bob (its owner) and Ada (who made it today): Ada's 6 is the most.
	if u, err := s.AuditsTaken(ctx, agency, now); err != nil || u != (store.AuditUsage{Workspace: 2, Account: 6, Key: 8, Askers: 2}) {
		t.Errorf("the agency: %+v, %v; want 2 of its own and its creator ada's 6", u, err)
	}
	if ok, err := s.TakeAudit(ctx, agency, now, store.AuditLimits{Workspace: 100, Account: 6}); err != nil || ok {
		t.Errorf("an agency audit with ada's account at its budget of 6: %v, %v; want refused", ok, err)
	}
}
