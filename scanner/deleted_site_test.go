package scanner

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store/storetest"
)

// logWaiter is a log sink a test waits on: each write wakes the waiter, which looks for a line.
type logWaiter struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func newLogWaiter() *logWaiter { return &logWaiter{wrote: make(chan struct{}, 1)} }

func (w *logWaiter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *logWaiter) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.b.String() }

// waitFor waits for a line containing s; the timeout only stops a broken test.
func (w *logWaiter) waitFor(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for !strings.Contains(w.String(), s) {
		select {
		case <-w.wrote:
		case <-timeout:
			t.Fatalf("no log line with %q; logs:\n%s", s, w.String())
		}
	}
}

// A site deleted while its scan runs stops the scan, and the log says so rather than that
// another worker took the job.
func TestSiteDeletedWhileScanning(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			r := newRig(t, b.Open(t))
			logs := newLogWaiter()
			release := r.psi.Hold()
			defer release()
			sc := r.enqueue(r.site)
			pool := r.pool(func(c *PoolConfig) { c.Log = slog.New(slog.NewTextHandler(logs, nil)) })
			logs.waitFor(t, "scan started")
			if err := r.st.DeleteSite(context.Background(), r.user.ID, r.site.ID); err != nil {
				t.Fatal(err)
			}
			release()
			logs.waitFor(t, "the site was deleted while it was scanned")
			pool.Stop(context.Background())
			if strings.Contains(logs.String(), "another worker") {
				t.Errorf("the log blames another worker:\n%s", logs.String())
			}
			if _, err := r.st.Scan(context.Background(), r.user.ID, sc.ID); err == nil {
				t.Error("the scan outlived its site")
			}
		})
	}
}
