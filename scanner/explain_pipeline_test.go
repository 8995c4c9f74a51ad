package scanner

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/notify"
	"sitepulse/scanner/platform"
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

// TestWhyInEveryAlert: through the real pool, the PSI double answering the sample site's runs
// before the bad publish and then after it, re-audits on as in production, the confirmed
// regressions reach a Slack channel and a signed webhook with their causes: the widget and the
// later hero image on /, the slower document on /pricing, and nothing on /blog, /about and
// /fast, which the publish did not touch. The webhook's changes are analysis.Compare's of the
// two runs each regression compares.
func TestWhyInEveryAlert(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		r := newRig(t, st)
		keys := platform.RandomKeys()
		rc := newReceivers(t, nil)
		r.addChannel(keys, store.ChannelSlack, rc.srv.URL+"/slack", store.EventRegressionConfirmed)
		r.addChannel(keys, store.ChannelWebhook, rc.srv.URL+"/webhook", store.EventRegressionConfirmed)
		clock := scantest.NewClock(time.Now().Add(time.Second))
		ap := r.alertPool(keys, rc.guard().Client(), clock, nil)
		scan := func(dir string) store.Scan {
			fake := scantest.NewInProcess(dir)
			p := r.pool(func(c *PoolConfig) {
				c.Auditor, c.ConfirmRuns, c.Then = psi.New(psi.Config{Endpoint: fake.Endpoint(), Client: fake.Client()}), 2, notify.AfterScan
			})
			sc := r.wait(r.enqueue(r.site).ID)
			p.Stop(ctx)
			if sc.Status != store.StatusComplete {
				t.Fatalf("scan %s: %s", sc.Status, sc.Error)
			}
			clock.Set(time.Now().Add(time.Second))
			drain(t, ap, notify.KindAlerts)
			drain(t, ap, notify.KindDelivery)
			return sc
		}
		scan(beforeDir)
		after := scan(afterDir)

		rc.mu.Lock()
		slack, hook := rc.bodies["/slack"], rc.bodies["/webhook"]
		rc.mu.Unlock()
		if len(slack) != 1 || len(hook) != 1 {
			t.Fatalf("slack got %d messages, the webhook %d; want one each; logs:\n%s", len(slack), len(hook), r.logs.String())
		}
		var msg struct {
			Blocks []struct {
				Text struct{ Text string } `json:"text"`
			} `json:"blocks"`
		}
		if err := json.Unmarshal([]byte(slack[0]), &msg); err != nil || len(msg.Blocks) == 0 {
			t.Fatalf("slack body %v: %s", err, slack[0])
		}
		text := msg.Blocks[0].Text.Text
		for _, want := range []string{
			"/ (mobile): ", "/ (desktop): ", "/pricing (mobile): ", "/pricing (desktop): ",
			"new third party widgetly.test: 3 requests, 138 KB", "(/static/img/hero.jpg) shifted body",
			"the document /pricing took 803 ms longer to arrive", "the document /pricing took 816 ms longer to arrive",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("the Slack message does not say %q:\n%s", want, text)
			}
		}
		for _, quiet := range []string{"/blog", "/about", "/fast"} {
			if strings.Contains(slack[0], quiet) || strings.Contains(hook[0], quiet) {
				t.Errorf("a message names %s, which the publish did not touch:\n%s\n%s", quiet, slack[0], hook[0])
			}
		}

		var e notify.Event
		if err := json.Unmarshal([]byte(hook[0]), &e); err != nil {
			t.Fatal(err)
		}
		pairs, err := st.PreviousPairs(ctx, r.user.ID, after.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := analysis.RegressedChanges(pairs.Pairs)
		if e.Type != store.EventRegressionConfirmed || e.Scan.ID != after.ID || len(e.Data.Changes) != len(want) || len(want) != 4 {
			t.Fatalf("webhook event %s of scan %s with %d changes, want regression.confirmed of %s with 4: %s", e.Type, e.Scan.ID, len(e.Data.Changes), after.ID, hook[0])
		}
		says := map[string][]string{
			"/ mobile":         {"widgetly.test", "/static/img/hero.jpg"},
			"/ desktop":        {"widgetly.test", "/static/img/hero.jpg"},
			"/pricing mobile":  {"the document /pricing took 803 ms longer"},
			"/pricing desktop": {"the document /pricing took 816 ms longer"},
		}
		for _, c := range e.Data.Changes {
			key := c.PagePath + " " + string(c.Strategy)
			i := slices.IndexFunc(want, func(w analysis.PageChange) bool { return w.PagePath == c.PagePath && w.Strategy == c.Strategy })
			if i < 0 || !c.Explained || c.Cause != want[i].Sentence() || len(c.Causes) != len(want[i].Causes) || c.AddedTotal != len(want[i].Added) {
				t.Errorf("%s: the webhook's change is not Compare's of the two runs: %+v", key, c)
				continue
			}
			for _, w := range says[key] {
				if !strings.Contains(c.Cause, w) {
					t.Errorf("%s: cause %q does not name %q", key, c.Cause, w)
				}
			}
			if !slices.ContainsFunc(c.Added, func(q notify.EventRequest) bool { return q.URL == "http://cdn.widgetly.test/widget.js" && q.ThirdParty }) {
				t.Errorf("%s: the added requests lack the widget: %+v", key, c.Added)
			}
			for _, x := range c.Causes {
				if len(x.Reasons) == 0 || x.Sentence == "" {
					t.Errorf("%s: the %s cause names no reason: %+v", key, x.Metric, x)
				}
			}
		}
		if len(hook[0]) > 64<<10 {
			t.Errorf("the webhook body is %d bytes, want it bounded well under 64 KB", len(hook[0]))
		}
	})
}
