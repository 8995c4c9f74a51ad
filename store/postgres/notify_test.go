package postgres_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// An enqueue, by any process, wakes every listener at once: the dispatcher need not wait for
// its next poll.
func TestListenJobsWakesOnEnqueue(t *testing.T) {
	p, dsn := storetest.PostgresDSN(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake, err := postgres.ListenJobs(ctx, storetest.DirectDSN(dsn), func(err error) { t.Logf("listener: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	u := newUser(t, p, "listen@example.com")
	site := newSite(t, p, u, "listen")
	wakesOnEnqueue(t, p, site, wake, "")
}

// wakesOnEnqueue fails the test unless an enqueue for site wakes the listener within
// storetest.Timeout. A wake-up already pending, such as one another test's enqueue caused
// (notifications are database-wide), is drained first. when ends the failure message.
func wakesOnEnqueue(t *testing.T, p *postgres.Store, site store.Site, wake <-chan struct{}, when string) {
	t.Helper()
	select {
	case <-wake:
	default:
	}
	enqueue(t, p, site, t0)
	storetest.Recv(t, wake, "a wake-up after an enqueue"+when)
}

// Behind a transaction pooler a LISTEN hears nothing (issue 36): without a direct connection
// WakeOnJobs says so, and the dispatchers poll; with DATABASE_DIRECT_URL an enqueue made through
// the pooler wakes it. Runs when DATABASE_URL is a pooler and DATABASE_DIRECT_URL is set, as
// .ci/run's pooled pass does.
func TestWakeOnJobsBehindAPooler(t *testing.T) {
	if d := os.Getenv("DATABASE_DIRECT_URL"); d == "" || d == os.Getenv("DATABASE_URL") {
		t.Skip("needs DATABASE_URL at a transaction pooler and DATABASE_DIRECT_URL beside it (.ci/run)")
	}
	p, dsn := storetest.PostgresDSN(t) // Pool.Direct is the schema's direct DSN
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logf := func(err error) { t.Logf("listener: %v", err) }
	wake, err := p.WakeOnJobs(ctx, logf)
	if err != nil {
		t.Fatalf("with a direct connection: %v", err)
	}
	u := newUser(t, p, "pooler@example.com")
	site := newSite(t, p, u, "pooler")
	wakesOnEnqueue(t, p, site, wake, " made through the pooler")

	// The probe can only fail here, however long it waits: a short wait keeps the test short.
	postgres.SetWakeUpProbe(t, 300*time.Millisecond)
	pooledOnly, err := postgres.Open(ctx, dsn, postgres.Pool{MaxConns: storetest.MaxConns})
	if err != nil {
		t.Fatal(err)
	}
	defer pooledOnly.Close()
	if _, err := pooledOnly.WakeOnJobs(ctx, logf); !errors.Is(err, postgres.ErrNoWakeUps) {
		t.Fatalf("without a direct connection: got %v, want ErrNoWakeUps", err)
	}
}
