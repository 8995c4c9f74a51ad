package storetest_test

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestReads is the contract of store.Reads, the one-statement reads of issue 25, on both
// stores: each answers what the reads it replaces answer together, and a stranger's id is
// not found.
func TestReads(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"site listings are SitesOf or SitesIn with their workspaces' names", testSiteListings},
		{"the sites list pages by name and id, its cursors and search scoped to the user", testSiteListingsPage},
		{"page details read the named page, or the worst, with the scan's status", testPageDetails},
		{"latest results are the latest completed scan's, left out when the caller knows that scan", testLatestResults},
		{"latest two are the two latest completed scans with their metrics and the latest's publish", testLatestTwo},
		{"a scan report is made when role, status and cap allow, and says which did not", testCreateScanReport},
		{"a scan view is the scan with its site's name, domain and budgets", testScanView},
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.Open(t)) })
			}
		})
	}
}

// scanWith completes a scan of site whose results are the given ones (path, strategy and scores);
// complete false leaves it running.
func scanWith(t *testing.T, s store.Store, site store.Site, at time.Time, complete bool, results ...store.PageResult) store.Scan {
	t.Helper()
	sc := enqueue(t, s, site, at)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", at, 0)
	must(t, err)
	if j.ScanID != sc.ID {
		t.Fatalf("claimed scan %s, want %s", j.ScanID, sc.ID)
	}
	must(t, s.StartScan(ctx, j.Lease(), len(results), at))
	for _, r := range results {
		r.PageURL = "https://x.test" + r.PagePath
		must(t, s.SavePageResult(ctx, j.Lease(), r))
	}
	if complete {
		must(t, s.CompleteScan(ctx, j.Lease(), store.ScanScores{Health: ip(70), Performance: ip(70)}, at.Add(time.Minute)))
	}
	got, err := s.Scan(ctx, site.UserID, sc.ID)
	must(t, err)
	return got
}

func page(path string, strategy store.Strategy, perf *int, lcp float64) store.PageResult {
	return store.PageResult{PagePath: path, Strategy: strategy, Scores: store.PageScores{Performance: perf, SEO: ip(90)},
		CoreWebVitals: store.Vitals{LCP: &lcp}, LCPElement: &store.Element{Selector: "img.hero" + path}}
}

func testSiteListings(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	c := newUser(t, s, "c@example.com")
	own := newSite(t, s, a, "Zeta")
	w := team(t, s, b, "Agency", map[store.User]store.Role{a: store.RoleViewer})
	teamOne := teamSite(t, s, b, w, "alpha")
	newSite(t, s, b, "b's own")

	for _, ws := range []string{"", w.ID, store.PersonalWorkspace(a.ID)} {
		var want []store.Site
		var err error
		if ws == "" {
			want, err = s.SitesOf(ctx, a.ID)
		} else {
			want, err = s.SitesIn(ctx, a.ID, ws)
		}
		must(t, err)
		got, err := s.SiteListings(ctx, a.ID, ws)
		must(t, err)
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("listings of %q: %d sites, want %d (> 0)", ws, len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i].Site, want[i]) {
				t.Errorf("listing %d of %q = %+v, want %+v", i, ws, got[i].Site, want[i])
			}
			name := map[string]string{own.ID: "a's workspace", teamOne.ID: "Agency"}[got[i].ID]
			if got[i].WorkspaceName != name {
				t.Errorf("site %s in workspace %q, want %q", got[i].Name, got[i].WorkspaceName, name)
			}
		}
	}
	// The triage: the latest scan of any status, and what the latest completed scan left.
	done := scanWith(t, s, teamOne, t0, true, page("/", "mobile", ip(50), 1))
	_, err := s.SwapBudgetState(ctx, teamOne.ID, done.ID, store.Triage{BudgetsBroken: true, Broken: []string{"lcp", "performance"}, Regressions: 3})
	must(t, err)
	queued := enqueue(t, s, teamOne, t0.Add(time.Hour))
	got, err := s.SiteListings(ctx, a.ID, w.ID)
	must(t, err)
	want := store.Triage{BudgetsBroken: true, Broken: []string{"lcp", "performance"}, Regressions: 3}
	if len(got) != 1 || got[0].LastScan == nil || got[0].LastScan.ID != queued.ID || !reflect.DeepEqual(got[0].Triage, want) {
		t.Errorf("the team's listing = %+v, want the queued scan last and triage %+v", got, want)
	}
	if got, _ := s.SiteListings(ctx, a.ID, store.PersonalWorkspace(a.ID)); len(got) != 1 || got[0].LastScan != nil ||
		!reflect.DeepEqual(got[0].Triage, store.Triage{Broken: []string{}}) {
		t.Errorf("a site never scanned = %+v, want no scan and an empty triage", got)
	}
	if got, err := s.SiteListings(ctx, c.ID, ""); err != nil || len(got) != 0 {
		t.Errorf("a stranger lists %+v, %v; want none", got, err)
	}
	if got, err := s.SiteListings(ctx, c.ID, w.ID); err != nil || len(got) != 0 {
		t.Errorf("a stranger lists %+v in the team, %v; want none", got, err)
	}
}

func testSiteListingsPage(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	w := team(t, s, b, "Agency", map[store.User]store.Role{a: store.RoleViewer})
	mine := []string{store.PersonalWorkspace(a.ID), w.ID}
	var want []string // names, in (name, id) order: byte order, so "Site 10" before "site 2"
	for i, n := range []string{"site 3", "Site 10", "site 1", "site 2", "site 2", "other"} {
		site := store.Site{ID: store.NewID(), UserID: a.ID, Name: n, Domain: fmt.Sprintf("s%d.test", i), Pages: []string{"/"}, CreatedAt: t0}
		if i%2 == 1 {
			site.UserID, site.WorkspaceID = b.ID, w.ID
		}
		must(t, s.CreateSite(ctx, site))
		want = append(want, n+"/"+site.ID)
	}
	slices.SortFunc(want, func(x, y string) int {
		xn, xi, _ := strings.Cut(x, "/")
		yn, yi, _ := strings.Cut(y, "/")
		return cmp.Or(strings.Compare(xn, yn), strings.Compare(xi, yi))
	})
	stranger := newSite(t, s, b, "site 0") // b's personal workspace: never a's
	done := scanWith(t, s, stranger, t0, true, page("/", "mobile", ip(50), 1))
	names := func(p store.ListingPage) (out []string) {
		for _, l := range p.Sites {
			out = append(out, l.Name+"/"+l.ID)
		}
		return out
	}
	// Forward by the Next cursors, two a page, then back by the Prev cursors.
	q := store.ListingQuery{Workspaces: append(mine, store.PersonalWorkspace(b.ID)), Limit: 2}
	var pages []store.ListingPage
	for {
		p, err := s.SiteListingsPage(ctx, a.ID, q)
		must(t, err)
		pages = append(pages, p)
		if p.Next == "" || len(pages) > 5 {
			break
		}
		q.After, q.Before = p.Next, ""
	}
	var got []string
	for _, p := range pages {
		got = append(got, names(p)...)
	}
	if !slices.Equal(got, want) || len(pages) != 3 || pages[0].Prev != "" || pages[2].Prev == "" {
		t.Fatalf("pages forward: %q (%d pages, first's prev %q), want %q in 3 pages, the first without prev", got, len(pages), pages[0].Prev, want)
	}
	q.After, q.Before = "", pages[2].Prev
	back, err := s.SiteListingsPage(ctx, a.ID, q)
	must(t, err)
	if !slices.Equal(names(back), names(pages[1])) || back.Prev == "" || back.Next != pages[1].Next {
		t.Errorf("back from the last page: %q prev %q next %q, want %q with prev, next %q", names(back), back.Prev, back.Next, names(pages[1]), pages[1].Next)
	}
	q.Before = back.Prev
	if first, err := s.SiteListingsPage(ctx, a.ID, q); err != nil || !slices.Equal(names(first), want[:2]) || first.Prev != "" {
		t.Errorf("back to the first page: %q prev %q, %v; want %q without prev", names(first), first.Prev, err, want[:2])
	}
	if both, err := s.SiteListingsPage(ctx, a.ID, store.ListingQuery{Workspaces: mine, Limit: 2, After: pages[0].Next, Before: pages[2].Prev}); err != nil ||
		!slices.Equal(names(both), names(pages[1])) {
		t.Errorf("after and before both: %q, %v; want the page after (%q)", names(both), err, names(pages[1]))
	}
	// A cursor that is another account's site, or no site, reads as the first page.
	for _, c := range []string{stranger.ID, store.NewID(), "not an id"} {
		for _, cq := range []store.ListingQuery{{Workspaces: mine, Limit: 2, After: c}, {Workspaces: mine, Limit: 2, Before: c}} {
			if p, err := s.SiteListingsPage(ctx, a.ID, cq); err != nil || !slices.Equal(names(p), want[:2]) || p.Prev != "" || p.Next == "" {
				t.Errorf("cursor %q (%+v): %q prev %q next %q, %v; want the first page", c, cq, names(p), p.Prev, p.Next, err)
			}
		}
	}
	// The search ignores case; the latest scan and triage come with each site.
	p, err := s.SiteListingsPage(ctx, a.ID, store.ListingQuery{Workspaces: mine, Search: "SITE 2", Limit: 5})
	must(t, err)
	if len(p.Sites) != 2 || p.Next != "" || p.Sites[0].Name != "site 2" || p.Sites[0].Triage.Broken == nil {
		t.Errorf("search \"SITE 2\": %+v, want the two \"site 2\" and no next", p)
	}
	if p, err := s.SiteListingsPage(ctx, b.ID, store.ListingQuery{Workspaces: []string{store.PersonalWorkspace(b.ID)}, Limit: 5}); err != nil ||
		len(p.Sites) != 1 || p.Sites[0].LastScan == nil || p.Sites[0].LastScan.ID != done.ID || p.Sites[0].WorkspaceName == "" {
		t.Errorf("b's own: %+v, %v; want site 0 with its scan %s and its workspace's name", p, err, done.ID)
	}
	// Another account's workspace lists nothing; no workspace lists nothing.
	for _, ws := range [][]string{{store.PersonalWorkspace(b.ID)}, nil} {
		if p, err := s.SiteListingsPage(ctx, a.ID, store.ListingQuery{Workspaces: ws, Limit: 5}); err != nil || len(p.Sites) != 0 || p.Next != "" || p.Prev != "" {
			t.Errorf("a lists %q: %+v, %v; want nothing", ws, p, err)
		}
	}
}

func testPageDetails(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	c := newUser(t, s, "c@example.com")
	site := newSite(t, s, a, "shop")
	sc := scanWith(t, s, site, t0, true,
		page("/b", "mobile", ip(50), 1), page("/a", "mobile", ip(50), 2), page("/c", "mobile", nil, 3),
		page("/d", "mobile", ip(90), 4), page("/a", "desktop", ip(95), 5))
	cases := []struct {
		path     string
		strategy store.Strategy
		want     string
	}{
		{"", "mobile", "/a"}, // 50 twice: the smaller path; no score: last
		{"", "desktop", "/a"},
		{"/d", "mobile", "/d"},
		{"/c", "mobile", "/c"},
	}
	for _, tc := range cases {
		d, err := s.PageDetails(ctx, a.ID, sc.ID, tc.path, tc.strategy)
		must(t, err)
		want, err := s.PageResult(ctx, a.ID, sc.ID, tc.want, tc.strategy)
		must(t, err)
		if !d.Found || d.ScanStatus != store.StatusComplete || !reflect.DeepEqual(d.Result, want) {
			t.Errorf("details of %q %s = %+v, want found %+v", tc.path, tc.strategy, d, want)
		}
	}
	d, err := s.PageDetails(ctx, a.ID, sc.ID, "/missing", "mobile")
	must(t, err)
	if d.Found || d.ScanStatus != store.StatusComplete {
		t.Errorf("details of a page not audited = %+v, want not found in a complete scan", d)
	}
	running := scanWith(t, s, newSite(t, s, a, "other"), t0, false)
	d, err = s.PageDetails(ctx, a.ID, running.ID, "", "mobile")
	must(t, err)
	if d.Found || d.ScanStatus != store.StatusRunning {
		t.Errorf("worst page of a scan without results = %+v, want not found, running", d)
	}
	_, err = s.PageDetails(ctx, c.ID, sc.ID, "", "mobile")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.PageDetails(ctx, c.ID, sc.ID, "/d", "mobile")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.PageDetails(ctx, a.ID, "not-a-uuid", "", "mobile")
	wantErr(t, err, store.ErrNotFound)
}

func testLatestResults(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	c := newUser(t, s, "c@example.com")
	site := newSite(t, s, a, "shop")
	got, err := s.LatestResults(ctx, a.ID, site.ID, "")
	must(t, err)
	if got.Scan != nil || got.Results != nil {
		t.Errorf("before any scan: %+v, want no scan", got)
	}
	scanWith(t, s, site, t0, true, page("/", "mobile", ip(10), 1))
	sc := scanWith(t, s, site, t0.Add(time.Hour), true, page("/z", "mobile", ip(20), 2), page("/a", "desktop", ip(30), 3))
	scanWith(t, s, site, t0.Add(2*time.Hour), false, page("/", "mobile", ip(40), 4)) // running: not the latest completed
	want, err := s.PageResults(ctx, a.ID, sc.ID)
	must(t, err)
	got, err = s.LatestResults(ctx, a.ID, site.ID, "")
	must(t, err)
	if got.Scan == nil || !reflect.DeepEqual(*got.Scan, sc) || !reflect.DeepEqual(got.Results, want) {
		t.Errorf("latest results = %+v\nwant %+v %+v", got, sc, want)
	}
	got, err = s.LatestResults(ctx, a.ID, site.ID, sc.ID)
	must(t, err)
	if got.Scan == nil || got.Scan.ID != sc.ID || got.Results != nil {
		t.Errorf("latest results of a known scan = %+v, want the scan without results", got)
	}
	_, err = s.LatestResults(ctx, c.ID, site.ID, "")
	wantErr(t, err, store.ErrNotFound)
	_, err = s.LatestResults(ctx, a.ID, store.NewID(), "")
	wantErr(t, err, store.ErrNotFound)
}

func testLatestTwo(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	c := newUser(t, s, "c@example.com")
	site := newSite(t, s, a, "shop")
	got, err := s.LatestTwo(ctx, a.ID, site.ID, nil)
	must(t, err)
	if len(got.Scans) != 0 || len(got.Metrics) != 0 || got.PublishedOn != nil {
		t.Errorf("before any scan: %+v", got)
	}
	first := scanWith(t, s, site, t0, true, page("/", "mobile", ip(10), 1))
	got, err = s.LatestTwo(ctx, a.ID, site.ID, nil)
	must(t, err)
	if len(got.Scans) != 1 || got.Scans[0].ID != first.ID || len(got.Metrics) != 1 || len(got.Metrics[0]) != 1 {
		t.Errorf("after one scan: %+v", got)
	}
	second := scanWith(t, s, site, t0.Add(time.Hour), true, page("/z", "mobile", ip(20), 2), page("/a", "desktop", nil, 3))
	empty := scanWith(t, s, site, t0.Add(2*time.Hour), true) // complete without results
	must(t, s.RecordPublish(ctx, store.Publish{ID: store.NewID(), SiteID: site.ID, PublishedBy: "Ana", PublishedOn: t0.Add(3 * time.Hour), ScanID: empty.ID}))
	got, err = s.LatestTwo(ctx, a.ID, site.ID, nil)
	must(t, err)
	m1, err := s.PageMetrics(ctx, a.ID, second.ID)
	must(t, err)
	if len(got.Scans) != 2 || !reflect.DeepEqual(got.Scans, []store.Scan{empty, second}) ||
		!reflect.DeepEqual(got.Metrics, [][]store.PageResult{{}, m1}) {
		t.Errorf("latest two = %+v\nwant %+v %+v and metrics [] %+v", got, empty, second, m1)
	}
	got, err = s.LatestTwo(ctx, a.ID, site.ID, []string{second.ID, "not-a-uuid"})
	must(t, err)
	if len(got.Scans) != 2 || got.Metrics[0] == nil || len(got.Metrics[0]) != 0 || got.Metrics[1] != nil {
		t.Errorf("latest two with the second known = %+v, want its metrics left out (nil)", got.Metrics)
	}
	if got.PublishedBy != "Ana" || got.PublishedOn == nil || !got.PublishedOn.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("publish of the latest = %q %v, want Ana at t0+3h", got.PublishedBy, got.PublishedOn)
	}
	_, err = s.LatestTwo(ctx, c.ID, site.ID, nil)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.LatestTwo(ctx, a.ID, "not-a-uuid", nil)
	wantErr(t, err, store.ErrNotFound)
}

func testCreateScanReport(t *testing.T, s store.Store) {
	owner := newUser(t, s, "owner@example.com")
	viewer := newUser(t, s, "viewer@example.com")
	c := newUser(t, s, "c@example.com")
	w := team(t, s, owner, "Agency", map[store.User]store.Role{viewer: store.RoleViewer})
	long := strings.Repeat("é", 100)
	site := teamSite(t, s, owner, w, "shop")
	site.Name = long
	must(t, s.UpdateSite(ctx, site))
	sc := scanWith(t, s, site, t0, true, page("/", "mobile", ip(10), 1))
	running := scanWith(t, s, teamSite(t, s, owner, w, "other"), t0, false)
	report := func(u store.User, scanID, title string) store.Report {
		return store.Report{ID: store.NewID(), TokenHash: store.NewID(), ScanID: scanID, UserID: u.ID, Title: title, CreatedAt: t0}
	}
	user := func(u store.User) store.Principal { return store.Principal{UserID: u.ID} }

	// A title strangers would misread, or too long, is refused before anything is stored.
	for _, title := range []string{"Q4\u202e", strings.Repeat("x", store.MaxReportTitle+1)} {
		_, err := s.CreateScanReport(ctx, user(owner), report(owner, sc.ID, title), 2)
		wantErr(t, err, store.ErrInvalid)
	}
	r := report(owner, sc.ID, "")
	r.TokenSealed = "k1.sealed-token"
	got, err := s.CreateScanReport(ctx, user(owner), r, 2)
	must(t, err)
	if want := store.DefaultReportTitle(long); got.Title != want || got.ScanStatus != store.StatusComplete {
		t.Errorf("report = %+v, want title %q", got, want)
	}
	stored, err := s.ReportByHash(ctx, r.TokenHash)
	must(t, err)
	if stored.ID != r.ID || stored.Title != got.Title || stored.WorkspaceID != w.ID || stored.SiteID != site.ID || stored.TokenSealed != r.TokenSealed {
		t.Errorf("stored %+v", stored)
	}
	if list, _ := s.ReportsOf(ctx, viewer.ID); len(list) != 1 || list[0].TokenSealed != r.TokenSealed {
		t.Errorf("ReportsOf = %+v, want the report with its sealed token", list)
	}
	_, err = s.CreateScanReport(ctx, user(viewer), report(viewer, sc.ID, "x"), 2)
	wantErr(t, err, store.ErrForbidden)
	_, err = s.CreateScanReport(ctx, user(c), report(c, sc.ID, "x"), 2)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateScanReport(ctx, user(owner), report(owner, store.NewID(), "x"), 2)
	wantErr(t, err, store.ErrNotFound)
	// An API key: of another workspace, not found; of this one, only when it may publish.
	_, err = s.CreateScanReport(ctx, store.Principal{UserID: owner.ID, KeyWorkspaceID: owner.ID, KeyPublish: true}, report(owner, sc.ID, "x"), 2)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateScanReport(ctx, store.Principal{UserID: owner.ID, KeyWorkspaceID: w.ID}, report(owner, sc.ID, "x"), 2)
	wantErr(t, err, store.ErrForbidden)
	got, err = s.CreateScanReport(ctx, store.Principal{UserID: owner.ID, KeyWorkspaceID: w.ID, KeyPublish: true}, report(owner, sc.ID, "Q4"), 2)
	must(t, err)
	if got.Title != "Q4" {
		t.Errorf("title %q, want Q4", got.Title)
	}
	got, err = s.CreateScanReport(ctx, user(owner), report(owner, running.ID, "x"), 5)
	wantErr(t, err, store.ErrScanNotComplete)
	if got.ScanStatus != store.StatusRunning {
		t.Errorf("status %q, want running", got.ScanStatus)
	}
	_, err = s.CreateScanReport(ctx, user(owner), report(owner, sc.ID, "x"), 2)
	wantErr(t, err, store.ErrLimit)
	if list, _ := s.ReportsOf(ctx, owner.ID); len(list) != 2 {
		t.Errorf("%d reports stored, want 2", len(list))
	}
}

// TestEnqueueDueScansStatements: the scheduler enqueues a batch of due sites, each a scan and
// its job, and moves them a period ahead, in one statement on Postgres, however many are due.
func TestEnqueueDueScansStatements(t *testing.T) {
	s, counted := storetest.CountingPostgres(t)
	a := newUser(t, s, "a@example.com")
	var due []store.Site
	for i, name := range []string{"one", "two", "three", "four"} {
		due = append(due, scheduledSite(t, s, a, name, store.ScheduleDaily, tptr(t0.Add(time.Duration(i-10)*time.Minute))))
	}
	enqueue(t, s, due[3], t0.Add(-time.Hour)) // in flight: serves as this period's scan
	for round, want := range []int{3, 0} {
		counted.Reset()
		got, err := s.EnqueueDueScans(ctx, t0, 10)
		must(t, err)
		if sent := counted.Sent(); len(sent) != 1 {
			t.Errorf("round %d sent %d statements, want 1:\n%s", round, len(sent), strings.Join(sent, "\n"))
		}
		if len(got) != want {
			t.Errorf("round %d enqueued %d scans, want %d", round, len(got), want)
		}
		for i, sc := range got {
			if sc.SiteID != due[i].ID {
				t.Errorf("scan %d of site %s, want %s: in due order", i, sc.SiteID, due[i].ID)
			}
		}
	}
	jobs, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	if jobs.ScanID == "" {
		t.Error("no scan job claimable")
	}
}

func testScanView(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	c := newUser(t, s, "c@example.com")
	site := newSite(t, s, a, "shop")
	sc := scanWith(t, s, site, t0, false)
	budgets := map[string]store.Budget{"performance": {Threshold: 80, Strategy: store.StrategyMobile}, "lcp": {Threshold: 2500, Strategy: store.StrategyBoth}}
	must(t, s.SetBudgets(ctx, a.ID, site.ID, budgets))
	v, err := s.ScanView(ctx, a.ID, sc.ID)
	must(t, err)
	want, err := s.Budgets(ctx, a.ID, site.ID)
	must(t, err)
	if !reflect.DeepEqual(v.Scan, sc) || v.SiteName != site.Name || v.SiteDomain != site.Domain || !reflect.DeepEqual(v.Budgets, want) {
		t.Errorf("scan view = %+v, want %+v of %s %s with %+v", v, sc, site.Name, site.Domain, want)
	}
	_, err = s.ScanView(ctx, c.ID, sc.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ScanView(ctx, a.ID, "not-a-uuid")
	wantErr(t, err, store.ErrNotFound)
}
