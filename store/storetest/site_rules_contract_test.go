package storetest_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

// Every write path of a site normalises it and checks the rules, so no door (the form, the
// platform import, the scanner's page refresh, seeding) can store an invalid site; nothing is
// written when one is refused.
func testSiteWritesValidate(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	bad := []struct {
		name  string
		site  func(store.Site) store.Site
		field string
	}{
		{"a name of 100,000 characters", func(x store.Site) store.Site { x.Name = strings.Repeat("n", 100_000); return x }, "name"},
		{"a name with a NUL", func(x store.Site) store.Site { x.Name = "Shop\x00"; return x }, "name"},
		{"a domain with userinfo", func(x store.Site) store.Site { x.Domain = "https://u:p@evil.example/x?q"; return x }, "domain"},
		{"localhost", func(x store.Site) store.Site { x.Domain = "localhost:8080"; return x }, "domain"},
		{"an IP literal", func(x store.Site) store.Site { x.Domain = "169.254.169.254"; return x }, "domain"},
		{"a path with CR/LF", func(x store.Site) store.Site { x.Pages = []string{"/\r\nX-Evil: 1"}; return x }, "pages"},
		{"a path to another host", func(x store.Site) store.Site { x.Pages = []string{"//evil.example/"}; return x }, "pages"},
		{"a path of 2 KB", func(x store.Site) store.Site { x.Pages = []string{"/" + strings.Repeat("p", 2048)}; return x }, "pages"},
		{"3,000 paths", func(x store.Site) store.Site { x.Pages = manyPaths(3000); return x }, "pages"},
	}
	good := func(domain string) store.Site {
		return store.Site{ID: store.NewID(), UserID: a.ID, Name: "Shop", Domain: domain, Pages: []string{"/"}, CreatedAt: t0}
	}
	existing := good("existing.example")
	must(t, s.CreateSiteWithin(ctx, existing, 50))
	imported, _, err := s.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: a.ID, Name: "Imported", Domain: "imported.webflow.io",
		PlatformSiteID: "wf-rules", Pages: []string{"/"}, CreatedAt: t0}, 50)
	must(t, err)
	for _, tt := range bad {
		doors := map[string]func() error{
			"CreateSite":       func() error { return s.CreateSite(ctx, tt.site(good("one.example"))) },
			"CreateSiteWithin": func() error { return s.CreateSiteWithin(ctx, tt.site(good("two.example")), 50) },
			"UpdateSite": func() error {
				x := tt.site(good("existing.example"))
				x.ID = existing.ID
				return s.UpdateSite(ctx, x)
			},
			"ImportPlatformSite": func() error {
				x := tt.site(good("imported.webflow.io"))
				x.PlatformSiteID = "wf-rules"
				_, _, err := s.ImportPlatformSite(ctx, x, 50)
				return err
			},
			"SetSitePages": func() error {
				x := tt.site(good("imported.webflow.io"))
				if tt.field != "pages" {
					return &store.InvalidError{Field: tt.field} // a page list has no name or domain
				}
				return s.SetSitePages(ctx, a.ID, imported.ID, "wf-rules", x.Pages)
			},
		}
		for door, write := range doors {
			t.Run(door+" refuses "+tt.name, func(t *testing.T) {
				err := write()
				if !errors.Is(err, store.ErrInvalid) || store.Classify(err) != store.ErrInvalid || store.FieldErrors(err)[tt.field] == "" && door != "SetSitePages" {
					t.Fatalf("%v, want ErrInvalid on %s", err, tt.field)
				}
			})
		}
	}
	sites, err := s.SitesOf(ctx, a.ID)
	must(t, err)
	if len(sites) != 2 {
		t.Fatalf("%d sites after the refusals, want the 2 valid ones", len(sites))
	}
	for _, got := range sites {
		if got.Name != "Shop" && got.Name != "Imported" || len(got.Pages) != 1 || got.Pages[0] != "/" ||
			got.Domain != "existing.example" && got.Domain != "imported.webflow.io" {
			t.Errorf("a refused write changed %+v", got)
		}
	}

	// What is stored is normalised, by every door.
	typed := good("HTTPS://Bücher.Example/shop?x=1")
	typed.Name, typed.Pages = "  Books  ", []string{" /a ", "/a", "", "/b"}
	must(t, s.CreateSiteWithin(ctx, typed, 50))
	got, err := s.Site(ctx, a.ID, typed.ID)
	must(t, err)
	if got.Name != "Books" || got.Domain != "xn--bcher-kva.example" || strings.Join(got.Pages, ",") != "/a,/b" {
		t.Errorf("stored %q %q %v", got.Name, got.Domain, got.Pages)
	}
	must(t, s.SetSitePages(ctx, a.ID, imported.ID, "wf-rules", []string{"/x", " /x ", "/y"}))
	if got, _ := s.Site(ctx, a.ID, imported.ID); strings.Join(got.Pages, ",") != "/x,/y" {
		t.Errorf("refreshed pages %v", got.Pages)
	}
}

// A second site on the same normalised domain of one owner is refused by the doors people use
// (the form's create and edit, the platform import) with the first site named; another owner
// may have it, and a site keeps its own domain when edited or imported again.
func testSameDomain(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	first := store.Site{ID: store.NewID(), UserID: a.ID, Name: "Shop", Domain: "shop.example.com", CreatedAt: t0}
	must(t, s.CreateSiteWithin(ctx, first, 50))
	for _, spelling := range []string{"shop.example.com", "SHOP.example.com", "https://shop.example.com/", "shop.example.com/pricing", "http://shop.example.com"} {
		t.Run("the same domain spelt "+spelling+" is refused", func(t *testing.T) {
			err := s.CreateSiteWithin(ctx, store.Site{ID: store.NewID(), UserID: a.ID, Name: "Again", Domain: spelling, CreatedAt: t0}, 50)
			var dup *store.DuplicateError
			if !errors.As(err, &dup) || !errors.Is(err, store.ErrConflict) || dup.SiteID != first.ID || dup.Name != "Shop" {
				t.Fatalf("%v, want a DuplicateError naming %s", err, first.ID)
			}
		})
	}
	must(t, s.CreateSiteWithin(ctx, store.Site{ID: store.NewID(), UserID: b.ID, Name: "Shop", Domain: "shop.example.com", CreatedAt: t0}, 50))

	second := store.Site{ID: store.NewID(), UserID: a.ID, Name: "Blog", Domain: "blog.example.com", CreatedAt: t0}
	must(t, s.CreateSiteWithin(ctx, second, 50))
	moved := second
	moved.Domain = "Shop.Example.com"
	var dup *store.DuplicateError
	if err := s.UpdateSite(ctx, moved); !errors.As(err, &dup) || dup.SiteID != first.ID {
		t.Errorf("editing onto the first's domain: %v", err)
	}
	first.Name = "Shop renamed"
	must(t, s.UpdateSite(ctx, first))

	_, _, err := s.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: a.ID, Name: "From the platform", Domain: "https://shop.example.com",
		PlatformSiteID: "wf-dup", CreatedAt: t0}, 50)
	if !errors.As(err, &dup) || dup.SiteID != first.ID {
		t.Errorf("importing onto the first's domain: %v", err)
	}
	if sites, _ := s.SitesOf(ctx, a.ID); len(sites) != 2 {
		t.Errorf("a has %d sites, want 2", len(sites))
	}
	site, _, err := s.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: a.ID, Name: "Docs", Domain: "docs.webflow.io",
		PlatformSiteID: "wf-docs", CreatedAt: t0}, 50)
	must(t, err)
	if _, created, err := s.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: a.ID, Name: "Docs", Domain: "docs.webflow.io",
		PlatformSiteID: "wf-docs", CreatedAt: t0}, 50); err != nil || created {
		t.Errorf("importing %s again: created %v, %v", site.ID, created, err)
	}
}

// A site's lastPublished never moves backwards: not by a re-import whose platform listing is
// older than a publish the webhook saw, not by a late publish.
func testLastPublishedForward(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	nov20, nov24 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	in := store.Site{ID: store.NewID(), UserID: a.ID, Name: "Shop", Domain: "shop.webflow.io", PlatformSiteID: "wf-pub",
		LastPublished: &nov20, CreatedAt: t0}
	site, _, err := s.ImportPlatformSite(ctx, in, 50)
	must(t, err)
	must(t, s.MarkPublished(ctx, site.ID, nov24))
	again := in
	again.ID = store.NewID()
	got, _, err := s.ImportPlatformSite(ctx, again, 50)
	must(t, err)
	if got.LastPublished == nil || !got.LastPublished.Equal(nov24) {
		t.Errorf("after a re-import listing 20 Nov, lastPublished = %v, want 24 Nov", got.LastPublished)
	}
	must(t, s.MarkPublished(ctx, site.ID, nov20))
	if got, _ := s.Site(ctx, a.ID, site.ID); got.LastPublished == nil || !got.LastPublished.Equal(nov24) {
		t.Errorf("after a late publish of 20 Nov, lastPublished = %v, want 24 Nov", got.LastPublished)
	}
	later := nov24.Add(time.Hour)
	again.LastPublished = &later
	if got, _, _ := s.ImportPlatformSite(ctx, again, 50); got.LastPublished == nil || !got.LastPublished.Equal(later) {
		t.Errorf("a newer listing: lastPublished = %v, want %v", got.LastPublished, later)
	}
}

func manyPaths(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "/page-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "-" + strconv.Itoa(i)
	}
	return out
}

// A scan records how many pages discovery found before MAX_PAGES_PER_SCAN, under its lease,
// never below what its enqueue said (the platform's full list at import); its pages read it.
func testPagesFound(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerImport, CreatedAt: t0, PagesFound: 80}
	must(t, s.EnqueueScan(ctx, sc, store.KindScan, t0))
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 100, t0))
	must(t, s.SetPagesFound(ctx, j.Lease(), 50, 50))
	got, err := s.Scan(ctx, a.ID, sc.ID)
	must(t, err)
	if got.PagesFound != 80 || got.PagesAudited != 50 || !got.Capped() {
		t.Errorf("found %d, audited %d, capped %v; want 80, 50, true", got.PagesFound, got.PagesAudited, got.Capped())
	}
	must(t, s.SetPagesFound(ctx, j.Lease(), 50, 120))
	if list, _ := s.ScansOf(ctx, a.ID, site.ID, 10); len(list) != 1 || list[0].PagesFound != 120 {
		t.Errorf("scans of the site = %+v, want 120 found", list)
	}
	must(t, s.RetryJob(ctx, j.Lease(), t0, "again"))
	wantErr(t, s.SetPagesFound(ctx, j.Lease(), 50, 500), store.ErrLeaseLost)
	if got, _ := s.Scan(ctx, a.ID, sc.ID); got.PagesFound != 120 {
		t.Errorf("after a write under a lost lease, found = %d, want 120", got.PagesFound)
	}
}

// A budget is a finite threshold of at least 0 for a known strategy, whatever its metric; the
// store refuses any other and keeps the budgets it had.
func testBudgetsValidate(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	must(t, s.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 80}}))
	for _, tt := range []struct {
		name   string
		budget store.Budget
		field  string
	}{
		{"a NaN threshold", store.Budget{Threshold: math.NaN()}, "threshold"},
		{"an infinite threshold", store.Budget{Threshold: math.Inf(1)}, "threshold"},
		{"a negative threshold", store.Budget{Threshold: -1}, "threshold"},
		{"an unknown strategy", store.Budget{Threshold: 1, Strategy: "tablet"}, "strategy"},
	} {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			err := s.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"lcp": tt.budget})
			if !errors.Is(err, store.ErrInvalid) || store.FieldErrors(err)[tt.field] == "" {
				t.Fatalf("%v, want ErrInvalid on %s", err, tt.field)
			}
			got, err := s.Budgets(ctx, a.ID, site.ID)
			must(t, err)
			if len(got) != 1 || got["performance"].Threshold != 80 {
				t.Errorf("budgets after a refusal: %+v", got)
			}
		})
	}
}
