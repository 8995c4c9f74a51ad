package handlers

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

// TestSitesTriage: the sites list shows per site a failing scan, its confirmed regressions and
// broken budgets, worst first, and ?workspace= keeps one workspace's sites.
func TestSitesTriage(t *testing.T) { eachBackend(t, 0, testSitesTriage) }

func testSitesTriage(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	st, a := f.ts.store, f.a.userID
	site := func(name string) string {
		id := store.NewID()
		must(t, st.CreateSite(ctx, store.Site{ID: id, UserID: a, Name: name, Domain: strings.ToLower(name) + ".example"}))
		return id
	}
	failing, over, fine := site("Failing"), site("Overbudget"), site("Fine")
	sc := store.Scan{ID: store.NewID(), SiteID: failing, Status: store.StatusQueued, Strategy: store.StrategyBoth, Trigger: "manual", CreatedAt: f.ts.now}
	must(t, st.EnqueueScan(ctx, sc, store.KindScan, f.ts.now))
	must(t, st.ExpireScan(ctx, sc.ID, "the deadline passed", f.ts.now.Add(time.Hour)))
	_, err := st.SwapBudgetState(ctx, over, store.NewID(), store.Triage{BudgetsBroken: true, Broken: []string{"lcp", "cls"}})
	must(t, err)
	_, err = st.SwapBudgetState(ctx, f.site, f.scan, store.Triage{Regressions: 4})
	must(t, err)

	resp, body := f.a.get("/")
	wantStatus(t, resp, http.StatusOK)
	contains(t, body, "Last scan failed")
	contains(t, body, "4 regressions")
	contains(t, body, "Over budget: LCP, CLS")
	order := []int{strings.Index(body, "<strong>Failing</strong>"), strings.Index(body, "<strong>Demo Site</strong>"),
		strings.Index(body, "<strong>Overbudget</strong>"), strings.Index(body, "<strong>Fine</strong>")}
	for i := 1; i < len(order); i++ {
		if order[i-1] < 0 || order[i] < order[i-1] {
			t.Fatalf("positions %v: want failing, regressions, over budget, then the rest", order)
		}
	}
	_ = fine

	// A second workspace of A's: the filter shows one workspace's sites.
	ws := store.Workspace{ID: store.NewID(), Name: "Agency", CreatedAt: f.ts.now}
	must(t, st.CreateWorkspace(ctx, ws, a, 10))
	must(t, st.CreateSite(ctx, store.Site{ID: store.NewID(), UserID: a, WorkspaceID: ws.ID, Name: "Agency site", Domain: "xn--bcher-kva.de"}))
	_, body = f.a.get("/")
	contains(t, body, `href="/?workspace=`+ws.ID+`"`)
	contains(t, body, "bücher.de")
	_, body = f.a.get("/?workspace=" + ws.ID)
	contains(t, body, "Agency site")
	if strings.Contains(body, "<strong>Failing</strong>") {
		t.Error("the Agency filter shows A's own sites")
	}
	resp, _ = f.a.get("/?workspace=" + store.NewID())
	wantStatus(t, resp, http.StatusNotFound)
	resp, _ = f.b.get("/?workspace=" + store.PersonalWorkspace(a))
	wantStatus(t, resp, http.StatusNotFound)
}

// TestSitesListPages: the sites list shows 50 sites a page by name, with links to the pages after
// and before that keep the filter and the search, and never another account's sites, whatever
// the cursor names.
func TestSitesListPages(t *testing.T) { eachBackend(t, 0, testSitesListPages) }

func testSitesListPages(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	st, a := f.ts.store, f.a.userID
	for i := range 60 { // with the fixture's Demo Site: 61, two pages
		must(t, st.CreateSite(ctx, store.Site{ID: store.NewID(), UserID: a, Name: fmt.Sprintf("Site %02d", i), Domain: fmt.Sprintf("s%d.example", i)}))
	}
	stranger := store.NewID()
	must(t, st.CreateSite(ctx, store.Site{ID: stranger, UserID: f.b.userID, Name: "Site 00 of B", Domain: "b.example"}))
	cards := func(body string) int { return strings.Count(body, `class="card site-card"`) }
	rel := func(body, rel string) string {
		m := regexp.MustCompile(`rel="` + rel + `" href="([^"]*)"`).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return html.UnescapeString(m[1])
	}

	resp, first := f.a.get("/")
	wantStatus(t, resp, http.StatusOK)
	next := rel(first, "next")
	if cards(first) != 50 || next == "" || rel(first, "prev") != "" || !strings.Contains(first, "<strong>Demo Site</strong>") {
		t.Fatalf("first page: %d sites, next %q, prev %q; want 50 with Demo Site, a next link and no prev", cards(first), next, rel(first, "prev"))
	}
	contains(t, first, `name="q"`)
	_, second := f.a.get(next)
	prev := rel(second, "prev")
	if cards(second) != 11 || rel(second, "next") != "" || prev == "" || !strings.Contains(second, "<strong>Site 59</strong>") {
		t.Fatalf("second page (%s): %d sites, next %q, prev %q; want 11 ending at Site 59, a prev link and no next", next, cards(second), rel(second, "next"), prev)
	}
	if _, back := f.a.get(prev); cards(back) != 50 || rel(back, "prev") != "" || rel(back, "next") != next {
		t.Errorf("back (%s): %d sites, prev %q, next %q; want the first page again", prev, cards(back), rel(back, "prev"), rel(back, "next"))
	}
	// The search keeps its words and the workspace on the links, and finds by part of the name.
	_, found := f.a.get("/?q=site+0&workspace=" + store.PersonalWorkspace(a))
	if cards(found) != 10 || !strings.Contains(found, `value="site 0"`) || rel(found, "next") != "" {
		t.Errorf("search \"site 0\": %d sites, want Site 00 to Site 09 on one page", cards(found))
	}
	_, none := f.a.get("/?q=nothing+like+it")
	contains(t, none, "No site’s name holds")
	// Another account's site never shows, whether listed or named as the cursor.
	for _, path := range []string{"/", next, "/?after=" + stranger, "/?before=" + stranger, "/?after=not-an-id", "/?q=of+B"} {
		resp, body := f.a.get(path)
		wantStatus(t, resp, http.StatusOK)
		if strings.Contains(body, "Site 00 of B") || strings.Contains(body, stranger) {
			t.Errorf("%s shows B's site", path)
		}
	}
	if _, body := f.a.get("/?after=" + stranger); cards(body) != 50 || rel(body, "prev") != "" {
		t.Errorf("a cursor of B's site: %d sites, prev %q; want A's first page", cards(body), rel(body, "prev"))
	}
	if _, body := f.b.get("/?after=" + f.site); strings.Contains(body, "Site 01") || strings.Contains(body, "Demo Site") || !strings.Contains(body, "Site 00 of B") {
		t.Error("B, with a cursor of A's site, sees A's sites, or not its own")
	}
}
