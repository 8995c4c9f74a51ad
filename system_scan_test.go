package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// A process killed with SIGKILL in the middle of a scan: another process finishes the scan
// once the dead one's lease is rescued, auditing only what was not stored, and no page result
// is lost or stored twice.
func TestSystemKilledProcessScanIsFinishedByAnother(t *testing.T) {
	if runAsChild() {
		return
	}
	ctx := context.Background()
	st, dsn := storetest.PostgresDSN(t)
	psi := scantest.NewPSI(t, "testdata/psi")
	psi.Delay(150 * time.Millisecond)
	user := store.User{ID: store.NewID(), Email: "kill@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "Sample", Domain: "sample.test",
		Pages: scantest.SamplePages(), CreatedAt: time.Now()}
	scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: time.Now()}
	for _, err := range []error{st.CreateUser(ctx, user), st.CreateSite(ctx, site), st.EnqueueScan(ctx, scan, store.KindScan, time.Now())} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Two audits at once, so the kill finds some pairs stored and most not yet asked.
	env := map[string]string{"DATABASE_URL": dsn, "PAGESPEED_API_URL": psi.Endpoint(), "SCAN_WORKERS": "1", "PSI_MAX_INFLIGHT": "2"}

	child := startChild(t, "child", env)
	if !storetest.Eventually(func() bool {
		sc, err := st.Scan(ctx, user.ID, scan.ID)
		return err == nil && sc.PagesDone >= 4
	}) {
		t.Fatalf("the child did not store 4 pages:\n%s", child.log)
	}
	child.kill() // SIGKILL: no shutdown, no release
	before, err := st.DonePages(ctx, scan.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) >= 10 {
		t.Fatalf("the child finished before it was killed")
	}
	callsAtKill := psi.Total()
	// The dead process's lease lapses; the rescuer of any process returns the job.
	if n, err := st.RescueJobs(ctx, time.Now().Add(time.Hour), time.Now()); err != nil || n != 1 {
		t.Fatalf("rescued %d jobs: %v", n, err)
	}

	_, logs, stop := startRun(t, env)
	var done store.Scan
	storetest.Eventually(func() bool {
		done, _ = st.Scan(ctx, user.ID, scan.ID)
		return done.Status == store.StatusComplete || done.Status == store.StatusFailed
	})
	stop()
	if done.Status != store.StatusComplete || done.PagesDone != 10 {
		t.Fatalf("scan = %s %d/10 (%s):\n%s", done.Status, done.PagesDone, done.Error, logs)
	}
	results, _ := st.PageResults(ctx, user.ID, scan.ID)
	if len(results) != 10 {
		t.Errorf("%d results, want 10", len(results))
	}
	for _, k := range before {
		if n := psi.Calls(k.PagePath, k.Strategy); n != 1 {
			t.Errorf("%s %s was stored before the kill but audited %d times", k.PagePath, k.Strategy, n)
		}
	}
	// The second process audited only the pairs not stored; at most the child's in-flight
	// calls (SCAN_WORKERS=1, PSI_MAX_INFLIGHT=2) were asked twice.
	if extra := psi.Total() - 10; extra < 0 || extra > 2 || psi.Total()-callsAtKill != 10-len(before) {
		t.Errorf("%d PSI calls in all, %d after the kill with %d pairs stored; want %d after", psi.Total(), psi.Total()-callsAtKill, len(before), 10-len(before))
	}
	t.Logf("killed after %d of 10 pairs were stored; the second process audited %d", len(before), psi.Total()-callsAtKill)
}

// The wiring, offline: a signed publish of the demo site makes the running service scan it
// through the pool, its audits replayed from the recorded runs with PSI out of reach (a closed
// port), and the configured secret is the one verified.
func TestSystemScansOnPublish(t *testing.T) {
	base, logs, stop := startRun(t, map[string]string{"PAGESPEED_API_URL": "http://" + freeAddr(t) + "/closed", "PLATFORM_CLIENT_SECRET": "whsec_wired"})
	post := func(secret string) int {
		code, err := publish(base, secret, "demo-site")
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	if got := post("whsec_other"); got != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d, want 401", got)
	}
	if got := post("whsec_wired"); got != http.StatusOK {
		t.Fatalf("publish: %d", got)
	}
	if !storetest.Eventually(func() bool { return strings.Contains(logs.String(), `msg="scan complete"`) }) {
		t.Fatalf("no scan completed:\n%s", logs)
	}
	stop()
	for _, want := range []string{"trigger=webhook", "replay=true", "results=10", "replay: demo audit answered from a recorded Lighthouse run"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), "page failed") {
		t.Errorf("an audit failed:\n%s", logs)
	}
}
