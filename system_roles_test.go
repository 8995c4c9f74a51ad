package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/platform"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

var scansTotalLine = regexp.MustCompile(`(?m)^sitepulse_scans_total\{outcome="completed"\} (\d+)$`)

// Two web processes (ROLE=web) and two workers (ROLE=worker) on one database, started together
// (each applies the migrations, under the lock): the publishes go to the web processes, which
// claim nothing; the workers scan every site, plan its alerts and deliver them. Every scan
// completes once, every audit is asked once, every alert arrives once; the web processes ran no
// scan and the workers serve no page or API.
func TestSystemRolesWebAndWorkersApart(t *testing.T) {
	if runAsChild() {
		return
	}
	ctx := context.Background()
	sites := envInt(t, "SITEPULSE_SCALE_SITES", 12)
	r := newScaleRig(t, sites, 0, nil)
	raw := make([]byte, 32)
	rand.Read(raw)
	keySpec := base64.StdEncoding.EncodeToString(raw)
	keys, err := platform.ParseKeys(keySpec)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	got := map[string]int{} // X-SitePulse-Delivery -> requests
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get("X-SitePulse-Delivery")]++
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	// Each site's budget is broken by its first scan (the fixtures score below 100): one
	// budget.broken event a site, sent to its workspace's channel.
	owners := map[string]bool{}
	for _, s := range r.sites {
		if err := r.st.SetBudgets(ctx, s.UserID, s.ID, map[string]store.Budget{"performance": {Threshold: 100}}); err != nil {
			t.Fatal(err)
		}
		if owners[s.UserID] {
			continue
		}
		owners[s.UserID] = true
		sealed, err := keys.SealFor(platform.PurposeChannelURL, recv.URL+"/hook", s.UserID)
		if err != nil {
			t.Fatal(err)
		}
		ch := store.Channel{ID: store.NewID(), WorkspaceID: s.UserID, Kind: store.ChannelWebhook, Name: "counter", URLSealed: sealed,
			Events: []string{store.EventBudgetBroken}, CreatedAt: time.Now()}
		if err := r.st.CreateChannel(ctx, s.UserID, ch); err != nil {
			t.Fatal(err)
		}
	}

	const token = "metrics-roles"
	roles := []string{"web", "worker", "web", "worker"}
	procs := make([]*child, len(roles))
	var wg sync.WaitGroup
	for i, role := range roles {
		psi := scantest.NewPSI(t, "testdata/psi")
		psi.DelayBetween(20*time.Millisecond, 120*time.Millisecond)
		r.psis = append(r.psis, psi)
		env := map[string]string{"DATABASE_URL": r.dsn, "PAGESPEED_API_URL": psi.Endpoint(), "PLATFORM_CLIENT_SECRET": scaleSecret,
			"SCAN_WORKERS": strconv.Itoa(scaleWorkers), "PSI_RATE_LIMIT": "1000000", "PSI_MAX_INFLIGHT": strconv.Itoa(scaleInFlight),
			"PLATFORM_TOKEN_KEY": keySpec, "SCAN_ALLOW_PRIVATE": "true", "ROLE": role, "METRICS_TOKEN": token}
		wg.Add(1)
		go func() { // started together: the four migrate one empty schema at once
			defer wg.Done()
			procs[i] = startChild(t, fmt.Sprintf("%s %c", role, 'A'+i), env)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	r.procs = procs
	web := []*child{procs[0], procs[2]}
	workers := []*child{procs[1], procs[3]}
	for _, w := range workers {
		if code, err := publish(w.base, scaleSecret, r.sites[0].PlatformSiteID); err != nil || code != http.StatusNotFound {
			t.Errorf("%s answered a publish: %d %v, want 404 (no API on a worker)", w.name, code, err)
		}
		if got := status(w.base + "/readyz"); got != http.StatusOK {
			t.Errorf("%s /readyz: %d", w.name, got)
		}
	}
	// The publishes go to the web processes only, as a load balancer in front of them would.
	r.procs = web
	r.publishAll(t)
	r.procs = procs
	all := r.waitEnded(t)
	delivered := storetest.Eventually(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(r.sites)
	})
	if !delivered {
		t.Fatalf("%d of %d alerts arrived", len(got), len(r.sites))
	}
	// Nothing is left in the queue: digests, alerts and deliveries all done.
	var figs []store.JobFigure
	if !storetest.Eventually(func() bool {
		figs, err = r.st.JobFigures(ctx, time.Now())
		return err == nil && len(figs) == 0
	}) {
		t.Errorf("jobs left in the queue: %+v %v", figs, err)
	}
	completedBy := map[string]int{}
	for _, p := range procs {
		m := scansTotalLine.FindStringSubmatch(scrape(t, p.base, token))
		if m != nil {
			completedBy[p.name], _ = strconv.Atoi(m[1])
		}
	}
	for _, p := range procs {
		p.stop(t)
	}
	logs := r.check(t, all)
	for i, p := range procs {
		if roles[i] == "web" && (len(logs[i].started) > 0 || r.psis[i].Total() > 0 || completedBy[p.name] > 0) {
			t.Errorf("%s (web) started %d scans, asked PSI %d times", p.name, len(logs[i].started), r.psis[i].Total())
		}
	}
	if n := completedBy[workers[0].name] + completedBy[workers[1].name]; n != len(r.sites) {
		t.Errorf("the workers' metrics count %d scans completed (%v), want %d", n, completedBy, len(r.sites))
	}
	for _, site := range r.sites {
		for _, path := range scantest.SamplePages() {
			for _, s := range scaleStrategies {
				if n, per := r.calls(site, path, s); n != 1 {
					t.Errorf("%s %s %s was audited %d times %v, want once", site.Name, path, s, n, per)
				}
			}
		}
	}
	mu.Lock()
	for id, n := range got {
		if n != 1 {
			t.Errorf("alert %s arrived %d times", id, n)
		}
	}
	if len(got) != len(r.sites) {
		t.Errorf("%d alerts arrived, want %d (one budget.broken a site)", len(got), len(r.sites))
	}
	mu.Unlock()
	t.Logf("%d sites: scans completed by the workers %v; %d alerts delivered once each", len(r.sites), completedBy, len(got))
}
