package postgres_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// Migration 014 gives jobs kinds: a database holding scan jobs from before it keeps every one,
// now of kind scan with args {"scanId": ...}, runnable and claimed as before, and its finished
// jobs get the time the cleaner counts from. The database is built as migrations 001-009 left it
// (the ones before the jobs changed hands), with raw SQL, then opened by the store.
func TestPostgresMigrationGivesScanJobsTheScanKind(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.SchemaDSN(t)
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(filepath.Base(f), "_", 2)[0])
		if err != nil || v > 9 {
			continue
		}
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		exec(string(body))
		exec(`INSERT INTO schema_migrations (version) VALUES ($1)`, v)
	}
	user, site, queued, done := store.NewID(), store.NewID(), store.NewID(), store.NewID()
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	exec(`INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, 'old@example.com', 'x', $2)`, user, t0)
	exec(`INSERT INTO sites (id, user_id, name, domain, created_at) VALUES ($1, $2, 'Old', 'old.test', $3)`, site, user, t0)
	exec(`INSERT INTO scans (id, site_id, status, strategy, trigger, created_at) VALUES ($1, $2, 'complete', 'both', 'manual', $3)`, done, site, t0)
	exec(`INSERT INTO scans (id, site_id, status, strategy, trigger, created_at) VALUES ($1, $2, 'queued', 'both', 'manual', $3)`, queued, site, t0)
	exec(`INSERT INTO jobs (queue, scan_id, state, attempt, run_at, heartbeat_at, created_at) VALUES ('scan', $1, 'completed', 1, $2, $3, $2)`, done, t0, t0.Add(time.Minute))
	// Snoozed once: a snooze raised max_attempts by one.
	exec(`INSERT INTO jobs (queue, scan_id, state, attempt, max_attempts, run_at, created_at) VALUES ('scan', $1, 'available', 1, 4, $2, $2)`, queued, t0)

	st := storetest.Open(t, dsn)
	j, err := st.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	if err != nil {
		t.Fatalf("the queued scan's job after the migration: %v", err)
	}
	var args store.ScanJob
	if err := json.Unmarshal(j.Args, &args); err != nil || args.ScanID != queued || j.ScanID != queued || j.Kind != store.KindScan ||
		j.Attempt != 2 || j.MaxAttempts != 4 || j.Snoozes() != 1 {
		t.Errorf("migrated job = %+v, args %s", j, j.Args)
	}
	finished, err := st.Job(ctx, j.ID-1)
	if err != nil || finished.ScanID != done || finished.FinalizedAt == nil || !finished.FinalizedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("migrated finished job = %+v (%v), want finalized when it last beat", finished, err)
	}
	// The site's deletion still takes its scans' jobs along.
	if err := st.DeleteSite(ctx, user, site); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Job(ctx, j.ID); err == nil {
		t.Error("a deleted site's scan job is still there")
	}
}
