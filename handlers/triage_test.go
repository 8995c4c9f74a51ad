package handlers

import (
	"context"
	"net/http"
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
