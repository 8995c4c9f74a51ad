package scanner

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"

	"sitepulse/scanner/psi"
)

// clearReason matches every way a page's audit may fail against a misbehaving PSI: each says
// what PSI did, in words a site owner can act on.
var clearReason = regexp.MustCompile(`^(PSI quota exceeded \(HTTP 429\)|PSI server error \(HTTP 50[0-9]\)|` +
	`PSI did not answer within 1s|PSI answered 200 but )`)

// PSI misbehaving in a mix, as it does on a bad day: bursts of 429, 500s and a front end's 502s,
// calls that never answer, and 200s whose body is not a result. Scans still end, each with a
// result or a clear reason for every page; the calls stay within the rate limit in every
// window; no worker is stuck (scans after the storm complete); and memory and goroutines stay
// flat over many scans.
//
// It runs inside a synctest bubble with the double in process: the limiter, the timeouts and
// the backoffs run on fake time, so the rate limit is checked on the exact window.
func TestPSIFaultMix(t *testing.T) { synctest.Test(t, testPSIFaultMix) }

func testPSIFaultMix(t *testing.T) {
	r := newRig(t, memory.New())
	mix := scantest.NewMix("../testdata/psi", scantest.MixConfig{
		Quota: 0.08, QuotaBurst: 4, ServerError: 0.1, Timeout: 0.05, Garbage: 0.1, Seed: 7})
	const limit, window = 80, 2 * time.Second // PSI_RATE_LIMIT in miniature: 80 calls per 2 s
	sends := &sendLog{next: mix.Client().Transport}
	r.pool(func(c *PoolConfig) {
		c.Auditor = psi.New(psi.Config{Client: &http.Client{Transport: sends}, Endpoint: mix.Endpoint(), Key: "AIzaSyFAKE-key-for-the-fault-tests_01", Timeout: time.Second, Attempts: 3,
			Backoff: 10 * time.Millisecond, QuotaBackoff: 50 * time.Millisecond, Limiter: psi.NewRateLimiter(limit, window)})
	})
	pages := []string{"/", "/about", "/blog/"}
	const rounds, sitesPerRound = 6, 8
	var heap0, heapN runtime.MemStats
	goroutines0 := 0
	scans, failedScans, pageErrs := 0, 0, 0
	reasons := map[string]int{}
	began := time.Now()
	for round := range rounds {
		var ids []string
		var sites []store.Site
		for i := range sitesPerRound {
			s := r.addSite(fmt.Sprintf("Round %d site %d", round, i), pages)
			sites = append(sites, s)
			ids = append(ids, r.enqueue(s).ID)
		}
		for _, id := range ids {
			sc := r.wait(id)
			scans++
			results, errs := r.results(id)
			if sc.PagesDone != 6 || len(results)+len(errs) != 6 {
				t.Errorf("scan %s: %d done, %d results, %d errors; want every one of 6 audits settled", sc.Status, sc.PagesDone, len(results), len(errs))
			}
			if sc.Status == store.StatusFailed {
				failedScans++
				if !strings.HasPrefix(sc.Error, "no page could be audited") {
					t.Errorf("failed scan's reason = %q", sc.Error)
				}
			}
			for _, e := range errs {
				pageErrs++
				reasons[clearReason.FindString(e.Error)]++
				if !clearReason.MatchString(e.Error) {
					t.Errorf("page %s %s failed for an unclear reason: %q", e.PagePath, e.Strategy, e.Error)
				}
			}
		}
		for _, s := range sites { // what a user deleting sites frees
			if err := r.st.DeleteSite(context.Background(), r.user.ID, s.ID); err != nil {
				t.Fatal(err)
			}
		}
		if round == 0 { // the baseline, once pools, connections and caches are warm
			runtime.GC()
			runtime.ReadMemStats(&heap0)
			goroutines0 = runtime.NumGoroutine()
		}
	}
	took := time.Since(began)

	// No worker is stuck: with PSI well again, more scans than workers all complete.
	mix.Set(scantest.MixConfig{})
	var after []string
	for i := range 4 {
		after = append(after, r.enqueue(r.addSite(fmt.Sprintf("After %d", i), pages)).ID)
	}
	for _, id := range after {
		if sc := r.wait(id); sc.Status != store.StatusComplete {
			t.Errorf("scan after the storm: %s (%s), want complete", sc.Status, sc.Error)
		}
		if res, errs := r.results(id); len(res) != 6 || len(errs) != 0 {
			t.Errorf("scan after the storm: %d results, %d errors; want 6, 0", len(res), len(errs))
		}
	}

	// Every goroutine left is idle: hung calls ended with their client's timeout.
	synctest.Wait()
	runtime.GC()
	runtime.ReadMemStats(&heapN)
	goroutinesN := runtime.NumGoroutine()

	// Calls are counted when this process sends them; on fake time they arrive at once.
	sent := sends.times()
	arrivals := mix.Arrivals()
	exact := scantest.MaxInWindow(sent, window)
	atServer := scantest.MaxInWindow(arrivals, window)
	kinds := mix.Kinds()
	var reasonLines []string
	for k, n := range reasons {
		reasonLines = append(reasonLines, fmt.Sprintf("%q x%d", k, n))
	}
	sort.Strings(reasonLines)
	t.Logf("%d scans in %d rounds over %s: %d failed (no page audited), %d page errors; PSI answers %v",
		scans, rounds, took.Round(time.Millisecond), failedScans, pageErrs, kinds)
	t.Logf("page error reasons: %s", strings.Join(reasonLines, ", "))
	t.Logf("rate limit %d per %s: at most %d calls sent in any %s window (%d arrived at the fake in one); %d calls, %.1f/s overall",
		limit, window, exact, window, atServer, len(sent), float64(len(sent))/took.Seconds())
	t.Logf("heap after round 1: %.1f MiB, after %d rounds and 4 more scans: %.1f MiB; goroutines %d -> %d",
		float64(heap0.HeapAlloc)/(1<<20), rounds, float64(heapN.HeapAlloc)/(1<<20), goroutines0, goroutinesN)

	if exact > limit || atServer > limit {
		t.Errorf("%d calls sent (%d arrived) within %s, over the limit of %d", exact, atServer, window, limit)
	}
	if kinds[scantest.KindQuota] == 0 || kinds[scantest.KindServerError] == 0 || kinds[scantest.KindTimeout] == 0 || kinds[scantest.KindGarbage] == 0 {
		t.Errorf("the mix did not exercise every fault: %v", kinds)
	}
	if grew := int64(heapN.HeapAlloc) - int64(heap0.HeapAlloc); grew > 32<<20 {
		t.Errorf("heap grew by %.1f MiB over %d scans; want it flat (under 32 MiB)", float64(grew)/(1<<20), scans)
	}
	if goroutinesN > goroutines0+10 {
		t.Errorf("goroutines grew from %d to %d: something is stuck", goroutines0, goroutinesN)
	}
	if t.Failed() {
		t.Logf("logs:\n%s", r.logs)
	}
}

// sendLog records when each PSI call leaves this process.
type sendLog struct {
	next http.RoundTripper
	mu   sync.Mutex
	at   []time.Time
}

func (s *sendLog) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	return s.next.RoundTrip(r)
}

func (s *sendLog) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...)
}
