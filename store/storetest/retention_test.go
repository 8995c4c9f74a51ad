package storetest_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"sitepulse/store"
)

func fp(v float64) *float64 { return &v }

// summaryResults are results of two strategies with missing scores and vitals, and a tie on
// the worst LCP, which the first path wins.
func summaryResults() []store.PageResult {
	return []store.PageResult{
		{PagePath: "/", Strategy: "mobile", Scores: store.PageScores{Performance: ip(81), SEO: ip(90), Accessibility: ip(77), BestPractices: ip(100)},
			CoreWebVitals: store.Vitals{LCP: fp(2500), CLS: fp(0.1), TBT: fp(300), FCP: fp(1200.5), TTFB: fp(80), SpeedIndex: fp(3000), TTI: fp(4000)}},
		{PagePath: "/a", Strategy: "mobile", Scores: store.PageScores{Performance: ip(82), SEO: ip(91), Accessibility: ip(78)},
			CoreWebVitals: store.Vitals{LCP: fp(2500), CLS: fp(0.25), INP: fp(180)}},
		{PagePath: "/b", Strategy: "mobile", Scores: store.PageScores{Performance: ip(84)}},
		{PagePath: "/", Strategy: "desktop", Scores: store.PageScores{Performance: ip(97), SEO: ip(90), Accessibility: ip(90), BestPractices: ip(95)},
			CoreWebVitals: store.Vitals{LCP: fp(900), CLS: fp(0.01), TBT: fp(0)}},
	}
}

// finishedScan runs a scan of site at at through the queue with results and errors, and
// completes it (or fails it when fail) at at plus a minute.
func finishedScan(t *testing.T, s store.Store, site store.Site, at time.Time, results []store.PageResult, errs int, fail bool) store.Scan {
	t.Helper()
	sc := enqueue(t, s, site, at)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", at, 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), len(results)+errs, at))
	for _, r := range results {
		r.PageURL = "https://x.test" + r.PagePath
		must(t, s.SavePageResult(ctx, j.Lease(), r))
	}
	for i := range errs {
		must(t, s.SavePageError(ctx, j.Lease(), store.PageError{PagePath: fmt.Sprintf("/err-%d", i), PageURL: "https://x.test/err", Strategy: "mobile", Error: "timed out"}))
	}
	if fail {
		must(t, s.FailScan(ctx, j.Lease(), "broke", at.Add(time.Minute)))
	} else {
		must(t, s.CompleteScan(ctx, j.Lease(), store.ScanScores{Health: ip(80)}, at.Add(time.Minute)))
	}
	got, err := s.Scan(ctx, site.UserID, sc.ID)
	must(t, err)
	return got
}

func testScanSummary(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := finishedScan(t, s, site, t0, summaryResults(), 1, false)
	metrics, err := s.PageMetrics(ctx, a.ID, sc.ID)
	must(t, err)
	want := store.Summarize(metrics)
	if sc.Summary == nil || !reflect.DeepEqual(*sc.Summary, want) {
		t.Fatalf("summary = %+v, want %+v", sc.Summary, want)
	}
	m, _ := want.Strategy("mobile")
	if m.Pages != 3 || *m.Scores.Performance != 82 || *m.Scores.SEO != 91 || *m.Scores.Accessibility != 78 || *m.Scores.BestPractices != 100 ||
		*m.Scores.Health != 88 || m.Worst["lcp"] != (store.WorstPage{Value: 2500, PagePath: "/"}) || m.Worst["cls"].PagePath != "/a" || m.Worst["inp"].Value != 180 {
		t.Errorf("mobile summary = %+v", m)
	}
	if len(want.Strategies) != 2 || want.Strategies[0].Strategy != "mobile" {
		t.Errorf("strategies %+v, want mobile then desktop", want.Strategies)
	}
	if v := sc.Summary.SiteVital("lcp"); v == nil || *v != 2500 {
		t.Errorf("site LCP = %v, want the mobile worst 2500", v)
	}
	if sc.Bytes <= 300 {
		t.Errorf("bytes = %d, want the scan's rows counted", sc.Bytes)
	}
	// A scan in flight has no summary yet.
	running := enqueue(t, s, site, t0.Add(time.Hour))
	got, err := s.Scan(ctx, a.ID, running.ID)
	must(t, err)
	if got.Summary != nil {
		t.Errorf("a queued scan has summary %+v", got.Summary)
	}
}

func testPruneDetails(t *testing.T, s store.Store) {
	day := 24 * time.Hour
	now := t0.Add(400 * day)
	a := newUser(t, s, "a@example.com")
	must(t, s.SetRetention(ctx, a.ID, 90))
	site := newSite(t, s, a, "site")
	// Six completed scans and a failed one, all older than 90 days but the last; then one still
	// running, started a year ago.
	var scans []store.Scan
	for i, age := range []int{300, 250, 200, 150, 120} {
		scans = append(scans, finishedScan(t, s, site, now.Add(-time.Duration(age)*day), summaryResults()[i%2:], 1, false))
	}
	failed := finishedScan(t, s, site, now.Add(-110*day), summaryResults()[:1], 2, true)
	scans = append(scans, finishedScan(t, s, site, now.Add(-100*day), summaryResults(), 0, false))
	scans = append(scans, finishedScan(t, s, site, now.Add(-10*day), summaryResults(), 0, false))
	running := enqueue(t, s, site, now.Add(-365*day))
	j, err := s.ClaimJob(ctx, store.KindScan, "w", now.Add(-365*day), 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 2, now.Add(-365*day)))
	must(t, s.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", PageURL: "https://x.test/", Strategy: "mobile", Scores: store.PageScores{Performance: ip(50)}}))

	// Another account's workspace keeps everything (retention 0), a third its recent scans.
	b := newUser(t, s, "b@example.com")
	must(t, s.SetRetention(ctx, b.ID, 0))
	bSite := newSite(t, s, b, "b")
	var bScans []store.Scan
	for _, age := range []int{390, 380, 370} {
		bScans = append(bScans, finishedScan(t, s, bSite, now.Add(-time.Duration(age)*day), summaryResults(), 1, false))
	}
	c := newUser(t, s, "c@example.com")
	cSite := newSite(t, s, c, "c")
	cOld := finishedScan(t, s, cSite, now.Add(-300*day), summaryResults(), 0, false) // within its default 400 days
	for _, age := range []int{2, 1} {
		finishedScan(t, s, cSite, now.Add(-time.Duration(age)*day), summaryResults(), 0, false)
	}

	before, err := s.CompletedScans(ctx, a.ID, site.ID, 0)
	must(t, err)
	bytesBefore, err := s.WorkspaceBytes(ctx, a.ID)
	must(t, err)
	bBytes, err := s.WorkspaceBytes(ctx, b.ID)
	must(t, err)

	// In batches of 3 rows, until nothing is left to do.
	total := 0
	for range 100 {
		n, err := s.PruneDetails(ctx, now, 3)
		must(t, err)
		if n > 3+3 {
			t.Fatalf("one step changed %d rows, more than two batches of 3", n)
		}
		if n == 0 {
			break
		}
		total += n
	}
	// Rows: 5 old completed scans (4,3,4,3,4 results + 1 error each) minus the kept ones, the failed one's 3.
	if total == 0 {
		t.Fatal("nothing pruned")
	}

	after, err := s.CompletedScans(ctx, a.ID, site.ID, 0)
	must(t, err)
	if len(after) != len(before) {
		t.Fatalf("%d completed scans after pruning, %d before", len(after), len(before))
	}
	for i := range after {
		if !reflect.DeepEqual(after[i].Summary, before[i].Summary) || !reflect.DeepEqual(after[i].Scores, before[i].Scores) {
			t.Errorf("scan %d summary changed by pruning: %+v, was %+v", i, after[i].Summary, before[i].Summary)
		}
	}
	details := func(user store.User, id string) (int, int) {
		t.Helper()
		res, err := s.PageResults(ctx, user.ID, id)
		must(t, err)
		errs, err := s.PageErrors(ctx, user.ID, id)
		must(t, err)
		return len(res), len(errs)
	}
	pruned := append([]store.Scan{failed}, scans[:5]...)
	for _, sc := range pruned {
		if r, e := details(a, sc.ID); r+e != 0 {
			t.Errorf("scan of %v still has %d results and %d errors", sc.CreatedAt, r, e)
		}
		got, err := s.Scan(ctx, a.ID, sc.ID)
		must(t, err)
		if got.DetailsPrunedAt == nil || !got.DetailsPrunedAt.Equal(now) || got.Bytes != 300 {
			t.Errorf("pruned scan: pruned at %v, bytes %d; want %v and 300", got.DetailsPrunedAt, got.Bytes, now)
		}
	}
	// The latest two completed scans are kept, though the older of them is past 90 days.
	for _, sc := range scans[5:] {
		if r, _ := details(a, sc.ID); r != 4 {
			t.Errorf("one of the latest two completed scans has %d results, want 4", r)
		}
		if got, _ := s.Scan(ctx, a.ID, sc.ID); got.DetailsPrunedAt != nil {
			t.Error("one of the latest two scans is marked pruned")
		}
	}
	if r, _ := details(a, running.ID); r != 1 {
		t.Errorf("the running scan has %d results, want its 1", r)
	}
	if got, _ := s.Scan(ctx, a.ID, running.ID); got.Status != store.StatusRunning || got.DetailsPrunedAt != nil {
		t.Errorf("the running scan is now %+v", got)
	}
	for _, sc := range bScans {
		if r, e := details(b, sc.ID); r != 4 || e != 1 {
			t.Errorf("a scan of a retention-0 workspace has %d results and %d errors, want 4 and 1", r, e)
		}
	}
	if r, _ := details(c, cOld.ID); r != 4 {
		t.Errorf("a scan within its workspace's retention has %d results, want 4", r)
	}
	bytesAfter, err := s.WorkspaceBytes(ctx, a.ID)
	must(t, err)
	if bytesAfter >= bytesBefore || bytesAfter < 300*int64(len(pruned)) {
		t.Errorf("workspace bytes %d after pruning, %d before", bytesAfter, bytesBefore)
	}
	if got, _ := s.WorkspaceBytes(ctx, b.ID); got != bBytes {
		t.Errorf("another workspace's bytes went from %d to %d", bBytes, got)
	}
	// Retention 0 from now on: nothing more goes, even later.
	must(t, s.SetRetention(ctx, a.ID, 0))
	_, err = s.PruneDetails(ctx, now.Add(1000*day), 1000)
	must(t, err)
	if r, _ := details(a, scans[5].ID); r != 4 {
		t.Errorf("with retention 0, a later prune left %d results of 4", r)
	}
}

func testEnqueuePrune(t *testing.T, s store.Store) {
	ok, err := s.EnqueuePrune(ctx, t0, time.Hour)
	must(t, err)
	if !ok {
		t.Fatal("no prune job enqueued into an empty queue")
	}
	for range 3 {
		if ok, err := s.EnqueuePrune(ctx, t0, time.Hour); err != nil || ok {
			t.Fatalf("a second prune job enqueued beside a queued one (err %v)", err)
		}
	}
	j, err := s.ClaimJob(ctx, store.KindPrune, "w", t0, 0)
	must(t, err)
	if ok, _ := s.EnqueuePrune(ctx, t0, time.Hour); ok {
		t.Fatal("a prune job enqueued beside a running one")
	}
	must(t, s.CompleteJob(ctx, j.Lease(), t0.Add(time.Minute)))
	if ok, _ := s.EnqueuePrune(ctx, t0.Add(30*time.Minute), time.Hour); ok {
		t.Fatal("a prune job enqueued within the hour after the last one finished")
	}
	if ok, _ := s.EnqueuePrune(ctx, t0.Add(2*time.Hour), time.Hour); !ok {
		t.Fatal("no prune job enqueued an hour after the last one finished")
	}
}

func testSiteView(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "site")
	var scans []store.Scan
	for i := range 4 {
		scans = append(scans, finishedScan(t, s, site, t0.Add(time.Duration(i)*time.Hour), summaryResults()[i%2:], i%2, i == 1))
	}
	running := enqueue(t, s, site, t0.Add(10*time.Hour))
	for i, sc := range []store.Scan{scans[0], scans[3]} {
		must(t, s.RecordPublish(ctx, store.Publish{ID: store.NewID(), SiteID: site.ID, PlatformEventID: fmt.Sprint("ev", i), PublishedBy: "Ann",
			PublishedOn: sc.CreatedAt.Add(-time.Minute), Domains: []string{"x.test"}, ScanID: sc.ID}))
	}
	must(t, s.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"lcp": {Threshold: 2500}}))
	must(t, s.AddAlertRule(ctx, a.ID, store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "cls", Operator: store.OpMax, Threshold: 0.1, CreatedAt: t0}))

	v, err := s.SiteView(ctx, a.ID, site.ID, 3, 2, 50)
	must(t, err)
	history, _ := s.ScansOf(ctx, a.ID, site.ID, 3)
	for i := range history {
		history[i].Summary = nil
	}
	completed, _ := s.CompletedScans(ctx, a.ID, site.ID, 2)
	if !reflect.DeepEqual(v.History, history) || v.History[0].ID != running.ID {
		t.Errorf("history %+v, want %+v", v.History, history)
	}
	if !reflect.DeepEqual(v.Completed, completed) || len(completed) != 2 || completed[0].ID != scans[3].ID || completed[0].Summary == nil {
		t.Errorf("completed %+v, want %+v", v.Completed, completed)
	}
	metrics, _ := s.PageMetricsOf(ctx, a.ID, []string{completed[0].ID, completed[1].ID})
	if !reflect.DeepEqual(v.Metrics, metrics) {
		t.Errorf("metrics %+v, want %+v", v.Metrics, metrics)
	}
	if len(v.Errors) != 0 { // the newest scan (running) has none
		t.Errorf("errors of the running scan: %+v", v.Errors)
	}
	pubs, _ := s.Publishes(ctx, a.ID, site.ID, *completed[1].CompletedAt, 50)
	if !reflect.DeepEqual(v.Publishes, pubs) || len(pubs) != 1 { // the first publish is before the window
		t.Errorf("publishes %+v, want %+v", v.Publishes, pubs)
	}
	if v.Publish == nil || v.Publish.ScanID != scans[3].ID {
		t.Errorf("the latest completed scan's publish: %+v", v.Publish)
	}
	budgets, _ := s.Budgets(ctx, a.ID, site.ID)
	rules, _ := s.AlertRules(ctx, a.ID, site.ID)
	if !reflect.DeepEqual(v.Budgets, budgets) || !reflect.DeepEqual(v.Rules, rules) {
		t.Errorf("budgets %+v rules %+v, want %+v %+v", v.Budgets, v.Rules, budgets, rules)
	}
	// A wider window: every publish, and the one that started the latest completed scan.
	v, err = s.SiteView(ctx, a.ID, site.ID, 50, 20, 50)
	must(t, err)
	pubs, _ = s.Publishes(ctx, a.ID, site.ID, *v.Completed[len(v.Completed)-1].CompletedAt, 50)
	if !reflect.DeepEqual(v.Publishes, pubs) {
		t.Errorf("publishes %+v, want %+v", v.Publishes, pubs)
	}
	byScan, _ := s.PublishesOfScans(ctx, a.ID, []string{v.Completed[0].ID})
	if p, ok := byScan[v.Completed[0].ID]; ok != (v.Publish != nil) || ok && !reflect.DeepEqual(*v.Publish, p) {
		t.Errorf("publish of the latest completed scan: %+v, want %+v", v.Publish, p)
	}
	errs, _ := s.PageErrors(ctx, a.ID, v.History[0].ID)
	if !reflect.DeepEqual(v.Errors, errs) {
		t.Errorf("errors %+v, want %+v", v.Errors, errs)
	}
	// Someone else's site is not found, by every read.
	_, err = s.SiteView(ctx, b.ID, site.ID, 50, 20, 50)
	wantErr(t, err, store.ErrNotFound)
	_, _, err = s.SiteAndWorkspace(ctx, b.ID, site.ID)
	wantErr(t, err, store.ErrNotFound)
	got, w, err := s.SiteAndWorkspace(ctx, a.ID, site.ID)
	must(t, err)
	if got.ID != site.ID || w.ID != a.ID || w.Role != store.RoleOwner || w.RetentionDays != store.DefaultRetentionDays {
		t.Errorf("site and workspace: %+v %+v", got, w)
	}
}
