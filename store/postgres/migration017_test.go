package postgres_test

import (
	"context"
	"testing"
	"time"

	"sitepulse/store"
)

// Migration 017 moves each alert channel, with its deliveries, into its account's personal
// workspace (the workspace whose id is the account's): its owner still sees it and its log,
// another account does not, and the alert jobs find it by the workspace.
func TestMigrationMovesChannelsIntoPersonalWorkspaces(t *testing.T) {
	ctx := context.Background()
	exec, upgrade := olderSchema(t, 16)
	ada, bob, ch := store.NewID(), store.NewID(), store.NewID()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	exec(`INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, 'ada@example.com', 'h', $3), ($2, 'bob@example.com', 'h', $3)`, ada, bob, now)
	exec(`INSERT INTO workspaces (id, name, created_at) VALUES ($1, 'ada', $3), ($2, 'bob', $3)`, ada, bob, now)
	exec(`INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES ($1, $1, 'owner', $3), ($2, $2, 'owner', $3)`, ada, bob, now)
	exec(`INSERT INTO channels (id, user_id, kind, name, url_sealed, events, created_at) VALUES ($1, $2, 'slack', '#perf', 'k1.sealed', '{regression.confirmed}', $3)`, ch, ada, now)
	exec(`INSERT INTO deliveries (id, channel_id, event_id, event_type, state, attempts, created_at) VALUES ($1, $2, 'evt_1', 'test', 'delivered', 1, $3)`, store.NewID(), ch, now)
	s := upgrade() // applies 017
	list, err := s.ChannelsIn(ctx, ada, ada)
	must(t, err)
	if len(list) != 1 || list[0].ID != ch || list[0].WorkspaceID != ada || list[0].URLSealed != "k1.sealed" {
		t.Fatalf("ada's workspace lists %+v, want her channel", list)
	}
	if ds, err := s.DeliveriesOf(ctx, ada, ada, ch, 50); err != nil || len(ds) != 1 {
		t.Errorf("its deliveries = %v, %v", ds, err)
	}
	if list, _ := s.ChannelsIn(ctx, bob, ada); len(list) != 0 {
		t.Errorf("bob lists ada's channels: %+v", list)
	}
	if list, _ := s.WorkspaceChannels(ctx, ada); len(list) != 1 {
		t.Errorf("the alert jobs find %d channels in ada's workspace, want 1", len(list))
	}
}
