package notify

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden/notify")

var (
	now       = time.Date(2026, 11, 24, 14, 9, 30, 0, time.UTC)
	published = time.Date(2026, 11, 24, 14, 2, 0, 0, time.UTC)
)

func ip(v int) *int         { return &v }
func fp(v float64) *float64 { return &v }

func result(path string, strategy store.Strategy, perf int, lcp float64) store.PageResult {
	return store.PageResult{PagePath: path, Strategy: strategy, Scores: store.PageScores{Performance: ip(perf)}, CoreWebVitals: store.Vitals{LCP: fp(lcp)}}
}

func counter() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("evt_%d", n) }
}

// outcome is a completed scan of "Shop" started by Ana's publish.
func outcome(previous, latest []store.PageResult, violations []analysis.Violation, wasBroken bool) Outcome {
	return Outcome{
		Workspace: EventRef{ID: "ws1", Name: "Acme"},
		Site:      store.Site{ID: "site1", Name: "Shop", Domain: "shop.example"},
		Scan:      store.Scan{ID: "scan2", Status: store.StatusComplete, Strategy: store.StrategyBoth, Trigger: store.TriggerWebhook},
		ScanURL:   "https://sitepulse.example.com/sites/site1/scans/scan2",
		Publish:   &store.Publish{PublishedBy: "Ana", PublishedOn: published},
		Previous:  previous, Latest: latest, Violations: violations, BudgetsWereBroken: wasBroken,
	}
}

func types(events []Event) []string {
	out := []string{}
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}

func TestEventsComeFromChangesNotStates(t *testing.T) {
	before := []store.PageResult{result("/", "mobile", 92, 1200), result("/pricing", "mobile", 90, 1500)}
	worse := []store.PageResult{result("/", "mobile", 70, 1300), result("/pricing", "mobile", 40, 5200)}
	broken := []analysis.Violation{{Metric: "performance", Threshold: 80, Actual: 55, Operator: store.OpMin}}

	t.Run("a scan whose regressions survived confirmation raises one event listing them worst first", func(t *testing.T) {
		got := Events(outcome(before, worse, nil, false), now, counter())
		if len(got) != 1 || got[0].Type != EventRegressionConfirmed {
			t.Fatalf("events = %v, want one regression.confirmed", types(got))
		}
		regs := got[0].Data.Regressions
		if len(regs) != 3 || regs[0].PagePath != "/pricing" || regs[2].PagePath != "/" {
			t.Errorf("regressions = %+v, want 3 with /pricing first and / last", regs)
		}
	})
	t.Run("a noisy page the re-audit cleared raises nothing", func(t *testing.T) {
		kept := []store.PageResult{result("/", "mobile", 90, 1250), result("/pricing", "mobile", 89, 1500)}
		if got := Events(outcome(before, kept, nil, false), now, counter()); len(got) != 0 {
			t.Errorf("events = %v, want none", types(got))
		}
	})
	t.Run("a site's first scan has nothing to regress from", func(t *testing.T) {
		if got := Events(outcome(nil, worse, nil, false), now, counter()); len(got) != 0 {
			t.Errorf("events = %v, want none", types(got))
		}
	})
	t.Run("budgets broken three scans in a row alert once, then recover once", func(t *testing.T) {
		var all []string
		was := false
		for _, v := range [][]analysis.Violation{broken, broken, broken, nil, nil} {
			o := outcome(before, before, v, was)
			all = append(all, types(Events(o, now, counter()))...)
			was = o.BudgetsBroken()
		}
		if got, want := strings.Join(all, ","), "budget.broken,budget.recovered"; got != want {
			t.Errorf("events = %s, want %s", got, want)
		}
	})
	t.Run("a failed scan says why and leaves the budget state as it was", func(t *testing.T) {
		o := outcome(before, nil, nil, true)
		o.Scan.Status, o.Scan.Error = store.StatusFailed, "PSI quota exhausted"
		got := Events(o, now, counter())
		if len(got) != 1 || got[0].Type != EventScanFailed || got[0].Data.Reason != "PSI quota exhausted" {
			t.Fatalf("events = %+v, want one scan.failed with the reason", got)
		}
		if !o.BudgetsBroken() {
			t.Error("a failed scan forgot that budgets were broken")
		}
	})
	t.Run("a scan not started by a publish says so with nulls", func(t *testing.T) {
		o := outcome(before, worse, nil, false)
		o.Publish, o.Scan.Trigger = nil, store.TriggerSchedule
		b, _ := json.Marshal(Events(o, now, counter())[0].Scan)
		if !bytes.Contains(b, []byte(`"publishedBy":null,"publishedAt":null`)) {
			t.Errorf("scan = %s, want null publishedBy and publishedAt", b)
		}
	})
}

// fixtureRuns are the recorded runs of the sample site's pages in dir ("psi-before": before the
// bad publish, "psi": after it; testdata/psi-before/site-before.diff says what it changed), as
// the pipeline keeps them, with what explains each.
// They are read once per test binary; each call gets its own copy of the list.
func fixtureRuns(dir string) []store.PageResult {
	fixtureOnce.Do(func() {
		fixtures = map[string][]store.PageResult{}
		for _, d := range []string{"psi-before", "psi"} {
			for _, page := range []string{"about", "blog", "fast", "home", "pricing"} {
				for _, s := range []string{"desktop", "mobile"} {
					b, err := os.ReadFile(filepath.Join("..", "..", "testdata", d, page+"."+s+".json"))
					if err != nil {
						panic(err)
					}
					r, err := lighthouse.ExtractPSI(b)
					if err != nil {
						panic(err)
					}
					fixtures[d] = append(fixtures[d], r)
				}
			}
		}
	})
	return slices.Clone(fixtures[dir])
}

var (
	fixtureOnce sync.Once
	fixtures    map[string][]store.PageResult
)

// sample is one event of each type, the messages the golden files hold; the regression is the
// sample site's publish (testdata/psi-before, then testdata/psi).
func sample() []Event {
	before := []store.PageResult{result("/", "mobile", 92, 1200), result("/pricing", "mobile", 90, 1500), result("/blog/", "desktop", 99, 900)}
	ids := counter()
	out := Events(outcome(fixtureRuns("psi-before"), fixtureRuns("psi"), nil, false), now, ids)
	out = append(out, Events(outcome(before, before, []analysis.Violation{
		{Metric: "performance", Threshold: 80, Actual: 55, Operator: store.OpMin},
		{Metric: "lcp", Threshold: 2500, Actual: 5200, Operator: store.OpMax, PagePath: "/pricing", Strategy: "mobile"},
	}, false), now, ids)...)
	out = append(out, Events(outcome(before, before, nil, true), now, ids)...)
	failed := outcome(before, nil, nil, false)
	failed.Scan.Status, failed.Scan.Error = store.StatusFailed, "every page failed: PSI answered 429 (quota exhausted)"
	return append(out, Events(failed, now, ids)...)
}

func TestMessagesMatchGoldenFiles(t *testing.T) {
	secret := []byte("whsec_test")
	for _, e := range sample() {
		for _, kind := range []string{KindSlack, KindTeams, KindDiscord, KindWebhook} {
			body, h, err := Render(kind, e, secret, now)
			if err != nil {
				t.Fatal(err)
			}
			if h.Get("Content-Type") != "application/json" {
				t.Errorf("%s: Content-Type = %q", kind, h.Get("Content-Type"))
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, body, "", "  "); err != nil {
				t.Fatalf("%s %s: not JSON: %v", kind, e.Type, err)
			}
			golden(t, kind+"-"+e.Type+".json", append(pretty.Bytes(), '\n'))
		}
	}
}

// Each chat message of the sample site's publish lists every regressed page with its
// regressions and its cause (what site-before.diff changed: the widget and the later hero image
// on /, the slower document on /pricing), says who published and links to the scan; it says
// nothing of the pages the publish did not touch.
func TestSlackTeamsDiscordSayWhatChangedWhoPublishedAndLink(t *testing.T) {
	e := sample()[0]
	for _, kind := range []string{KindSlack, KindTeams, KindDiscord} {
		body, _, _ := Render(kind, e, nil, now)
		text := unescape(body)
		for _, want := range []string{"15 confirmed regressions on Shop", "/pricing (mobile): TTFB 89 ms → 901 ms, Performance 80 → 44, LCP 3598 ms → 4621 ms",
			"/ (mobile): CLS 0.000 → 0.390, Performance 49 → 16", "/ (desktop): ", "/pricing (desktop): ",
			"Why: Performance -33 (TBT +1.5 s, LCP +1.2 s, CLS +0.39, FCP +1.0 s, Speed Index +668 ms): new third party widgetly.test: 3 requests, 138 KB, 1.0 s of main-thread work; unsized image body", "img.hero-img (/static/img/hero.jpg) shifted body",
			"the document /pricing took 803 ms longer to arrive (server response 89 ms → 901 ms)",
			"Published by Ana, 24 Nov 14:02", "https://sitepulse.example.com/sites/site1/scans/scan2"} {
			if !strings.Contains(string(body), want) && !strings.Contains(text, want) {
				t.Errorf("%s message lacks %q:\n%s", kind, want, body)
			}
		}
		for _, quiet := range []string{"/blog", "/about", "/fast", "more page"} {
			if strings.Contains(text, quiet) {
				t.Errorf("%s message says %q:\n%s", kind, quiet, body)
			}
		}
	}
	body, _, _ := Render(KindTeams, e, nil, now)
	if !strings.Contains(string(body), `"contentType":"application/vnd.microsoft.card.adaptive"`) {
		t.Errorf("teams message is not an Adaptive Card attachment: %s", body)
	}
	subject, mail := Email(e)
	for _, want := range []string{"SitePulse: 15 confirmed regressions on Shop", "  / (mobile): CLS 0.000 → 0.390", "    Why: Performance -33",
		"    Why: Performance -36 (TBT +2.6 s, LCP +1.0 s, FCP +765 ms): new third party widgetly.test"} {
		if !strings.Contains(subject+"\n"+mail, want) {
			t.Errorf("e-mail lacks %q:\n%s\n%s", want, subject, mail)
		}
	}
	golden(t, "email-regression.confirmed.txt", []byte(subject+"\n\n"+mail))
}

// A regression event's pages past topPages are counted, not listed.
func TestManyRegressedPagesAreCounted(t *testing.T) {
	var before, after []store.PageResult
	for i := range topPages + 2 {
		p := fmt.Sprintf("/p%d", i)
		before, after = append(before, result(p, "mobile", 95, 1000)), append(after, result(p, "mobile", 50, 1000))
	}
	e := Events(outcome(before, after, nil, false), now, counter())[0]
	body, _, _ := Render(KindSlack, e, nil, now)
	if got := unescape(body); !strings.Contains(got, "and 2 more pages") || strings.Contains(got, "/p5") {
		t.Errorf("slack message: %s", body)
	}
}

// unescape reads a JSON body back so → and friends compare as text.
func unescape(body []byte) string {
	var v any
	json.Unmarshal(body, &v)
	b, _ := json.Marshal(v)
	var s strings.Builder
	json.NewEncoder(&s).Encode(v)
	return string(b) + s.String()
}

func TestUserTextCannotBecomeMarkup(t *testing.T) {
	e := sample()[0]
	e.Site.Name = "<!channel> @everyone *Shop*"
	slack, _, _ := Render(KindSlack, e, nil, now)
	if strings.Contains(string(slack), "<!channel>") {
		t.Errorf("slack message mentions the channel: %s", slack)
	}
	discord, _, _ := Render(KindDiscord, e, nil, now)
	if !strings.Contains(string(discord), `"allowed_mentions":{"parse":[]}`) {
		t.Errorf("discord message allows mentions: %s", discord)
	}
}

func TestWebhookIsSignedOverTimestampAndBody(t *testing.T) {
	e := sample()[0]
	secret := []byte("whsec_test")
	body, h, _ := Render(KindWebhook, e, secret, now)
	if h.Get("X-SitePulse-Event") != EventRegressionConfirmed || h.Get("X-SitePulse-Delivery") != e.ID {
		t.Errorf("headers = %v", h)
	}
	sig := h.Get("X-SitePulse-Signature")
	if !strings.HasPrefix(sig, fmt.Sprintf("t=%d,v1=", now.Unix())) {
		t.Errorf("signature = %q", sig)
	}
	var got map[string]json.RawMessage
	json.Unmarshal(body, &got)
	for _, k := range []string{"id", "type", "createdAt", "workspace", "site", "scan", "data"} {
		if _, ok := got[k]; !ok {
			t.Errorf("body lacks %q: %s", k, body)
		}
	}
	for _, c := range []struct {
		name   string
		secret []byte
		body   []byte
		at     time.Time
		ok     bool
	}{
		{"as sent", secret, body, now, true},
		{"within five minutes", secret, body, now.Add(299 * time.Second), true},
		{"replayed after five minutes", secret, body, now.Add(301 * time.Second), false},
		{"under another secret", []byte("whsec_other"), body, now, false},
		{"with one byte changed", secret, append([]byte(nil), append(body[:len(body)-1:len(body)-1], ' ')...), now, false},
		{"with a trailing newline", secret, append(append([]byte(nil), body...), '\n'), now, false},
	} {
		err := Verify(c.secret, sig, c.body, c.at, 5*time.Minute)
		if (err == nil) != c.ok {
			t.Errorf("%s: Verify = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// golden compares got with testdata/golden/notify/<name>; -update rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "golden", "notify", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./scanner/notify -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rewrite with -update and read git diff):\n%s", name, got)
	}
}

// FuzzEventEncoder: whatever users and platforms put in names, paths and reasons, every
// message is valid JSON within the platforms' limits, and the webhook body decodes back to the
// event and verifies under its signature.
func FuzzEventEncoder(f *testing.F) {
	f.Add("Shop", "/pricing", "Ana", "PSI quota", 92, 40)
	f.Add("<!channel> \x00\u2028", "/\"}]", "@everyone", "\xff\xfe", 100, 0)
	f.Fuzz(func(t *testing.T, name, path, by, reason string, from, to int) {
		o := outcome([]store.PageResult{result(path, "mobile", from, 1000)}, []store.PageResult{result(path, "mobile", to, 1000)}, []analysis.Violation{{Metric: "performance", Threshold: 80, Actual: float64(to), Operator: store.OpMin, PagePath: path}}, false)
		o.Site.Name, o.Publish.PublishedBy = name, by
		events := Events(o, now, counter())
		fail := o
		fail.Scan.Status, fail.Scan.Error = store.StatusFailed, reason
		events = append(events, Events(fail, now, counter())...)
		for _, e := range events {
			for _, kind := range []string{KindSlack, KindTeams, KindDiscord, KindWebhook} {
				body, h, err := Render(kind, e, []byte("k"), now)
				if err != nil || !json.Valid(body) {
					t.Fatalf("%s: err %v, body %q", kind, err, body)
				}
				if kind != KindWebhook {
					continue
				}
				if err := Verify([]byte("k"), h.Get("X-SitePulse-Signature"), body, now, time.Minute); err != nil {
					t.Fatal(err)
				}
				var back Event
				if err := json.Unmarshal(body, &back); err != nil || back.ID != e.ID || back.Type != e.Type {
					t.Fatalf("round trip: %v %+v", err, back)
				}
			}
		}
	})
}

// TestTestMessageHasNoEmptyParts: Slack refuses an empty context block and Discord an empty
// footer, so the test message, which has no site or scan, still fills them.
func TestTestMessageHasNoEmptyParts(t *testing.T) {
	e := TestEvent("evt_t", now, EventRef{ID: "u1", Name: "Personal"}, store.Site{}, "https://sitepulse.example.com/settings/notifications")
	for _, kind := range []string{KindSlack, KindTeams, KindDiscord} {
		body, _, _ := Render(kind, e, nil, now)
		if strings.Contains(string(body), `"text":""`) || !strings.Contains(string(body), "Open SitePulse") && kind != KindDiscord {
			t.Errorf("%s test message: %s", kind, body)
		}
	}
}

// Every alert says how sure its cause is (issue 42): the event carries the confidence of each
// page's cause and of each metric's (the webhook's body); a high one is stated plainly ("Why:"),
// a less sure one says so in the Slack, Teams and Discord messages and the e-mail.
func TestWhySaysHowSure(t *testing.T) {
	e := sample()[0]
	changes := analysis.RegressedChanges(runPairs(fixtureRuns("psi-before"), fixtureRuns("psi")))
	low := -1
	for i, c := range e.Data.Changes {
		j := slices.IndexFunc(changes, func(x analysis.PageChange) bool { return x.PagePath == c.PagePath && x.Strategy == c.Strategy })
		main, _ := changes[j].Main()
		if c.Confidence != main.Confidence || c.Confidence == "" {
			t.Errorf("%s (%s): confidence %q, want its cause's (%q)", c.PagePath, c.Strategy, c.Confidence, main.Confidence)
		}
		for k, x := range c.Causes {
			if x.Confidence != changes[j].Causes[k].Confidence || x.Confidence == "" {
				t.Errorf("%s (%s): %s cause confidence %q, want Compare's %q", c.PagePath, c.Strategy, x.Metric, x.Confidence, changes[j].Causes[k].Confidence)
			}
		}
		if c.PagePath == "/" && c.Strategy == store.StrategyMobile {
			low = i
		}
	}
	body, _, _ := Render(KindWebhook, e, []byte("k"), now)
	var hook struct {
		Data struct {
			Changes []struct {
				Confidence string `json:"confidence"`
				Causes     []struct {
					Confidence string `json:"confidence"`
				} `json:"causes"`
			} `json:"changes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &hook); err != nil || len(hook.Data.Changes) == 0 {
		t.Fatalf("webhook body: %v", err)
	}
	for _, c := range hook.Data.Changes {
		if c.Confidence == "" || len(c.Causes) == 0 || slices.ContainsFunc(c.Causes, func(x struct {
			Confidence string `json:"confidence"`
		}) bool {
			return x.Confidence == ""
		}) {
			t.Errorf("the webhook's body does not say how sure each cause is: %+v", c)
		}
	}
	if low < 0 {
		t.Fatal("no change of / (mobile)")
	}
	for i := range e.Data.Changes {
		e.Data.Changes[i].Confidence = analysis.ConfidenceHigh
	}
	e.Data.Changes[low].Confidence = analysis.ConfidenceLow
	for _, kind := range []string{KindSlack, KindTeams, KindDiscord} {
		body, _, _ := Render(kind, e, nil, now)
		text := unescape(body)
		if !strings.Contains(text, "Why (low confidence): Performance -33") || !strings.Contains(text, "Why: Performance -36") {
			t.Errorf("%s message does not hedge only the less sure cause:\n%s", kind, body)
		}
	}
	if _, mail := Email(e); !strings.Contains(mail, "    Why (low confidence): Performance -33") || !strings.Contains(mail, "    Why: Performance -36") {
		t.Errorf("the e-mail does not hedge only the less sure cause:\n%s", mail)
	}
}
