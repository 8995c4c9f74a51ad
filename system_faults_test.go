package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// statusCounts tallies the answers a client saw, by phase of the outage.
type statusCounts struct {
	mu     sync.Mutex
	counts map[string]int // "phase route status"
	bad    []string       // answers that are neither 200 nor a clean 503
}

func (c *statusCounts) add(phase, route string, status int, detail string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[fmt.Sprintf("%-7s %-12s %d", phase, route, status)]++
	if detail != "" {
		c.bad = append(c.bad, phase+" "+route+": "+detail)
	}
}

func (c *statusCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var lines []string
	for k, n := range c.counts {
		lines = append(lines, fmt.Sprintf("%s x%d", k, n))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// The database goes away while scans run and requests arrive (a TCP proxy between SitePulse and
// Postgres drops every connection and refuses new ones for a few seconds, as a restart does),
// then comes back. SitePulse keeps answering: /healthz and the budget check answer 200 or a
// clean 503 with Retry-After, never a 500 or a dropped connection. It reconnects by itself, and
// every scan still completes with all its page results, none twice.
func TestSystemDatabaseRestartWhileScanning(t *testing.T) {
	ctx := context.Background()
	st, dsn := storetest.PostgresDSN(t)
	proxy := storetest.NewProxy(t, dsn)
	psi := scantest.NewPSI(t, "testdata/psi")
	psi.Delay(250 * time.Millisecond)

	user := store.User{ID: store.NewID(), Email: "restart@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	key, keyHash := store.NewSecret("svc_")
	var sites []store.Site
	var scans []store.Scan
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.CreateUser(ctx, user))
	must(st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: user.ID, Name: "ci", KeyHash: keyHash, Prefix: key[:8], CreatedAt: time.Now()}))
	const nSites = 6
	for i := range nSites {
		site := store.Site{ID: store.NewID(), UserID: user.ID, Name: fmt.Sprintf("Site %d", i), Domain: fmt.Sprintf("s%d.test", i),
			Pages: scantest.SamplePages(), CreatedAt: time.Now()}
		scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: time.Now()}
		must(st.CreateSite(ctx, site))
		must(st.EnqueueScan(ctx, scan, store.KindScan, time.Now()))
		sites, scans = append(sites, site), append(scans, scan)
	}

	// A claim the cut interrupts may commit while its answer is lost (database/sql then retries
	// it on a new connection, refused): that job waits for its lease to lapse and the rescuer.
	// Scans of 10 audits now take a quarter second, so workers claim often and the cut can land
	// on a claim; a 10 s lease keeps that rescue within the test's 45 s.
	base, logs, stop := startRun(t, map[string]string{"DATABASE_URL": proxy.DSN(dsn), "PAGESPEED_API_URL": psi.Endpoint(),
		"SCAN_LEASE_SECONDS": "10"})

	// Clients: /healthz and the budget check, each in a loop, through the whole test.
	var phaseMu sync.Mutex
	phase := "before"
	setPhase := func(p string) { phaseMu.Lock(); phase = p; phaseMu.Unlock() }
	getPhase := func() string { phaseMu.Lock(); defer phaseMu.Unlock(); return phase }
	counts := &statusCounts{counts: map[string]int{}}
	var recoveredAt time.Time
	var recoverOnce sync.Once
	recovered := make(chan struct{})
	client := &http.Client{Timeout: 10 * time.Second}
	hit := func(route string, req func() *http.Request) {
		ph := getPhase()
		resp, err := client.Do(req())
		if err != nil {
			counts.add(ph, route, 0, err.Error())
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		detail := ""
		switch resp.StatusCode {
		case http.StatusOK:
			if ph == "after" && route == "healthz" {
				recoverOnce.Do(func() { recoveredAt = time.Now(); close(recovered) })
			}
		case http.StatusServiceUnavailable:
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"`) {
				detail = fmt.Sprintf("503 without Retry-After or JSON body: %q", body)
			}
		default:
			detail = fmt.Sprintf("status %d: %s", resp.StatusCode, body)
		}
		counts.add(ph, route, resp.StatusCode, detail)
	}
	clientsDone := make(chan struct{})
	var clients sync.WaitGroup
	loop := func(route string, req func() *http.Request) {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for {
				select {
				case <-clientsDone:
					return
				case <-time.After(25 * time.Millisecond):
				}
				hit(route, req)
			}
		}()
	}
	loop("healthz", func() *http.Request { r, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil); return r })
	loop("budget-check", func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, base+"/api/external/budget-check", strings.NewReader(`{"siteId":"`+sites[0].ID+`"}`))
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", "application/json")
		return r
	})

	// Cut the database once the scans are under way.
	if !storetest.Eventually(func() bool { return psi.Total() >= 4 }) {
		t.Fatalf("no scan started:\n%s", logs)
	}
	const outage = 3 * time.Second
	setPhase("outage")
	proxy.Cut()
	callsAtCut := psi.Total()
	time.Sleep(outage) // the outage itself: the scenario, not a wait for an event
	setPhase("after")
	proxy.Restore()
	restoredAt := time.Now()

	// Every scan ends, complete, with every page result once.
	var done []store.Scan
	storetest.Eventually(func() bool {
		done = done[:0]
		for _, sc := range scans {
			got, err := st.Scan(ctx, user.ID, sc.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == store.StatusComplete || got.Status == store.StatusFailed {
				done = append(done, got)
			}
		}
		return len(done) == len(scans)
	})
	allEnded := time.Now()
	storetest.Eventually(func() bool { // /healthz answers 200 again (checked below)
		select {
		case <-recovered:
			return true
		default:
			return false
		}
	})
	close(clientsDone)
	clients.Wait()
	if err := stop(); err != nil {
		t.Errorf("run: %v", err)
	}

	t.Logf("outage %s at %d of %d PSI calls; /healthz 200 again %s after the restore; all %d scans ended %s after the restore",
		outage, callsAtCut, nSites*10, recoveredAt.Sub(restoredAt).Round(time.Millisecond), len(scans), allEnded.Sub(restoredAt).Round(time.Millisecond))
	t.Logf("answers by phase, route and status:\n%s", counts)
	if len(done) != len(scans) {
		t.Fatalf("%d of %d scans ended within %s of the restore:\n%s", len(done), len(scans), storetest.Timeout(), logs)
	}
	for _, sc := range done {
		results, err := st.PageResults(ctx, user.ID, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Status != store.StatusComplete || len(results) != 10 || sc.PagesDone != 10 {
			t.Errorf("scan %s: %s, %d results, pagesDone %d (%s); want complete, 10, 10", sc.ID, sc.Status, len(results), sc.PagesDone, sc.Error)
		}
	}
	for _, b := range counts.bad {
		t.Errorf("unclean answer: %s", b)
	}
	counts.mu.Lock()
	outage503 := counts.counts[fmt.Sprintf("%-7s %-12s %d", "outage", "healthz", 503)]
	counts.mu.Unlock()
	if outage503 == 0 {
		t.Errorf("/healthz never answered 503 while the database was away")
	}
	select {
	case <-recovered:
	default:
		t.Errorf("/healthz never answered 200 after the restore")
	}
	if t.Failed() {
		t.Logf("logs:\n%s", logs)
	}
}
