package handlers

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestBudgetCheck walks every rule and status of the interface's POST /api/external/budget-check
// on the memory store and on Postgres.
func TestBudgetCheck(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { testBudgetCheck(t, b.Open(t)) })
	}
}

// budgetBody is the 200 response, decoded loosely enough to see nulls and key sets.
type budgetBody struct {
	Pass       *bool            `json:"pass"`
	Site       string           `json:"site"`
	Scores     map[string]any   `json:"scores"`
	Violations []map[string]any `json:"violations"`
	ScanID     *string          `json:"scanId"`
	ScannedAt  *string          `json:"scannedAt"`
	raw        map[string]any
}

func testBudgetCheck(t *testing.T, st store.Store) {
	f := newAPIFixture(t, st)
	ctx := context.Background()
	a := f.a

	// A site whose latest completed scan meets every budget, one with no budgets at all, one
	// with a completed scan broken only by an alert rule, and one never scanned.
	results := fixtureResults(t, "fast.mobile", "fast.desktop")
	metSite := f.newSite(t, a.userID, "Met Site")
	metScan := f.recordScan(t, metSite, results, f.now.Add(-time.Hour))
	must(t, st.SetBudgets(ctx, a.userID, metSite, map[string]store.Budget{"performance": {Threshold: 1}, "lcp": {Threshold: 60000}, "cls": {Threshold: 5}}))
	// A site whose mobile-only performance budget is broken by the mobile score (93) alone: the
	// scan's score (97, with desktop's 100) would meet it.
	about := fixtureResults(t, "about.mobile", "about.desktop")
	mobileSite := f.newSite(t, a.userID, "Mobile Site")
	f.recordScan(t, mobileSite, about, f.now.Add(-time.Hour))
	must(t, st.SetBudgets(ctx, a.userID, mobileSite, map[string]store.Budget{"performance": {Threshold: 95, Strategy: store.StrategyMobile}, "seo": {Threshold: 1, Strategy: store.StrategyDesktop}}))
	noBudgets := f.newSite(t, a.userID, "No Budgets")
	f.recordScan(t, noBudgets, results, f.now.Add(-time.Hour))
	ruleSite := f.newSite(t, a.userID, "Rule Site")
	f.recordScan(t, ruleSite, results, f.now.Add(-time.Hour))
	must(t, st.AddAlertRule(ctx, a.userID, store.AlertRule{ID: store.NewID(), SiteID: ruleSite, Metric: "performance", Operator: store.OpMin, Threshold: 101, CreatedAt: f.now}))
	neverScanned := f.newSite(t, a.userID, "Never Scanned")
	revoked, rhash := store.NewSecret("svc_")
	rk := store.APIKey{ID: store.NewID(), UserID: a.userID, Name: "old", KeyHash: rhash, Prefix: revoked[:12], CreatedAt: f.now}
	must(t, st.CreateAPIKey(ctx, rk))
	must(t, st.RevokeAPIKey(ctx, a.userID, rk.ID, f.now))

	siteBody := func(id string) string { return `{"siteId":"` + id + `"}` }
	const jsonCT = "application/json"
	tests := []struct {
		name   string
		body   string
		cred   cred
		status int
		check  func(t *testing.T, got budgetBody)
	}{
		{"a site breaking its budgets fails the check with 200, pass false and each violation", siteBody(a.siteID), bearer(a.apiKey), 200,
			func(t *testing.T, got budgetBody) {
				if *got.Pass || len(got.Violations) == 0 {
					t.Errorf("pass = %v, violations = %v; the demo's latest scan breaks its budgets", *got.Pass, got.Violations)
				}
				if got.Site != "Demo Site" || got.ScanID == nil || *got.ScanID != a.scanID {
					t.Errorf("site %q scanId %v, want Demo Site %s", got.Site, got.ScanID, a.scanID)
				}
				wantScoreKeys(t, got.Scores)
				for _, v := range got.Violations {
					for _, k := range []string{"metric", "threshold", "actual", "operator"} {
						if _, ok := v[k]; !ok {
							t.Errorf("violation %v has no %s", v, k)
						}
					}
					if op := v["operator"]; op != "min" && op != "max" {
						t.Errorf("operator %v", op)
					}
				}
				scan, _ := st.Scan(ctx, a.userID, a.scanID)
				if got.ScannedAt == nil || *got.ScannedAt != scan.CompletedAt.Format(time.RFC3339Nano) {
					t.Errorf("scannedAt = %v, want %s", got.ScannedAt, scan.CompletedAt)
				}
			}},
		{"alert rules are checked like budgets", siteBody(ruleSite), bearer(a.apiKey), 200, func(t *testing.T, got budgetBody) {
			want := []map[string]any{{"metric": "performance", "threshold": 101.0, "actual": got.Scores["performance"], "operator": "min"}}
			if *got.Pass || !reflect.DeepEqual(got.Violations, want) {
				t.Errorf("pass %v violations %v, want false %v", *got.Pass, got.Violations, want)
			}
		}},
		{"a mobile-only budget is checked against the mobile score and says its strategy", siteBody(mobileSite), bearer(a.apiKey), 200, func(t *testing.T, got budgetBody) {
			want := []map[string]any{{"metric": "performance", "threshold": 95.0, "actual": 93.0, "operator": "min", "strategy": "mobile"}}
			if *got.Pass || !reflect.DeepEqual(got.Violations, want) {
				t.Errorf("pass %v violations %v, want false %v", *got.Pass, got.Violations, want)
			}
		}},
		{"budgets that are met pass", siteBody(metSite), bearer(a.apiKey), 200, func(t *testing.T, got budgetBody) {
			if !*got.Pass || len(got.Violations) != 0 || *got.ScanID != metScan || got.Site != "Met Site" {
				t.Errorf("got %+v", got.raw)
			}
		}},
		{"no budgets set: violations empty and pass true", siteBody(noBudgets), bearer(a.apiKey), 200, func(t *testing.T, got budgetBody) {
			if !*got.Pass || got.Violations == nil || len(got.Violations) != 0 {
				t.Errorf("got %+v", got.raw)
			}
			wantScoreKeys(t, got.Scores)
		}},
		{"no completed scan: 200, pass false, no scores", siteBody(neverScanned), bearer(a.apiKey), 200, func(t *testing.T, got budgetBody) {
			if *got.Pass || got.Scores != nil || got.ScanID != nil || got.ScannedAt != nil || got.Violations == nil || len(got.Violations) != 0 {
				t.Errorf("got %+v", got.raw)
			}
			for _, k := range []string{"pass", "site", "scores", "violations", "scanId", "scannedAt"} {
				if _, ok := got.raw[k]; !ok {
					t.Errorf("key %s missing from %v", k, got.raw)
				}
			}
		}},
		{"an upper-case uuid names the same site", siteBody(strings.ToUpper(a.siteID)), bearer(a.apiKey), 200, nil},
		{"unknown fields are ignored", `{"siteId":"` + a.siteID + `","extra":[1]}`, bearer(a.apiKey), 200, nil},

		{"a body that is not JSON is 400", `siteId=` + a.siteID, bearer(a.apiKey), 400, nil},
		{"truncated JSON is 400", `{"siteId":"` + a.siteID, bearer(a.apiKey), 400, nil},
		{"a JSON array is 400", `["` + a.siteID + `"]`, bearer(a.apiKey), 400, nil},
		{"an empty body is 400", ``, bearer(a.apiKey), 400, nil},
		{"a body over 1 MiB is 413", `{"siteId":"` + a.siteID + `","pad":"` + strings.Repeat("x", 1<<20) + `"}`, bearer(a.apiKey), 413, nil},

		{"no credentials is 401", siteBody(a.siteID), cred{}, 401, nil},
		{"an unknown API key is 401", siteBody(a.siteID), bearer("svc_notakey"), 401, nil},
		{"a revoked API key is 401", siteBody(a.siteID), bearer(revoked), 401, nil},
		{"an OAuth access token, valid at /api/mcp, is 401", siteBody(a.siteID), bearer(a.accessToken), 401, nil},
		{"a session cookie is 401", siteBody(a.siteID), cookie(a.session), 401, nil},
		{"a body that is not JSON with an unknown key is 401", `nope`, bearer("svc_notakey"), 401, nil},
		{"a bad siteId with a revoked key is 401", `{"siteId":"x"}`, bearer(revoked), 401, nil},
		{"another user's site with an unknown key is 401", siteBody(f.b.siteID), bearer("svc_notakey"), 401, nil},

		{"another user's site is 404", siteBody(a.siteID), bearer(f.b.apiKey), 404, nil},
		{"an unknown site is 404", siteBody(store.NewID()), bearer(a.apiKey), 404, nil},

		{"a missing siteId is 422", `{}`, bearer(a.apiKey), 422, nil},
		{"a null siteId is 422", `{"siteId":null}`, bearer(a.apiKey), 422, nil},
		{"a siteId that is not a uuid is 422", `{"siteId":"home"}`, bearer(a.apiKey), 422, nil},
		{"a uuid with a wrong character is 422", siteBody(a.siteID[:35] + "g"), bearer(a.apiKey), 422, nil},
		{"a numeric siteId is 422", `{"siteId":42}`, bearer(a.apiKey), 422, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, "POST", "/api/external/budget-check", jsonCT, tt.body, tt.cred)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tt.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			switch {
			case tt.status == 200:
				var got budgetBody
				must(t, json.Unmarshal([]byte(body), &got))
				must(t, json.Unmarshal([]byte(body), &got.raw))
				if got.Pass == nil {
					t.Fatalf("no pass in %s", body)
				}
				if *got.Pass != (len(got.Violations) == 0 && got.ScanID != nil) {
					t.Errorf("pass %v with %d violations", *got.Pass, len(got.Violations))
				}
				if tt.check != nil {
					tt.check(t, got)
				}
			case tt.status == 422:
				var got struct {
					Error struct {
						FormErrors  []string            `json:"formErrors"`
						FieldErrors map[string][]string `json:"fieldErrors"`
					} `json:"error"`
				}
				must(t, json.Unmarshal([]byte(body), &got))
				if got.Error.FormErrors == nil || len(got.Error.FieldErrors["siteId"]) != 1 || len(got.Error.FieldErrors) != 1 {
					t.Errorf("422 body %s", body)
				}
			default:
				var got struct{ Error string }
				if err := json.Unmarshal([]byte(body), &got); err != nil || got.Error == "" {
					t.Errorf("error body %q, want {error: message}", body)
				}
				if tt.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			}
			if tt.status != 200 && strings.Contains(body, "Demo Site") {
				t.Errorf("a refusal leaks the site: %s", body)
			}
		})
	}
}

func wantScoreKeys(t *testing.T, scores map[string]any) {
	t.Helper()
	for _, k := range []string{"health", "performance", "seo", "accessibility", "bestPractices"} {
		v, ok := scores[k].(float64)
		if !ok || v < 0 || v > 100 || v != float64(int(v)) {
			t.Errorf("scores.%s = %v, want an integer 0-100", k, scores[k])
		}
	}
}

// TestBudgetCheckAnswerFollowsEveryChange checks a site again after each change the answer
// depends on: the answer a process keeps per site is never served once its inputs moved.
func TestBudgetCheckAnswerFollowsEveryChange(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			f := newAPIFixture(t, st)
			ctx, a := context.Background(), f.a
			check := func() budgetBody {
				t.Helper()
				resp, body := f.do(t, "POST", "/api/external/budget-check", "application/json", `{"siteId":"`+a.siteID+`"}`, bearer(a.apiKey))
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				var got budgetBody
				must(t, json.Unmarshal([]byte(body), &got))
				return got
			}
			first := check()
			if again := check(); !reflect.DeepEqual(again, first) {
				t.Fatalf("the same inputs answered differently:\n%+v\n%+v", first, again)
			}

			must(t, st.SetBudgets(ctx, a.userID, a.siteID, map[string]store.Budget{}))
			unbudgeted := check()
			if len(unbudgeted.Violations) >= len(first.Violations) {
				t.Errorf("after the budgets were removed: %d violations, want fewer than %d", len(unbudgeted.Violations), len(first.Violations))
			}
			must(t, st.AddAlertRule(ctx, a.userID, store.AlertRule{ID: store.NewID(), SiteID: a.siteID, Metric: "performance", Operator: store.OpMin, Threshold: 101, CreatedAt: f.now}))
			if got := check(); len(got.Violations) != len(unbudgeted.Violations)+1 {
				t.Errorf("after a rule no scan meets: %d violations, want %d", len(got.Violations), len(unbudgeted.Violations)+1)
			}
			site, err := st.Site(ctx, a.userID, a.siteID)
			must(t, err)
			site.Name = "Renamed Site"
			must(t, st.UpdateSite(ctx, site))
			if got := check(); got.Site != "Renamed Site" {
				t.Errorf("after a rename the answer names %q", got.Site)
			}
			scan := f.recordScan(t, a.siteID, fixtureResults(t, "fast.mobile", "fast.desktop"), f.now.Add(time.Hour))
			if got := check(); got.ScanID == nil || *got.ScanID != scan {
				t.Errorf("after a new scan the answer is of scan %v, want %s", got.ScanID, scan)
			}
		})
	}
}

// TestThresholdUnits: a budget accepts a time as the pages show it (2.5s, 2.5 s, 2500ms, a bare
// number of milliseconds) and CLS as a bare number; a bare time under 50 asks about seconds.
func TestThresholdUnits(t *testing.T) {
	for _, tc := range []struct {
		metric, in string
		want       float64
		problem    bool
	}{
		{"lcp", "2.5s", 2500, false},
		{"lcp", "2.5 s", 2500, false},
		{"lcp", " 2500ms", 2500, false},
		{"lcp", "2500 ms", 2500, false},
		{"lcp", "2500", 2500, false},
		{"tbt", "0.6S", 600, false},
		{"cls", "0.1", 0.1, false},
		{"performance", "90", 90, false},
		{"lcp", "2.5", 0, true},
		{"lcp", "fast", 0, true},
		{"cls", "0.1s", 0, true},
		{"lcp", "700s", 0, true},
	} {
		got, problem := parseThreshold(tc.metric, tc.in)
		if (problem != "") != tc.problem || !tc.problem && got != tc.want {
			t.Errorf("parseThreshold(%q, %q) = %v, %q; want %v (problem %v)", tc.metric, tc.in, got, problem, tc.want, tc.problem)
		}
	}
}
