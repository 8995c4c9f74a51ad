package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// The scale-out and crash scenarios: real SitePulse processes (the test binary
// re-executed into run()) on one Postgres schema, sites published at once through the signed
// webhook, and one PSI double per process answering the real fixtures after a random delay,
// so each process's PSI traffic can be told apart.
//
// Bigger numbers, with figures printed:
//
//	SITEPULSE_SCALE_SITES=100 DATABASE_URL=... go test -run 'TestSystemScaleOut' -v .
//
// SITEPULSE_SCALE_DELAY_MS sets the slowest PSI answer (default 600; the fastest is a sixth).

const (
	scaleSecret  = "whsec_scaleout"
	scaleWorkers = 3
	// scaleInFlight is PSI_MAX_INFLIGHT: below the 30 audits three scans of 10 could have at once.
	scaleInFlight = 8
)

var scaleStrategies = []store.Strategy{store.StrategyMobile, store.StrategyDesktop}

type scaleRig struct {
	st    *postgres.Store
	dsn   string
	sites []store.Site
	psis  []*scantest.PSI
	procs []*child
	began time.Time // the first publish
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}

// newScaleRig creates sites owned by a few accounts, and starts procs SitePulse processes on
// one schema, each with SCAN_WORKERS=3, extra env and a PSI double of its own.
func newScaleRig(t *testing.T, sites, procs int, extra map[string]string) *scaleRig {
	t.Helper()
	ctx := context.Background()
	st, dsn := storetest.PostgresDSN(t)
	r := &scaleRig{st: st, dsn: dsn}
	var users []store.User
	for i := range 4 {
		u := store.User{ID: store.NewID(), Email: fmt.Sprintf("scale%d@example.com", i), PasswordHash: "x", CreatedAt: time.Now()}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		users = append(users, u)
	}
	for i := range sites {
		s := store.Site{ID: store.NewID(), UserID: users[i%len(users)].ID, Name: fmt.Sprintf("Site %03d", i),
			Domain: fmt.Sprintf("site%03d.test", i), PlatformSiteID: fmt.Sprintf("plat-%03d", i), Pages: scantest.SamplePages(), CreatedAt: time.Now()}
		if err := st.CreateSite(ctx, s); err != nil {
			t.Fatal(err)
		}
		r.sites = append(r.sites, s)
	}
	slowest := time.Duration(envInt(t, "SITEPULSE_SCALE_DELAY_MS", 600)) * time.Millisecond
	for i := range procs {
		psi := scantest.NewPSI(t, "testdata/psi")
		psi.DelayBetween(slowest/6, slowest)
		env := map[string]string{"DATABASE_URL": dsn, "PAGESPEED_API_URL": psi.Endpoint(), "PLATFORM_CLIENT_SECRET": scaleSecret,
			"SCAN_WORKERS": strconv.Itoa(scaleWorkers), "PSI_RATE_LIMIT": "1000000",
			"PSI_MAX_INFLIGHT": strconv.Itoa(scaleInFlight)}
		for k, v := range extra {
			env[k] = v
		}
		r.psis = append(r.psis, psi)
		r.procs = append(r.procs, startChild(t, fmt.Sprintf("process %c", 'A'+i), env))
	}
	return r
}

// publishAll posts every site's publish at once, spread over the processes as a load
// balancer would; each must answer 200.
func (r *scaleRig) publishAll(t *testing.T) {
	t.Helper()
	r.began = time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(r.sites))
	for i, s := range r.sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, err := publish(r.procs[i%len(r.procs)].base, scaleSecret, s.PlatformSiteID)
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("publish %s: %d", s.PlatformSiteID, code)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// siteScans reads each site's scans.
func (r *scaleRig) siteScans(t *testing.T) [][]store.Scan {
	t.Helper()
	out := make([][]store.Scan, len(r.sites))
	for i, s := range r.sites {
		scans, err := r.st.ScansOf(context.Background(), s.UserID, s.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = scans
	}
	return out
}

// waitEnded waits until every site's scan has ended, complete or failed.
func (r *scaleRig) waitEnded(t *testing.T) [][]store.Scan {
	t.Helper()
	var all [][]store.Scan
	ended := 0
	if storetest.Eventually(func() bool {
		all, ended = r.siteScans(t), 0
		for _, scans := range all {
			if len(scans) > 0 && (scans[0].Status == store.StatusComplete || scans[0].Status == store.StatusFailed) {
				ended++
			}
		}
		return ended == len(r.sites)
	}) {
		return all
	}
	for _, p := range r.procs {
		t.Logf("%s log:\n%s", p.name, p.log)
	}
	t.Fatalf("%d of %d scans ended in %s", ended, len(r.sites), storetest.Timeout())
	return nil
}

// check asserts what both scenarios promise: each site has exactly one scan, complete, with
// each of its 10 page results exactly once; across all processes each scan was logged
// complete exactly once; no process ran more than SCAN_WORKERS scans, nor PSI_MAX_INFLIGHT
// calls, at once. It returns the processes' scan logs.
func (r *scaleRig) check(t *testing.T, all [][]store.Scan) []scanLog {
	t.Helper()
	logs := make([]scanLog, len(r.procs))
	completions := map[string]int{}
	for i, p := range r.procs {
		logs[i] = readScanLog(p.log.String())
		for id, n := range logs[i].completed {
			completions[id] += n
		}
		if logs[i].maxAtOnce > scaleWorkers {
			t.Errorf("%s ran %d scans at once, SCAN_WORKERS=%d", p.name, logs[i].maxAtOnce, scaleWorkers)
		}
		if req, hosts := r.psis[i].MaxInFlight(); hosts > scaleWorkers || req > scaleInFlight {
			t.Errorf("%s had %d PSI calls for %d sites in flight at once; want at most %d sites, %d calls (PSI_MAX_INFLIGHT)",
				p.name, req, hosts, scaleWorkers, scaleInFlight)
		}
	}
	for i, scans := range all {
		site := r.sites[i]
		if len(scans) != 1 {
			t.Errorf("%s has %d scans, want 1", site.Name, len(scans))
			continue
		}
		sc := scans[0]
		if sc.Status != store.StatusComplete || sc.PagesDone != 10 || sc.PagesTotal != 10 || sc.Trigger != store.TriggerWebhook {
			t.Errorf("%s: scan %s %s %d/%d trigger %s (%s)", site.Name, sc.ID, sc.Status, sc.PagesDone, sc.PagesTotal, sc.Trigger, sc.Error)
		}
		if n := completions[sc.ID]; n != 1 {
			t.Errorf("%s: scan %s logged complete %d times, want once", site.Name, sc.ID, n)
		}
		results, err := r.st.PageResults(context.Background(), site.UserID, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[store.PageKey]int{}
		for _, res := range results {
			seen[store.PageKey{PagePath: res.PagePath, Strategy: res.Strategy}]++
		}
		for _, path := range scantest.SamplePages() {
			for _, s := range scaleStrategies {
				if n := seen[store.PageKey{PagePath: path, Strategy: s}]; n != 1 {
					t.Errorf("%s: %s %s has %d results, want 1", site.Name, path, s, n)
				}
			}
		}
		if len(results) != 10 {
			t.Errorf("%s: %d page results, want 10", site.Name, len(results))
		}
	}
	if len(completions) != len(r.sites) {
		t.Errorf("%d scans logged complete, want %d", len(completions), len(r.sites))
	}
	return logs
}

// calls is how many times all the processes asked PSI for one audit of site.
func (r *scaleRig) calls(site store.Site, path string, strategy store.Strategy) (total int, per []int) {
	for _, psi := range r.psis {
		n := psi.HostCalls(site.Domain, path, strategy)
		total += n
		per = append(per, n)
	}
	return total, per
}

// figures logs the run's throughput and each process's share.
func (r *scaleRig) figures(t *testing.T, all [][]store.Scan, logs []scanLog) {
	t.Helper()
	var first, last time.Time
	var took time.Duration
	n := 0
	for _, scans := range all {
		if len(scans) != 1 || scans[0].StartedAt == nil || scans[0].CompletedAt == nil {
			continue
		}
		sc := scans[0]
		if first.IsZero() || sc.StartedAt.Before(first) {
			first = *sc.StartedAt
		}
		if sc.CompletedAt.After(last) {
			last = *sc.CompletedAt
		}
		took += sc.CompletedAt.Sub(*sc.StartedAt)
		n++
	}
	if n == 0 {
		return
	}
	wall, busy := last.Sub(r.began), last.Sub(first)
	t.Logf("%d sites, %d processes x SCAN_WORKERS=%d: all scans complete %.2f s after the first publish (webhook jitter 0-5 s included), %.2f s after the first scan started; a scan took %.2f s on average",
		len(r.sites), len(r.procs), scaleWorkers, wall.Seconds(), busy.Seconds(), (took / time.Duration(n)).Seconds())
	t.Logf("%.2f scans/s, %.1f page results/s (from the first publish)", float64(n)/wall.Seconds(), float64(10*n)/wall.Seconds())
	for i, p := range r.procs {
		req, hosts := r.psis[i].MaxInFlight()
		t.Logf("%s: %d scans completed, at most %d scans at once (log), %d PSI calls, at most %d in flight for %d sites",
			p.name, len(logs[i].completed), logs[i].maxAtOnce, r.psis[i].Total(), req, hosts)
	}
}

// Two processes, SITEPULSE_SCALE_SITES (20) sites published at once: every scan completes
// exactly once, no page result is missing or duplicated, no audit is asked twice, each process
// ran at most SCAN_WORKERS scans at a time, and both did work.
func TestSystemScaleOutTwoProcessesShareThePublishes(t *testing.T) {
	if runAsChild() {
		return
	}
	sites := envInt(t, "SITEPULSE_SCALE_SITES", 20)
	r := newScaleRig(t, sites, 2, nil)
	r.publishAll(t)
	all := r.waitEnded(t)
	for _, p := range r.procs {
		p.stop(t)
	}
	logs := r.check(t, all)
	for i, p := range r.procs {
		if len(logs[i].completed) == 0 {
			t.Errorf("%s completed no scan: the work was not shared", p.name)
		}
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
	r.figures(t, all, logs)
}

// Two processes scanning SITEPULSE_SCALE_SITES (12) sites; one is killed with SIGKILL while
// it is in the middle of scans. The other takes the dead one's jobs over once their lease
// (SCAN_LEASE_SECONDS=3 here) lapses and finishes every scan: nothing lost, nothing stored
// twice, and only the audits in flight at the kill are asked again.
func TestSystemScaleOutKilledProcessScansAreFinishedByTheOther(t *testing.T) {
	if runAsChild() {
		return
	}
	ctx := context.Background()
	sites := envInt(t, "SITEPULSE_SCALE_SITES", 12)
	r := newScaleRig(t, sites, 2, map[string]string{"SCAN_LEASE_SECONDS": "3"})
	victim, survivor := r.procs[0], r.procs[1]
	r.publishAll(t)

	// Kill the victim once it has a scan part-way done and the survivor is scanning too.
	var killedMid []string // the victim's scans that were running at the kill
	midScan := storetest.Eventually(func() bool {
		vl, sl := readScanLog(victim.log.String()), readScanLog(survivor.log.String())
		if len(sl.started) == 0 {
			return false
		}
		partWay := false
		for id := range vl.started {
			if vl.completed[id] > 0 {
				continue
			}
			if sc, _, err := r.st.ScanForJob(ctx, id); err == nil && sc.PagesDone >= 2 && sc.PagesDone <= 8 {
				partWay = true
			}
		}
		if partWay {
			victim.kill()
			// The log may have moved on between reading it and the kill: read it again.
			final := readScanLog(victim.log.String())
			for id := range final.started {
				if final.completed[id] == 0 {
					killedMid = append(killedMid, id)
				}
			}
		}
		return killedMid != nil
	})
	if !midScan {
		t.Fatalf("the processes were never both mid-scan:\n%s\n%s", victim.log, survivor.log)
	}
	// A COMMIT the victim sent just before it died may still land: give Postgres a moment.
	// Not an event: a dead process's last packet announces nothing.
	time.Sleep(300 * time.Millisecond)
	stored := map[string][]store.PageKey{} // scan id -> pairs stored when the victim died
	for _, id := range killedMid {
		keys, err := r.st.DonePages(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		stored[id] = keys
	}
	killedAt := time.Now()

	all := r.waitEnded(t)
	survivor.stop(t)
	logs := r.check(t, all)
	for _, id := range killedMid {
		if logs[1].completed[id] != 1 {
			t.Errorf("scan %s, running on the killed process, was not completed by the survivor", id)
		}
		if len(stored[id]) >= 10 {
			t.Errorf("scan %s had all its results before the kill; the test killed too late", id)
		}
	}
	// Audits stored before the kill were never asked again; the others were asked of the
	// survivor at most once (the victim may have had them in flight when it died).
	scanSite := map[string]store.Site{}
	for i, scans := range all {
		if len(scans) == 1 {
			scanSite[scans[0].ID] = r.sites[i]
		}
	}
	for _, id := range killedMid {
		site := scanSite[id]
		was := map[store.PageKey]bool{}
		for _, k := range stored[id] {
			was[k] = true
			if n, per := r.calls(site, k.PagePath, k.Strategy); n != 1 {
				t.Errorf("%s %s %s was stored before the kill but audited %d times %v", site.Name, k.PagePath, k.Strategy, n, per)
			}
		}
		for _, path := range scantest.SamplePages() {
			for _, s := range scaleStrategies {
				if was[store.PageKey{PagePath: path, Strategy: s}] {
					continue
				}
				if _, per := r.calls(site, path, s); per[1] > 1 || per[0] > 1 || per[0]+per[1] == 0 {
					t.Errorf("%s %s %s, not stored at the kill: audited %v times (victim, survivor), want at most once by each", site.Name, path, s, per)
				}
			}
		}
	}
	var last time.Time
	for _, scans := range all {
		if len(scans) == 1 && scans[0].CompletedAt != nil && scans[0].CompletedAt.After(last) {
			last = *scans[0].CompletedAt
		}
	}
	// When the survivor resumed the first of them: the lease plus up to half of it (the
	// rescuer's period), plus a poll if the survivor's workers were all busy.
	resumed := time.Time{}
	for _, line := range strings.Split(survivor.log.String(), "\n") {
		for _, id := range killedMid {
			if strings.Contains(line, `msg="scan started"`) && strings.Contains(line, " scan="+id+" ") {
				if at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(strings.Fields(line)[0], "time=")); err == nil && (resumed.IsZero() || at.Before(resumed)) {
					resumed = at
				}
			}
		}
	}
	t.Logf("the survivor resumed the first of them %.2f s after the kill (SCAN_LEASE_SECONDS=3)", resumed.Sub(killedAt).Seconds())
	t.Logf("killed %s with %d scans mid-way (%d of their %d audits stored); the survivor finished all %d scans %.2f s after the kill",
		victim.name, len(killedMid), countKeys(stored), 10*len(killedMid), len(r.sites), last.Sub(killedAt).Seconds())
	r.figures(t, all, logs)
}

func countKeys(m map[string][]store.PageKey) int {
	n := 0
	for _, k := range m {
		n += len(k)
	}
	return n
}
