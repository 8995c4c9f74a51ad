package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/scanner/netguard"
	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// receivers stands in for Slack, Teams, Discord and webhook receivers: one local server, a path
// per channel, each answering as its script says (the last status repeats), counting what came.
type receivers struct {
	srv     *httptest.Server
	mu      sync.Mutex
	script  map[string][]int
	headers map[string]http.Header // sent with every answer on a path (Retry-After)
	got     map[string][]*http.Request
	bodies  map[string][]string
	seen    chan string // each request's path, for a test that waits for deliveries
}

func newReceivers(t *testing.T, script map[string][]int) *receivers {
	rc := &receivers{script: script, got: map[string][]*http.Request{}, bodies: map[string][]string{}, seen: make(chan string, 1000)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		rc.mu.Lock()
		n := len(rc.got[req.URL.Path])
		rc.got[req.URL.Path] = append(rc.got[req.URL.Path], req)
		rc.bodies[req.URL.Path] = append(rc.bodies[req.URL.Path], string(body))
		status := http.StatusOK
		if s := rc.script[req.URL.Path]; len(s) > 0 {
			status = s[min(n, len(s)-1)]
		}
		for k, v := range rc.headers[req.URL.Path] {
			w.Header()[k] = v
		}
		rc.mu.Unlock()
		w.WriteHeader(status)
		rc.seen <- req.URL.Path
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receivers) hits(path string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got[path])
}

// guard lets through the receivers' server and nothing else on loopback: the tests' exemption,
// never configuration.
func (rc *receivers) guard() netguard.Guard {
	return netguard.Guard{Exempt: netip.MustParseAddrPort(rc.srv.Listener.Addr().String())}
}

// addChannel saves a channel of the rig's user whose URL is the receivers' path.
func (r *rig) addChannel(keys *platform.Keys, kind, url string, events ...string) store.Channel {
	r.t.Helper()
	c := store.Channel{ID: store.NewID(), WorkspaceID: r.user.ID, Kind: kind, Name: kind + " " + url[strings.LastIndex(url, "/")+1:],
		Events: events, CreatedAt: time.Now()}
	var err error
	if url != "" {
		if c.URLSealed, err = keys.SealFor(platform.PurposeChannelURL, url, r.user.ID); err != nil {
			r.t.Fatal(err)
		}
	}
	if kind == store.ChannelWebhook {
		if c.SecretSealed, err = keys.SealFor(platform.PurposeChannelSecret, "whsec_test", r.user.ID); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := r.st.CreateChannel(context.Background(), r.user.ID, c); err != nil {
		r.t.Fatal(err)
	}
	return c
}

// scanThen runs one scan of site on a pool of its own auditing from fake, enqueueing its
// follow-up jobs (the digest and the alerts) as run does, and stops the pool.
func (r *rig) scanThen(site store.Site, fake *scantest.PSI) store.Scan {
	r.t.Helper()
	p := r.pool(func(c *PoolConfig) {
		c.Auditor = psi.New(psi.Config{Endpoint: fake.Endpoint(), Client: fake.Client()})
		c.Then = notify.AfterScan
	})
	sc := r.wait(r.enqueue(site).ID)
	p.Stop(context.Background())
	return sc
}

// drain runs jobs of kind one step at a time until none is runnable at the pool's clock.
func drain(t *testing.T, p *Pool, kind string) int {
	t.Helper()
	n := 0
	for {
		ran, err := p.WorkOnce(context.Background(), kind)
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			return n
		}
		n++
	}
}

func TestAlertsFireOnScanCompletion(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			testAlertsFire(t, b.Open(t))
		})
	}
}

// A completed scan with a confirmed regression: its alerts job, enqueued when the scan completed,
// plans one delivery per channel, each sent once; a receiver answering 503 twice gets it on the
// third attempt, at the times notify.Next says; one answering 410 is not tried again; planning
// the scan again sends nothing twice. Time after the scan is the alert pool's clock, stepped.
func testAlertsFire(t *testing.T, st store.Store) {
	ctx := context.Background()
	r := newRig(t, st)
	keys := platform.RandomKeys()
	rc := newReceivers(t, map[string][]int{"/flaky": {503, 503, 200}, "/gone": {410}})
	base := rc.srv.URL
	chans := map[string]store.Channel{}
	for _, c := range []struct{ kind, path string }{{store.ChannelSlack, "/slack"}, {store.ChannelTeams, "/teams"},
		{store.ChannelDiscord, "/discord"}, {store.ChannelWebhook, "/webhook"}, {store.ChannelSlack, "/flaky"}, {store.ChannelDiscord, "/gone"}} {
		chans[c.path] = r.addChannel(keys, c.kind, base+c.path, store.EventRegressionConfirmed, store.EventScanFailed)
	}
	// A channel for other events only receives nothing.
	r.addChannel(keys, store.ChannelSlack, base+"/budgets", store.EventBudgetBroken)

	r.scanThen(r.site, scantest.NewInProcess("../testdata/psi-before"))
	latest := r.scanThen(r.site, r.psi)
	if latest.Status != store.StatusComplete {
		t.Fatalf("scan %s: %s", latest.Status, latest.Error)
	}

	clock := scantest.NewClock(time.Now().Add(time.Second))
	deliverer := &notify.Deliverer{Store: st, Keys: keys, Client: rc.guard().Client(), Now: clock.Now}
	alerts := &notify.Alerts{Store: st, Planner: &notify.Planner{Store: st, BaseURL: "http://sitepulse.test", Now: clock.Now}}
	p := NewPool(PoolConfig{Store: st, Log: slog.New(slog.NewTextHandler(r.logs, nil)), Now: clock.Now, Lease: 2 * time.Second, Heartbeat: 50 * time.Millisecond,
		Kinds: []KindWorker{Work(1, alerts.Work), Work(2, deliverer.Work)}})

	if n := drain(t, p, notify.KindAlerts); n != 2 {
		t.Fatalf("%d alerts jobs ran, want 2 (one per completed scan); logs:\n%s", n, r.logs.String())
	}
	if n := drain(t, p, notify.KindDelivery); n != 6 {
		t.Fatalf("%d deliveries tried, want 6 (one per subscribed channel); logs:\n%s", n, r.logs.String())
	}
	for _, path := range []string{"/slack", "/teams", "/discord", "/webhook", "/flaky", "/gone"} {
		if n := rc.hits(path); n != 1 {
			t.Errorf("%s received %d requests after the first round, want 1", path, n)
		}
	}
	// The flaky one waits for its retry: nothing runs before the clock reaches it.
	var tries []time.Time
	tries = append(tries, clock.Now())
	for range 200 {
		if rc.hits("/flaky") == 3 {
			break
		}
		clock.Advance(time.Second)
		if drain(t, p, notify.KindDelivery) > 0 {
			tries = append(tries, clock.Now())
		}
	}
	if n := rc.hits("/flaky"); n != 3 {
		t.Fatalf("the flaky receiver got %d requests, want 3; logs:\n%s", n, r.logs.String())
	}
	// attempts^4 s, at least 10 s: the second 10 s after the first, the third 16 s after that.
	if len(tries) != 3 || tries[1].Sub(tries[0]) != 10*time.Second || tries[2].Sub(tries[1]) != 16*time.Second {
		t.Errorf("attempts at %v, want 10 s then 16 s apart", tries)
	}
	clock.Advance(48 * time.Hour)
	drain(t, p, notify.KindDelivery)
	for path, want := range map[string]int{"/slack": 1, "/teams": 1, "/discord": 1, "/webhook": 1, "/flaky": 3, "/gone": 1, "/budgets": 0} {
		if n := rc.hits(path); n != want {
			t.Errorf("%s received %d requests in all, want %d", path, n, want)
		}
	}

	// The record the Notifications page shows.
	wantRec := map[string]struct {
		state            string
		attempts, status int
	}{"/slack": {store.DeliveryDelivered, 1, 200}, "/flaky": {store.DeliveryDelivered, 3, 200}, "/gone": {store.DeliveryFailed, 1, 410}}
	for path, want := range wantRec {
		ds, err := st.DeliveriesOf(ctx, r.user.ID, r.user.ID, chans[path].ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].State != want.state || ds[0].Attempts != want.attempts || ds[0].LastStatus != want.status ||
			ds[0].EventType != store.EventRegressionConfirmed {
			t.Errorf("%s deliveries = %+v, want one %s after %d attempts (%d)", path, ds, want.state, want.attempts, want.status)
		}
	}
	if c, _ := st.Channel(ctx, r.user.ID, chans["/gone"].ID); c.FailingSince == nil {
		t.Error("the channel answering 410 is not marked failing")
	}

	// Each message has its channel's shape and names the scan.
	rc.mu.Lock()
	shapes := map[string]string{"/slack": `"blocks"`, "/teams": "application/vnd.microsoft.card.adaptive", "/discord": `"embeds"`, "/webhook": `"type":"regression.confirmed"`}
	for path, want := range shapes {
		if b := rc.bodies[path][0]; !strings.Contains(b, want) || !strings.Contains(b, latest.ID) {
			t.Errorf("%s message lacks %s or the scan id:\n%s", path, want, b)
		}
	}
	if h := rc.got["/webhook"][0].Header; !strings.HasPrefix(h.Get("X-SitePulse-Signature"), "t=") ||
		h.Get("X-SitePulse-Delivery") != "evt_"+latest.ID+"_"+store.EventRegressionConfirmed {
		t.Errorf("webhook headers %v", h)
	}
	rc.mu.Unlock()

	// Planning the scan again (a retried alerts job) enqueues nothing and sends nothing twice.
	if _, err := st.EnqueueJob(ctx, notify.AlertsJob{ScanID: latest.ID}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := drain(t, p, notify.KindAlerts); n != 1 {
		t.Fatalf("%d alerts jobs ran, want 1", n)
	}
	if n := drain(t, p, notify.KindDelivery); n != 0 {
		t.Errorf("planning again enqueued %d deliveries, want 0", n)
	}
}

func TestAlertsTwoProcesses(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			testAlertsTwoProcesses(t, b.Open(t))
		})
	}
}

// Two pools ("processes") on one store share 100 deliveries to a counting receiver: every one
// arrives, none twice, except what a third process that died mid-way had sent: it claimed three
// deliveries a minute ago, sent one of them, and died before settling any. The rescuer returns
// its three to the queue; the one it had sent arrives twice (its receiver drops it by the
// X-SitePulse-Delivery id), the two it had not sent once.
func testAlertsTwoProcesses(t *testing.T, st store.Store) {
	ctx := context.Background()
	r := newRig(t, st)
	keys := platform.RandomKeys()
	rc := newReceivers(t, nil)
	c := r.addChannel(keys, store.ChannelWebhook, rc.srv.URL+"/count", store.EventScanFailed)
	const events = 100
	now := time.Now().Add(-2 * time.Minute) // planned before the doomed process claimed any
	ds := make([]store.Delivery, events)
	jobs := make([]store.JobArgs, events)
	for i := range events {
		e := notify.Event{ID: fmt.Sprintf("evt_%03d", i), Type: store.EventScanFailed, CreatedAt: now,
			Site: notify.EventSite{ID: r.site.ID, Name: r.site.Name, Domain: r.site.Domain}}
		ds[i] = store.Delivery{ID: store.NewID(), ChannelID: c.ID, EventID: e.ID, EventType: e.Type, State: store.DeliveryPending, CreatedAt: now}
		jobs[i] = notify.Dispatch{WorkspaceID: r.user.ID, ChannelID: c.ID, Event: e}
	}
	if n, err := st.PlanDeliveries(ctx, r.user.ID, ds, jobs, now); err != nil || n != events {
		t.Fatalf("planned %d, %v", n, err)
	}
	doomed := &notify.Deliverer{Store: st, Keys: keys, Client: rc.guard().Client(), Now: time.Now}
	var sentByDoomed string
	for i := range 3 {
		j, err := st.ClaimJob(ctx, notify.KindDelivery, "process-doomed", now.Add(time.Minute), 0)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			var d notify.Dispatch
			if err := json.Unmarshal(j.Args, &d); err != nil {
				t.Fatal(err)
			}
			if _, err := doomed.Attempt(ctx, d, j.Attempt, j.CreatedAt); err != nil {
				t.Fatal(err)
			}
			sentByDoomed = d.Event.ID
		}
	}
	var pools []*Pool
	counts := make([]*countingTransport, 2)
	for i, id := range []string{"process-a", "process-b"} {
		client := rc.guard().Client()
		counts[i] = &countingTransport{next: client.Transport}
		client.Transport = counts[i]
		dl := &notify.Deliverer{Store: st, Keys: keys, Client: client, Now: time.Now}
		pools = append(pools, r.pool(func(c *PoolConfig) {
			c.WorkerID, c.Kinds = id, []KindWorker{Work(4, dl.Work)}
		}))
	}
	timeout := time.After(storetest.Timeout())
	start := time.Now()
	for range events + 1 {
		select {
		case <-rc.seen:
		case <-timeout:
			t.Fatalf("%d of %d events delivered after 30 s; logs:\n%s", rc.hits("/count"), events, r.logs.String())
		}
	}
	took := time.Since(start)
	for _, p := range pools {
		if err := p.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("101 requests in %v: process-a sent %d, process-b %d", took.Round(time.Millisecond), counts[0].n.Load(), counts[1].n.Load())
	seen := map[string]int{}
	rc.mu.Lock()
	for _, req := range rc.got["/count"] {
		seen[req.Header.Get("X-SitePulse-Delivery")]++
	}
	rc.mu.Unlock()
	for i := range events {
		id := fmt.Sprintf("evt_%03d", i)
		want := 1
		if id == sentByDoomed {
			want = 2
		}
		if seen[id] != want {
			t.Errorf("%s delivered %d times, want %d", id, seen[id], want)
		}
	}
	if len(seen) != events {
		t.Errorf("%d distinct events delivered, want %d", len(seen), events)
	}
	recs, err := st.DeliveriesOf(ctx, r.user.ID, r.user.ID, c.ID, events)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range recs {
		if d.State != store.DeliveryDelivered || d.Attempts < 1 || d.Attempts > 2 {
			t.Errorf("delivery %s: %s after %d attempts", d.EventID, d.State, d.Attempts)
		}
	}
}

func TestAlertsOnScanFailure(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			testAlertsOnScanFailure(t, b.Open(t))
		})
	}
}

// A scan that fails (no page could be audited) sends scan.failed with its reason: the store
// enqueued its alerts job in the transaction that failed it.
func testAlertsOnScanFailure(t *testing.T, st store.Store) {
	r := newRig(t, st)
	keys := platform.RandomKeys()
	rc := newReceivers(t, nil)
	r.addChannel(keys, store.ChannelWebhook, rc.srv.URL+"/failed", store.EventScanFailed)
	r.addChannel(keys, store.ChannelWebhook, rc.srv.URL+"/regressions", store.EventRegressionConfirmed)
	site := r.addSite("Broken", []string{"/missing"})
	p := r.pool(nil)
	sc := r.wait(r.enqueue(site).ID)
	p.Stop(context.Background())
	if sc.Status != store.StatusFailed {
		t.Fatalf("scan %s, want failed", sc.Status)
	}
	clock := scantest.NewClock(time.Now().Add(time.Second))
	deliverer := &notify.Deliverer{Store: st, Keys: keys, Client: rc.guard().Client(), Now: clock.Now}
	alerts := &notify.Alerts{Store: st, Planner: &notify.Planner{Store: st, BaseURL: "http://sitepulse.test", Now: clock.Now}}
	ap := NewPool(PoolConfig{Store: st, Log: slog.New(slog.NewTextHandler(r.logs, nil)), Now: clock.Now, Lease: 2 * time.Second,
		Heartbeat: 50 * time.Millisecond, Kinds: []KindWorker{Work(1, alerts.Work), Work(1, deliverer.Work)}})
	if n := drain(t, ap, notify.KindAlerts); n != 1 {
		t.Fatalf("%d alerts jobs after a failed scan, want 1; logs:\n%s", n, r.logs.String())
	}
	if n := drain(t, ap, notify.KindDelivery); n != 1 {
		t.Fatalf("%d deliveries, want 1 (scan.failed to its one subscriber)", n)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bodies["/failed"]) != 1 || !strings.Contains(rc.bodies["/failed"][0], `"type":"scan.failed"`) ||
		!strings.Contains(rc.bodies["/failed"][0], "no page could be audited") || len(rc.bodies["/regressions"]) != 0 {
		t.Errorf("received %v", rc.bodies)
	}
}

// countingTransport counts the requests a process sent.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

func TestAlertsBudgetTransitions(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			testAlertsBudgetTransitions(t, b.Open(t))
		})
	}
}

// Budgets broken three scans in a row send one budget.broken; the scan that meets them again
// sends one budget.recovered. Each scan's alerts are planned before the next scan, as the
// budgets are read when planning.
func testAlertsBudgetTransitions(t *testing.T, st store.Store) {
	ctx := context.Background()
	r := newRig(t, st)
	keys := platform.RandomKeys()
	rc := newReceivers(t, nil)
	r.addChannel(keys, store.ChannelWebhook, rc.srv.URL+"/budgets", store.EventBudgetBroken, store.EventBudgetRecovered)
	deliverer := &notify.Deliverer{Store: st, Keys: keys, Client: rc.guard().Client(), Now: time.Now}
	alerts := &notify.Alerts{Store: st, Planner: &notify.Planner{Store: st, BaseURL: "http://sitepulse.test", Now: time.Now}}
	ap := NewPool(PoolConfig{Store: st, Log: slog.New(slog.NewTextHandler(r.logs, nil)), Lease: 2 * time.Second,
		Heartbeat: 50 * time.Millisecond, Kinds: []KindWorker{Work(1, alerts.Work), Work(1, deliverer.Work)}})
	types := func() []string {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		var out []string
		for _, req := range rc.got["/budgets"] {
			out = append(out, req.Header.Get("X-SitePulse-Event"))
		}
		return out
	}
	if err := st.SetBudgets(ctx, r.user.ID, r.site.ID, map[string]store.Budget{"performance": {Threshold: 100}}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if sc := r.scanThen(r.site, r.psi); sc.Status != store.StatusComplete {
			t.Fatalf("scan %d: %s", i, sc.Status)
		}
		drain(t, ap, notify.KindAlerts)
		drain(t, ap, notify.KindDelivery)
	}
	if got := types(); len(got) != 1 || got[0] != store.EventBudgetBroken {
		t.Fatalf("after three scans over budget: %v, want one budget.broken; logs:\n%s", got, r.logs.String())
	}
	if err := st.SetBudgets(ctx, r.user.ID, r.site.ID, map[string]store.Budget{"performance": {Threshold: 1}}); err != nil {
		t.Fatal(err)
	}
	r.scanThen(r.site, r.psi)
	drain(t, ap, notify.KindAlerts)
	drain(t, ap, notify.KindDelivery)
	if got := types(); len(got) != 2 || got[1] != store.EventBudgetRecovered {
		t.Errorf("after the scan within budget: %v, want budget.broken then budget.recovered", got)
	}
}
