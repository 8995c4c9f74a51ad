package scanner

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"

	"sitepulse/scanner/notify"
	"sitepulse/scanner/psi"
)

// rig is a store with one user and site, a fake PSI over the real fixtures, and pools on them.
type rig struct {
	t    testing.TB
	st   store.Store
	psi  *scantest.PSI
	user store.User
	site store.Site
	logs *scantest.LogBuffer
}

func newRig(t testing.TB, st store.Store) *rig {
	t.Helper()
	st = storetest.WithRules(st, store.SiteRules{AllowPrivate: true}) // its sites may be test servers on 127.0.0.1
	r := &rig{t: t, st: st, psi: scantest.NewInProcess("../testdata/psi"), logs: &scantest.LogBuffer{}}
	r.user = store.User{ID: store.NewID(), Email: "owner-" + store.NewID()[:8] + "@example.com", PasswordHash: "x", NotifyRegressions: true, CreatedAt: time.Now()}
	if err := st.CreateUser(context.Background(), r.user); err != nil {
		t.Fatal(err)
	}
	r.site = r.addSite("Sample", scantest.SamplePages())
	return r
}

func (r *rig) addSite(name string, pages []string) store.Site {
	r.t.Helper()
	s := store.Site{ID: store.NewID(), UserID: r.user.ID, Name: name, Domain: "sample.test", Pages: pages, CreatedAt: time.Now()}
	if err := r.st.CreateSite(context.Background(), s); err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *rig) enqueue(site store.Site) store.Scan {
	r.t.Helper()
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: time.Now()}
	if err := r.st.EnqueueScan(context.Background(), sc, store.KindScan, time.Now()); err != nil {
		r.t.Fatal(err)
	}
	return sc
}

// pool starts a pool with fast test timings; it is stopped when the test ends. The lease and the
// PSI timeout are long, as in production: a goroutine stalled for seconds on a loaded machine
// under -race must not see its job rescued or its audit retried, which would make a second PSI
// call that the tests counting calls would read as a double audit. The tests of rescue and
// timeouts set their own.
func (r *rig) pool(mod func(*PoolConfig)) *Pool {
	r.t.Helper()
	cfg := PoolConfig{
		Store: r.st, Log: slog.New(slog.NewTextHandler(r.logs, nil)),
		Auditor: psi.New(psi.Config{Endpoint: r.psi.Endpoint(), Client: r.psi.Client(), Key: "k", Timeout: 30 * time.Second, Backoff: time.Millisecond,
			QuotaBackoff: time.Millisecond, Log: slog.New(slog.NewTextHandler(r.logs, nil))}),
		Poll: 10 * time.Millisecond, Lease: time.Minute, Heartbeat: 50 * time.Millisecond,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond },
	}
	if mod != nil {
		mod(&cfg)
	}
	p := NewPool(cfg)
	p.Start()
	r.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.Stop(ctx)
	})
	return p
}

// wait waits for the scan to end (complete or failed) and returns it.
func (r *rig) wait(scanID string) store.Scan {
	r.t.Helper()
	var sc store.Scan
	ended := storetest.Eventually(func() bool {
		var err error
		if sc, err = r.st.Scan(context.Background(), r.user.ID, scanID); err != nil {
			r.t.Fatal(err)
		}
		return sc.Status == store.StatusComplete || sc.Status == store.StatusFailed
	})
	if !ended {
		r.t.Fatalf("scan still %s after %s (%d/%d done); logs:\n%s", sc.Status, storetest.Timeout(), sc.PagesDone, sc.PagesTotal, r.logs.String())
	}
	return sc
}

func (r *rig) results(scanID string) ([]store.PageResult, []store.PageError) {
	r.t.Helper()
	res, err := r.st.PageResults(context.Background(), r.user.ID, scanID)
	if err != nil {
		r.t.Fatal(err)
	}
	errs, err := r.st.PageErrors(context.Background(), r.user.ID, scanID)
	if err != nil {
		r.t.Fatal(err)
	}
	return res, errs
}

func TestPipeline(t *testing.T) {
	onStores(t,
		storeTest{name: "a scan goes queued, running, complete with one result per page and strategy", fn: testScanCompletes},
		storeTest{name: "PSI faults end the scan with per-page reasons and no stuck worker", fn: testPSIFaults},
		storeTest{name: "a scan where no page could be audited fails with the reason", fn: testNoPageSucceeded},
		storeTest{name: "an abandoned lease is rescued and resumed without losing or repeating a page", fn: testRescueResumes},
		storeTest{name: "a failing attempt is retried: two failures, then success", fn: jobRetries(2, store.StatusComplete, "")},
		storeTest{name: "a failing attempt is retried, and fails the scan after three", fn: jobRetries(3, store.StatusFailed,
			"gave up after 3 attempts: start scan: connection reset by peer")},
		storeTest{name: "shutdown releases running jobs and another pool resumes them", fn: testShutdownReleases},
		storeTest{name: "two pools on one store never audit a page of a scan twice", fn: testTwoPools},
		storeTest{name: "a scan with regressions e-mails one digest; a broken SMTP server fails nothing", fn: testDigest, realIO: true},
	)
}

func testScanCompletes(t *testing.T, st store.Store) {
	r := newRig(t, st)
	release := r.psi.Hold()
	sc := r.enqueue(r.site)
	got, _ := st.Scan(context.Background(), r.user.ID, sc.ID)
	if got.Status != store.StatusQueued {
		t.Errorf("status after enqueue = %s, want queued", got.Status)
	}
	pool := r.pool(nil)
	storetest.Eventually(func() bool {
		got, _ = st.Scan(context.Background(), r.user.ID, sc.ID)
		return got.Status == store.StatusRunning
	})
	if got.Status != store.StatusRunning || got.PagesTotal != 10 {
		t.Fatalf("while PSI works: status %s, pagesTotal %d; want running, 10", got.Status, got.PagesTotal)
	}
	release()
	done := r.wait(sc.ID)
	if done.Status != store.StatusComplete || done.PagesDone != 10 || done.CompletedAt == nil {
		t.Fatalf("scan = %s, %d/%d done; want complete, 10/10", done.Status, done.PagesDone, done.PagesTotal)
	}
	results, errs := r.results(sc.ID)
	if len(results) != 10 || len(errs) != 0 {
		t.Fatalf("%d results and %d errors, want 10 and 0: %v", len(results), len(errs), errs)
	}
	seen := map[store.PageKey]bool{}
	for _, res := range results {
		k := store.PageKey{PagePath: res.PagePath, Strategy: res.Strategy}
		if seen[k] {
			t.Errorf("duplicate result %v", k)
		}
		seen[k] = true
		if res.PageURL != "https://sample.test"+res.PagePath {
			t.Errorf("pageUrl = %s", res.PageURL)
		}
	}
	want := analysis.ScanScores(results)
	if *done.Scores.Health != *want.Health || *done.Scores.Performance != *want.Performance {
		t.Errorf("scores = %+v, want %+v", done.Scores, want)
	}
	site, _ := st.Site(context.Background(), r.user.ID, r.site.ID)
	if site.HealthScore == nil || *site.HealthScore != *want.Health {
		t.Errorf("site health = %v, want %d", site.HealthScore, *want.Health)
	}
	// The fixtures' home page: performance 16 mobile, 43 desktop.
	home, _ := st.PageResult(context.Background(), r.user.ID, sc.ID, "/", "mobile")
	if home.Scores.Performance == nil || *home.Scores.Performance != 16 {
		t.Errorf("home mobile performance = %v, want 16", home.Scores.Performance)
	}
	pool.Stop(context.Background()) // the log lines follow the writes they report
	for _, line := range []string{"scan started", "page done", "scan complete"} {
		if !strings.Contains(r.logs.String(), line) {
			t.Errorf("logs lack %q", line)
		}
	}
}

func testPSIFaults(t *testing.T, st store.Store) {
	r := newRig(t, st)
	r.psi.Fail("/blog/", "mobile", scantest.Fault{Status: 429, Header: map[string]string{"Retry-After": "0"}, Body: scantest.QuotaBody})
	r.psi.Fail("/pricing", "mobile", scantest.Fault{Status: 500, Body: scantest.ServerErrorBody})
	r.psi.Fail("/about", "mobile", scantest.Fault{Status: 200, Body: `{"lighthouseResult": {"categories": [}`})
	r.psi.Fail("/fast", "mobile", scantest.Fault{Status: 400, Body: scantest.FailedDocumentBody})
	r.psi.Fail("/", "mobile", scantest.Fault{Hang: true})
	r.pool(func(c *PoolConfig) {
		// 1 s: with a scan's audits all in flight at once, a healthy answer under -race on a
		// loaded 2-core machine took over 200 ms, and a timed-out call is retried.
		c.Auditor = psi.New(psi.Config{Endpoint: r.psi.Endpoint(), Client: r.psi.Client(), Timeout: time.Second, Attempts: 2,
			Backoff: time.Millisecond, QuotaBackoff: time.Millisecond, Log: slog.New(slog.NewTextHandler(r.logs, nil))})
	})
	sc := r.wait(r.enqueue(r.site).ID)
	if sc.Status != store.StatusComplete {
		t.Fatalf("status = %s (%s), want complete: the desktop audits succeeded", sc.Status, sc.Error)
	}
	results, errs := r.results(sc.ID)
	if len(results) != 5 || len(errs) != 5 || sc.PagesDone != 10 {
		t.Fatalf("%d results, %d errors, %d done; want 5, 5, 10", len(results), len(errs), sc.PagesDone)
	}
	want := map[string]string{
		"/blog/":   "PSI quota exceeded (HTTP 429)",
		"/pricing": "PSI server error (HTTP 500): Lighthouse returned error: Something went wrong. (gave up after 2 attempts)",
		"/about":   "PSI answered 200 but the body is not JSON",
		"/fast":    "Lighthouse runtime error FAILED_DOCUMENT_REQUEST",
		"/":        "PSI did not answer within 1s (gave up after 2 attempts)",
	}
	for _, e := range errs {
		if e.Strategy != "mobile" || !strings.Contains(e.Error, want[e.PagePath]) {
			t.Errorf("error for %s %s = %q, want it to contain %q", e.PagePath, e.Strategy, e.Error, want[e.PagePath])
		}
	}
	// The client never retries a runtime error: one call, and no retry in its log.
	if n := r.psi.Calls("/fast", "mobile"); n != 1 || strings.Contains(r.logs.String(), `msg="PSI call failed; retrying" page=https://sample.test/fast strategy=mobile`) {
		t.Errorf("the runtime error was called %d times and retried by the client, want once (never retried)", n)
	}
	if !strings.Contains(r.logs.String(), `msg="PSI call failed; retrying" page=https://sample.test/pricing strategy=mobile`) {
		t.Error("the 500 was not logged as retried")
	}
	if n := r.psi.Calls("/pricing", "mobile"); n != 2 {
		t.Errorf("the 500 was called %d times, want 2", n)
	}
	// No worker is stuck: the next scan of another site completes.
	other := r.addSite("Other", []string{"/blog/"})
	if next := r.wait(r.enqueue(other).ID); next.Status != store.StatusComplete {
		t.Errorf("next scan = %s, want complete", next.Status)
	}
}

func testNoPageSucceeded(t *testing.T, st store.Store) {
	r := newRig(t, st)
	site := r.addSite("Broken", []string{"/missing"})
	r.pool(nil)
	sc := r.wait(r.enqueue(site).ID)
	if sc.Status != store.StatusFailed || !strings.Contains(sc.Error, "no page could be audited (2 of 2 failed)") ||
		!strings.Contains(sc.Error, "ERRORED_DOCUMENT_REQUEST") {
		t.Fatalf("scan = %s %q, want failed with the PSI reason", sc.Status, sc.Error)
	}
	if latest, err := st.LatestCompletedScan(context.Background(), r.user.ID, site.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a failed scan counts as latest completed: %v %v", latest.ID, err)
	}
}

// A worker that dies after storing some pages leaves its lease to lapse; the rescuer returns
// the job and a pool resumes it, auditing only the pages not yet stored.
func testRescueResumes(t *testing.T, st store.Store) {
	ctx := context.Background()
	r := newRig(t, st)
	sc := r.enqueue(r.site)
	t0 := time.Now()
	job, err := st.ClaimJob(ctx, store.KindScan, "doomed", t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	dead := job.Lease()
	if err := st.StartScan(ctx, dead, 10, t0); err != nil {
		t.Fatal(err)
	}
	client := psi.New(psi.Config{Endpoint: r.psi.Endpoint(), Client: r.psi.Client()})
	for _, k := range []store.PageKey{{PagePath: "/", Strategy: "mobile"}, {PagePath: "/", Strategy: "desktop"}, {PagePath: "/blog/", Strategy: "mobile"}} {
		res, err := client.Audit(ctx, "https://sample.test"+k.PagePath, k.Strategy)
		if err != nil {
			t.Fatal(err)
		}
		res.PagePath, res.Strategy = k.PagePath, k.Strategy
		if err := st.SavePageResult(ctx, dead, res); err != nil {
			t.Fatal(err)
		}
	}
	before := r.psi.Total()
	// The process is gone: no more heartbeats. The pool's rescuer sees the lease lapse. The lease
	// is long enough (heartbeats every 500 ms) that the live pool's own lease never lapses on a
	// loaded machine, which made a 300 ms lease flaky under -race.
	r.pool(func(c *PoolConfig) { c.Lease, c.RescueEvery = 2*time.Second, 100*time.Millisecond })
	done := r.wait(sc.ID)
	if done.Status != store.StatusComplete || done.PagesDone != 10 {
		t.Fatalf("scan = %s %d/%d (%s)", done.Status, done.PagesDone, done.PagesTotal, done.Error)
	}
	results, _ := r.results(sc.ID)
	if len(results) != 10 {
		t.Errorf("%d results, want 10", len(results))
	}
	if n := r.psi.Total() - before; n != 7 {
		t.Errorf("the resumed scan made %d PSI calls, want 7 (3 pages were already stored)", n)
	}
	j, _ := st.Job(ctx, job.ID)
	if j.Attempt != 2 || j.State != store.JobCompleted {
		t.Errorf("job = %s attempt %d, want completed on attempt 2", j.State, j.Attempt)
	}
	// The dead worker's late write is refused.
	if err := st.SavePageResult(ctx, dead, results[0]); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("stale write: %v, want ErrLeaseLost", err)
	}
}

// flakyStore fails StartScan a set number of times, as a database blip would.
type flakyStore struct {
	store.Store
	failures atomic.Int32
}

func (f *flakyStore) StartScan(ctx context.Context, l store.Lease, n int, now time.Time) error {
	if f.failures.Add(-1) >= 0 {
		return errors.New("connection reset by peer")
	}
	return f.Store.StartScan(ctx, l, n, now)
}

// jobRetries is a scan whose attempts fail to start failures times: backoff is asked for
// attempts 1 and 2, and the third failure fails the scan.
func jobRetries(failures int32, wantStatus store.ScanStatus, wantError string) func(t *testing.T, st store.Store) {
	return func(t *testing.T, st store.Store) {
		flaky := &flakyStore{Store: st}
		flaky.failures.Store(failures)
		r := newRig(t, flaky)
		site := r.addSite("Flaky", []string{"/fast"})
		var attempts []int
		var mu sync.Mutex
		r.pool(func(c *PoolConfig) {
			c.Backoff = func(a int) time.Duration {
				mu.Lock()
				attempts = append(attempts, a)
				mu.Unlock()
				return 10 * time.Millisecond
			}
		})
		sc := r.wait(r.enqueue(site).ID)
		if sc.Status != wantStatus || sc.Error != wantError {
			t.Errorf("scan = %s %q, want %s %q", sc.Status, sc.Error, wantStatus, wantError)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 {
			t.Errorf("backoff asked for attempts %v, want [1 2]", attempts)
		}
	}
}

func testShutdownReleases(t *testing.T, st store.Store) {
	ctx := context.Background()
	jobs := &jobLog{Store: st, jobs: map[string]int64{}}
	r := newRig(t, jobs)
	release := r.psi.Hold()
	defer release()
	sc := r.enqueue(r.site)
	first := NewPool(PoolConfig{Store: jobs, Auditor: psi.New(psi.Config{Endpoint: r.psi.Endpoint(), Client: r.psi.Client()}),
		Poll: 10 * time.Millisecond, Lease: time.Minute, Log: slog.New(slog.NewTextHandler(r.logs, nil))})
	first.Start()
	storetest.WaitFor(t, "a PSI call", func() bool { return r.psi.Total() > 0 })
	stopCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := first.Stop(stopCtx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	got, _ := st.Scan(ctx, r.user.ID, sc.ID)
	if got.Status != store.StatusRunning || got.PagesDone != 0 {
		t.Errorf("after shutdown the scan is %s with %d done; want running with 0 (cancelled audits record nothing)", got.Status, got.PagesDone)
	}
	if !strings.Contains(r.logs.String(), "job released at shutdown") {
		t.Errorf("logs lack the release:\n%s", r.logs.String())
	}
	// The release spends no attempt: the job keeps all its real attempts.
	if j, _ := jobs.job(t, sc.ID); j.State != store.JobAvailable || j.Attempt-j.Snoozes() != 0 || j.LastError != "released at shutdown" {
		t.Errorf("released job = %s, attempt %d with %d snoozes (%q); want available with no attempt spent",
			j.State, j.Attempt, j.Snoozes(), j.LastError)
	}
	release()
	r.pool(nil)
	if done := r.wait(sc.ID); done.Status != store.StatusComplete || done.PagesDone != 10 {
		t.Errorf("resumed scan = %s %d/10", done.Status, done.PagesDone)
	}
	if j, _ := jobs.job(t, sc.ID); j.Attempt <= 1 || j.Attempt-j.Snoozes() != 1 {
		t.Errorf("completed job = attempt %d with %d snoozes, want a new attempt, the first real one", j.Attempt, j.Snoozes())
	}
}

func testTwoPools(t *testing.T, st store.Store) {
	r := newRig(t, st)
	sites := []store.Site{r.site, r.addSite("B", scantest.SamplePages()), r.addSite("C", scantest.SamplePages()), r.addSite("D", scantest.SamplePages())}
	var scans []store.Scan
	for _, s := range sites {
		scans = append(scans, r.enqueue(s))
	}
	r.pool(func(c *PoolConfig) { c.WorkerID = "process-a" })
	r.pool(func(c *PoolConfig) { c.WorkerID = "process-b" })
	for _, sc := range scans {
		if done := r.wait(sc.ID); done.Status != store.StatusComplete || done.PagesDone != 10 {
			t.Errorf("scan = %s %d/10", done.Status, done.PagesDone)
		}
	}
	// 4 scans x 10 audits, each made exactly once.
	if n := r.psi.Total(); n != 40 {
		t.Errorf("%d PSI calls for 4 scans of 10 audits, want 40", n)
	}
	for _, p := range scantest.SamplePages() {
		for _, s := range []store.Strategy{"mobile", "desktop"} {
			if n := r.psi.Calls(p, s); n != 4 {
				t.Errorf("%s %s audited %d times over 4 scans, want 4", p, s, n)
			}
		}
	}
}

// scanWith runs one scan of site on a pool of its own auditing from a fixture PSI, and stops it.
func (r *rig) scanWith(site store.Site, fake *scantest.PSI, digest *notify.Digest) store.Scan {
	r.t.Helper()
	p := r.pool(func(c *PoolConfig) {
		c.Auditor = psi.New(psi.Config{Endpoint: fake.Endpoint(), Client: fake.Client()})
		withDigest(c, digest)
	})
	sc := r.wait(r.enqueue(site).ID)
	p.Stop(context.Background())
	r.sendDigests(p)
	return sc
}

// withDigest registers digest's worker and enqueues a digest job when a scan completes, as run does.
// A nil digest registers none.
func withDigest(c *PoolConfig, digest *notify.Digest) {
	if digest == nil {
		return
	}
	c.Kinds, c.Then = []KindWorker{Work(1, digest.Work)}, notify.AfterScan
}

// sendDigests runs, on a stopped pool, the digest jobs its workers had not claimed yet: one
// step at a time, in the test's goroutine, so the test reads their effect without waiting.
func (r *rig) sendDigests(p *Pool) {
	r.t.Helper()
	for p.kinds[notify.KindDigest].work != nil {
		ran, err := p.WorkOnce(context.Background(), notify.KindDigest)
		if err != nil {
			r.t.Fatal(err)
		}
		if !ran {
			return
		}
	}
}

func testDigest(t *testing.T, st store.Store) {
	r := newRig(t, st)
	before := scantest.NewInProcess("../testdata/psi-before")
	smtpSrv := scantest.NewSMTP(t, false)
	digest := &notify.Digest{Store: st, SMTPAddr: smtpSrv.Addr, From: "SitePulse <sitepulse@example.com>", BaseURL: "http://sitepulse.test",
		Log: slog.New(slog.NewTextHandler(r.logs, nil))}

	r.scanWith(r.site, before, digest)
	if n := len(smtpSrv.Messages()); n != 0 {
		t.Fatalf("the first scan sent %d digests, want 0 (nothing to compare with)", n)
	}
	latest := r.scanWith(r.site, r.psi, digest)
	msgs := smtpSrv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d digests, want 1; logs:\n%s", len(msgs), r.logs.String())
	}
	prevScans, _ := st.CompletedScans(context.Background(), r.user.ID, r.site.ID, 2)
	old, _ := st.PageResults(context.Background(), r.user.ID, prevScans[1].ID)
	now, _ := st.PageResults(context.Background(), r.user.ID, latest.ID)
	regs := analysis.Regressions(old, now)
	if len(regs) == 0 {
		t.Fatal("the fixtures should regress")
	}
	m := msgs[0]
	if m.From != "sitepulse@example.com" || m.To != r.user.Email {
		t.Errorf("envelope %s -> %s", m.From, m.To)
	}
	for _, want := range []string{"Subject: SitePulse: ", "regressions on Sample", "Page", "Metric", latest.ID} {
		if !strings.Contains(m.Data, want) {
			t.Errorf("message lacks %q:\n%s", want, m.Data)
		}
	}
	for _, reg := range regs {
		if !strings.Contains(m.Data, reg.PagePath+" ") || !strings.Contains(m.Data, notify.FmtMetric(reg.Metric, reg.From)) || !strings.Contains(m.Data, notify.FmtMetric(reg.Metric, reg.To)) {
			t.Errorf("message lacks %+v", reg)
		}
	}

	// Notifications off: no message.
	if err := st.SetNotifyRegressions(context.Background(), r.user.ID, false); err != nil {
		t.Fatal(err)
	}
	quiet := r.addSite("Quiet", scantest.SamplePages())
	r.scanWith(quiet, before, digest)
	r.scanWith(quiet, r.psi, digest)
	if n := len(smtpSrv.Messages()); n != 1 {
		t.Errorf("%d digests with notifications off, want still 1", n)
	}

	// A broken SMTP server: logged, and the scan still completes.
	if err := st.SetNotifyRegressions(context.Background(), r.user.ID, true); err != nil {
		t.Fatal(err)
	}
	digest.SMTPAddr = scantest.NewSMTP(t, true).Addr
	loud := r.addSite("Loud", scantest.SamplePages())
	r.scanWith(loud, before, digest)
	if sc := r.scanWith(loud, r.psi, digest); sc.Status != store.StatusComplete {
		t.Errorf("scan with a broken SMTP server = %s", sc.Status)
	}
	if !strings.Contains(r.logs.String(), "digest: sending failed") {
		t.Errorf("the SMTP failure was not logged")
	}
	if !regexp.MustCompile(`msg="scanner: attempt failed; retrying" .*kind=digest`).MatchString(r.logs.String()) {
		t.Errorf("the digest's job was not retried; logs:\n%s", r.logs.String())
	}
}

// On Postgres the dispatcher wakes on LISTEN/NOTIFY: with a poll of an hour, an enqueued scan
// still starts at once.
func TestPoolWakesOnNotify(t *testing.T) {
	st, dsn := storetest.PostgresDSN(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wake, err := postgres.ListenJobs(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs := &jobLog{Store: st, jobs: map[string]int64{}}
	r := newRig(t, jobs)
	site := r.addSite("Notified", []string{"/fast"})
	p := r.pool(func(c *PoolConfig) { c.Poll, c.Wake = time.Hour, wake })
	// The dispatcher has found the queue empty and waits for a wake-up or its hour.
	storetest.WaitFor(t, "the dispatcher's first claim", func() bool { return jobs.claims.Load() > 0 })
	if sc := r.wait(r.enqueue(site).ID); sc.Status != store.StatusComplete {
		t.Errorf("scan = %s", sc.Status)
	}
	p.Stop(context.Background())
}
