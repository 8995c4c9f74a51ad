package handlers

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"sitepulse/handlers/ci"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// ciAnswer is a budget check's answer as a pipeline reads it.
type ciAnswer struct {
	resp *http.Response
	body string
}

// check sends a budget check with a credential, a query and an Accept header.
func (f *ciFixture) check(t *testing.T, ctx context.Context, c cred, query, accept, body string) ciAnswer {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", f.URL+"/api/external/budget-check"+query, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return ciAnswer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return ciAnswer{resp, string(b)}
}

// background sends a budget check that waits, and answers its result on a channel.
func (f *ciFixture) background(t *testing.T, ctx context.Context, c cred, query, body string) <-chan ciAnswer {
	out := make(chan ciAnswer, 1)
	go func() { out <- f.check(t, ctx, c, query, "", body) }()
	return out
}

// waitTimer waits until the handler set the timer of a wait of d: the request is parked.
func (f *ciFixture) waitTimer(t *testing.T, d time.Duration) {
	t.Helper()
	storetest.WaitFor(t, "the budget check's wait of "+d.String(), func() bool { return slices.Contains(f.clock.Pending(), d) })
}

func receive(t *testing.T, ch <-chan ciAnswer, what string) ciAnswer {
	t.Helper()
	select {
	case a := <-ch:
		if a.resp == nil {
			t.Fatalf("%s: no answer", what)
		}
		return a
	case <-time.After(storetest.Timeout()):
		t.Fatalf("%s: still waiting after %s", what, storetest.Timeout())
	}
	return ciAnswer{}
}

// ciVerdict is the extended JSON answer, loosely.
type ciVerdict struct {
	Pass           *bool            `json:"pass"`
	ScanID         *string          `json:"scanId"`
	Status         *string          `json:"status"`
	Reason         *string          `json:"reason"`
	ScanURL        *string          `json:"scanUrl"`
	Commit         *string          `json:"commit"`
	PublishedBy    *string          `json:"publishedBy"`
	PreviousScanID *string          `json:"previousScanId"`
	Violations     []map[string]any `json:"violations"`
	Changes        []struct {
		Metric, PagePath string
		Causes           []string `json:"causes"`
		Confidence       *string  `json:"confidence"`
	} `json:"changes"`
	raw map[string]any
}

func decodeVerdict(t *testing.T, a ciAnswer) ciVerdict {
	t.Helper()
	var v ciVerdict
	must(t, json.Unmarshal([]byte(a.body), &v))
	must(t, json.Unmarshal([]byte(a.body), &v.raw))
	return v
}

var interfaceKeys = []string{"pass", "site", "scores", "violations", "scanId", "scannedAt"}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestBudgetCheckForCI walks the budget check's CI parameters (scanId, waitSeconds, format)
// on both stores: every status of the interface's error shapes, another site's and account's
// scans 404, the wait released by a completing scan with the clock standing still, the wait
// running out on the fake clock, a failed scan and none at all; the interface's own answer
// unchanged.
func TestBudgetCheckForCI(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { testBudgetCheckForCI(t, b.Open(t)) })
	}
}

func testBudgetCheckForCI(t *testing.T, st store.Store) {
	f := newCIFixture(t, st, nil)
	ctx := context.Background()
	a := f.a
	key := bearer(a.apiKey)
	body := func(extra string) string { return `{"siteId":"` + a.siteID + `"` + extra + `}` }
	scans, err := st.CompletedScans(ctx, a.userID, a.siteID, 2)
	must(t, err)
	latest, older := scans[0], scans[1]

	t.Run("a check asked as the interface shows keeps its answer exactly", func(t *testing.T) {
		plain := f.check(t, ctx, key, "", "", body(""))
		for _, accept := range []string{"application/json", "text/html", "*/*", "application/json, text/markdown;q=0.5"} {
			got := f.check(t, ctx, key, "", accept, body(""))
			if got.resp.StatusCode != 200 || got.body != plain.body || got.resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Accept %q: %d %s\nplain: %s", accept, got.resp.StatusCode, got.body, plain.body)
			}
		}
		if keys := keysOf(decodeVerdict(t, plain).raw); !slices.Equal(keys, slices.Sorted(slices.Values(interfaceKeys))) {
			t.Errorf("keys %v, want the interface's %v", keys, interfaceKeys)
		}
	})

	t.Run("scanId judges that scan and adds what changed since the one before", func(t *testing.T) {
		plain := decodeVerdict(t, f.check(t, ctx, key, "", "", body("")))
		got := f.check(t, ctx, key, "", "", body(`,"scanId":"`+latest.ID+`"`))
		v := decodeVerdict(t, got)
		if got.resp.StatusCode != 200 || *v.ScanID != latest.ID || *v.Status != "complete" || v.Reason != nil ||
			*v.ScanURL != "http://sitepulse.test/sites/"+a.siteID+"/scans/"+latest.ID || *v.PreviousScanID != older.ID {
			t.Fatalf("%d %s", got.resp.StatusCode, got.body)
		}
		for _, k := range interfaceKeys {
			x, _ := json.Marshal(plain.raw[k])
			y, _ := json.Marshal(v.raw[k])
			if string(x) != string(y) {
				t.Errorf("%s = %s, the plain check's %s", k, y, x)
			}
		}
		if len(v.Changes) == 0 {
			t.Errorf("the demo's latest scan regressed, but no changes: %s", got.body)
		}
		// Each regression has its cause: what changed between the two runs (the demo's are the
		// sample site's before and after the publish of testdata/psi-before/site-before.diff).
		says := map[string]string{"/": "widgetly.test", "/pricing": "the document /pricing took"}
		for _, c := range v.Changes {
			if c.Metric == "" || c.PagePath == "" || len(c.Causes) != 1 || c.Causes[0] == "" {
				t.Errorf("change %+v", c)
				continue
			}
			// How sure the cause is (issue 42): the demo's regressions each name a change.
			if c.Confidence == nil || !slices.Contains([]string{analysis.ConfidenceHigh, analysis.ConfidenceMedium, analysis.ConfidenceLow}, *c.Confidence) {
				t.Errorf("the %s regression of %s: confidence %v, want high, medium or low", c.Metric, c.PagePath, c.Confidence)
			}
			if w, ok := says[c.PagePath]; ok && c.Metric == "performance" && !strings.Contains(c.Causes[0], w) {
				t.Errorf("the performance regression of %s: cause %q does not name %q", c.PagePath, c.Causes[0], w)
			}
			if _, ok := says[c.PagePath]; !ok {
				t.Errorf("%s regressed, which the publish did not touch: %+v", c.PagePath, c)
			}
		}
		first := decodeVerdict(t, f.check(t, ctx, key, "", "", body(`,"scanId":"`+older.ID+`"`)))
		if *first.ScanID != older.ID || first.PreviousScanID != nil || first.Changes == nil || len(first.Changes) != 0 {
			t.Errorf("the first scan: %+v", first.raw)
		}
	})

	// A second site of A's with a scan, and a scan of B's site.
	otherSite := f.newSite(t, a.userID, "Other Site")
	otherScan := f.recordScan(t, otherSite, fixtureResults(t, "fast.mobile"), f.now.Add(-time.Hour))
	bScan := f.recordScan(t, f.b.siteID, fixtureResults(t, "fast.mobile"), f.now.Add(-time.Hour))

	t.Run("refusals", func(t *testing.T) {
		tests := []struct {
			name   string
			query  string
			body   string
			cred   cred
			status int
			fields []string
		}{
			{"a scan of another site of the account is 404", "", body(`,"scanId":"` + otherScan + `"`), key, 404, nil},
			{"another account's scan is 404", "", body(`,"scanId":"` + bScan + `"`), key, 404, nil},
			{"another account's scan with its own site is 404", "", `{"siteId":"` + f.b.siteID + `","scanId":"` + bScan + `"}`, key, 404, nil},
			{"another account's key on the site is 404", "", body(`,"scanId":"` + latest.ID + `"`), bearer(f.b.apiKey), 404, nil},
			{"another account's key asking markdown is 404 JSON", "?format=markdown", body(""), bearer(f.b.apiKey), 404, nil},
			{"an unknown scan is 404", "", body(`,"scanId":"` + store.NewID() + `"`), key, 404, nil},
			{"an unknown key is 401 whatever the format", "?format=junit", body(""), bearer("svc_notakey"), 401, nil},
			{"an unknown key with a bad waitSeconds is 401", "", body(`,"waitSeconds":-1`), bearer("svc_notakey"), 401, nil},
			{"an OAuth access token is 401", "?format=markdown", body(""), bearer(a.accessToken), 401, nil},
			{"a body that is not JSON is 400", "?format=markdown", "siteId=" + a.siteID, key, 400, nil},
			{"a scanId that is not a uuid is 422", "", body(`,"scanId":"latest"`), key, 422, []string{"scanId"}},
			{"a negative wait is 422", "", body(`,"waitSeconds":-1`), key, 422, []string{"waitSeconds"}},
			{"a wait over 600 s is 422", "", body(`,"waitSeconds":601`), key, 422, []string{"waitSeconds"}},
			{"a fractional wait is 422", "", body(`,"waitSeconds":1.5`), key, 422, []string{"waitSeconds"}},
			{"a wait given as a string is 422", "", body(`,"waitSeconds":"10"`), key, 422, []string{"waitSeconds"}},
			{"a huge wait is 422", "", body(`,"waitSeconds":1e308`), key, 422, []string{"waitSeconds"}},
			{"an unknown format is 422", "?format=pdf", body(""), key, 422, []string{"format"}},
			{"an unknown format in the body is 422", "", body(`,"format":"pdf"`), key, 422, []string{"format"}},
			{"the body's format and the query's disagreeing is 422", "?format=markdown", body(`,"format":"junit"`), key, 422, []string{"format"}},
			{"a bad siteId and a bad wait say both", "", `{"siteId":"x","waitSeconds":700}`, key, 422, []string{"siteId", "waitSeconds"}},
			{"a bad siteId and a bad format say both", "?format=pdf", `{"siteId":"x"}`, key, 422, []string{"siteId", "format"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got := f.check(t, ctx, tt.cred, tt.query, "", tt.body)
				if got.resp.StatusCode != tt.status {
					t.Fatalf("status %d, want %d: %.300s", got.resp.StatusCode, tt.status, got.body)
				}
				if tt.status != 422 {
					wantErrorShape(t, got.resp, got.body, "")
				} else {
					var e struct {
						Error struct {
							FieldErrors map[string][]string `json:"fieldErrors"`
						} `json:"error"`
					}
					must(t, json.Unmarshal([]byte(got.body), &e))
					if keys := slices.Sorted(maps.Keys(e.Error.FieldErrors)); !slices.Equal(keys, slices.Sorted(slices.Values(tt.fields))) {
						t.Errorf("fields %v, want %v: %s", keys, tt.fields, got.body)
					}
				}
				if strings.Contains(got.body, "Demo Site") || strings.Contains(got.body, "Other Site") {
					t.Errorf("a refusal leaks a site: %s", got.body)
				}
			})
		}
	})

	t.Run("a site with no completed scan cannot be judged: 200, pass false, the reason", func(t *testing.T) {
		bKey := bearer(f.b.apiKey)
		fresh := f.newSite(t, f.b.userID, "Fresh Site")
		v := decodeVerdict(t, f.check(t, ctx, bKey, "?format=json", "", `{"siteId":"`+fresh+`"}`))
		if *v.Pass || v.Status != nil || v.ScanID != nil || v.Reason == nil || !strings.Contains(*v.Reason, "no completed scan") {
			t.Errorf("%+v", v.raw)
		}
		md := f.check(t, ctx, bKey, "?format=markdown", "", `{"siteId":"`+fresh+`"}`)
		if md.resp.StatusCode != 200 || !strings.Contains(md.body, "could not judge Fresh Site") {
			t.Errorf("markdown %d:\n%s", md.resp.StatusCode, md.body)
		}
		// The format in the body, beside siteId, as a CI step that builds one JSON body sends it.
		md = f.check(t, ctx, bKey, "", "", `{"siteId":"`+fresh+`","format":"markdown"}`)
		if md.resp.StatusCode != 200 || !strings.HasPrefix(md.resp.Header.Get("Content-Type"), "text/markdown") || !strings.Contains(md.body, "could not judge Fresh Site") {
			t.Errorf("markdown asked in the body: %d %s:\n%s", md.resp.StatusCode, md.resp.Header.Get("Content-Type"), md.body)
		}
	})

	// The site's next scan, started by the pipeline, is what the waits wait for.
	_, started, raw := f.startScan(t, key, body(`,"commit":"abcdef1234567"`))
	if started.ScanID == "" {
		t.Fatalf("no scan started: %s", raw)
	}
	running := body(`,"scanId":"` + started.ScanID + `"`)

	t.Run("without a wait a scan in flight is 202 with its status, in every format", func(t *testing.T) {
		got := f.check(t, ctx, key, "", "", running)
		var st ci.ScanStatus
		must(t, json.Unmarshal([]byte(got.body), &st))
		if got.resp.StatusCode != 202 || st.ScanID != started.ScanID || st.Status != store.StatusQueued || got.resp.Header.Get("Location") != st.StatusURL {
			t.Errorf("%d %s", got.resp.StatusCode, got.body)
		}
		md := f.check(t, ctx, key, "", "text/markdown", running)
		if md.resp.StatusCode != 202 || !strings.HasPrefix(md.resp.Header.Get("Content-Type"), "text/markdown") || !strings.Contains(md.body, "is still queued") {
			t.Errorf("markdown %d %s", md.resp.StatusCode, md.body)
		}
		x := f.check(t, ctx, key, "?format=junit", "", running)
		var report struct {
			Tests  int `xml:"tests,attr"`
			Errors int `xml:"errors,attr"`
		}
		must(t, xml.Unmarshal([]byte(x.body), &report))
		if x.resp.StatusCode != 202 || report.Tests != 1 || report.Errors != 1 {
			t.Errorf("junit %d %s", x.resp.StatusCode, x.body)
		}
		// Without a scanId and without a wait, the latest completed scan is judged, as always.
		if v := decodeVerdict(t, f.check(t, ctx, key, "?format=json", "", body(""))); *v.ScanID != latest.ID {
			t.Errorf("judged %s, want the latest completed %s", *v.ScanID, latest.ID)
		}
	})

	t.Run("a wait runs out on the clock: 202 with the scan's status", func(t *testing.T) {
		answer := f.background(t, ctx, key, "", body(`,"scanId":"`+started.ScanID+`","waitSeconds":30`))
		f.waitTimer(t, 30*time.Second)
		f.clock.Advance(30 * time.Second)
		got := receive(t, answer, "the wait of 30 s")
		if got.resp.StatusCode != 202 || !strings.Contains(got.body, `"status":"queued"`) || got.resp.Header.Get("Retry-After") != "" {
			t.Errorf("%d %s", got.resp.StatusCode, got.body)
		}
	})

	t.Run("a client that goes away stops waiting", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		answer := f.background(t, cctx, key, "", body(`,"waitSeconds":45`))
		f.waitTimer(t, 45*time.Second)
		cancel()
		<-answer
		storetest.WaitFor(t, "the wait's timer stopped", func() bool { return !slices.Contains(f.clock.Pending(), 45*time.Second) })
	})

	t.Run("a wait is released by the scan completing, the clock standing still", func(t *testing.T) {
		at := f.clock.Now()
		// No scanId: the site's scan in flight is the one waited for.
		answer := f.background(t, ctx, key, "?format=markdown", body(`,"waitSeconds":600`))
		f.waitTimer(t, 600*time.Second)
		f.finish(t, started.ScanID, fixtureResults(t, "fast.mobile", "fast.desktop"))
		got := receive(t, answer, "the wait released by the completed scan")
		if got.resp.StatusCode != 200 || !strings.Contains(got.body, "Scan ["+started.ScanID[:8]+"]") || !strings.Contains(got.body, "commit `abcdef1`") {
			t.Errorf("%d\n%s", got.resp.StatusCode, got.body)
		}
		if !f.clock.Now().Equal(at) {
			t.Errorf("the clock moved")
		}
		storetest.WaitFor(t, "the wait's timer stopped", func() bool { return !slices.Contains(f.clock.Pending(), 600*time.Second) })
		// The judged scan is now the latest: its previous scan is the demo's latest.
		v := decodeVerdict(t, f.check(t, ctx, key, "?format=json", "", running))
		if *v.Status != "complete" || *v.PreviousScanID != latest.ID || *v.Commit != "abcdef1234567" {
			t.Errorf("%+v", v.raw)
		}
	})

	t.Run("a wait for a finished scan answers at once", func(t *testing.T) {
		got := f.check(t, ctx, key, "", "", body(`,"scanId":"`+started.ScanID+`","waitSeconds":600`))
		if got.resp.StatusCode != 200 || decodeVerdict(t, got).Status == nil {
			t.Errorf("%d %s", got.resp.StatusCode, got.body)
		}
	})

	t.Run("a failed scan is judged as not judged: 200, pass false, status failed and why", func(t *testing.T) {
		_, sc, _ := f.startScan(t, key, body(""))
		answer := f.background(t, ctx, key, "?format=junit", body(`,"scanId":"`+sc.ScanID+`","waitSeconds":600`))
		f.waitTimer(t, 600*time.Second)
		job, err := st.ClaimJob(ctx, store.KindScan, "test", time.Now(), 0)
		must(t, err)
		must(t, st.FailScan(ctx, job.Lease(), "no page could be audited", f.now))
		got := receive(t, answer, "the wait released by the failed scan")
		var report struct {
			Errors int `xml:"errors,attr"`
			Suites []struct {
				Cases []struct {
					Error *struct {
						Message string `xml:"message,attr"`
					} `xml:"error"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		must(t, xml.Unmarshal([]byte(got.body), &report))
		if got.resp.StatusCode != 200 || report.Errors != 1 || !strings.Contains(report.Suites[0].Cases[0].Error.Message, "no page could be audited") {
			t.Errorf("%d %s", got.resp.StatusCode, got.body)
		}
		v := decodeVerdict(t, f.check(t, ctx, key, "", "", body(`,"scanId":"`+sc.ScanID+`"`)))
		if *v.Pass || *v.Status != "failed" || v.Scores() != nil || !strings.Contains(*v.Reason, "no page could be audited") {
			t.Errorf("%+v", v.raw)
		}
	})
}

func (v ciVerdict) Scores() any { return v.raw["scores"] }

// TestBudgetCheckWaitsAtShutdown: a process that begins to shut down answers every waiting
// check at once, 202 with Retry-After, rather than cut it off; past the cap of waits a check is
// refused 429 with Retry-After. Both stores.
func TestBudgetCheckWaitsAtShutdown(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newCIFixture(t, b.Open(t), func(d *Deps) { d.MaxWaits = 1 })
			ctx := context.Background()
			key := bearer(f.a.apiKey)
			_, sc, raw := f.startScan(t, key, `{"siteId":"`+f.a.siteID+`"}`)
			if sc.ScanID == "" {
				t.Fatalf("no scan: %s", raw)
			}
			wait := `{"siteId":"` + f.a.siteID + `","waitSeconds":600}`
			answer := f.background(t, ctx, key, "", wait)
			f.waitTimer(t, 600*time.Second)
			over := f.check(t, ctx, key, "", "", wait)
			if over.resp.StatusCode != 429 || over.resp.Header.Get("Retry-After") == "" || !strings.Contains(over.body, "in this server process") {
				t.Errorf("past the cap: %d %s", over.resp.StatusCode, over.body)
			}
			wantErrorShape(t, over.resp, over.body, "")
			close(f.stopping)
			got := receive(t, answer, "the wait at shutdown")
			if got.resp.StatusCode != 202 || got.resp.Header.Get("Retry-After") != "5" || !strings.Contains(got.body, `"scanId":"`+sc.ScanID+`"`) {
				t.Errorf("%d %v %s", got.resp.StatusCode, got.resp.Header, got.body)
			}
			// Once shutting down, a new wait answers at once too.
			if late := f.check(t, ctx, key, "", "", wait); late.resp.StatusCode != 202 {
				t.Errorf("a wait during shutdown: %d %s", late.resp.StatusCode, late.body)
			}
		})
	}
}
