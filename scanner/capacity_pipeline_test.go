package scanner

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"

	"sitepulse/scanner/psi"
)

// TestTimeToResults runs scans against PSI doubles with a fixed latency: the quota, not a
// constant, sets how long a scan takes. It runs on the memory store inside a synctest bubble,
// where the limiter, the capacity, the pool and the double's latency share one fake clock, so
// its windows and counts are exact whatever the machine's load; the store's own part of a scan
// is TestPipeline's, on both stores. Wall-clock figures are BenchmarkTimeToResults'.
func TestTimeToResults(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st store.Store)
	}{
		{"a 20-page scan finishes within 1.5x of audits/rate + latency, no window over the rate", testScanAtTheRate},
		{"a key refusing more than 8 calls at once: scans complete, a handful of 429s after the first", testAdaptsTo429s},
		{"a key with a quarter of the configured rate: scans complete, a few 429s after the first", testAdaptsToASmallerQuota},
		{"a small site published after a big one is not starved by it", testSmallSiteNotStarved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { tt.fn(t, memory.New()) })
		})
	}
}

// copies lists each sample page n times ("/about?copy=2"): n*5 pages the double answers from
// the fixtures, each stored as its own page.
func copies(n int) []string {
	var pages []string
	for i := range n {
		for _, p := range scantest.SamplePages() {
			pages = append(pages, fmt.Sprintf("%s?copy=%d", p, i))
		}
	}
	return pages
}

// adaptivePSI is the PSI client as main builds it, on a rate limit of n per window, with a
// capacity of maxInFlight that the pool shares.
func (r *rig) adaptivePSI(n int, window time.Duration, maxInFlight int, recover time.Duration) func(*PoolConfig) {
	limiter := psi.NewRateLimiter(n, window)
	log := slog.New(slog.NewTextHandler(r.logs, nil))
	capacity := psi.NewCapacity(psi.CapacityConfig{MaxInFlight: maxInFlight, Limiter: limiter, Recover: recover, Log: log})
	return func(c *PoolConfig) {
		c.Capacity = capacity
		// Five attempts: under -race beside the whole suite, one audit of the quarter-quota case
		// once met three 429s in a row and ended as a page error.
		c.Auditor = psi.New(psi.Config{Endpoint: r.psi.Endpoint(), Client: r.psi.Client(), Key: "k", Timeout: 10 * time.Second, Attempts: 5, Backoff: 10 * time.Millisecond,
			QuotaBackoff: 50 * time.Millisecond, Limiter: limiter, Capacity: capacity, Log: log})
		c.Lease = 10 * time.Second
	}
}

// The case in miniature: PSI_RATE_LIMIT 400 per 100 s and a 3 s latency allow 12
// calls at once; here 20 per second and 600 ms. 40 audits then take 2 s + 0.6 s at best (the
// sliding window lets 20 go at once, so about 1.6 s); two at a time they took 12 s.
func testScanAtTheRate(t *testing.T, st store.Store) {
	r := newRig(t, st)
	const latency, n, window = 600 * time.Millisecond, 20, time.Second
	r.psi.Delay(latency)
	site := r.addSite("Twenty pages", copies(4))
	r.pool(r.adaptivePSI(n, window, 64, time.Second))
	id := r.enqueue(site).ID
	shown := make(chan int)
	go func() { // what the scan page shows while the scan runs: it lasts over a second
		most := 0
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			sc, err := st.Scan(context.Background(), r.user.ID, id)
			if err != nil || sc.Status == store.StatusComplete || sc.Status == store.StatusFailed {
				shown <- most
				return
			}
			most = max(most, sc.AuditsInFlight)
		}
	}()
	sc := r.wait(id)
	if most := <-shown; most == 0 || sc.AuditsInFlight != 0 {
		t.Errorf("audits in flight: at most %d shown while running, %d once complete; want some, then 0", most, sc.AuditsInFlight)
	}
	if sc.Status != store.StatusComplete || sc.PagesDone != 40 {
		t.Fatalf("scan %s, %d/%d audits done (%s); want complete, 40/40", sc.Status, sc.PagesDone, sc.PagesTotal, sc.Error)
	}
	took := sc.CompletedAt.Sub(*sc.StartedAt)
	ideal := time.Duration(40*float64(window)/n) + latency
	arrivals := r.psi.Arrivals()
	// On fake time the arrivals are the limiter's grants exactly: the whole window counts.
	inWindow := scantest.MaxInWindow(arrivals, window)
	calls, _ := r.psi.MaxInFlight()
	t.Logf("40 audits at %d per %s with %s latency: %s, ideal %s (%.2fx); %d calls, at most %d in a window, %d at once",
		n, window, latency, took.Round(time.Millisecond), ideal, took.Seconds()/ideal.Seconds(), len(arrivals), inWindow, calls)
	if took > ideal*3/2 {
		t.Errorf("the scan took %s, over 1.5x the ideal %s", took.Round(time.Millisecond), ideal)
	}
	if inWindow > n {
		t.Errorf("%d calls arrived within %s; the rate allows %d", inWindow, window, n)
	}
	if len(arrivals) != 40 {
		t.Errorf("%d calls for 40 audits", len(arrivals))
	}
}

// quotaCase is a key whose PSI quota is narrower than the client was configured for.
type quotaCase struct {
	name   string
	refuse func(*scantest.PSI) // how the double refuses calls over the key's quota
	rate   int                 // the configured rate limit, calls per second
}

var (
	// A key whose quota allows 8 calls at once.
	quotaAtOnce = quotaCase{"a key refusing more than 8 calls at once", func(p *scantest.PSI) { p.RefuseAbove(8, 1) }, 1000}
	// A key whose quota is 10 calls a second where 40 are configured. The double counts its
	// window from the calls' arrivals; 950 ms keeps a real machine's delivery delay out of a
	// test this small (on PSI's 100 s it is noise; on fake time there is none).
	quotaRate = quotaCase{"a key with a quarter of the configured rate", func(p *scantest.PSI) { p.RefuseOverRate(10, 950*time.Millisecond, 1) }, 40}
)

// runQuotaCase runs three scans of 20 audits against the case's double answering in 100 ms,
// checks that each completes with every page, and answers the 429s the double gave: all of
// them, and those to calls that arrived once the first 429's Retry-After was over.
func runQuotaCase(tb testing.TB, r *rig, c quotaCase) (all, later int) {
	tb.Helper()
	r.psi.Delay(100 * time.Millisecond)
	c.refuse(r.psi)
	var sites []store.Site
	for i := range 3 {
		sites = append(sites, r.addSite(fmt.Sprint("Site ", i), copies(2)))
	}
	pool := r.pool(r.adaptivePSI(c.rate, time.Second, 64, time.Second))
	var ids []string
	for _, s := range sites {
		ids = append(ids, r.enqueue(s).ID)
	}
	for _, id := range ids {
		sc := r.wait(id)
		results, errs := r.results(id)
		if sc.Status != store.StatusComplete || len(results) != 20 || len(errs) != 0 {
			tb.Errorf("scan %s with %d results and %d errors (%v); want complete, 20, 0", sc.Status, len(results), len(errs), errs)
		}
	}
	pool.Stop(context.Background())
	return r.psi.Refused()
}

// The first burst meets 429s (all sent before any answer came), and the capacity learns from
// them, so calls sent after the first 429's Retry-After are refused only a few times more (a
// recovery step tries 9 again now and then). Every scan completes with every page.
func testAdaptsTo429s(t *testing.T, st store.Store) {
	r := newRig(t, st)
	all, later := runQuotaCase(t, r, quotaAtOnce)
	calls, _ := r.psi.MaxInFlight()
	t.Logf("60 audits against a quota of 8 at once: %d calls, %d refused (%d after the first 429's Retry-After), at most %d at once",
		r.psi.Total(), all, later, calls)
	if all == 0 {
		t.Error("no call was refused: the test did not exercise the limit")
	}
	if later > 10 {
		t.Errorf("%d calls refused after the first 429's Retry-After; want a handful at most", later)
	}
	if t.Failed() {
		t.Logf("logs:\n%s", r.logs)
	}
}

// The first burst meets 429s, the rate limit falls to what PSI accepted, and only the recovery
// steps' probes meet a few more. Every scan completes with every page.
func testAdaptsToASmallerQuota(t *testing.T, st store.Store) {
	r := newRig(t, st)
	all, later := runQuotaCase(t, r, quotaRate)
	t.Logf("60 audits against a quota of 10 a second (40 configured): %d calls, %d refused (%d after the first 429's Retry-After)",
		r.psi.Total(), all, later)
	if all == 0 {
		t.Error("no call was refused: the test did not exercise the quota")
	}
	if later > 20 {
		t.Errorf("%d calls refused after the first 429's Retry-After; want a few at most", later)
	}
	if t.Failed() {
		t.Logf("logs:\n%s", r.logs)
	}
}

// A big site's scan takes every slot of a small capacity; a small site published just after
// gets slots as they free up, and its scan ends long before the big one's.
func testSmallSiteNotStarved(t *testing.T, st store.Store) {
	r := newRig(t, st)
	r.psi.Delay(50 * time.Millisecond)
	big := r.addSite("Big", copies(8))     // 80 audits
	small := r.addSite("Small", copies(1)) // 10 audits
	r.pool(r.adaptivePSI(1000, time.Second, 4, time.Second))
	bigScan := r.enqueue(big)
	storetest.WaitFor(t, "the big scan's first audit", func() bool {
		sc, _ := st.Scan(t.Context(), r.user.ID, bigScan.ID)
		return sc.PagesDone > 0
	})
	smallScan := r.enqueue(small)
	s, b := r.wait(smallScan.ID), r.wait(bigScan.ID)
	if s.Status != store.StatusComplete || b.Status != store.StatusComplete {
		t.Fatalf("scans %s and %s, want both complete", s.Status, b.Status)
	}
	if !s.CompletedAt.Before(*b.CompletedAt) {
		t.Errorf("the small site's scan completed at %s, after the big one's at %s", s.CompletedAt, b.CompletedAt)
	}
	t.Logf("small scan of 10 audits: %s; the big one of 80, started before it: %s",
		s.CompletedAt.Sub(*s.StartedAt).Round(time.Millisecond), b.CompletedAt.Sub(*b.StartedAt).Round(time.Millisecond))
}

// replayedPSI is an auditor whose audits are replayed (a Replayer, as the demo's replay): here
// answered by the PSI double, so the test counts how many run at once.
type replayedPSI struct{ Auditor }

func (replayedPSI) Replays() {}

// A replayed scan runs no Chrome and calls no one, so it takes no slot of the audit capacity
// however small (issue 43: with AUDIT_BACKEND=lighthouse and LIGHTHOUSE_CONCURRENCY=1 the demo's
// 10 replayed audits ran one at a time, 26.7 s where the README says 8-12 s): all its audits run
// at once.
func TestReplayTakesNoAuditSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, memory.New())
		r.psi.Delay(3 * time.Second) // a replayed audit takes 2-4 s
		r.pool(func(c *PoolConfig) {
			c.Capacity = psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1}) // LIGHTHOUSE_CONCURRENCY=1
			c.Auditor = replayedPSI{c.Auditor}
		})
		sc := r.wait(r.enqueue(r.site).ID)
		if sc.Status != store.StatusComplete || sc.PagesDone != 10 {
			t.Fatalf("scan %s, %d/%d done (%s)", sc.Status, sc.PagesDone, sc.PagesTotal, sc.Error)
		}
		if most, _ := r.psi.MaxInFlight(); most != 10 {
			t.Errorf("at most %d replayed audits at once, want all 10: a replay waits for no audit slot", most)
		}
		if took := sc.CompletedAt.Sub(*sc.StartedAt); took > 4*time.Second {
			t.Errorf("the replayed scan took %s of fake time, want about one audit's 3 s", took)
		}
	})
}
