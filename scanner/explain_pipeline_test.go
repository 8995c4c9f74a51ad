package scanner

import (
	"context"
	"strings"
	"testing"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
)

// TestWhyPipeline: the real pipeline, with the PSI double answering the recorded runs of the
// sample site before a bad publish and then after it, keeps what explains each run and names
// what the publish changed (testdata/psi-before/site-before.diff) as the cause of each
// regression, and nothing on the pages it did not touch; the screenshots of both sides of the
// regressions outlast the pruner, the others do not.
func TestWhyPipeline(t *testing.T) {
	onStores(t, storeTest{name: "before then after the publish: the causes are what the publish changed", fn: testWhyPipeline})
}

// whyScan runs one scan of the rig's site on the PSI double, re-audits on as in production.
func (r *rig) whyScan(fake *scantest.PSI) (store.Scan, *Pool) {
	r.t.Helper()
	p := r.pool(func(c *PoolConfig) {
		c.Auditor, c.ConfirmRuns, c.Retention = psi.New(psi.Config{Endpoint: fake.Endpoint(), Client: fake.Client()}), 2, r.st
	})
	sc := r.wait(r.enqueue(r.site).ID)
	p.Stop(context.Background())
	if sc.Status != store.StatusComplete {
		r.t.Fatalf("scan %s: %s", sc.Status, sc.Error)
	}
	return sc, p
}

func testWhyPipeline(t *testing.T, st store.Store) {
	ctx := context.Background()
	r := newRig(t, st)
	before, _ := r.whyScan(scantest.NewInProcess(beforeDir))
	after, _ := r.whyScan(scantest.NewInProcess(afterDir))

	pairs, err := st.PreviousPairs(ctx, r.user.ID, after.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pairs.From == nil || pairs.From.ID != before.ID || len(pairs.Pairs) != 10 {
		t.Fatalf("previous pairs: from %+v, %d pairs; want the scan before and 10", pairs.From, len(pairs.Pairs))
	}
	changes := analysis.RegressedChanges(pairs.Pairs)
	says := map[string][]string{
		"/ mobile": {"new third party widgetly.test: 3 requests, 138 KB", "new render-blocking stylesheet cdn.widgetly.test/fonts/brand.css",
			"the LCP image /static/img/hero.jpg arrived 1.1 s later", "unsized image body > section.hero > img.hero-img", "content inserted later"},
		"/ desktop": {"new third party widgetly.test", "brand.css", "the LCP image /static/img/hero.jpg arrived 1.2 s later", "unsized image",
			"content inserted later shifted body > section.hero"},
		"/pricing mobile":  {"the document /pricing took 803 ms longer to arrive (server response 89 ms → 901 ms)", "new third party widgetly.test"},
		"/pricing desktop": {"the document /pricing took 816 ms longer to arrive", "new third party widgetly.test"},
	}
	if len(changes) != len(says) {
		for _, c := range changes {
			t.Logf("%s %s: %s", c.PagePath, c.Strategy, c.Summary)
		}
		t.Fatalf("%d regressed pages explained, want %d", len(changes), len(says))
	}
	for _, c := range changes {
		want, ok := says[c.PagePath+" "+string(c.Strategy)]
		if !ok {
			t.Errorf("%s %s regressed", c.PagePath, c.Strategy)
			continue
		}
		for _, w := range want {
			if !strings.Contains(c.Summary, w) {
				t.Errorf("%s %s: %q\n does not say %q", c.PagePath, c.Strategy, c.Summary, w)
			}
		}
		for _, reg := range c.Regressions { // every regression the alerts report has its cause
			if cause, ok := c.CauseOf(reg.Metric); !ok || len(cause.Reasons) == 0 {
				t.Errorf("%s %s: the %s regression has no cause", c.PagePath, c.Strategy, reg.Metric)
			}
		}
	}
	for _, c := range analysis.CompareAll(pairs.Pairs) {
		if strings.HasPrefix(c.PagePath, "/pricing") || c.PagePath == "/" {
			continue
		}
		if len(c.Causes) != 0 || c.Changed() {
			t.Errorf("%s %s changed: %s", c.PagePath, c.Strategy, c.Summary)
		}
	}

	// Two more scans after the publish: the pruner releases every picture but those of the
	// latest two scans and both sides of the regressions.
	for range 2 {
		r.whyScan(scantest.NewInProcess(afterDir))
	}
	_, p := r.whyScan(scantest.NewInProcess(afterDir))
	if _, err := p.PruneOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scan     store.Scan
		path     string
		strategy store.Strategy
		kept     bool
	}{
		{before, "/", "mobile", true}, {after, "/", "mobile", true}, {before, "/pricing", "desktop", true}, {after, "/pricing", "desktop", true},
		{before, "/blog/", "mobile", false}, {after, "/blog/", "mobile", false}, {after, "/fast", "desktop", false},
	} {
		list, err := st.PageImages(ctx, r.user.ID, tc.scan.ID, tc.path, tc.strategy)
		if err != nil {
			t.Fatal(err)
		}
		if (len(list) > 0) != tc.kept {
			t.Errorf("%s %s of the scan %s the publish: %d pictures kept, want kept %v", tc.path, tc.strategy,
				map[bool]string{true: "before", false: "after"}[tc.scan.ID == before.ID], len(list), tc.kept)
		}
	}
}
