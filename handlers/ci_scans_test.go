package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/handlers/ci"
	"sitepulse/scanner/analysis"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// ciFixture is the API fixture wired as run() wires the CI surface: the store's job
// notifications wake the budget check's waits, the waits' timers run on a fake clock, the
// process's shutdown is a channel the test closes, and the daily audit quota is a double that
// refuses the workspaces it is told to.
type ciFixture struct {
	*apiFixture
	clock    *scantest.Clock
	stopping chan struct{}
	quota    *quotaDouble
	// readOnly is an API key of A's workspace that may read but not start scans.
	readOnly string
}

// quotaDouble is psi.AccountQuota's answer: the refused workspaces wait until a time.
type quotaDouble struct {
	mu      sync.Mutex
	refused map[string]time.Time
}

type quotaWait struct{ until time.Time }

func (e quotaWait) Error() string {
	return "this workspace's scans wait until " + e.until.UTC().Format("2 Jan 2006, 15:04 UTC") + ": its daily budget of 1 audits (USER_DAILY_AUDITS) is used up"
}
func (e quotaWait) RetryAt() time.Time { return e.until }

func (q *quotaDouble) Check(workspaceID string, now time.Time) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if until, ok := q.refused[workspaceID]; ok {
		return quotaWait{until}
	}
	return nil
}

func newCIFixture(t *testing.T, st store.Store, with func(*Deps)) *ciFixture {
	t.Helper()
	cf := &ciFixture{clock: scantest.NewClock(fixtureNow), stopping: make(chan struct{}), quota: &quotaDouble{refused: map[string]time.Time{}}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wake, err := st.(store.JobWaker).WakeOnJobs(ctx, nil)
	must(t, err)
	cf.apiFixture = newAPIFixtureWith(t, st, func(d *Deps) {
		d.ScanWake, d.Stopping, d.NewTimer, d.Quota = wake, cf.stopping, cf.clock.NewTimer, cf.quota
		if with != nil {
			with(d)
		}
	})
	key, hash := store.NewSecret("svc_")
	must(t, st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: cf.a.userID, Name: "read only", KeyHash: hash, Prefix: key[:12],
		Scope: store.ScopeRead, CreatedAt: cf.now}))
	cf.readOnly = key
	return cf
}

// startScan posts a scan request with a credential.
func (f *ciFixture) startScan(t *testing.T, c cred, body string) (*http.Response, startedScan, string) {
	t.Helper()
	resp, raw := f.do(t, "POST", "/api/external/scans", "application/json", body, c)
	var got startedScan
	if resp.StatusCode == http.StatusAccepted {
		must(t, json.Unmarshal([]byte(raw), &got))
	}
	return resp, got, raw
}

// finish takes a queued scan through its job to completion with results, as the pipeline
// does, follow-up job included (what wakes the waits), and answers the completed scan.
func (f *ciFixture) finish(t *testing.T, scanID string, results []store.PageResult) {
	t.Helper()
	ctx := context.Background()
	job, err := f.st.ClaimJob(ctx, store.KindScan, "test", time.Now(), 0)
	must(t, err)
	if job.ScanID != scanID {
		t.Fatalf("claimed scan %s, want %s", job.ScanID, scanID)
	}
	must(t, f.st.StartScan(ctx, job.Lease(), len(results), f.now))
	for _, r := range results {
		must(t, f.st.SavePageResult(ctx, job.Lease(), r))
	}
	must(t, f.st.CompleteScan(ctx, job.Lease(), analysis.ScanScores(results), f.now.Add(time.Minute), store.AlertsJob{ScanID: scanID}))
}

// TestStartScanWithAPIKey walks every status of POST /api/external/scans and GET
// /api/external/scans/{scanId} on both stores.
func TestStartScanWithAPIKey(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { testStartScan(t, b.Open(t)) })
	}
}

func testStartScan(t *testing.T, st store.Store) {
	f := newCIFixture(t, st, nil)
	ctx := context.Background()
	a := f.a
	revoked, rhash := store.NewSecret("svc_")
	rk := store.APIKey{ID: store.NewID(), UserID: a.userID, Name: "old", KeyHash: rhash, Prefix: revoked[:12], Scope: store.ScopeAll, CreatedAt: f.now}
	must(t, st.CreateAPIKey(ctx, rk))
	must(t, st.RevokeAPIKey(ctx, a.userID, rk.ID, f.now))
	siteBody := func(id string) string { return `{"siteId":"` + id + `"}` }

	t.Run("refusals", func(t *testing.T) {
		tests := []struct {
			name   string
			body   string
			cred   cred
			status int
			field  string // the 422's field
		}{
			{"no credentials is 401", siteBody(a.siteID), cred{}, 401, ""},
			{"an unknown key is 401", siteBody(a.siteID), bearer("svc_notakey"), 401, ""},
			{"a revoked key is 401", siteBody(a.siteID), bearer(revoked), 401, ""},
			{"an OAuth access token is 401", siteBody(a.siteID), bearer(a.accessToken), 401, ""},
			{"a session cookie is 401", siteBody(a.siteID), cookie(a.session), 401, ""},
			{"a key not allowed to start scans is 403", siteBody(a.siteID), bearer(f.readOnly), 403, ""},
			{"another account's site is 404", siteBody(a.siteID), bearer(f.b.apiKey), 404, ""},
			{"an unknown site is 404", siteBody(store.NewID()), bearer(a.apiKey), 404, ""},
			{"a body that is not JSON is 400", "siteId=" + a.siteID, bearer(a.apiKey), 400, ""},
			{"a body over 1 MiB is 413", `{"siteId":"` + a.siteID + `","pad":"` + strings.Repeat("x", 1<<20) + `"}`, bearer(a.apiKey), 413, ""},
			{"a missing siteId is 422", `{}`, bearer(a.apiKey), 422, "siteId"},
			{"a siteId that is not a uuid is 422", `{"siteId":"home"}`, bearer(a.apiKey), 422, "siteId"},
			{"an unknown strategy is 422", `{"siteId":"` + a.siteID + `","strategy":"tablet"}`, bearer(a.apiKey), 422, "strategy"},
			{"pages that are not a list is 422", `{"siteId":"` + a.siteID + `","pages":"/"}`, bearer(a.apiKey), 422, "pages"},
			{"a page that is not a path is 422", `{"siteId":"` + a.siteID + `","pages":["https://evil.test/"]}`, bearer(a.apiKey), 422, "pages"},
			{"more pages than a scan audits is 422", `{"siteId":"` + a.siteID + `","pages":[` + manyPages(51) + `]}`, bearer(a.apiKey), 422, "pages"},
			{"a publisher with a control character is 422", `{"siteId":"` + a.siteID + `","publishedBy":"Ana\u0007"}`, bearer(a.apiKey), 422, "publishedBy"},
			{"a publisher's name over 100 characters is 422", `{"siteId":"` + a.siteID + `","publishedBy":"` + strings.Repeat("a", 101) + `"}`, bearer(a.apiKey), 422, "publishedBy"},
			{"a commit that is not a commit id is 422", `{"siteId":"` + a.siteID + `","commit":"main; rm -rf /"}`, bearer(a.apiKey), 422, "commit"},
			{"a commit id too short is 422", `{"siteId":"` + a.siteID + `","commit":"abc12"}`, bearer(a.apiKey), 422, "commit"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				resp, _, body := f.startScan(t, tt.cred, tt.body)
				if resp.StatusCode != tt.status {
					t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tt.status, body)
				}
				wantErrorShape(t, resp, body, tt.field)
				if strings.Contains(body, "Demo Site") {
					t.Errorf("a refusal leaks the site: %s", body)
				}
			})
		}
		if scans, _ := st.ScansOf(ctx, a.userID, a.siteID, 1); len(scans) > 0 && scans[0].InFlight() {
			t.Errorf("a refused request started a scan: %+v", scans[0])
		}
	})

	t.Run("a spent daily quota is 429 with Retry-After, and no scan", func(t *testing.T) {
		f.quota.mu.Lock()
		f.quota.refused[a.userID] = f.now.Add(90 * time.Minute) // A's personal workspace
		f.quota.mu.Unlock()
		defer func() { f.quota.mu.Lock(); delete(f.quota.refused, a.userID); f.quota.mu.Unlock() }()
		resp, _, body := f.startScan(t, bearer(a.apiKey), siteBody(a.siteID))
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5400" || !strings.Contains(body, "USER_DAILY_AUDITS") {
			t.Errorf("status %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		wantErrorShape(t, resp, body, "")
	})

	const commit = "1A2B3C4D5E6F7A8B9C0D1E2F3A4B5C6D7E8F9A0B"
	var first startedScan
	t.Run("202 with the scan, its URL and where to follow it; the deploy recorded as a publish", func(t *testing.T) {
		resp, got, body := f.startScan(t, bearer(a.apiKey), `{"siteId":"`+strings.ToUpper(a.siteID)+`","strategy":"mobile","pages":["/", " /pricing ", "/"],"publishedBy":"Ana","commit":"`+commit+`"}`)
		if resp.StatusCode != 202 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		first = got
		wantURL := f.URL[:0] + "http://sitepulse.test/sites/" + a.siteID + "/scans/" + got.ScanID
		if got.AlreadyRunning || got.Status != store.StatusQueued || got.Trigger != store.TriggerAPI || got.Strategy != store.StrategyMobile ||
			got.SiteID != a.siteID || got.URL != wantURL || got.StatusURL != "http://sitepulse.test/api/external/scans/"+got.ScanID ||
			resp.Header.Get("Location") != got.StatusURL || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("answer %s, Location %q", body, resp.Header.Get("Location"))
		}
		job, err := st.ClaimJob(ctx, store.KindScan, "peek", f.now.Add(time.Hour), 0)
		must(t, err)
		var args store.ScanJob
		must(t, json.Unmarshal(job.Args, &args))
		if job.ScanID != got.ScanID || strings.Join(args.Pages, ",") != "/,/pricing" {
			t.Errorf("job %s args %s", job.ScanID, job.Args)
		}
		must(t, st.RetryJob(ctx, job.Lease(), f.now, "peeked")) // back to the queue
		pubs, err := st.PublishesOfScans(ctx, a.userID, []string{got.ScanID})
		must(t, err)
		if p := pubs[got.ScanID]; p.PublishedBy != "Ana" || p.Commit != strings.ToLower(commit) {
			t.Errorf("publish of the scan = %+v", p)
		}
		// The scan page says who deployed which commit.
		_, page := f.do(t, "GET", "/sites/"+a.siteID+"/scans/"+got.ScanID, "", "", cookie(a.session))
		if !strings.Contains(page, "Published by Ana") || !strings.Contains(page, "commit 1a2b3c4") || !strings.Contains(page, "a CI pipeline") {
			t.Errorf("the scan page does not show the deploy:\n%s", textOf(page))
		}
	})

	t.Run("a second call gets the running scan, and records the deploy without it", func(t *testing.T) {
		f.now = f.now.Add(time.Minute) // a later deploy
		resp, got, body := f.startScan(t, bearer(a.apiKey), `{"siteId":"`+a.siteID+`","commit":"abcdef1"}`)
		if resp.StatusCode != 202 || !got.AlreadyRunning || got.ScanID != first.ScanID {
			t.Fatalf("status %d: %s; want the running scan %s", resp.StatusCode, body, first.ScanID)
		}
		pubs, _ := st.Publishes(ctx, a.userID, a.siteID, time.Time{}, 10)
		found := false
		for _, p := range pubs {
			found = found || p.Commit == "abcdef1" && p.ScanID == ""
		}
		if !found {
			t.Errorf("publishes %+v; want abcdef1's, without a scan", pubs)
		}
		// The same deploy again (a retry, a loop) records nothing more.
		for range 5 {
			f.startScan(t, bearer(a.apiKey), `{"siteId":"`+a.siteID+`","commit":"ABCDEF1"}`)
		}
		if again, _ := st.Publishes(ctx, a.userID, a.siteID, time.Time{}, 100); len(again) != len(pubs) {
			t.Errorf("%d publishes after 5 retries of one deploy, want %d", len(again), len(pubs))
		}
	})

	t.Run("the quota is not asked while a scan runs: the running scan is the answer", func(t *testing.T) {
		f.quota.mu.Lock()
		f.quota.refused[a.userID] = f.now.Add(time.Hour)
		f.quota.mu.Unlock()
		defer func() { f.quota.mu.Lock(); delete(f.quota.refused, a.userID); f.quota.mu.Unlock() }()
		if resp, got, body := f.startScan(t, bearer(a.apiKey), siteBody(a.siteID)); resp.StatusCode != 202 || got.ScanID != first.ScanID {
			t.Errorf("status %d: %s", resp.StatusCode, body)
		}
	})

	t.Run("GET /api/external/scans/{scanId} follows the scan, for its workspace's keys only", func(t *testing.T) {
		for _, tt := range []struct {
			name   string
			path   string
			cred   cred
			status int
		}{
			{"the key's own scan", first.ScanID, bearer(a.apiKey), 200},
			{"an upper-case id", strings.ToUpper(first.ScanID), bearer(a.apiKey), 200},
			{"a read-only key reads it", first.ScanID, bearer(f.readOnly), 200},
			{"another account's key gets 404", first.ScanID, bearer(f.b.apiKey), 404},
			{"an unknown scan is 404", store.NewID(), bearer(a.apiKey), 404},
			{"a malformed id is 404", "not-a-scan", bearer(a.apiKey), 404},
			{"no credentials is 401", first.ScanID, cred{}, 401},
			{"an OAuth access token is 401", first.ScanID, bearer(a.accessToken), 401},
		} {
			t.Run(tt.name, func(t *testing.T) {
				resp, body := f.do(t, "GET", "/api/external/scans/"+tt.path, "", "", tt.cred)
				if resp.StatusCode != tt.status {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
				}
				if tt.status != 200 {
					wantErrorShape(t, resp, body, "")
					return
				}
				var got ci.ScanStatus
				must(t, json.Unmarshal([]byte(body), &got))
				if got.ScanID != first.ScanID || got.Status != store.StatusQueued || got.PagesTotal != 0 {
					t.Errorf("status %s", body)
				}
			})
		}
	})

	t.Run("the completed scan shows its progress, and the trend marks the deploy with its commit", func(t *testing.T) {
		f.finish(t, first.ScanID, fixtureResults(t, "home.mobile", "pricing.mobile"))
		_, body := f.do(t, "GET", "/api/external/scans/"+first.ScanID, "", "", bearer(a.apiKey))
		var got ci.ScanStatus
		must(t, json.Unmarshal([]byte(body), &got))
		if got.Status != store.StatusComplete || got.PagesDone != 2 || got.PagesTotal != 2 || got.CompletedAt == nil {
			t.Errorf("status %s", body)
		}
		_, page := f.do(t, "GET", "/sites/"+a.siteID, "", "", cookie(a.session))
		if !strings.Contains(textOf(page), "Published by Ana, 1 Nov 12:00 · commit 1a2b3c4") {
			t.Errorf("the site page's trend does not mark the deploy:\n%s", textOf(page))
		}
	})
}

// wantErrorShape checks a refusal speaks the interface's REST error shapes: {error: message},
// or for a 422 {error: {formErrors, fieldErrors}} naming field; a 401 has its challenge.
func wantErrorShape(t *testing.T, resp *http.Response, body, field string) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if resp.StatusCode == 422 {
		var got struct {
			Error struct {
				FormErrors  []string            `json:"formErrors"`
				FieldErrors map[string][]string `json:"fieldErrors"`
			} `json:"error"`
		}
		must(t, json.Unmarshal([]byte(body), &got))
		if got.Error.FormErrors == nil || len(got.Error.FieldErrors[field]) != 1 {
			t.Errorf("422 body %s; want a fieldErrors.%s", body, field)
		}
		return
	}
	var got struct{ Error string }
	if err := json.Unmarshal([]byte(body), &got); err != nil || got.Error == "" {
		t.Errorf("error body %q, want {error: message}", body)
	}
	if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
}

func manyPages(n int) string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf(`"/p%d"`, i))
	}
	return strings.Join(out, ",")
}

var tags = regexp.MustCompile(`<[^>]*>|\s+`)

// textOf is a page's text, its tags and runs of white space each one space, entities decoded.
func textOf(page string) string {
	return html.UnescapeString(tags.ReplaceAllString(page, " "))
}
