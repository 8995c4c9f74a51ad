package scanner

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
)

// fakeRunners is a runner queue whose runner finishes every audit at once with report, as the
// runner named by next.
type fakeRunners struct {
	mu       sync.Mutex
	report   []byte
	next     []string // the runner of each audit, in turn
	enqueued []store.RunnerAudit
	audits   map[string]store.RunnerAudit
}

func (f *fakeRunners) RunnersServe(context.Context, string) (bool, error)      { return true, nil }
func (f *fakeRunners) SiteLocations(context.Context, string) ([]string, error) { return nil, nil }
func (f *fakeRunners) EnqueueRunnerAudit(_ context.Context, a store.RunnerAudit) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enqueued = append(f.enqueued, a)
	a.State, a.Report, a.Benchmark, a.Location = store.RunnerDone, f.report, 900, "lab"
	a.Runner, f.next = f.next[0], f.next[1:]
	f.audits[a.ID] = a
	return nil
}
func (f *fakeRunners) RunnerAudit(_ context.Context, id string) (store.RunnerAudit, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.audits[id]
	if !ok {
		return a, store.ErrNotFound
	}
	return a, nil
}
func (f *fakeRunners) ForgetRunnerAudits(context.Context, string) error { return nil }
func (f *fakeRunners) DeleteRunnerAudit(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.audits, id)
	return nil
}

// A confirmation re-audit of a page prefers another runner than the one that saw it: each
// audit of the same page and strategy after the first avoids the runner of the one before;
// the result records its runner's location and benchmark index, and the audit is forgotten.
func TestLeasedReauditAvoidsTheRunnerThatSawIt(t *testing.T) {
	body, err := os.ReadFile("../testdata/psi/home.mobile.json")
	must(t, err)
	var psi struct {
		LighthouseResult json.RawMessage `json:"lighthouseResult"`
	}
	must(t, json.Unmarshal(body, &psi))
	q := &fakeRunners{report: psi.LighthouseResult, next: []string{"tok/a", "tok/b", "tok/a", "tok/a"}, audits: map[string]store.RunnerAudit{}}
	p := NewPool(PoolConfig{Runners: q, RunnerPoll: time.Millisecond})
	a := &leasedAuditor{p: p, workspace: store.NewID(), site: store.NewID(), scan: store.NewID(), last: map[store.PageKey]string{}}
	for range 3 {
		r, err := a.Audit(context.Background(), "https://x.test/", store.StrategyMobile)
		must(t, err)
		if r.Location != "lab" || r.BenchmarkIndex != 900 || r.Scores.Performance == nil {
			t.Fatalf("result: location %q, benchmark %v", r.Location, r.BenchmarkIndex)
		}
	}
	_, err = a.Audit(context.Background(), "https://x.test/other", store.StrategyMobile)
	must(t, err)
	var avoided []string
	for _, e := range q.enqueued {
		avoided = append(avoided, e.Avoid)
	}
	if want := []string{"", "tok/a", "tok/b", ""}; !slices.Equal(avoided, want) {
		t.Errorf("audits avoided %q, want %q", avoided, want)
	}
	if len(q.audits) != 0 {
		t.Errorf("%d audits left behind", len(q.audits))
	}
}
