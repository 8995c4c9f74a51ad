package scanner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/analysis/corpus"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"
)

// corpusLighthousePairs are the corpus's pairs re-made end to end with real Chromium (a slower
// route, a late third-party shift, a page that did not change): each is the sample site before
// its bad publish (site-before.diff), then with the pair's change.diff applied.
var corpusLighthousePairs = []string{"slow-route.mobile", "late-consent-banner.mobile", "unchanged-1.mobile"}

// TestLighthouseCorpusWhy: three pairs of the corpus (testdata/why) made again, for real: the
// sample site's variant before the change and then after it (the pair's change.diff), served on
// the same addresses, audited by a real Lighthouse 13 in real Chromium through the pool; the
// comparison of the two scans scores right against the pair's truth, as the recorded runs do in
// TestCorpus. About five minutes; under CI=true it never skips.
func TestLighthouseCorpusWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Chromium")
	}
	lighthouseInstall(t) // skips before anything is served when Lighthouse is missing
	all, err := corpus.Load(filepath.Join("..", "testdata", "why"))
	if err != nil {
		t.Fatal(err)
	}
	truth := map[string]corpus.Pair{}
	for _, p := range all {
		truth[p.Name] = p
	}
	third := freePort(t)
	lh := sampleLighthouse(t, third, "cdn.consently.test")
	port := freePort(t)

	st := memory.New()
	st.Rules = store.SiteRules{AllowPrivate: true}
	r := &rig{t: t, st: st, logs: &scantest.LogBuffer{}, psi: scantest.NewInProcess("../testdata/psi")} // the PSI is unused
	r.user = store.User{ID: store.NewID(), Email: "lh-corpus@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	ctx := context.Background()
	if err := st.CreateUser(ctx, r.user); err != nil {
		t.Fatal(err)
	}
	scan := func(site store.Site) store.Scan {
		p := r.pool(func(c *PoolConfig) {
			c.Auditor, c.Workers, c.Capacity, c.Lease = lh, 1, psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1}), time.Minute
		})
		sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyMobile, Trigger: store.TriggerManual, CreatedAt: time.Now()}
		if err := st.EnqueueScan(ctx, sc, store.KindScan, time.Now()); err != nil {
			t.Fatal(err)
		}
		got := r.scanEnded(sc.ID, 10*time.Minute)
		p.Stop(ctx)
		if _, errs := r.results(sc.ID); got.Status != store.StatusComplete || len(errs) != 0 {
			t.Fatalf("scan %s (%s), page errors %+v; logs:\n%s", got.Status, got.Error, errs, r.logs.String())
		}
		return got
	}
	var scores []corpus.Score
	for _, name := range corpusLighthousePairs {
		p, ok := truth[name]
		if !ok || p.Truth.Strategy != "mobile" {
			t.Fatalf("%s: no mobile pair of that name in the corpus", name)
		}
		before, after := corpusVariant(t, name, false), corpusVariant(t, name, true)
		site := store.Site{ID: store.NewID(), UserID: r.user.ID, Name: name, Domain: fmt.Sprintf("http://127.0.0.1:%d", port),
			Pages: []string{p.Truth.Page}, CreatedAt: time.Now()}
		if err := st.CreateSite(ctx, site); err != nil {
			t.Fatal(err)
		}
		var scans []store.Scan
		for _, root := range []string{before, after} {
			stopMain := serveOn(t, filepath.Join(root, "main"), port)
			stopThird := serveOn(t, filepath.Join(root, "thirdparty"), third)
			scans = append(scans, scan(site))
			stopMain()
			stopThird()
		}
		pairs, err := st.PreviousPairs(ctx, r.user.ID, scans[1].ID)
		if err != nil {
			t.Fatal(err)
		}
		cs := analysis.CompareAll(pairs.Pairs)
		if pairs.From == nil || pairs.From.ID != scans[0].ID || len(cs) != 1 || !cs[0].Explained {
			t.Fatalf("%s: pairs from %+v, %d comparisons", name, pairs.From, len(cs))
		}
		s := p.Score(cs[0])
		scores = append(scores, s)
		t.Logf("%-8s %-28s %s", s.Verdict, name, s.Says)
	}
	line, right := corpus.Tally(scores)
	t.Log(line)
	if right < len(scores) {
		t.Errorf("the pairs made again with real Chromium score %s; want every pair right", line)
	}
}

// corpusVariant builds a pair's site under a temporary folder: testdata/site's main and
// thirdparty, the sample site before its bad publish (site-before.diff), and, for after, the
// pair's change.diff on top. It returns the folder holding main/ and thirdparty/.
func corpusVariant(t *testing.T, pair string, after bool) string {
	t.Helper()
	root := t.TempDir()
	copyTree(t, "../testdata/site/main", filepath.Join(root, "main"))
	copyTree(t, "../testdata/site/thirdparty", filepath.Join(root, "thirdparty"))
	applyDiff(t, root, "../testdata/psi-before/site-before.diff", 5)
	if !after {
		return root
	}
	change := filepath.Join("..", "testdata", "why", pair, "change.diff")
	f, err := os.Open(change)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() { // a file the change adds starts empty, as diff -N has it
		if name, ok := strings.CutPrefix(sc.Text(), "--- before/"); ok {
			path := filepath.Join(root, filepath.FromSlash(name))
			if _, err := os.Stat(path); os.IsNotExist(err) {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if strings.HasPrefix(sc.Text(), "Generated or binary file") {
			t.Fatalf("%s changes a binary or generated file; only a text change can be made again: %s", change, sc.Text())
		}
	}
	applyDiff(t, root, change, 1)
	return root
}
