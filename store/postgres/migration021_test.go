package postgres_test

import (
	"context"
	"testing"
	"time"

	"sitepulse/store"
)

// Migration 021 gives each unfinished job the workspace it works for: a scan job its site's, a
// delivery its args' (workspaceId, or the userId of deliveries queued before channels moved into
// workspaces), so the fair claim counts them from the first claim after the upgrade.
func TestMigrationGivesJobsTheirWorkspace(t *testing.T) {
	ctx := context.Background()
	exec, upgrade := olderSchema(t, 20)
	ada, bob, site, scan := store.NewID(), store.NewID(), store.NewID(), store.NewID()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	exec(`INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, 'ada@example.com', 'h', $3), ($2, 'bob@example.com', 'h', $3)`, ada, bob, now)
	exec(`INSERT INTO workspaces (id, name, created_at) VALUES ($1, 'ada', $3), ($2, 'bob', $3)`, ada, bob, now)
	exec(`INSERT INTO sites (id, user_id, workspace_id, name, domain, created_at) VALUES ($1, $2, $2, 'Shop', 'shop.test', $3)`, site, ada, now)
	exec(`INSERT INTO scans (id, site_id, status, strategy, trigger, created_at) VALUES ($1, $2, 'queued', 'both', 'manual', $3)`, scan, site, now)
	exec(`INSERT INTO jobs (kind, args, scan_id, state, max_attempts, run_at, created_at) VALUES
		('scan', jsonb_build_object('scanId', $1::text), $1::uuid, 'available', 3, $2, $2),
		('delivery', jsonb_build_object('workspaceId', $3::text, 'channelId', 'c'), NULL, 'running', 3, $2, $2),
		('delivery', jsonb_build_object('userId', $4::text, 'channelId', 'c'), NULL, 'available', 3, $2, $2),
		('delivery', jsonb_build_object('workspaceId', 'not-a-uuid', 'channelId', 'c'), NULL, 'available', 3, $2, $2),
		('digest', '{}', NULL, 'available', 3, $2, $2)`, scan, now, bob, ada)
	s := upgrade() // applies 021
	want := []string{ada, bob, ada, "", ""}
	for i, w := range want {
		j, err := s.Job(ctx, int64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		if j.WorkspaceID != w {
			t.Errorf("job %d (%s, %s): workspace %q, want %q", j.ID, j.Kind, j.Args, j.WorkspaceID, w)
		}
	}
	// Bob's delivery is running: with a cap of 1, Ada's is claimed and Bob's workspace gets none.
	j, err := s.ClaimJob(ctx, "delivery", "w", now.Add(time.Hour), 1)
	if err != nil || j.WorkspaceID != ada {
		t.Errorf("claimed %+v, %v; want ada's delivery", j, err)
	}
}
