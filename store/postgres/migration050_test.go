package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// Migration 050 moves the activity list into the security log: each line keeps its workspace,
// actor (with the e-mail the account has at the upgrade), subject and time, and gets the kind
// its action names; the activity table is gone.
func TestMigrationMovesActivityToTheSecurityLog(t *testing.T) {
	ctx := context.Background()
	exec, upgrade := olderSchema(t, 49)
	ada, agency := store.NewID(), store.NewID()
	now := time.Now().UTC().Truncate(time.Microsecond)
	exec(`INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, 'ada@example.com', 'h', $2)`, ada, now)
	exec(`INSERT INTO workspaces (id, name, created_at) VALUES ($1, 'Agency', $2)`, agency, now)
	exec(`INSERT INTO activity (workspace_id, actor_id, action, subject, at) VALUES
		($1, $2, 'created the workspace', 'Agency', $3),
		($1, $2, 'invited as editor', 'bob@example.com', $4),
		($1, NULL, 'something older', '', $5)`, agency, ada, now, now.Add(time.Second), now.Add(2*time.Second))
	s := upgrade()
	lines, err := s.LogOf(ctx, store.LogFilter{WorkspaceID: agency})
	must(t, err)
	var got []string
	for _, e := range lines {
		got = append(got, e.Kind+"|"+e.ActorEmail+"|"+e.Target+"|"+e.Details["action"]+"|"+e.At.Sub(now).String())
	}
	want := []string{"workspace.change|||something older|2s", "invitation.created|ada@example.com|bob@example.com|invited as editor|1s",
		"workspace.created|ada@example.com|Agency|created the workspace|0s"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("migrated lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := s.DB().ExecContext(ctx, `SELECT FROM activity`); err == nil {
		t.Error("the activity table is still there")
	}
}

// The security log is append-only on Postgres whatever the statement: UPDATE, DELETE and
// TRUNCATE are refused by its trigger; only prune_security_log (PruneLog) deletes.
func TestSecurityLogTriggerRefusesChanges(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t, storetest.SchemaDSN(t))
	u := newUser(t, s, "o@example.com")
	ws := store.PersonalWorkspace(u.ID)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	appendLog(t, s, store.LogEvent{WorkspaceID: ws, ActorID: u.ID, Kind: store.LogSignIn, At: old},
		store.LogEvent{WorkspaceID: ws, ActorID: u.ID, Kind: store.LogSignIn, At: old.Add(48 * time.Hour)})
	for _, q := range []string{
		`UPDATE security_log SET kind = 'auth.signout'`,
		`UPDATE security_log SET actor_email = 'someone@else.test' WHERE at = '2020-01-01'`,
		`DELETE FROM security_log`,
		`DELETE FROM security_log WHERE at < '2021-01-01'`,
		`TRUNCATE security_log`,
	} {
		_, err := s.DB().ExecContext(ctx, q)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want refused as append-only", q, err)
		}
	}
	// The retention's own setting does not leak: after a prune the guard is on again.
	n, err := s.PruneLog(ctx, old.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("PruneLog: %d, %v; want the one old line", n, err)
	}
	if _, err := s.DB().ExecContext(ctx, `DELETE FROM security_log`); err == nil {
		t.Error("a DELETE after a prune went through")
	}
	if lines, _ := s.LogOf(ctx, store.LogFilter{WorkspaceID: ws}); len(lines) != 1 {
		t.Errorf("left %d lines, want 1", len(lines))
	}
}

func appendLog(t *testing.T, s store.Store, events ...store.LogEvent) {
	t.Helper()
	_, err := s.AppendLog(context.Background(), events...)
	must(t, err)
}
