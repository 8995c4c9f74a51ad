package demo

import (
	"context"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
)

// With MAX_PAGES_PER_SCAN below the demo site's five pages, the demo still starts: it saves as
// many pages as any site may, rather than being refused by the rules of a site.
func TestSeedDemoUnderAPageCap(t *testing.T) {
	st := memory.New()
	st.Rules = store.SiteRules{MaxPages: 3}
	fx := fixtures
	fx.MaxPages = 3
	d, err := Seed(context.Background(), st, fx, time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), 1000)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.UserByEmail(context.Background(), Email)
	if err != nil {
		t.Fatal(err)
	}
	site, err := st.Site(context.Background(), u.ID, d.SiteID)
	if err != nil || len(site.Pages) != 3 {
		t.Errorf("demo site %v pages, %v; want 3", site.Pages, err)
	}
}
