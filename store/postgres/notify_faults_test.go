package postgres_test

import (
	"context"
	"testing"
	"time"

	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// The job listener survives a database restart: its connection is cut and refused for a
// while, it reconnects by itself, wakes the dispatcher once back (notifications may have been
// missed), and later enqueues wake it again.
func TestListenJobsSurvivesDatabaseRestart(t *testing.T) {
	p, dsn := storetest.PostgresDSN(t)
	proxy := storetest.NewProxy(t, storetest.DirectDSN(dsn))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake, err := postgres.ListenJobs(ctx, proxy.DSN(storetest.DirectDSN(dsn)), func(err error) { t.Logf("listener: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	u := newUser(t, p, "listen-restart@example.com")
	site := newSite(t, p, u, "listen-restart")

	proxy.Cut()
	// The outage itself, not a wait for an event: the listener must find the database down
	// for a while (several of its reconnect attempts) before it comes back.
	time.Sleep(2 * time.Second)
	proxy.Restore()
	restored := time.Now()
	// The wake-up for the reconnect (or another test's enqueue) comes first.
	storetest.Recv(t, wake, "a wake-up once the database is back")
	storetest.WaitFor(t, "the listener to reconnect", func() bool { return proxy.Conns() > 0 })
	t.Logf("listener reconnected %s after the restore", time.Since(restored).Round(time.Millisecond))
	wakesOnEnqueue(t, p, site, wake, " after the restart")
}
