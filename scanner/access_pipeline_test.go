package scanner

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/lighthouse"
	"sitepulse/scanner/netguard"
	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// setAccess seals a and stores it as the site's access setting.
func (r *rig) setAccess(site store.Site, keys *platform.Keys, a store.Access) {
	r.t.Helper()
	sealed, err := keys.SealFor(platform.PurposeSiteAccess, a.Encode(), store.AccessSealedFor(site.ID, discover.SiteOrigin(site.Domain)))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.st.SetSiteAccess(context.Background(), r.user.ID, store.SiteAccess{SiteID: site.ID, Kind: a.Kind, Sealed: sealed, UpdatedAt: time.Now()}); err != nil {
		r.t.Fatal(err)
	}
}

// A scan of a site with an access setting that cannot be audited signed in audits nothing
// signed out instead: every page says why ("signed-in audit failed: ..."), the scan fails with
// it, and PSI never receives the site.
func TestSignedInScanFailures(t *testing.T) {
	keys, otherKeys := platform.RandomKeys(), platform.RandomKeys()
	cookies := store.Access{Kind: store.AccessCookies, Cookies: []store.NameValue{{Name: "session", Value: "cookie-secret-9"}}}
	local := lighthouse.New(lighthouse.Config{Command: "/nonexistent/lighthouse", Guard: netguard.Guard{AllowPrivate: true}})
	check := func(t *testing.T, r *rig, sc store.Scan, want string) {
		t.Helper()
		got := r.wait(sc.ID)
		if got.Status != store.StatusFailed || !strings.Contains(got.Error, want) {
			t.Errorf("scan %s %q, want failed with %q", got.Status, got.Error, want)
		}
		res, errs := r.results(sc.ID)
		if len(res) != 0 || len(errs) != 2*len(r.site.Pages) {
			t.Fatalf("%d results, %d errors; want an error for each of %d pages and strategies", len(res), len(errs), 2*len(r.site.Pages))
		}
		for _, e := range errs {
			if !strings.HasPrefix(e.Error, lighthouse.SignInFailed) || !strings.Contains(e.Error, want) {
				t.Errorf("page error %s %s: %q, want %q", e.PagePath, e.Strategy, e.Error, want)
			}
		}
		if strings.Contains(r.logs.String(), "cookie-secret-9") || strings.Contains(r.logs.String(), "form-secret-9") {
			t.Errorf("the log holds a secret:\n%s", r.logs.String())
		}
	}
	debug := func(r *rig, c *PoolConfig) { // the secrets stay out of the log at every level
		c.Log = slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	onStores(t,
		storeTest{name: "PSI never receives a site with an access setting", fn: func(t *testing.T, st store.Store) {
			r := newRig(t, st)
			r.setAccess(r.site, keys, cookies)
			sc := r.enqueue(r.site)
			r.pool(func(c *PoolConfig) { c.AccessKeys = keys; debug(r, c) })
			check(t, r, sc, "only the local Lighthouse backend (AUDIT_BACKEND=lighthouse) audits signed in")
			for _, p := range r.site.Pages {
				for _, s := range []store.Strategy{store.StrategyMobile, store.StrategyDesktop} {
					if n := r.psi.Calls(p, s); n != 0 {
						t.Errorf("PSI audited %s %s %d times", p, s, n)
					}
				}
			}
		}},
		storeTest{name: "without PLATFORM_TOKEN_KEY the setting cannot be opened", fn: func(t *testing.T, st store.Store) {
			r := newRig(t, st)
			r.setAccess(r.site, keys, cookies)
			sc := r.enqueue(r.site)
			r.pool(func(c *PoolConfig) { c.Auditor = local; debug(r, c) })
			check(t, r, sc, "PLATFORM_TOKEN_KEY is not set")
		}},
		storeTest{name: "a setting sealed under another key does not open", fn: func(t *testing.T, st store.Store) {
			r := newRig(t, st)
			r.setAccess(r.site, otherKeys, cookies)
			sc := r.enqueue(r.site)
			r.pool(func(c *PoolConfig) { c.Auditor, c.AccessKeys = local, keys; debug(r, c) })
			check(t, r, sc, "set it again on the site's edit page")
		}},
		storeTest{name: "a login form that does not sign in fails every page before Lighthouse runs", realIO: true, fn: func(t *testing.T, st store.Store) {
			r := newRig(t, st)
			site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				w.Write([]byte("<p>Please sign in</p>"))
			}))
			defer site.Close()
			r.site.Domain = site.URL
			if err := r.st.UpdateSite(context.Background(), r.site); err != nil {
				t.Fatal(err)
			}
			r.setAccess(r.site, keys, store.Access{Kind: store.AccessForm, LoginURL: site.URL + "/login", Proof: "Sign out",
				Fields: []store.NameValue{{Name: "password", Value: "form-secret-9"}}})
			sc := r.enqueue(r.site)
			r.pool(func(c *PoolConfig) { c.Auditor, c.AccessKeys = local, keys; debug(r, c) })
			check(t, r, sc, "the answer to the login form /login does not show the proof text")
		}},
	)
}
