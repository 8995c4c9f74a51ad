package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// TestPoolIsBounded is issue 24's connection budget: a store never opens more than its pool's
// MaxConns connections, however many goroutines use it (they wait for one), and the default is
// DATABASE_MAX_CONNS's 20.
func TestPoolIsBounded(t *testing.T) {
	dsn := storetest.SchemaDSN(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn, postgres.Pool{MaxConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.UserByEmail(ctx, "nobody@example.com"); err != nil && !errors.Is(err, store.ErrNotFound) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a goroutine on a 3-connection pool: %v", err)
	}
	if st := s.Stats(); st.MaxOpenConnections != 3 || st.OpenConnections > 3 {
		t.Errorf("pool stats %+v, want at most 3 connections", st)
	}

	def, err := postgres.Open(ctx, dsn, postgres.Pool{})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	if got := def.Stats().MaxOpenConnections; got != 20 {
		t.Errorf("default pool: %d connections, want 20", got)
	}
}
