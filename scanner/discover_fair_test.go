package scanner

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/netguard"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The second row: a tenant's three sites with slow sitemaps held every SCAN_WORKERS
// slot while another tenant's scan stayed queued. A scan discovers its pages without holding
// a worker slot, and one account has at most accountDiscoveries discoveries at once (its other
// scans are snoozed meanwhile), so another tenant's scan queued behind them is audited while
// they are all still hanging: it waits for none of their discovery deadlines, let alone one.
// The hostile sitemaps hang on a channel; the discovery deadline is on a clock that never fires
// during the test.
func TestSlowDiscoveryDoesNotHoldAWorkerWhileAnotherTenantWaits(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { testSlowDiscoveryIsFair(t, b.Open(t)) })
	}
}

func testSlowDiscoveryIsFair(t *testing.T, st store.Store) {
	hang := make(chan struct{})
	var mu sync.Mutex
	hanging := 0
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hanging++
		mu.Unlock()
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		mu.Lock()
		hanging--
		mu.Unlock()
		io.WriteString(w, "<urlset></urlset>")
	}))
	defer slow.Close()
	defer close(hang) // before slow.Close: its handlers must return

	r := newRig(t, st)
	var hostile []store.Scan
	for i := range 3 {
		// One owner's three sites on one domain: CreateSite, the seeding path, does not refuse
		// them as the form would.
		site := store.Site{ID: store.NewID(), UserID: r.user.ID, Name: "Slow sitemap " + string(rune('A'+i)), Domain: slow.URL, CreatedAt: time.Now()}
		if err := r.st.CreateSite(t.Context(), site); err != nil {
			t.Fatal(err)
		}
		hostile = append(hostile, r.enqueue(site))
	}
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<urlset><url><loc>http://`+r.Host+`/</loc></url><url><loc>http://`+r.Host+`/about</loc></url></urlset>`)
	}))
	defer fast.Close()
	other := newRig(t, r.st) // another tenant, same store and pool, whose sitemap answers at once
	other.site.Pages, other.site.Domain = nil, fast.URL
	if err := r.st.UpdateSite(t.Context(), other.site); err != nil {
		t.Fatal(err)
	}
	never := make(chan time.Time)
	r.pool(func(c *PoolConfig) {
		c.Workers = 1
		c.Discovery = discover.Discovery{Client: netguard.Guard{AllowPrivate: true}.Client(),
			After: func(time.Duration) <-chan time.Time { return never }}
	})
	// The hostile account's third scan meets its two discoveries in progress and waits. (Claims
	// take turns between workspaces, so a scan of the other tenant's queued before that would
	// be claimed ahead of it.)
	storetest.WaitFor(t, "the hostile account's third scan to wait for its discoveries", func() bool {
		return strings.Contains(r.logs.String(), "discovering")
	})
	done := other.wait(other.enqueue(other.site).ID)
	if done.Status != store.StatusComplete {
		t.Fatalf("the other tenant's scan is %s (%s), want complete", done.Status, done.Error)
	}
	mu.Lock()
	n := hanging
	mu.Unlock()
	if n == 0 || n > accountDiscoveries {
		t.Errorf("hostile sitemap fetches hanging = %d, want 1 to %d (the account's discoveries at once)", n, accountDiscoveries)
	}
	for _, sc := range hostile {
		got, err := r.st.Scan(t.Context(), r.user.ID, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == store.StatusComplete || got.Status == store.StatusFailed {
			t.Errorf("hostile scan %s is %s while its sitemap still hangs", sc.ID, got.Status)
		}
	}
	if !strings.Contains(r.logs.String(), "discovering") {
		t.Errorf("no log line says a scan waits for its account's discoveries; logs:\n%s", r.logs.String())
	}
}
