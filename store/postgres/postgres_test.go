package postgres_test

import (
	"context"
	"sync"
	"testing"

	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// Two processes starting together against one empty database both come up, and the schema is
// applied once: the advisory lock serialises the migrations.
func TestPostgresConcurrentMigrations(t *testing.T) {
	dsn := storetest.SchemaDSN(t)
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, 4)
	errs := make([]error, 4)
	for i := range stores {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			stores[i], errs[i] = postgres.Open(context.Background(), dsn, postgres.Pool{MaxConns: 2})
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	versions, err := stores[0].MigrationsApplied(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Each migration applied exactly once, in order, whatever the number of files.
	for i, v := range versions {
		if i == 0 && v != 1 || i > 0 && v <= versions[i-1] {
			t.Errorf("applied migrations = %v, want each version once, ascending from 1", versions)
			break
		}
	}
}

// A store whose schema lacks this program's latest migration (an older dump restored under a
// running process) is not ready; once migrated, it is.
func TestPostgresReadyNeedsTheLatestMigration(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.SchemaDSN(t)
	old, err := postgres.OpenMigratedTo(ctx, dsn, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := old.Ready(ctx); err == nil {
		t.Error("a schema at migration 5 is ready")
	}
	st, err := postgres.Open(ctx, dsn, postgres.Pool{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Ready(ctx); err != nil {
		t.Errorf("a migrated schema is not ready: %v", err)
	}
	if err := old.Ready(ctx); err != nil {
		t.Errorf("the older process, after a newer one migrated: %v", err)
	}
}
