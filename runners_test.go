package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/handlers"
	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/scanner"
	"sitepulse/scanner/lighthouse"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/runner"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// runnerPorts are this test's loopback ports: the service and the audited site listen there.
var runnerPorts atomic.Int32

// listenRunnerPort listens on the next free port of 127.0.0.1:31500-31599.
func listenRunnerPort(t *testing.T) net.Listener {
	t.Helper()
	for range 100 {
		port := 31500 + runnerPorts.Add(1)%100
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			return ln
		}
	}
	t.Fatal("no free port in 127.0.0.1:31500-31599")
	return nil
}

func serveOnRunnerPort(t *testing.T, h http.Handler) string {
	t.Helper()
	ln := listenRunnerPort(t)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// runnerLighthouse finds the Lighthouse CLI and Chromium for the real runner, or skips saying
// what is missing; under CI=true it fails instead, as the other real-Chrome tests do.
func runnerLighthouse(t *testing.T) (cmd, chrome string) {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true: " + why)
		}
		t.Skip("skipped: " + why)
	}
	cmd = os.Getenv("LIGHTHOUSE_CMD")
	if home, err := os.UserHomeDir(); cmd == "" && err == nil {
		dir := filepath.Join(home, lighthouse.Home, "node_modules")
		node, cli := filepath.Join(dir, ".bin", "node"), filepath.Join(dir, "lighthouse", "cli", "index.js")
		if _, err := os.Stat(cli); err == nil {
			cmd = node + " " + cli
		}
	}
	chrome = cmp.Or(os.Getenv("CHROME_PATH"), "/usr/bin/chromium")
	if cmd == "" {
		missing("Lighthouse is not installed: " + lighthouse.InstallCommand + " (docs/local-lighthouse.md)")
	}
	if _, err := exec.LookPath(strings.Fields(cmd)[0]); err != nil {
		missing(fmt.Sprintf("Lighthouse command %q not runnable: %v", cmd, err))
	}
	if _, err := os.Stat(chrome); err != nil {
		missing(fmt.Sprintf("Chromium not found at %s", chrome))
	}
	return cmd, chrome
}

// doubleBackend answers its first `finish` audits with a recorded Lighthouse report at once,
// and holds every later one until its runner is killed (its context ends).
type doubleBackend struct {
	report []byte
	finish int32
	calls  atomic.Int32
	held   chan string // the URL of each audit held
}

func (d *doubleBackend) Report(ctx context.Context, pageURL string, _ store.Strategy) ([]byte, error) {
	if d.calls.Add(1) <= d.finish {
		return d.report, nil
	}
	d.held <- pageURL
	<-ctx.Done()
	return nil, ctx.Err()
}

// noAuditor fails the test if the service audits in-process what runners should.
type noAuditor struct{ t *testing.T }

func (a noAuditor) Audit(context.Context, string, store.Strategy) (store.PageResult, error) {
	a.t.Error("an audit ran in-process for a workspace with runners")
	return store.PageResult{}, errors.New("no in-process audits here")
}

// recordedLHR is the Lighthouse report inside a recorded PSI answer: what the double posts.
func recordedLHR(t *testing.T) []byte {
	t.Helper()
	body, err := os.ReadFile("testdata/psi/home.mobile.json")
	if err != nil {
		t.Fatal(err)
	}
	var psi struct {
		LighthouseResult json.RawMessage `json:"lighthouseResult"`
	}
	if err := json.Unmarshal(body, &psi); err != nil || len(psi.LighthouseResult) == 0 {
		t.Fatalf("no lighthouseResult in the recorded answer: %v", err)
	}
	return psi.LighthouseResult
}

// runnerCall is one call of the runner protocol made by the test itself, as a runner would.
func runnerCall(t *testing.T, base, token, path string, body any) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestRunnersLeaseAndFinishAuditsOfOneScan is issue 46's runners on both stores: a scan of a
// workspace with runners is audited by them, not in-process; a double runner finishes one
// audit and is killed holding another, which a runner with the real Lighthouse and Chromium
// finishes once the lease expires (the service's fake clock moved past it), beside the audit
// it leased meanwhile; a result posted after its lease is refused (410); a runner of another
// workspace sees nothing of this one; and a revoked token stops its runner at its next call.
func TestRunnersLeaseAndFinishAuditsOfOneScan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	lhCmd, chrome := runnerLighthouse(t)
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { testRunners(t, b.Open(t), lhCmd, chrome) })
	}
}

// runnerService is the service of the runner tests on st: its routes and its scan pipeline on
// a fake clock, listening on a port of this helper's range, and a site of three small pages on
// loopback owned by a, and b, an account of its own.
type runnerService struct {
	base  string
	clock *scantest.Clock
	logs  *scantest.LogBuffer
	log   *slog.Logger
	a, b  store.User
	site  store.Site
}

func newRunnerService(t *testing.T, st store.Store, lease time.Duration) *runnerService {
	t.Helper()
	ctx := context.Background()
	storetest.WithRules(st, store.SiteRules{AllowPrivate: true}) // the audited site is a server on 127.0.0.1
	rs := &runnerService{clock: scantest.NewClock(time.Now().UTC().Truncate(time.Second)), logs: &scantest.LogBuffer{}}
	rs.log = slog.New(slog.NewTextHandler(rs.logs, nil))
	clock, log := rs.clock, rs.log
	d := handlers.Deps{Auth: st, Accounts: st, Sites: st, Budgets: st, Scans: st, Reports: st, API: st, Webhooks: st,
		Connections: st, Workspaces: st, Channels: st, Health: st, CI: st, Runners: st, RunnerLease: lease, SSO: st, SecurityLog: st,
		BaseURL: "http://127.0.0.1", Now: clock.Now, Log: log}
	d.OAuth = oauth.New(oauth.Config{Store: st, BaseURL: d.BaseURL, Now: clock.Now, Log: log})
	d.MCP = mcp.New(mcp.Config{Sites: st, Scans: st, Writes: st, BaseURL: d.BaseURL, Now: clock.Now, Log: log})
	h, err := handlers.NewHandler(d)
	if err != nil {
		t.Fatal(err)
	}
	rs.base = serveOnRunnerPort(t, h)
	pool := scanner.NewPool(scanner.PoolConfig{Store: st, Auditor: noAuditor{t}, Runners: st, RunnerPoll: 20 * time.Millisecond,
		Workers: 1, Poll: 50 * time.Millisecond, Lease: time.Hour, Now: clock.Now, Log: log})
	pool.Start()
	t.Cleanup(func() { pool.Stop(context.Background()) })
	site := serveOnRunnerPort(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Staging %s</title><meta name="description" content="A private staging page."></head><body><h1>Staging</h1><p>Page %s.</p></body></html>`, r.URL.Path, r.URL.Path)
	}))
	rs.a = store.User{ID: store.NewID(), Email: "a@example.com", PasswordHash: "x", CreatedAt: clock.Now()}
	rs.b = store.User{ID: store.NewID(), Email: "b@example.com", PasswordHash: "x", CreatedAt: clock.Now()}
	rs.site = store.Site{ID: store.NewID(), UserID: rs.a.ID, Name: "Staging", Domain: site, Pages: []string{"/", "/about", "/pricing"}, CreatedAt: clock.Now()}
	for _, err := range []error{st.CreateUser(ctx, rs.a), st.CreateUser(ctx, rs.b), st.CreateSite(ctx, rs.site)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return rs
}

// token makes a runner token of workspace.
func (rs *runnerService) token(t *testing.T, st store.Store, workspace, name string) (store.RunnerToken, string) {
	t.Helper()
	secret, hash := store.NewSecret("rnr_")
	tok := store.RunnerToken{ID: store.NewID(), WorkspaceID: workspace, Name: name, TokenHash: hash, Prefix: secret[:12], CreatedAt: rs.clock.Now()}
	if err := st.CreateRunnerToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	return tok, secret
}

// scan enqueues a mobile scan of the site.
func (rs *runnerService) scan(t *testing.T, st store.Store) store.Scan {
	t.Helper()
	scan := store.Scan{ID: store.NewID(), SiteID: rs.site.ID, Strategy: store.StrategyMobile, Trigger: store.TriggerManual, CreatedAt: rs.clock.Now()}
	if err := st.EnqueueScan(context.Background(), scan, store.KindScan, rs.clock.Now()); err != nil {
		t.Fatal(err)
	}
	return scan
}

func testRunners(t *testing.T, st store.Store, lhCmd, chrome string) {
	ctx := context.Background()
	const lease = 2 * time.Minute
	rs := newRunnerService(t, st, lease)
	base, clock, logs, log, a, b := rs.base, rs.clock, rs.logs, rs.log, rs.a, rs.b
	token := func(workspace, name string) (store.RunnerToken, string) { return rs.token(t, st, workspace, name) }
	_, doubleToken := token(a.ID, "lab")
	realTok, realToken := token(a.ID, "staging office")
	_, lateToken := token(a.ID, "late")
	_, bToken := token(b.ID, "B's")

	// B's runner runs throughout: it must never be handed an audit of A's.
	bBackend := &doubleBackend{report: recordedLHR(t), held: make(chan string, 10)}
	bCtx, stopB := context.WithCancel(ctx)
	defer stopB()
	go runner.Run(bCtx, runner.Config{ServiceURL: base, Token: bToken, Name: "b", Concurrency: 2, Poll: 20 * time.Millisecond, Backend: bBackend})

	scan := rs.scan(t, st)

	// A runner of A's leases one audit and goes quiet: past its lease, its result is refused.
	var late struct {
		LeaseID string `json:"leaseId"`
		URL     string `json:"url"`
	}
	storetest.WaitFor(t, "the scan's audits to be leasable", func() bool {
		code, body := runnerCall(t, base, lateToken, "/api/runner/leases", map[string]string{"runner": "late"})
		return code == http.StatusOK && json.Unmarshal(body, &late) == nil && late.LeaseID != ""
	})
	if code, body := runnerCall(t, base, bToken, "/api/runner/leases", map[string]string{"runner": "b"}); code != http.StatusNoContent {
		t.Errorf("B's runner was handed something while A's audits wait: %d %s", code, body)
	}
	clock.Advance(lease + time.Second)
	if code, body := runnerCall(t, base, lateToken, "/api/runner/leases/"+late.LeaseID+"/heartbeat", map[string]string{}); code != http.StatusGone {
		t.Errorf("heartbeat after the lease: %d %s, want 410", code, body)
	}
	code, body := runnerCall(t, base, lateToken, "/api/runner/leases/"+late.LeaseID+"/result", map[string]json.RawMessage{"report": recordedLHR(t)})
	var shape struct {
		Error string `json:"error"`
	}
	if code != http.StatusGone || json.Unmarshal(body, &shape) != nil || shape.Error == "" {
		t.Errorf("result after the lease: %d %s, want 410 with the error shape", code, body)
	}

	// The double finishes one audit, then is killed holding its second.
	double := &doubleBackend{report: recordedLHR(t), finish: 1, held: make(chan string, 10)}
	dCtx, kill := context.WithCancel(ctx)
	dDone := make(chan error, 1)
	go func() {
		dDone <- runner.Run(dCtx, runner.Config{ServiceURL: base, Token: doubleToken, Name: "lab", Location: "lab", Concurrency: 1,
			Poll: 20 * time.Millisecond, Backend: double, Log: log})
	}()
	var heldURL string
	select {
	case heldURL = <-double.held:
	case <-time.After(storetest.Timeout()):
		t.Fatalf("the double runner did not lease a second audit:\n%s", logs)
	}
	kill() // no result, no release: its lease stays until it expires
	<-dDone

	// The real runner: Lighthouse and Chromium where it stands.
	lh := lighthouse.New(lighthouse.Config{Command: lhCmd, ChromePath: chrome, Timeout: 4 * time.Minute, Guard: netguard.Guard{AllowPrivate: true},
		ChromeFlags: "--headless=new --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking --disable-component-update --disable-sync", Log: log})
	rCtx, stopReal := context.WithCancel(ctx)
	defer stopReal()
	rDone := make(chan error, 1)
	go func() {
		rDone <- runner.Run(rCtx, runner.Config{ServiceURL: base, Token: realToken, Name: "office", Location: "staging-lan", Concurrency: 1,
			Poll: 20 * time.Millisecond, Backend: lh, Log: log})
	}()
	finished := func() int { return strings.Count(logs.String(), `msg="runner: finished"`) }
	if !storetest.EventuallyWithin(10*time.Minute, func() bool { return finished() >= 2 }) {
		t.Fatalf("the real runner did not finish the audit left queued:\n%s", logs)
	}
	// The killed runner's audit is still its own until the lease expires; then the real runner's.
	clock.Advance(lease + time.Second)
	var done store.Scan
	if !storetest.EventuallyWithin(10*time.Minute, func() bool {
		done, _ = st.Scan(ctx, a.ID, scan.ID)
		return done.Status.Terminal()
	}) || done.Status != store.StatusComplete {
		t.Fatalf("scan %s (%s) %d/%d:\n%s", done.Status, done.Error, done.PagesDone, done.PagesTotal, logs)
	}
	results, err := st.PageResults(ctx, a.ID, scan.ID)
	if err != nil || len(results) != 3 {
		t.Fatalf("%d results (%v), want 3:\n%s", len(results), err, logs)
	}
	by := map[string]int{}
	for _, r := range results {
		by[r.Location]++
		t.Logf("%s %s by %q: performance %v, benchmark index %v, Lighthouse %s", r.PagePath, r.Strategy, r.Location, intOr(r.Scores.Performance), r.BenchmarkIndex, r.LighthouseVersion)
		if r.BenchmarkIndex <= 0 {
			t.Errorf("%s: no benchmark index recorded", r.PagePath)
		}
		if r.PageURL == heldURL && r.Location != "staging-lan" {
			t.Errorf("the killed runner's audit %s was finished by %q, want the real runner", heldURL, r.Location)
		}
	}
	if by["lab"] != 1 || by["staging-lan"] != 2 {
		t.Errorf("results by runner location %v, want 1 by the double and 2 by the real runner", by)
	}
	if n := bBackend.calls.Load(); n != 0 {
		t.Errorf("B's runner ran %d audits of A's", n)
	}

	// Revoked: the real runner stops at its next call.
	if err := st.RevokeRunnerToken(ctx, a.ID, realTok.ID, clock.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-rDone:
		if !errors.Is(err, runner.ErrRevoked) {
			t.Errorf("the revoked runner ended with %v, want ErrRevoked", err)
		}
	case <-time.After(storetest.Timeout()):
		t.Fatal("the revoked runner kept running")
	}
}

func intOr(v *int) any {
	if v == nil {
		return nil
	}
	return *v
}
