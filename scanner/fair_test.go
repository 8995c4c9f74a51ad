package scanner

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The third red team's shared workers: six start_scan calls of one tenant made another tenant's
// Scan now wait 20 s instead of 1 s, and eight alert channels pointing at a slow receiver held
// every delivery worker, so another tenant's alert arrived after 28 s instead of 1.5 s. On the
// memory store these run on the fake clock (onStores' bubble) and assert the second tenant's
// wait exactly; on Postgres they assert the same caps, on real time.
func TestSharedWorkersAreFairBetweenWorkspaces(t *testing.T) {
	onStores(t,
		storeTest{name: "six scans of one workspace hold SCANS_PER_WORKSPACE workers, and another's Scan now starts within a poll", fn: testFairScanClaims},
		storeTest{name: "one account's four scans in two workspaces hold SCANS_PER_WORKSPACE workers in all, and another account's Scan now starts within a poll", fn: testFairScanClaimsPerAccount},
		storeTest{name: "eight deliveries to a receiver that never answers hold two workers 10 s each, and another workspace's alert goes out within a poll", fn: testFairDeliveries},
	)
}

// fakeClock answers whether st runs on the fake clock: onStores runs the memory store in a
// synctest bubble.
func fakeClock(st store.Store) bool { return st.Name() == "memory" }

// secondTenant is another account on the rig's store, with a site of its own on pages.
func (r *rig) secondTenant(name string, pages []string) *rig {
	r.t.Helper()
	o := &rig{t: r.t, st: r.st, psi: r.psi, logs: r.logs,
		user: store.User{ID: store.NewID(), Email: name + "-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", CreatedAt: time.Now()}}
	if err := r.st.CreateUser(context.Background(), o.user); err != nil {
		r.t.Fatal(err)
	}
	o.site = o.addSite(name, pages)
	return o
}

func testFairScanClaims(t *testing.T, st store.Store) {
	r := newRig(t, st)
	var flood []store.Site
	for i := range 6 {
		flood = append(flood, r.addSite(fmt.Sprintf("Flood %d", i+1), []string{"/pricing"}))
	}
	scanNowBehind(t, r, flood, "6 scans of one workspace")
}

// testFairScanClaimsPerAccount (issue 44 item 1): one account with two workspaces and two slow
// scans in each held every scan worker (SCANS_PER_WORKSPACE 2 of 3), so another tenant's Scan now
// waited for a whole audit (19.995 s on the fake clock). The cap is the owning account's too now.
func testFairScanClaimsPerAccount(t *testing.T, st store.Store) {
	r := newRig(t, st)
	second := store.Workspace{ID: store.NewID(), Name: "Second", CreatedAt: time.Now()}
	if err := st.CreateWorkspace(context.Background(), second, r.user.ID, 10); err != nil {
		t.Fatal(err)
	}
	var flood []store.Site
	for i, ws := range []string{"", "", second.ID, second.ID} {
		site := store.Site{ID: store.NewID(), UserID: r.user.ID, WorkspaceID: ws, Name: fmt.Sprintf("Flood %d", i+1), Domain: "sample.test",
			Pages: []string{"/pricing"}, CreatedAt: time.Now()}
		if err := st.CreateSite(context.Background(), site); err != nil {
			t.Fatal(err)
		}
		flood = append(flood, site)
	}
	scanNowBehind(t, r, flood, "4 scans of one account in two workspaces")
}

// scanNowBehind queues a scan of each of r's flood sites, whose audits hang, on 3 workers with
// SCANS_PER_WORKSPACE 2, then another account's Scan now: it must complete while the flood's
// scans still run, at most 2 of them, and on the fake clock start within a poll.
func scanNowBehind(t *testing.T, r *rig, floodSites []store.Site, what string) {
	const workers, perWorkspace = 3, 2
	st := r.st
	// The flood's audits hang until PSI's timeout: 20 s on the fake clock, where the figures are
	// exact; on real time they hang until the test ends, so nothing but the claims decides.
	hang := 20 * time.Second
	if !fakeClock(st) {
		hang = 10 * time.Minute
	}
	for _, s := range []store.Strategy{store.StrategyMobile, store.StrategyDesktop} {
		r.psi.Fail("/pricing", s, scantest.Fault{Hang: true})
	}
	var flood []store.Scan
	for _, site := range floodSites {
		flood = append(flood, r.enqueue(site))
	}
	other := r.secondTenant("Other", []string{"/fast"})
	const poll = 10 * time.Millisecond
	r.pool(func(c *PoolConfig) {
		c.Workers, c.WorkspaceScans, c.Poll = workers, perWorkspace, poll
		c.Auditor = psi.New(psi.Config{Endpoint: r.psi.Endpoint(), Client: r.psi.Client(), Key: "k", Timeout: hang, Attempts: 1,
			Log: slog.New(slog.NewTextHandler(r.logs, nil))})
	})
	running := func() int {
		n := 0
		for _, sc := range flood {
			if got, _ := st.Scan(context.Background(), r.user.ID, sc.ID); got.Status == store.StatusRunning {
				n++
			}
		}
		return n
	}
	storetest.WaitFor(t, "the flood's scans to hold their workers", func() bool { return running() >= perWorkspace })
	sc := other.wait(other.enqueue(other.site).ID)
	if sc.Status != store.StatusComplete {
		t.Fatalf("the other account's scan is %s (%s), want complete", sc.Status, sc.Error)
	}
	if n := running(); n > perWorkspace {
		t.Errorf("%d of the flood's scans running, want at most SCANS_PER_WORKSPACE = %d", n, perWorkspace)
	}
	for _, f := range flood {
		if got, _ := st.Scan(context.Background(), r.user.ID, f.ID); got.Status == store.StatusComplete || got.Status == store.StatusFailed {
			t.Errorf("flood scan %s is %s: the other account's scan waited for it", f.ID, got.Status)
		}
	}
	waited, took := sc.StartedAt.Sub(sc.CreatedAt), sc.CompletedAt.Sub(sc.CreatedAt)
	t.Logf("another account's Scan now: started %s after it was queued, complete after %s, behind %s whose audits hang %s",
		waited, took, what, hang)
	if fakeClock(st) && waited > poll {
		t.Errorf("the other account's scan waited %s to start, want at most one poll (%s)", waited, poll)
	}
}

// slowReceiver stands for eight channels' receiver that never answers and another workspace's
// that answers at once, in process: it records when each request came and went.
type slowReceiver struct {
	mu           sync.Mutex
	slowNow      int             // slow requests being held
	slowMost     int             // the most held at once
	slowHeld     []time.Duration // how long each slow request was held
	fastArrivals []time.Time
	fast         chan struct{}
}

func (s *slowReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/fast" {
		s.mu.Lock()
		s.fastArrivals = append(s.fastArrivals, time.Now())
		s.mu.Unlock()
		s.fast <- struct{}{}
		return
	}
	start := time.Now()
	s.mu.Lock()
	s.slowNow++
	s.slowMost = max(s.slowMost, s.slowNow)
	s.mu.Unlock()
	<-r.Context().Done() // never answers: the sender gives up
	s.mu.Lock()
	s.slowNow--
	s.slowHeld = append(s.slowHeld, time.Since(start))
	s.mu.Unlock()
}

func testFairDeliveries(t *testing.T, st store.Store) {
	r := newRig(t, st)
	keys := platform.RandomKeys()
	rc := &slowReceiver{fast: make(chan struct{}, 10)}
	client := &http.Client{Transport: scantest.Transport(rc)}
	now := time.Now()
	for i := range 8 {
		c := r.addChannel(keys, store.ChannelSlack, fmt.Sprintf("https://hooks.example/slow/%d", i), store.EventScanFailed)
		r.planOne(c, fmt.Sprintf("evt_flood_%d", i), now)
	}
	other := r.secondTenant("Other", []string{"/"})
	fast := other.addChannel(keys, store.ChannelSlack, "https://hooks.example/fast", store.EventScanFailed)
	const poll = 10 * time.Millisecond
	deliverer := &notify.Deliverer{Store: st, Keys: keys, Client: client, Log: slog.New(slog.NewTextHandler(r.logs, nil)), Now: time.Now}
	p := NewPool(PoolConfig{Store: st, Log: slog.New(slog.NewTextHandler(r.logs, nil)), Poll: poll, Lease: time.Minute, Heartbeat: time.Second,
		Kinds: []KindWorker{Work(notify.DeliveryWorkers, deliverer.Work).PerWorkspace(notify.WorkspaceDeliveries)}})
	p.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
	})
	storetest.WaitFor(t, "the flood's deliveries to hold their workers", func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return rc.slowNow >= notify.WorkspaceDeliveries
	})
	planned := time.Now()
	other.planOne(fast, "evt_other", planned)
	storetest.Recv(t, rc.fast, "the other workspace's alert")
	rc.mu.Lock()
	arrived, most := rc.fastArrivals[0].Sub(planned), rc.slowMost
	rc.mu.Unlock()
	t.Logf("the other workspace's alert arrived %s after it was planned, behind 8 deliveries of one workspace to a receiver that never answers", arrived)
	if most > notify.WorkspaceDeliveries {
		t.Errorf("the slow receiver held %d of one workspace's deliveries at once, want at most %d", most, notify.WorkspaceDeliveries)
	}
	if !fakeClock(st) {
		return
	}
	if arrived > poll {
		t.Errorf("the other workspace's alert arrived %s after it was planned, want at most one poll (%s)", arrived, poll)
	}
	// On the fake clock, let the first slow attempts end: each held exactly DeliveryTimeout.
	time.Sleep(notify.DeliveryTimeout)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.slowHeld) < notify.WorkspaceDeliveries {
		t.Fatalf("%d slow attempts ended after %s, want at least %d", len(rc.slowHeld), notify.DeliveryTimeout, notify.WorkspaceDeliveries)
	}
	for _, d := range rc.slowHeld {
		if d != notify.DeliveryTimeout {
			t.Errorf("a slow attempt was held %s, want DeliveryTimeout (%s)", d, notify.DeliveryTimeout)
		}
	}
}
