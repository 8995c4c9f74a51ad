package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
)

// countingStore counts the reads of a scan's status, and of sites.
type countingStore struct {
	store.Store
	scans atomic.Int32
	sites atomic.Int32
}

func (c *countingStore) Scan(ctx context.Context, userID, scanID string) (store.Scan, error) {
	c.scans.Add(1)
	return c.Store.Scan(ctx, userID, scanID)
}

func (c *countingStore) Site(ctx context.Context, userID, siteID string) (store.Site, error) {
	c.sites.Add(1)
	return c.Store.Site(ctx, userID, siteID)
}

func (c *countingStore) SitesIn(ctx context.Context, userID, workspaceID string) ([]store.Site, error) {
	c.sites.Add(1)
	return c.Store.SitesIn(ctx, userID, workspaceID)
}

// manualTicker is a ticker the test drives: each send on C is one tick.
type manualTicker struct{ c chan time.Time }

func (m *manualTicker) new(time.Duration) (<-chan time.Time, func()) { return m.c, func() {} }

// Streams of one scan share one poller: 50 subscribers cost one read of the scan per tick, not
// 50; each gets every status; the poller stops when the last one leaves or the scan ends.
func TestScanFeedPollsOncePerScan(t *testing.T) {
	mem := memory.New()
	counting := &countingStore{Store: mem}
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	user := store.User{ID: store.NewID(), Email: "feed@example.com", PasswordHash: "x", CreatedAt: now}
	site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "Feed", Domain: "example.test", CreatedAt: now}
	scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: now}
	for _, err := range []error{mem.CreateUser(t.Context(), user), mem.CreateSite(t.Context(), site), mem.EnqueueScan(t.Context(), scan, store.KindScan, now)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := &server{Deps: withStore(counting, Deps{})}
	ticks := &manualTicker{c: make(chan time.Time)}
	hub := newScanHub(s.readScanEvent, ticks.new, time.Second, 100, 1000)

	var subs []*scanSub
	for i := range 50 {
		sub, msg := hub.subscribe(fmt.Sprintf("session-%d", i%10), user.ID, scan.ID)
		if sub == nil {
			t.Fatalf("subscriber %d refused: %s", i, msg)
		}
		subs = append(subs, sub)
	}
	for i, sub := range subs {
		if ev := <-sub.C; ev.Status != store.StatusQueued {
			t.Fatalf("subscriber %d: first event %+v", i, ev)
		}
	}
	if got := counting.scans.Load(); got != 1 {
		t.Errorf("%d reads of the scan for 50 subscribers' first event, want 1", got)
	}
	for round := 2; round <= 4; round++ {
		ticks.c <- time.Time{}
		for _, sub := range subs {
			<-sub.C
		}
		if got := counting.scans.Load(); got != int32(round) {
			t.Errorf("after %d ticks: %d reads, want %d", round-1, got, round)
		}
	}
	// The scan ends: every subscriber gets the terminal status, then its channel closes.
	job, err := mem.ClaimJob(t.Context(), store.KindScan, "w", now.Add(time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.StartScan(t.Context(), job.Lease(), 1, now); err != nil {
		t.Fatal(err)
	}
	if err := mem.CompleteScan(t.Context(), job.Lease(), store.ScanScores{}, now); err != nil {
		t.Fatal(err)
	}
	ticks.c <- time.Time{}
	for i, sub := range subs {
		var last scanEvent
		for ev := range sub.C {
			last = ev
		}
		if last.Status != store.StatusComplete {
			t.Errorf("subscriber %d: last event %+v, want complete", i, last)
		}
		sub.Close()
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if len(hub.feeds) != 0 || hub.total != 0 || len(hub.sessions) != 0 {
		t.Errorf("after every stream ended: %d feeds, %d streams, %v per session; want none", len(hub.feeds), hub.total, hub.sessions)
	}
}

// At most 10 live streams per session and a process-wide cap; a stream that ends frees its place.
func TestScanFeedCaps(t *testing.T) {
	read := func(ctx context.Context, uid, scanID string) (scanEvent, error) {
		return scanEvent{ScanID: scanID, Status: store.StatusQueued}, nil
	}
	ticks := &manualTicker{c: make(chan time.Time)}
	hub := newScanHub(read, ticks.new, time.Second, 10, 25)
	var mine []*scanSub
	for i := range 10 {
		sub, msg := hub.subscribe("s1", "u1", fmt.Sprintf("scan-%d", i))
		if sub == nil {
			t.Fatalf("stream %d refused: %s", i+1, msg)
		}
		mine = append(mine, sub)
	}
	if sub, msg := hub.subscribe("s1", "u1", "scan-0"); sub != nil || msg == "" {
		t.Fatal("an 11th stream of one session was allowed")
	}
	mine[0].Close()
	mine[0].Close() // twice is harmless
	if sub, _ := hub.subscribe("s1", "u1", "scan-0"); sub == nil {
		t.Fatal("a stream that ended did not free its place")
	}
	for i := range 15 {
		if sub, msg := hub.subscribe(fmt.Sprintf("other-%d", i), "u2", "scan-x"); sub == nil {
			t.Fatalf("stream %d of the process refused: %s", 11+i, msg)
		}
	}
	if sub, msg := hub.subscribe("fresh", "u3", "scan-y"); sub != nil || msg == "" {
		t.Fatal("the process-wide cap let a 26th stream in")
	}
}

// Over HTTP: the 11th live stream of one session answers 429 with a sentence saying why.
func TestScanEventsPerSessionCap(t *testing.T) {
	f := newUIFixture(t, time.Hour, memory.New())
	scan := store.Scan{ID: store.NewID(), SiteID: f.site, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.ts.now}
	if err := f.ts.store.EnqueueScan(t.Context(), scan, store.KindScan, f.ts.now); err != nil {
		t.Fatal(err)
	}
	path := f.ts.URL + "/sites/" + f.site + "/scans/" + scan.ID + "/events"
	for range 10 {
		resp, err := f.a.c.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		wantStatus(t, resp, http.StatusOK)
		readEvents(t, resp, func(scanEvent) bool { return false }) // its first event: it is live
	}
	resp, err := f.a.c.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests {
		resp.Body.Close() // a live stream: reading it would wait for the scan
		t.Fatalf("an 11th stream of one session: %d, want 429", resp.StatusCode)
	}
	contains(t, readBody(t, resp), "10 live progress streams")
}

// Over HTTP: past the process-wide cap, a stream of any session answers 429 saying why.
func TestScanEventsProcessCap(t *testing.T) {
	st := memory.New()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	h, err := NewHandler(withServers(st, Deps{BaseURL: "http://sitepulse.test", Now: func() time.Time { return now },
		ScanPollInterval: time.Hour, MaxEventStreams: 3}))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	user := store.User{ID: store.NewID(), Email: "cap@example.com", PasswordHash: "x", CreatedAt: now}
	site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "Cap", Domain: "example.test", CreatedAt: now}
	scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: now}
	for _, err := range []error{st.CreateUser(t.Context(), user), st.CreateSite(t.Context(), site), st.EnqueueScan(t.Context(), scan, store.KindScan, now)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	stream := func() *http.Response {
		token, hash := store.NewSecret("")
		if err := st.CreateSession(t.Context(), store.Session{TokenHash: hash, UserID: user.ID, CSRF: "c", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/sites/"+site.ID+"/scans/"+scan.ID+"/events", nil)
		req.AddCookie(&http.Cookie{Name: "session", Value: token})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for range 3 { // three sessions, one stream each
		resp := stream()
		defer resp.Body.Close()
		wantStatus(t, resp, http.StatusOK)
		readEvents(t, resp, func(scanEvent) bool { return false })
	}
	resp := stream()
	if resp.StatusCode != http.StatusTooManyRequests {
		resp.Body.Close() // a live stream: reading it would wait for the scan
		t.Fatalf("a 4th stream past the cap of 3: %d, want 429", resp.StatusCode)
	}
	contains(t, readBody(t, resp), "as many live scans as it can")
}
