package storetest_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestExplains is the contract of what explains a run (issue 33) on both stores: the explain
// data a result carries is written with it and read back as it was, scoped like the result.
func TestExplains(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"a result's explain data is stored with it and read back by its page result, for members only", testExplainStored},
		{"pruning a result's row takes its explain data and its bytes with it", testExplainPruned},
		{"a run's pictures are stored with it and read by members of its workspace, one at a time with their data", testImagesStored},
		{"a report reads the pictures of its own scan only", testReportImages},
		{"a retried run replaces the page's row and pictures, counts the page once, and a lost lease writes nothing", testImagesReplaced},
		{"pictures are kept for the latest two completed scans of each page and both sides of a regression; the pruner releases the rest", testImagesKept},
		{"retention releases a pruned scan's pictures, pinned or not, with their bytes", testImagesRetention},
		{"a scan's runs pair with the previous completed scan's, and any two scans' of a site, with both sides' explain data, for members only", testPairs},
		{"the JSON export streams each run with its explain data and the previous completed scan's run of its page; the CSV export neither", testExportPrevious},
		{"several runs' pictures are read with their data in one statement, the large ones without, for members only", testRunImages},
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.Open(t)) })
			}
		})
	}
}

// fixtureRun extracts a real PSI response of testdata ("psi" or "psi-before", "home.mobile").
func fixtureRun(t *testing.T, dir, name string) store.PageResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", dir, name+".json"))
	must(t, err)
	r, err := lighthouse.ExtractPSI(b)
	must(t, err)
	if r.Explain == nil || len(r.Explain.Requests) == 0 {
		t.Fatalf("%s/%s: no explain data extracted", dir, name)
	}
	return r
}

func testExplainStored(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "site")
	home, pricing := fixtureRun(t, "psi", "home.mobile"), fixtureRun(t, "psi", "pricing.desktop")
	bare := page("/bare", store.StrategyMobile, ip(90), 1000) // stored without explain data
	sc := scanWith(t, s, site, t0, true, home, pricing, bare)

	got, err := s.PageResult(ctx, a.ID, sc.ID, home.PagePath, home.Strategy)
	must(t, err)
	if !reflect.DeepEqual(got.Explain, home.Explain) {
		t.Errorf("explain read back differs:\n got %+v\nwant %+v", got.Explain, home.Explain)
	}
	if req, ok := got.Explain.LCPRequest(); !ok || req.URL != "http://127.0.0.1:8701/static/img/hero.jpg" {
		t.Errorf("LCP request %+v", req)
	}
	got, err = s.PageResult(ctx, a.ID, sc.ID, pricing.PagePath, pricing.Strategy)
	must(t, err)
	if !reflect.DeepEqual(got.Explain, pricing.Explain) {
		t.Errorf("the second result's explain differs")
	}
	got, err = s.PageResult(ctx, a.ID, sc.ID, "/bare", store.StrategyMobile)
	must(t, err)
	if got.Explain != nil {
		t.Errorf("a result stored without explain data reads %+v", got.Explain)
	}
	// The result's JSON never carries it: get_page_details and the export stay as they were.
	if j := string(store.EncodeResult(home)); strings.Contains(j, `"requests"`) || strings.Contains(j, "widget.js") {
		t.Errorf("the result's JSON carries the explain data: %.200s", j)
	}
	// A stranger reads nothing of it.
	_, err = s.PageResult(ctx, b.ID, sc.ID, home.PagePath, home.Strategy)
	wantErr(t, err, store.ErrNotFound)

	// Stored again (a retried job), the row is replaced with its explain data.
	again := home
	again.Explain = pricing.Explain
	j := scanJob(t, s, site, t0.Add(time.Hour))
	must(t, s.SavePageResult(ctx, j.Lease(), home))
	must(t, s.SavePageResult(ctx, j.Lease(), again))
	got, err = s.PageResult(ctx, a.ID, j.ScanID, home.PagePath, home.Strategy)
	must(t, err)
	if !reflect.DeepEqual(got.Explain, pricing.Explain) {
		t.Error("the upsert kept the first explain data")
	}
}

func testExplainPruned(t *testing.T, s store.Store) {
	day := 24 * time.Hour
	now := t0.Add(400 * day)
	a := newUser(t, s, "a@example.com")
	must(t, s.SetRetention(ctx, a.ID, 30))
	site := newSite(t, s, a, "site")
	home := fixtureRun(t, "psi", "home.mobile")
	bare := home
	bare.Explain = nil
	old := scanWith(t, s, site, now.Add(-100*day), true, home)
	oldBare := scanWith(t, s, site, now.Add(-99*day), true, bare)
	scanWith(t, s, site, now.Add(-2*day), true, home)
	scanWith(t, s, site, now.Add(-1*day), true, home)
	if old.Bytes <= oldBare.Bytes {
		t.Errorf("a scan with explain data takes %d bytes, one without %d", old.Bytes, oldBare.Bytes)
	}
	for {
		n, err := s.PruneDetails(ctx, now, 1000)
		must(t, err)
		if n == 0 {
			break
		}
	}
	got, err := s.Scan(ctx, a.ID, old.ID)
	must(t, err)
	if got.Bytes != 300 || got.DetailsPrunedAt == nil {
		t.Errorf("pruned scan: %d bytes, pruned at %v", got.Bytes, got.DetailsPrunedAt)
	}
	_, err = s.PageResult(ctx, a.ID, old.ID, home.PagePath, home.Strategy)
	wantErr(t, err, store.ErrNotFound)
}

// scanJob enqueues a scan of site, claims its job and starts it.
func scanJob(t *testing.T, s store.Store, site store.Site, at time.Time) store.Job {
	t.Helper()
	enqueue(t, s, site, at)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", at, 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 1, at))
	return j
}

// fixtureRuns extracts the 20 Lighthouse 13 runs of testdata/psi-before and testdata/psi.
func fixtureRuns(t *testing.T) []store.PageResult {
	t.Helper()
	var out []store.PageResult
	for _, dir := range []string{"psi-before", "psi"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "testdata", dir, "*.json"))
		must(t, err)
		for _, f := range files {
			out = append(out, fixtureRun(t, dir, strings.TrimSuffix(filepath.Base(f), ".json")))
		}
	}
	if len(out) != 20 {
		t.Fatalf("%d fixture runs, want 20", len(out))
	}
	return out
}

// TestStoredBytesPerPage measures what a store keeps per audited page of the fixtures, as the
// scan's recorded size counts it (Postgres: scan_bytes, its rows' pg_column_size), before issue
// 33 (the result alone), with the explain data, and with the run's distinct pictures too (kept
// for the latest two scans of a page and both sides of a regression only). .ci/README.md keeps the figures:
//
//	DATABASE_URL=... go test ./store/storetest -run TestStoredBytesPerPage -v
func TestStoredBytesPerPage(t *testing.T) {
	runs := fixtureRuns(t)
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Open(t)
			a := newUser(t, s, "a@example.com")
			site := newSite(t, s, a, "site")
			perPage := func(at time.Time, keep func(*store.PageResult)) int64 {
				j := scanJob(t, s, site, at)
				for i, r := range runs {
					keep(&r)
					r.PagePath = fmt.Sprintf("%s#%d", r.PagePath, i) // before and after are different pages of one scan
					must(t, s.SavePageResult(ctx, j.Lease(), r))
				}
				must(t, s.CompleteScan(ctx, j.Lease(), store.ScanScores{}, at.Add(time.Minute)))
				sc, err := s.Scan(ctx, a.ID, j.ScanID)
				must(t, err)
				return (sc.Bytes - 300) / int64(len(runs))
			}
			before := perPage(t0, func(r *store.PageResult) { r.Explain, r.Images = nil, nil })
			explain := perPage(t0.Add(time.Hour), func(r *store.PageResult) { r.Images = nil })
			images := perPage(t0.Add(2*time.Hour), func(*store.PageResult) {})
			t.Logf("%s: %d B per audited page before issue 33, %d B with the explain data (%+d B), %d B with its pictures too (%+d B)",
				b.Name, before, explain, explain-before, images, images-explain)
			if explain-before > 8<<10 {
				t.Errorf("the explain data adds %d B per page, over the 8 KB budget", explain-before)
			}
		})
	}
}

// roles makes a team workspace of owner a with a viewer, an editor since removed, and a
// stranger with a workspace of their own.
func roles(t *testing.T, s store.Store) (a, viewer, removed, stranger store.User, w store.Workspace) {
	t.Helper()
	a = newUser(t, s, "a@example.com")
	viewer = newUser(t, s, "viewer@example.com")
	removed = newUser(t, s, "removed@example.com")
	stranger = newUser(t, s, "stranger@example.com")
	w = team(t, s, a, "Team", map[store.User]store.Role{viewer: store.RoleViewer, removed: store.RoleEditor})
	must(t, s.RemoveMember(ctx, w.ID, removed.ID))
	return a, viewer, removed, stranger, w
}

func testImagesStored(t *testing.T, s store.Store) {
	a, viewer, removed, stranger, w := roles(t, s)
	site := teamSite(t, s, a, w, "site")
	home := fixtureRun(t, "psi", "home.desktop")
	if len(home.Images) < 3 {
		t.Fatalf("%d pictures extracted", len(home.Images))
	}
	sc := scanWith(t, s, site, t0, true, home)

	for _, u := range []store.User{a, viewer} {
		list, err := s.PageImages(ctx, u.ID, sc.ID, home.PagePath, home.Strategy)
		must(t, err)
		if len(list) != len(home.Images) {
			t.Fatalf("%d pictures listed, want %d", len(list), len(home.Images))
		}
		for i, im := range list {
			want := home.Images[i]
			if im.Data != nil || im.Index != i || im.MIME != want.MIME || im.Bytes != len(want.Data) || !reflect.DeepEqual(im.Timings, want.Timings) ||
				im.Final != want.Final || im.Width != want.Width || im.Height != want.Height {
				t.Errorf("picture %d listed as %+v, want %+v without data", i, im, want)
			}
			got, err := s.PageImage(ctx, u.ID, sc.ID, home.PagePath, home.Strategy, i)
			must(t, err)
			if !bytes.Equal(got.Data, want.Data) || got.MIME != want.MIME {
				t.Errorf("picture %d: %d bytes of %s, want %d of %s", i, len(got.Data), got.MIME, len(want.Data), want.MIME)
			}
		}
		frames, final := store.Filmstrip(list)
		if len(frames) != 8 || final < 0 || frames[0].TimingMs > frames[7].TimingMs {
			t.Errorf("filmstrip %+v, final %d", frames, final)
		}
	}
	// Another page, an unknown picture: nothing, not an error, for the listing; not found for one.
	list, err := s.PageImages(ctx, a.ID, sc.ID, "/nowhere", store.StrategyMobile)
	must(t, err)
	if len(list) != 0 {
		t.Errorf("pictures of a page not audited: %+v", list)
	}
	for _, idx := range []int{len(home.Images), -1, 1 << 20} {
		_, err = s.PageImage(ctx, a.ID, sc.ID, home.PagePath, home.Strategy, idx)
		wantErr(t, err, store.ErrNotFound)
	}
	// A removed member and a stranger get what an unknown scan gets.
	for _, u := range []store.User{removed, stranger} {
		_, err := s.PageImages(ctx, u.ID, sc.ID, home.PagePath, home.Strategy)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.PageImage(ctx, u.ID, sc.ID, home.PagePath, home.Strategy, 0)
		wantErr(t, err, store.ErrNotFound)
	}
	_, err = s.PageImages(ctx, a.ID, store.NewID(), home.PagePath, home.Strategy)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.PageImages(ctx, a.ID, "not-a-uuid", home.PagePath, home.Strategy)
	wantErr(t, err, store.ErrNotFound)

	// A picture of another format or over the size bound is not kept, nor any after it.
	odd := home
	odd.PagePath = "/odd"
	odd.Images = append([]store.PageImage{home.Images[0]}, home.Images[1:]...)
	odd.Images[1].MIME = "text/html"
	j := scanJob(t, s, site, t0.Add(time.Hour))
	must(t, s.SavePageResult(ctx, j.Lease(), odd))
	list, err = s.PageImages(ctx, a.ID, j.ScanID, "/odd", home.Strategy)
	must(t, err)
	if len(list) != 1 {
		t.Errorf("%d pictures kept of a run whose second is text/html, want the first", len(list))
	}
}

func testReportImages(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	home := fixtureRun(t, "psi", "home.mobile")
	first := scanWith(t, s, site, t0, true, home)
	second := scanWith(t, s, site, t0.Add(time.Hour), true, fixtureRun(t, "psi", "about.mobile"))
	rep := store.Report{ID: store.NewID(), TokenHash: store.HashSecret("r"), ScanID: second.ID, UserID: a.ID, Title: "t", CreatedAt: t0}
	must(t, s.CreateReport(ctx, rep))
	rep, err := s.ReportByHash(ctx, rep.TokenHash)
	must(t, err)
	// The report of the second scan reads the second scan's pictures...
	if _, err := s.ReportImage(ctx, rep, "/about", store.StrategyMobile, 0); err != nil {
		t.Fatalf("the report's own scan: %v", err)
	}
	// ...and nothing of the first's, though the page and index exist there.
	_, err = s.ReportImage(ctx, rep, "/", store.StrategyMobile, 0)
	wantErr(t, err, store.ErrNotFound)
	if _, err := s.PageImage(ctx, a.ID, first.ID, "/", store.StrategyMobile, 0); err != nil {
		t.Fatalf("the first scan's picture is there: %v", err)
	}
}

// runAt is a fixture run as page path at a scan; regressedFrom pins its pictures and those of
// the same page of that scan.
func runAs(r store.PageResult, path, regressedFrom string) store.PageResult {
	r.PagePath, r.RegressedFrom = path, regressedFrom
	return r
}

func imageCount(t *testing.T, s store.Store, u store.User, scanID, path string) int {
	t.Helper()
	list, err := s.PageImages(ctx, u.ID, scanID, path, store.StrategyMobile)
	must(t, err)
	return len(list)
}

func testImagesReplaced(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	run := fixtureRun(t, "psi", "home.mobile")
	if len(run.Images) < 3 {
		t.Fatalf("%d pictures extracted", len(run.Images))
	}
	j := scanJob(t, s, site, t0)
	must(t, s.SavePageResult(ctx, j.Lease(), run))
	if got := imageCount(t, s, a, j.ScanID, run.PagePath); got != len(run.Images) {
		t.Fatalf("%d pictures stored, want %d", got, len(run.Images))
	}
	// The audit retried: its run has one picture; the row, its pictures and its count are the new run's.
	again := run
	again.Images = run.Images[:1]
	again.Scores.Performance = ip(12)
	must(t, s.SavePageResult(ctx, j.Lease(), again))
	if got := imageCount(t, s, a, j.ScanID, run.PagePath); got != 1 {
		t.Errorf("after a retried run with one picture, %d are listed", got)
	}
	got, err := s.PageResult(ctx, a.ID, j.ScanID, run.PagePath, run.Strategy)
	must(t, err)
	if got.Scores.Performance == nil || *got.Scores.Performance != 12 {
		t.Errorf("the retried run's row was not kept: performance %v", got.Scores.Performance)
	}
	sc, err := s.Scan(ctx, a.ID, j.ScanID)
	must(t, err)
	if sc.PagesDone != 1 {
		t.Errorf("pages done %d after one page stored twice, want 1", sc.PagesDone)
	}
	// A page stored after its error (the audit failed, then its retry answered) is counted once too.
	must(t, s.SavePageError(ctx, j.Lease(), store.PageError{PagePath: "/late", PageURL: "https://x.test/late", Strategy: store.StrategyMobile, Error: "timed out"}))
	must(t, s.SavePageResult(ctx, j.Lease(), runAs(run, "/late", "")))
	if got := imageCount(t, s, a, j.ScanID, "/late"); got != len(run.Images) {
		t.Errorf("the page stored after its error has %d pictures, want %d", got, len(run.Images))
	}
	// The lease lost (the job finished by another attempt's worker): nothing is written.
	must(t, s.CompleteScan(ctx, j.Lease(), store.ScanScores{Health: ip(70)}, t0.Add(time.Minute)))
	err = s.SavePageResult(ctx, j.Lease(), runAs(run, "/stale", ""))
	wantErr(t, err, store.ErrLeaseLost)
	if got := imageCount(t, s, a, j.ScanID, "/stale"); got != 0 {
		t.Errorf("a lost lease stored %d pictures", got)
	}
	_, err = s.PageResult(ctx, a.ID, j.ScanID, "/stale", store.StrategyMobile)
	wantErr(t, err, store.ErrNotFound)
	sc, err = s.Scan(ctx, a.ID, j.ScanID)
	must(t, err)
	if sc.PagesDone != 2 {
		t.Errorf("pages done %d, want 2 (/ and /late)", sc.PagesDone)
	}
}

func testImagesKept(t *testing.T, s store.Store) {
	now := t0.Add(48 * time.Hour)
	a := newUser(t, s, "a@example.com")
	must(t, s.SetRetention(ctx, a.ID, 0)) // page details forever: only the pictures are released
	site := newSite(t, s, a, "site")
	run := fixtureRun(t, "psi", "home.mobile")
	n := len(run.Images)
	bare := run
	bare.Images = nil
	// s0: /, and /old, a page later scans no longer audit; s1; s2 regressed on / against s1;
	// a failed scan; s3, s4: the latest two; then one running.
	s0 := scanWith(t, s, site, t0, true, runAs(run, "/", ""), runAs(run, "/old", ""))
	s0bare := scanWith(t, s, site, t0.Add(time.Minute), true, runAs(bare, "/", ""), runAs(run, "/old", "")) // the same with no pictures of /
	s1 := scanWith(t, s, site, t0.Add(time.Hour), true, runAs(run, "/", ""))
	s2 := scanWith(t, s, site, t0.Add(2*time.Hour), true, runAs(run, "/", s1.ID))
	failed := finishedScan(t, s, site, t0.Add(3*time.Hour), []store.PageResult{runAs(run, "/", "")}, 0, true)
	s3 := scanWith(t, s, site, t0.Add(4*time.Hour), true, runAs(run, "/", ""))
	s4 := scanWith(t, s, site, t0.Add(5*time.Hour), true, runAs(run, "/", ""))
	running := scanWith(t, s, site, t0.Add(6*time.Hour), false, runAs(run, "/", ""))
	if s0.Bytes <= s0bare.Bytes {
		t.Fatalf("a scan's pictures are not counted in its bytes: %d with, %d without", s0.Bytes, s0bare.Bytes)
	}
	total := 0
	for range 50 {
		got, err := s.PruneDetails(ctx, now, 5)
		must(t, err)
		if got > 3*5 {
			t.Fatalf("one step released %d rows, more than three batches of 5", got)
		}
		if got == 0 {
			break
		}
		total += got
	}
	want := map[string]int{s0.ID: 0, s1.ID: n, s2.ID: n, failed.ID: 0, s3.ID: n, s4.ID: n, running.ID: n}
	names := map[string]string{s0.ID: "the oldest", s1.ID: "the regression's before", s2.ID: "the regression's after", failed.ID: "the failed",
		s3.ID: "the second latest", s4.ID: "the latest", running.ID: "the running"}
	for id, w := range want {
		if got := imageCount(t, s, a, id, "/"); got != w {
			t.Errorf("%s scan keeps %d pictures of /, want %d", names[id], got, w)
		}
	}
	if total != 2*n { // the oldest scan's and the failed scan's pictures of /
		t.Errorf("the pruner released %d rows, want %d", total, 2*n)
	}
	// /old was audited by s0 and s0bare only: they are its latest two, and keep its pictures.
	if got := imageCount(t, s, a, s0.ID, "/old"); got != n {
		t.Errorf("the older of /old's latest two scans keeps %d pictures, want %d", got, n)
	}
	// The pictures' bytes went with them: s0 now takes what a scan without its pictures of / takes.
	got, err := s.Scan(ctx, a.ID, s0.ID)
	must(t, err)
	if got.Bytes != s0bare.Bytes {
		t.Errorf("after its pictures went, the scan takes %d bytes; without them it took %d", got.Bytes, s0bare.Bytes)
	}
	// The results and their explain data stay: only pictures go.
	r, err := s.PageResult(ctx, a.ID, s0.ID, "/", store.StrategyMobile)
	must(t, err)
	if r.Explain == nil {
		t.Error("releasing the pictures took the explain data")
	}
}

func testImagesRetention(t *testing.T, s store.Store) {
	day := 24 * time.Hour
	now := t0.Add(400 * day)
	a := newUser(t, s, "a@example.com")
	must(t, s.SetRetention(ctx, a.ID, 30))
	site := newSite(t, s, a, "site")
	run := fixtureRun(t, "psi", "home.mobile")
	old1 := scanWith(t, s, site, now.Add(-100*day), true, runAs(run, "/", ""))
	old2 := scanWith(t, s, site, now.Add(-99*day), true, runAs(run, "/", old1.ID)) // both sides of a regression
	scanWith(t, s, site, now.Add(-2*day), true, runAs(run, "/", ""))
	scanWith(t, s, site, now.Add(-1*day), true, runAs(run, "/", ""))
	for {
		n, err := s.PruneDetails(ctx, now, 1000)
		must(t, err)
		if n == 0 {
			break
		}
	}
	for _, sc := range []store.Scan{old1, old2} {
		got, err := s.Scan(ctx, a.ID, sc.ID)
		must(t, err)
		if got.DetailsPrunedAt == nil || got.Bytes != 300 {
			t.Errorf("pruned scan: pruned at %v, %d bytes; want a time and 300", got.DetailsPrunedAt, got.Bytes)
		}
		if n := imageCount(t, s, a, sc.ID, "/"); n != 0 {
			t.Errorf("a pruned scan keeps %d pinned pictures", n)
		}
	}
}

func testPairs(t *testing.T, s store.Store) {
	a, viewer, removed, stranger, w := roles(t, s)
	site := teamSite(t, s, a, w, "site")
	other := teamSite(t, s, a, w, "other")
	runs := func(dir string, names ...string) []store.PageResult {
		var out []store.PageResult
		for _, n := range names {
			out = append(out, fixtureRun(t, dir, n))
		}
		return out
	}
	before := scanWith(t, s, site, t0, true, runs("psi-before", "home.mobile", "pricing.mobile", "blog.desktop")...)
	failed := finishedScan(t, s, site, t0.Add(time.Hour), runs("psi", "home.mobile"), 0, true)
	latestRuns := runs("psi", "home.mobile", "pricing.mobile", "fast.mobile")
	latestRuns[0].Runs = 3                                                   // the median of three audits: it looked regressed
	latest := scanWith(t, s, site, t0.Add(2*time.Hour), true, latestRuns...) // no /blog/, a new /fast
	running := scanWith(t, s, site, t0.Add(3*time.Hour), false, runs("psi", "about.mobile")...)
	elsewhere := scanWith(t, s, other, t0, true, runs("psi", "home.mobile")...)

	got, err := s.PreviousPairs(ctx, viewer.ID, latest.ID)
	must(t, err)
	if got.From == nil || got.From.ID != before.ID || got.To.ID != latest.ID || got.From.Summary == nil {
		t.Fatalf("previous of the latest: from %+v to %s; want the scan before the failed one", got.From, got.To.ID)
	}
	if len(got.Pairs) != 2 || got.Pairs[0].After.PagePath != "/" || got.Pairs[1].After.PagePath != "/pricing" {
		t.Fatalf("pairs %+v, want / and /pricing mobile, the pages both scans have", got.Pairs)
	}
	metrics, err := s.PageMetrics(ctx, a.ID, latest.ID)
	must(t, err)
	for _, p := range got.Pairs {
		if p.Before.ScanID != before.ID || p.After.ScanID != latest.ID || p.Before.Explain == nil || p.After.Explain == nil ||
			p.Before.PagePath != p.After.PagePath || p.Before.Strategy != p.After.Strategy {
			t.Errorf("pair %s %s: scans %s %s, explain %v %v", p.After.PagePath, p.After.Strategy, p.Before.ScanID, p.After.ScanID,
				p.Before.Explain != nil, p.After.Explain != nil)
		}
		for _, m := range metrics {
			if m.PagePath == p.After.PagePath && m.Strategy == p.After.Strategy &&
				(!reflect.DeepEqual(m.Scores, p.After.Scores) || !reflect.DeepEqual(m.CoreWebVitals, p.After.CoreWebVitals) || m.PageURL != p.After.PageURL) {
				t.Errorf("pair %s: metrics %+v, PageMetrics %+v", p.After.PagePath, p.After, m)
			}
		}
	}
	if r0, r1 := got.Pairs[0].After.Runs, got.Pairs[1].After.Runs; r0 != 3 || r1 != latestRuns[1].Runs {
		t.Errorf("runs of / and /pricing: %d and %d, want 3 and %d", r0, r1, latestRuns[1].Runs)
	}
	if want := fixtureRun(t, "psi", "home.mobile"); !reflect.DeepEqual(got.Pairs[0].After.Explain, want.Explain) {
		t.Error("the after side's explain data differs from what was stored")
	}
	// The earliest has none before it; a running scan pairs with the latest completed one; the
	// failed scan with the one completed before it.
	first, err := s.PreviousPairs(ctx, a.ID, before.ID)
	must(t, err)
	if first.From != nil || len(first.Pairs) != 0 || first.To.ID != before.ID {
		t.Errorf("previous of the first scan: %+v", first)
	}
	for scan, want := range map[string]string{running.ID: latest.ID, failed.ID: before.ID} {
		got, err := s.PreviousPairs(ctx, a.ID, scan)
		must(t, err)
		if got.From == nil || got.From.ID != want {
			t.Errorf("previous of %s: %+v, want %s", scan, got.From, want)
		}
	}
	// Any two scans of the site, in the order given: the same as PreviousPairs for these two.
	cmp, err := s.ComparePairs(ctx, a.ID, before.ID, latest.ID)
	must(t, err)
	if cmp.From.ID != before.ID || cmp.To.ID != latest.ID || !reflect.DeepEqual(cmp.Pairs, got.Pairs) {
		t.Errorf("compare pairs differ from previous pairs")
	}
	back, err := s.ComparePairs(ctx, a.ID, latest.ID, before.ID)
	must(t, err)
	if back.From.ID != latest.ID || len(back.Pairs) != 2 || back.Pairs[0].Before.ScanID != latest.ID {
		t.Errorf("compare backwards: %+v", back.From)
	}
	// Not found: another site's scan, a removed member's or a stranger's view, unknown ids.
	for name, call := range map[string]func() error{
		"scans of two sites":       func() error { _, err := s.ComparePairs(ctx, a.ID, elsewhere.ID, latest.ID); return err },
		"a removed member":         func() error { _, err := s.ComparePairs(ctx, removed.ID, before.ID, latest.ID); return err },
		"a stranger":               func() error { _, err := s.ComparePairs(ctx, stranger.ID, before.ID, latest.ID); return err },
		"a stranger's previous":    func() error { _, err := s.PreviousPairs(ctx, stranger.ID, latest.ID); return err },
		"a removed member's prev":  func() error { _, err := s.PreviousPairs(ctx, removed.ID, latest.ID); return err },
		"an unknown from":          func() error { _, err := s.ComparePairs(ctx, a.ID, store.NewID(), latest.ID); return err },
		"an unknown to":            func() error { _, err := s.ComparePairs(ctx, a.ID, before.ID, store.NewID()); return err },
		"an id that is no uuid":    func() error { _, err := s.PreviousPairs(ctx, a.ID, "x"); return err },
		"a stranger's own scan id": func() error { _, err := s.PreviousPairs(ctx, stranger.ID, elsewhere.ID); return err },
	} {
		if err := call(); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want not found", name, err)
		}
	}
	// What the surfaces make of it: the regressed pages and their causes.
	changes := analysis.RegressedChanges(got.Pairs)
	if len(changes) != 2 || changes[0].PagePath != "/" || changes[1].PagePath != "/pricing" || len(changes[0].Regressions) == 0 {
		t.Fatalf("regressed changes %+v", changes)
	}
	if c, ok := changes[1].CauseOf("ttfb"); !ok || !strings.Contains(c.Sentence, "the document /pricing took") {
		t.Errorf("the /pricing TTFB cause: %q", c.Sentence)
	}
}

func testExportPrevious(t *testing.T, s store.Store) {
	a, viewer, _, stranger, w := roles(t, s)
	site := teamSite(t, s, a, w, "site")
	runs := func(dir string, names ...string) []store.PageResult {
		var out []store.PageResult
		for _, n := range names {
			out = append(out, fixtureRun(t, dir, n))
		}
		return out
	}
	type row struct {
		r        store.PageResult
		previous *store.PageResult
	}
	export := func(u store.User, scanID string, full bool) []row {
		t.Helper()
		var out []row
		must(t, s.ExportScan(ctx, u.ID, site.ID, scanID, full, func(store.Site, *store.Scan) error { return nil },
			func(r store.PageResult, previous *store.PageResult) error {
				out = append(out, row{r, previous})
				return nil
			}))
		return out
	}
	before := scanWith(t, s, site, t0, true, runs("psi-before", "home.mobile", "pricing.mobile", "blog.desktop")...)
	finishedScan(t, s, site, t0.Add(time.Hour), runs("psi", "home.mobile"), 0, true) // failed: never a previous scan
	latest := scanWith(t, s, site, t0.Add(2*time.Hour), true, runs("psi", "home.mobile", "pricing.mobile", "fast.mobile")...)
	scanWith(t, s, site, t0.Add(3*time.Hour), false, runs("psi", "about.mobile")...) // running: not exported

	// The site's first scan has no previous run of any page.
	for _, x := range export(a, before.ID, true) {
		if x.previous != nil || x.r.Explain == nil {
			t.Errorf("first scan %s: previous %+v, explain kept %v", x.r.PagePath, x.previous, x.r.Explain != nil)
		}
	}
	// The latest, by id or as the latest completed scan, read by a viewer: /fast is new.
	for _, id := range []string{latest.ID, ""} {
		got := export(viewer, id, true)
		if len(got) != 3 || got[0].r.PagePath != "/" || got[1].r.PagePath != "/fast" || got[2].r.PagePath != "/pricing" {
			t.Fatalf("export of %q: %d rows", id, len(got))
		}
		for _, x := range got {
			want := fixtureRun(t, "psi", map[string]string{"/": "home.mobile", "/fast": "fast.mobile", "/pricing": "pricing.mobile"}[x.r.PagePath])
			if !reflect.DeepEqual(x.r.Explain, want.Explain) || !reflect.DeepEqual(x.r.CoreWebVitals, want.CoreWebVitals) {
				t.Errorf("%s: the run's explain data or vitals differ from what was stored", x.r.PagePath)
			}
			if x.r.PagePath == "/fast" {
				if x.previous != nil {
					t.Errorf("/fast is new, yet has a previous run %+v", x.previous)
				}
				continue
			}
			b := fixtureRun(t, "psi-before", map[string]string{"/": "home.mobile", "/pricing": "pricing.mobile"}[x.r.PagePath])
			if p := x.previous; p == nil || p.ScanID != before.ID || p.PagePath != x.r.PagePath || p.Strategy != x.r.Strategy ||
				p.PageURL != "https://x.test"+x.r.PagePath || !reflect.DeepEqual(p.Explain, b.Explain) ||
				!reflect.DeepEqual(p.Scores, b.Scores) || !reflect.DeepEqual(p.CoreWebVitals, b.CoreWebVitals) {
				t.Errorf("%s: previous run %+v, want the scan before the failed one's, as stored", x.r.PagePath, p)
			}
		}
		if c := analysis.Compare(*got[2].previous, got[2].r); !strings.Contains(c.Summary, "the document /pricing took") {
			t.Errorf("what changed on /pricing: %s", c.Summary)
		}
	}
	// The CSV export reads neither.
	for _, x := range export(a, latest.ID, false) {
		if x.previous != nil || x.r.Explain != nil || x.r.CoreWebVitals.TBT != nil {
			t.Errorf("CSV export of %s carries explain data, a previous run or TBT", x.r.PagePath)
		}
	}
	// A stranger reads nothing.
	err := s.ExportScan(ctx, stranger.ID, site.ID, latest.ID, true, func(store.Site, *store.Scan) error { return nil },
		func(store.PageResult, *store.PageResult) error { return nil })
	wantErr(t, err, store.ErrNotFound)
}

// TestPreviousPairsStatements: a scan's comparison with the previous one is one statement on
// Postgres, both sides' explain data included.
func TestPreviousPairsStatements(t *testing.T) {
	s, counted := storetest.CountingPostgres(t)
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	scanWith(t, s, site, t0, true, fixtureRun(t, "psi-before", "home.mobile"))
	latest := scanWith(t, s, site, t0.Add(time.Hour), true, fixtureRun(t, "psi", "home.mobile"))
	counted.Reset()
	got, err := s.PreviousPairs(ctx, a.ID, latest.ID)
	must(t, err)
	if sent := counted.Sent(); len(sent) != 1 || len(got.Pairs) != 1 || got.Pairs[0].Before.Explain == nil {
		t.Errorf("sent %d statements for %d pairs, want 1:\n%s", len(sent), len(got.Pairs), strings.Join(sent, "\n"))
	}
}

func testRunImages(t *testing.T, s store.Store) {
	a, viewer, removed, stranger, w := roles(t, s)
	site := teamSite(t, s, a, w, "site")
	home, pricing := fixtureRun(t, "psi", "home.desktop"), fixtureRun(t, "psi", "pricing.mobile")
	sc := scanWith(t, s, site, t0, true, home, pricing)
	run := func(scanID, path string, strategy store.Strategy) store.Run {
		return store.Run{ScanID: scanID, PagePath: path, Strategy: strategy}
	}
	runs := []store.Run{run(sc.ID, pricing.PagePath, pricing.Strategy), run(sc.ID, "/nowhere", store.StrategyMobile), run(sc.ID, home.PagePath, home.Strategy),
		run(store.NewID(), home.PagePath, home.Strategy), run("not-a-uuid", home.PagePath, home.Strategy)}
	limit := 10000
	if !slices.ContainsFunc(home.Images, func(im store.PageImage) bool { return len(im.Data) > limit }) ||
		!slices.ContainsFunc(home.Images, func(im store.PageImage) bool { return len(im.Data) <= limit }) {
		t.Fatalf("the fixture's pictures are all on one side of %d bytes", limit)
	}
	for _, u := range []store.User{a, viewer} {
		got, err := s.RunImages(ctx, u.ID, runs, limit)
		must(t, err)
		if len(got) != len(runs) || len(got[1])+len(got[3])+len(got[4]) != 0 {
			t.Fatalf("%d runs' pictures, want %d; a page not audited, an unknown and a bad scan id have none", len(got), len(runs))
		}
		for i, want := range map[int]store.PageResult{0: pricing, 2: home} {
			if len(got[i]) != len(want.Images) {
				t.Fatalf("run %d: %d pictures, want %d", i, len(got[i]), len(want.Images))
			}
			for j, im := range got[i] {
				w := want.Images[j]
				wantData := w.Data
				if len(w.Data) > limit {
					wantData = nil
				}
				if im.Index != j || im.MIME != w.MIME || im.Bytes != len(w.Data) || !reflect.DeepEqual(im.Timings, w.Timings) || im.Final != w.Final || !bytes.Equal(im.Data, wantData) {
					t.Errorf("run %d picture %d: %+v with %d bytes of data, want %d bytes (%d over %d: none)", i, j, im, len(im.Data), len(wantData), len(w.Data), limit)
				}
			}
		}
	}
	for _, u := range []store.User{removed, stranger} {
		got, err := s.RunImages(ctx, u.ID, runs, limit)
		must(t, err)
		for i, l := range got {
			if len(l) != 0 {
				t.Errorf("%s read %d pictures of run %d", u.Email, len(l), i)
			}
		}
	}
}
