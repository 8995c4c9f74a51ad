package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/platform"
	"sitepulse/scanner/platform/platformtest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestSiteRulesAtEveryDoor runs the same bad inputs through every door that writes a site: the
// add form, the edit form and the platform import (the JSON API and MCP write no site). Each
// door refuses each with the same message: 422 from the forms; on the import page the site is
// reported not imported, and the valid site ticked with it is imported.
func TestSiteRulesAtEveryDoor(t *testing.T) {
	paths := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("/p%02d", i)
		}
		return out
	}
	bad := []struct {
		name                 string
		siteName, domain     string
		pages                []string
		say                  string
		importedWithCapNoted bool // the import keeps the first MAX_PAGES_PER_SCAN and says so
	}{
		{name: "a name of 100,000 characters", siteName: strings.Repeat("n", 100_000), say: "name of 1 to 100 characters"},
		{name: "a name with a control character", siteName: "Shop\x07bell", say: "A site name must not contain a control character (U&#43;0007)"},
		{name: "a name with a right-to-left override", siteName: "Invoice\u202egnp.exe", say: "A site name must not contain"},
		{name: "a domain with userinfo, path and query", domain: "https://admin:hunter2@evil.example/x?y=1", say: "user name or password"},
		{name: "localhost", domain: "localhost", say: "localhost cannot be scanned here (SCAN_ALLOW_PRIVATE is off)"},
		{name: "an IP literal", domain: "169.254.169.254", say: "An IP address cannot be scanned here (SCAN_ALLOW_PRIVATE is off)"},
		{name: "a path with CR/LF", pages: []string{"/", "/a\r\nSet-Cookie: x=1"}, say: "starts with a single “/”"},
		{name: "a path to another host", pages: []string{"//evil.example/x"}, say: "starts with a single “/”"},
		{name: "a path of 2 KB", pages: []string{"/" + strings.Repeat("p", 2048)}, say: "starts with a single “/”"},
		{name: "80 page paths", pages: paths(80), say: "At most 50 page paths (MAX_PAGES_PER_SCAN)", importedWithCapNoted: true},
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			r := newPlatformRig(t, b.Open(t))
			a := r.user(t, "ada@example.com")
			r.connect(t, a)
			resp, _ := a.postCSRF("/sites", url.Values{"name": {"Typed"}, "domain": {"typed.example"}})
			wantStatus(t, resp, http.StatusSeeOther)
			typedID := strings.TrimSuffix(strings.TrimPrefix(resp.Header.Get("Location"), "/sites/"), "?done=site-added")

			ids := []string{northwind} // a valid site, imported beside the refused ones
			for i, tt := range bad {
				form := url.Values{"name": {"Shop"}, "domain": {fmt.Sprintf("shop%d.example", i)}}
				if tt.siteName != "" {
					form.Set("name", tt.siteName)
				}
				if tt.domain != "" {
					form.Set("domain", tt.domain)
				}
				form.Set("pages", strings.Join(tt.pages, "\n"))
				t.Run("the add form refuses "+tt.name, func(t *testing.T) {
					resp, body := a.postCSRF("/sites", form)
					wantStatus(t, resp, http.StatusUnprocessableEntity)
					contains(t, body, tt.say)
					contains(t, body, `aria-invalid="true"`)
				})
				t.Run("the edit form refuses "+tt.name, func(t *testing.T) {
					resp, body := a.postCSRF("/sites/"+typedID, form)
					wantStatus(t, resp, http.StatusUnprocessableEntity)
					contains(t, body, tt.say)
				})

				ps := platformtest.Site{Site: platform.Site{ID: fmt.Sprintf("65000000000000000000b%02d", i), DisplayName: "Platform " + tt.name,
					ShortName: fmt.Sprintf("hostile-%d", i)}}
				if tt.siteName != "" {
					ps.DisplayName = tt.siteName
				}
				if tt.domain != "" {
					ps.CustomDomains = []platform.CustomDomain{{ID: "d", URL: tt.domain}}
				}
				for j, p := range append([]string{"/"}, tt.pages...) {
					ps.Pages = append(ps.Pages, platform.Page{ID: fmt.Sprint(j), PublishedPath: p})
				}
				r.double.AddSite(ps)
				ids = append(ids, ps.ID)
			}

			sites := r.sites(t, a.userID)
			if len(sites) != 1 || sites[""].Name != "Typed" || sites[""].Domain != "typed.example" || len(sites[""].Pages) != 0 {
				t.Fatalf("the forms stored %+v", sites)
			}

			resp, body := a.postCSRF("/platform/import", url.Values{"site": ids})
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			if len(body) > 40_000 || strings.Contains(body, strings.Repeat("n", store.MaxSiteName+1)) {
				t.Errorf("the import page is %d bytes: a platform's 100,000-character name is shown whole", len(body))
			}
			imported := r.sites(t, a.userID)
			if nw, ok := imported[northwind]; !ok || nw.Name != "Northwind Studio" {
				t.Errorf("the valid site ticked beside the refused ones was not imported: %+v", imported)
			}
			for i, tt := range bad {
				id := ids[i+1]
				t.Run("the import refuses "+tt.name, func(t *testing.T) {
					site, ok := imported[id]
					if tt.importedWithCapNoted {
						if !ok || len(site.Pages) != 50 {
							t.Fatalf("site %+v, want it imported with 50 pages", site)
						}
						return
					}
					if ok {
						t.Fatalf("imported %.40q %q with %d pages", site.Name, site.Domain, len(site.Pages))
					}
					contains(t, body, "not imported: its data on the platform breaks SitePulse&#39;s rules: ")
					contains(t, body, tt.say)
				})
			}
			if n := len(imported); n != 3 {
				t.Errorf("%d sites, want the typed one, Northwind and the capped one", n)
			}
		})
	}
}

// TestDuplicateDomain: a second site on the same domain, however it is spelt, is refused by the
// add form, the edit form and the platform import with a link to the first.
func TestDuplicateDomain(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			r := newPlatformRig(t, b.Open(t))
			a := r.user(t, "ada@example.com")
			r.connect(t, a)
			resp, _ := a.postCSRF("/sites", url.Values{"name": {"Shop"}, "domain": {"shop.example.com"}})
			wantStatus(t, resp, http.StatusSeeOther)
			firstID := strings.TrimSuffix(strings.TrimPrefix(resp.Header.Get("Location"), "/sites/"), "?done=site-added")
			link := `<a href="/sites/` + firstID + `">Shop</a>`
			for _, spelling := range []string{"shop.example.com", "SHOP.example.com", "https://shop.example.com/", "https://Shop.Example.com/pricing?x=1"} {
				t.Run("the add form refuses "+spelling, func(t *testing.T) {
					resp, body := a.postCSRF("/sites", url.Values{"name": {"Again"}, "domain": {spelling}})
					wantStatus(t, resp, http.StatusConflict)
					contains(t, body, "This workspace already has a site for shop.example.com:")
					contains(t, body, link)
				})
			}
			resp, _ = a.postCSRF("/sites", url.Values{"name": {"Blog"}, "domain": {"blog.example.com"}})
			wantStatus(t, resp, http.StatusSeeOther)
			blogID := strings.TrimSuffix(strings.TrimPrefix(resp.Header.Get("Location"), "/sites/"), "?done=site-added")
			resp, body := a.postCSRF("/sites/"+blogID, url.Values{"name": {"Blog"}, "domain": {"Shop.example.com"}})
			wantStatus(t, resp, http.StatusConflict)
			contains(t, body, link)
			resp, _ = a.postCSRF("/sites/"+firstID, url.Values{"name": {"Shop renamed"}, "domain": {"https://shop.example.com"}})
			wantStatus(t, resp, http.StatusSeeOther)

			r.double.AddSite(platformtest.Site{Site: platform.Site{ID: "65000000000000000000d0p", DisplayName: "Shop on the platform", ShortName: "shop",
				CustomDomains: []platform.CustomDomain{{ID: "d", URL: "https://shop.example.com"}}}, Pages: []platform.Page{{ID: "1", PublishedPath: "/"}}})
			resp, body = a.postCSRF("/platform/import", url.Values{"site": {"65000000000000000000d0p", acme}})
			wantStatus(t, resp, http.StatusConflict)
			contains(t, body, "not imported: this workspace already has a site for shop.example.com:")
			contains(t, body, `<a href="/sites/`+firstID+`">Shop renamed</a>`)
			if sites, _ := r.st.SitesOf(context.Background(), a.userID); len(sites) != 3 {
				t.Errorf("%d sites, want Shop, Blog and Acme", len(sites))
			}
			if _, err := r.st.Site(context.Background(), a.userID, firstID); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPageCapSaidWhereItHappens: a scan whose discovery found more pages than
// MAX_PAGES_PER_SCAN says so on its page and on the site's page; one that audited all says
// nothing of the kind.
func TestPageCapSaidWhereItHappens(t *testing.T) {
	eachBackend(t, 0, func(t *testing.T, f *uiFixture) {
		ctx := context.Background()
		st := f.ts.store
		site := store.Site{ID: store.NewID(), UserID: f.a.userID, Name: "Big", Domain: "big.example", CreatedAt: f.ts.now}
		if err := st.CreateSite(ctx, site); err != nil {
			t.Fatal(err)
		}
		scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.ts.now}
		if err := st.EnqueueScan(ctx, scan, store.KindScan, f.ts.now); err != nil {
			t.Fatal(err)
		}
		job, err := st.ClaimJob(ctx, store.KindScan, "w", f.ts.now.Add(time.Second), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.StartScan(ctx, job.Lease(), 100, f.ts.now); err != nil {
			t.Fatal(err)
		}
		if err := st.SetPagesFound(ctx, job.Lease(), 50, 80); err != nil {
			t.Fatal(err)
		}
		const said = "50 of 80 pages audited</strong>: this SitePulse audits at most 50 pages a scan"
		_, body := f.a.get("/sites/" + site.ID + "/scans/" + scan.ID)
		contains(t, body, said)
		if err := st.CompleteScan(ctx, job.Lease(), store.ScanScores{}, f.ts.now); err != nil {
			t.Fatal(err)
		}
		_, body = f.a.get("/sites/" + site.ID + "/scans/" + scan.ID)
		contains(t, body, said)
		_, body = f.a.get("/sites/" + site.ID)
		contains(t, body, said)
		for _, path := range []string{"/sites/" + f.site, "/sites/" + f.site + "/scans/" + f.scan} {
			if _, body := f.a.get(path); strings.Contains(body, "data-capped") {
				t.Errorf("%s speaks of a cap it did not reach", path)
			}
		}
	})
}

// TestInvalidSiteIs422InOnePlace: the one error mapping answers a site the rules refuse with
// 422 and the rules' words, and a second site on a domain with 409 naming the first, in the
// JSON shape under /api/.
func TestInvalidSiteIs422InOnePlace(t *testing.T) {
	s := &server{Deps: Deps{Log: slog.New(slog.DiscardHandler)}}
	bad := store.Site{Name: "", Domain: "localhost"}
	bad.Normalize()
	for _, tt := range []struct {
		name   string
		err    error
		status int
		say    []string
	}{
		{"a site the rules refuse", fmt.Errorf("create site: %w", bad.Validate(store.SiteRules{})), http.StatusUnprocessableEntity,
			[]string{`"error":"Give the site a name of 1 to 100 characters`, "localhost cannot be scanned here"}},
		{"a second site on a domain", &store.DuplicateError{Domain: "shop.example.com", SiteID: "0b8f7a4e-0000-4000-8000-000000000001", Name: "Shop"},
			http.StatusConflict, []string{`you already have a site for shop.example.com`, "/sites/0b8f7a4e-0000-4000-8000-000000000001"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			s.error(w, httptest.NewRequest(http.MethodPost, "/api/sites", nil), tt.err, "")
			if w.Code != tt.status || w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("%d %s, want %d JSON", w.Code, w.Header().Get("Content-Type"), tt.status)
			}
			for _, want := range tt.say {
				if !strings.Contains(w.Body.String(), want) {
					t.Errorf("body %s, want %q", w.Body.String(), want)
				}
			}
		})
	}
}
