package scanner

import (
	"context"
	"slices"
	"testing"
	"time"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"
)

// A scan records the pages found beside those it audits: the sample site's five saved pages
// under a cap of two audit two and say five.
func TestScanRecordsPagesFound(t *testing.T) {
	r := newRig(t, memory.New())
	sc := r.enqueue(r.site)
	r.pool(func(c *PoolConfig) { c.Discovery = discover.Discovery{MaxPages: 2} })
	got := r.wait(sc.ID)
	if got.Status != store.StatusComplete || got.PagesFound != len(scantest.SamplePages()) || got.PagesAudited != 2 || !got.Capped() {
		t.Errorf("scan %s: %d found, %d audited (%d pairs), capped %v; want %d found, 2 audited",
			got.Status, got.PagesFound, got.PagesAudited, got.PagesTotal, got.Capped(), len(scantest.SamplePages()))
	}
}

// A scan started with pages of its own (a CI pipeline's, store.Scan.Pages) audits those and
// no others, for its strategy only; the site's saved pages are left as they are.
func TestScanAuditsTheRequestedPages(t *testing.T) {
	r := newRig(t, memory.New())
	pages := scantest.SamplePages()[:2]
	sc := store.Scan{ID: store.NewID(), SiteID: r.site.ID, Strategy: store.StrategyMobile, Trigger: store.TriggerAPI, CreatedAt: time.Now(), Pages: pages}
	if err := r.st.EnqueueScan(context.Background(), sc, store.KindScan, time.Now()); err != nil {
		t.Fatal(err)
	}
	r.pool(nil)
	got := r.wait(sc.ID)
	results, errs := r.results(sc.ID)
	var audited []string
	for _, res := range results {
		audited = append(audited, res.PagePath+" "+string(res.Strategy))
	}
	want := []string{pages[0] + " mobile", pages[1] + " mobile"}
	slices.Sort(want)
	if got.Status != store.StatusComplete || !slices.Equal(audited, want) || len(errs) != 0 || got.PagesAudited != 2 {
		t.Errorf("scan %s audited %v (errors %v, %d pages audited); want %v", got.Status, audited, errs, got.PagesAudited, want)
	}
	site, err := r.st.Site(context.Background(), r.user.ID, r.site.ID)
	if err != nil || len(site.Pages) != len(scantest.SamplePages()) {
		t.Errorf("the site's pages changed: %v %v", site.Pages, err)
	}
}
