package scanner

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// waitLog waits for a line of logs containing s, woken by each write; the timeout only stops a
// broken test.
func waitLog(t *testing.T, logs *scantest.LogBuffer, s string) {
	t.Helper()
	timeout := time.After(storetest.Timeout())
	for !strings.Contains(logs.String(), s) {
		select {
		case <-logs.Written():
		case <-timeout:
			t.Fatalf("no log line with %q; logs:\n%s", s, logs.String())
		}
	}
}

// A site deleted while its scan runs stops the scan, and the log says so rather than that
// another worker took the job.
func TestSiteDeletedWhileScanning(t *testing.T) {
	onStores(t, storeTest{name: "the scan stops and says why", fn: func(t *testing.T, st store.Store) {
		r := newRig(t, st)
		logs := &scantest.LogBuffer{}
		release := r.psi.Hold()
		defer release()
		sc := r.enqueue(r.site)
		pool := r.pool(func(c *PoolConfig) { c.Log = slog.New(slog.NewTextHandler(logs, nil)) })
		waitLog(t, logs, "scan started")
		if err := r.st.DeleteSite(context.Background(), r.user.ID, r.site.ID); err != nil {
			t.Fatal(err)
		}
		release()
		waitLog(t, logs, "the site was deleted while it was scanned")
		pool.Stop(context.Background())
		if strings.Contains(logs.String(), "another worker") {
			t.Errorf("the log blames another worker:\n%s", logs.String())
		}
		if _, err := r.st.Scan(context.Background(), r.user.ID, sc.ID); err == nil {
			t.Error("the scan outlived its site")
		}
	}})
}
