package scanner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/analysis/corpus"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
)

// TestWhyCorpusPipeline: every PSI-shaped pair of the corpus (testdata/why) goes through the
// real pipeline on both stores: the PSI double answers the pair's before run, then its after
// run, the pool audits (re-audits on, as in production), the store keeps what explains each
// run, and the comparison of the two scans' runs (PreviousPairs, CompareAll, what every
// surface reads) scores as in TestCorpus: the change named as the first sentence of the cause
// of the page's regressed metric, and no cause on a page that did not change or got faster.
func TestWhyCorpusPipeline(t *testing.T) {
	pairs, err := corpus.Load(filepath.Join("..", "testdata", "why"))
	if err != nil {
		t.Fatal(err)
	}
	pairs = slices.DeleteFunc(pairs, func(p corpus.Pair) bool { return p.Truth.Shape != "psi" })
	if len(pairs) < 12 {
		t.Fatalf("%d PSI-shaped pairs in the corpus, want at least 12", len(pairs))
	}
	// The double serves a page's fixture by name from a folder: one folder per pair and side.
	dirs := map[string][2]string{}
	for _, p := range pairs {
		var d [2]string
		for i, b := range [][]byte{p.Before, p.After} {
			d[i] = t.TempDir()
			name := scantest.FixtureName(p.Truth.Page) + "." + p.Truth.Strategy + ".json"
			if err := os.WriteFile(filepath.Join(d[i], name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs[p.Name] = d
	}
	onStores(t, storeTest{name: "the corpus's pairs scanned before then after", fn: func(t *testing.T, st store.Store) {
		ctx := context.Background()
		r := newRig(t, st)
		var scores []corpus.Score
		for _, p := range pairs {
			site := r.addSite(p.Name, []string{p.Truth.Page})
			strategy := store.Strategy(p.Truth.Strategy)
			r.corpusScan(site, strategy, dirs[p.Name][0])
			after := r.corpusScan(site, strategy, dirs[p.Name][1])
			sp, err := st.PreviousPairs(ctx, r.user.ID, after.ID)
			if err != nil {
				t.Fatal(err)
			}
			all := analysis.CompareAll(sp.Pairs)
			if len(all) != 1 || all[0].PagePath != p.Truth.Page || all[0].Strategy != strategy {
				t.Fatalf("%s: %d comparisons, want the one of %s %s", p.Name, len(all), p.Truth.Page, strategy)
			}
			s := p.Score(all[0])
			scores = append(scores, s)
			t.Logf("%-8s %-32s %s", s.Verdict, s.Pair, s.Says)
		}
		line, right := corpus.Tally(scores)
		t.Log(line)
		if right < len(scores) {
			t.Errorf("the corpus through the pipeline scores %s; want every pair right", line)
		}
	}})
}

// corpusScan runs one scan of site, on strategy alone, with the PSI double answering from dir.
func (r *rig) corpusScan(site store.Site, strategy store.Strategy, dir string) store.Scan {
	r.t.Helper()
	fake := scantest.NewInProcess(dir)
	p := r.pool(func(c *PoolConfig) {
		c.Auditor, c.ConfirmRuns, c.Retention = psi.New(psi.Config{Endpoint: fake.Endpoint(), Client: fake.Client()}), 2, r.st
	})
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: strategy, Trigger: store.TriggerManual, CreatedAt: time.Now()}
	if err := r.st.EnqueueScan(context.Background(), sc, store.KindScan, time.Now()); err != nil {
		r.t.Fatal(err)
	}
	sc = r.wait(sc.ID)
	p.Stop(context.Background())
	if sc.Status != store.StatusComplete {
		r.t.Fatalf("scan %s: %s", sc.Status, sc.Error)
	}
	return sc
}
