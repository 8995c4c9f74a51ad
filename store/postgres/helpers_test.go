package postgres_test

import (
	"context"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// Copies of the contract suite's helpers (store/storetest/store_test.go) for the Postgres-only
// tests here, which cannot see that suite's test files.

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newUser(t testing.TB, s store.Store, email string) store.User {
	t.Helper()
	u := store.User{ID: store.NewID(), Email: email, PasswordHash: "x", NotifyRegressions: true, CreatedAt: t0}
	must(t, s.CreateUser(context.Background(), u))
	return u
}

func newSite(t testing.TB, s store.Store, u store.User, name string) store.Site {
	t.Helper()
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: name, Domain: name + ".test", Pages: []string{"/"}, CreatedAt: t0}
	must(t, s.CreateSite(context.Background(), site))
	return site
}

func enqueue(t testing.TB, s store.Store, site store.Site, at time.Time) store.Scan {
	t.Helper()
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: at}
	must(t, s.EnqueueScan(context.Background(), sc, store.KindScan, at))
	return sc
}

// olderSchema is a schema of its own migrated up to version upTo only, as an older SitePulse
// left it: exec runs raw SQL in it (failing the test on an error), and upgrade closes it and
// opens it again with every migration applied, as the next release's start would.
func olderSchema(t *testing.T, upTo int) (exec func(q string, args ...any), upgrade func() *postgres.Store) {
	t.Helper()
	ctx := context.Background()
	dsn := storetest.SchemaDSN(t)
	old, err := postgres.OpenMigratedTo(ctx, dsn, upTo)
	if err != nil {
		t.Fatal(err)
	}
	exec = func(q string, args ...any) {
		t.Helper()
		if _, err := old.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return exec, func() *postgres.Store {
		old.Close()
		return storetest.Open(t, dsn)
	}
}
