package postgres_test

import (
	"context"
	"testing"

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
