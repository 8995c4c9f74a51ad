package storetest_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"sitepulse/store"
)

func testPlatformStates(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	must(t, s.CreatePlatformState(ctx, "h1", a.ID, t0, t0.Add(10*time.Minute)))
	must(t, s.CreatePlatformState(ctx, "h2", a.ID, t0, t0.Add(10*time.Minute)))
	must(t, s.CreatePlatformState(ctx, "h3", a.ID, t0, t0.Add(time.Minute)))

	wantErr(t, s.TakePlatformState(ctx, "forged", a.ID, t0), store.ErrNotFound)
	wantErr(t, s.TakePlatformState(ctx, "h1", b.ID, t0), store.ErrNotFound) // someone else's: spent too
	wantErr(t, s.TakePlatformState(ctx, "h1", a.ID, t0), store.ErrNotFound)
	must(t, s.TakePlatformState(ctx, "h2", a.ID, t0))
	wantErr(t, s.TakePlatformState(ctx, "h2", a.ID, t0), store.ErrNotFound) // replayed
	wantErr(t, s.TakePlatformState(ctx, "h3", a.ID, t0.Add(time.Minute)), store.ErrNotFound)
	wantErr(t, s.CreatePlatformState(ctx, "h4", store.NewID(), t0, t0), store.ErrNotFound)
}

// Connects never completed cannot pile up: a new state drops the user's expired ones and all
// but the newest MaxPlatformStates-1 live ones, and no other user's.
func testPlatformStateCap(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	must(t, s.CreatePlatformState(ctx, "b-old", b.ID, t0, t0.Add(10*time.Minute)))
	last := store.MaxPlatformStates + 4
	for i := range last + 1 {
		at := t0.Add(time.Duration(i) * time.Second)
		must(t, s.CreatePlatformState(ctx, fmt.Sprintf("a%d", i), a.ID, at, at.Add(10*time.Minute)))
	}
	at := t0.Add(time.Duration(last) * time.Second)
	for i := range last + 1 {
		err := s.TakePlatformState(ctx, fmt.Sprintf("a%d", i), a.ID, at)
		if kept := i > last-store.MaxPlatformStates; (err == nil) != kept {
			t.Errorf("state a%d: %v, want kept %v", i, err, kept)
		}
	}
	if err := s.TakePlatformState(ctx, "b-old", b.ID, at); err != nil {
		t.Errorf("another user's state: %v, want it untouched", err)
	}
	// An expired state is dropped by the user's next one.
	must(t, s.CreatePlatformState(ctx, "stale", a.ID, t0, t0.Add(time.Minute)))
	must(t, s.CreatePlatformState(ctx, "fresh", a.ID, t0.Add(time.Hour), t0.Add(time.Hour+10*time.Minute)))
	wantErr(t, s.TakePlatformState(ctx, "stale", a.ID, t0), store.ErrNotFound)
}

func testPlatformConnection(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	_, err := s.PlatformConnection(ctx, a.ID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DisablePlatformConnection(ctx, a.ID, t0), store.ErrNotFound)

	must(t, s.SavePlatformConnection(ctx, store.PlatformConnection{WorkspaceID: a.ID, TokenSealed: "k1.sealed-1", CreatedAt: t0}))
	c, err := s.PlatformConnection(ctx, a.ID)
	must(t, err)
	if c.TokenSealed != "k1.sealed-1" || c.DisabledAt != nil || !c.CreatedAt.Equal(t0) || len(c.Scopes) != 0 || c.Granted("custom_code:write") {
		t.Errorf("connection = %+v", c)
	}
	_, err = s.PlatformConnection(ctx, b.ID)
	wantErr(t, err, store.ErrNotFound)

	must(t, s.DisablePlatformConnection(ctx, a.ID, t0.Add(time.Hour)))
	must(t, s.DisablePlatformConnection(ctx, a.ID, t0.Add(2*time.Hour))) // keeps the first time
	c, _ = s.PlatformConnection(ctx, a.ID)
	if c.DisabledAt == nil || !c.DisabledAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("disabled at %v, want %v", c.DisabledAt, t0.Add(time.Hour))
	}
	// Reconnecting replaces the token and its scopes and enables the connection again.
	must(t, s.SavePlatformConnection(ctx, store.PlatformConnection{WorkspaceID: a.ID, TokenSealed: "k1.sealed-2", CreatedAt: t0.Add(3 * time.Hour),
		Scopes: []string{"sites:read", "custom_code:read", "custom_code:write"}}))
	c, _ = s.PlatformConnection(ctx, a.ID)
	if c.TokenSealed != "k1.sealed-2" || c.DisabledAt != nil || !c.Granted("custom_code:read", "custom_code:write") || c.Granted("cms:write") {
		t.Errorf("after reconnect = %+v", c)
	}

	// Disconnect unlinks the imported sites only, keeps them and their scans, forgets the token.
	imported := importSite(t, s, a, "wf-1")
	must(t, s.SetPlatformWebhook(ctx, a.ID, imported.ID, "hook-1"))
	// The applied script: recorded for whoever may edit the site, never for another account.
	applied := &store.PlatformScript{ID: "sitepulse", Version: "1.2.3", AppliedAt: t0.Add(time.Minute)}
	wantErr(t, s.SetPlatformScript(ctx, b.ID, imported.ID, applied), store.ErrNotFound)
	must(t, s.SetPlatformScript(ctx, a.ID, imported.ID, applied))
	if got, _ := s.Site(ctx, a.ID, imported.ID); got.PlatformScript == nil || *got.PlatformScript != *applied {
		t.Errorf("applied script = %+v", got.PlatformScript)
	}
	must(t, s.SetPlatformScript(ctx, a.ID, imported.ID, nil))
	if got, _ := s.Site(ctx, a.ID, imported.ID); got.PlatformScript != nil {
		t.Errorf("removed script = %+v", got.PlatformScript)
	}
	must(t, s.SetPlatformScript(ctx, a.ID, imported.ID, applied))
	scan := enqueue(t, s, imported, t0)
	manual := store.Site{ID: store.NewID(), UserID: a.ID, Name: "manual", Domain: "manual.test", PlatformSiteID: "typed", CreatedAt: t0}
	must(t, s.CreateSite(ctx, manual))
	must(t, s.DisconnectPlatform(ctx, a.ID))
	_, err = s.PlatformConnection(ctx, a.ID)
	wantErr(t, err, store.ErrNotFound)
	got, err := s.Site(ctx, a.ID, imported.ID)
	must(t, err)
	if got.PlatformSiteID != "" || got.PlatformVerified || got.PlatformWebhookID != "" || got.PlatformScript != nil || got.Name != "Site wf-1" {
		t.Errorf("after disconnect = %+v", got)
	}
	if _, err := s.Scan(ctx, a.ID, scan.ID); err != nil {
		t.Errorf("the scan went with the link: %v", err)
	}
	_, err = s.SiteByPlatformID(ctx, "wf-1")
	wantErr(t, err, store.ErrNotFound)
	if got, _ := s.SiteByPlatformID(ctx, "typed"); got.ID != manual.ID {
		t.Errorf("the hand-typed link went too: %+v", got)
	}
	must(t, s.DisconnectPlatform(ctx, a.ID)) // twice is fine
}

func importSite(t *testing.T, s store.Store, u store.User, platformID string) store.Site {
	t.Helper()
	published := t0.Add(-time.Hour)
	site, _, err := s.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: u.ID, Name: "Site " + platformID,
		Domain: platformID + ".webflow.io", PlatformSiteID: platformID, LastPublished: &published, Pages: []string{"/", "/about"}, CreatedAt: t0}, 50)
	must(t, err)
	return site
}

func testImportPlatformSite(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	published := t0.Add(-time.Hour)
	in := store.Site{ID: store.NewID(), UserID: a.ID, Name: "Shop", Domain: "shop.example.com", PlatformSiteID: "wf-1",
		LastPublished: &published, Pages: []string{"/", "/about"}, CreatedAt: t0}
	site, created, err := s.ImportPlatformSite(ctx, in, 50)
	must(t, err)
	if !created || site.ID != in.ID || !site.PlatformVerified || site.PlatformSiteID != "wf-1" || len(site.Pages) != 2 ||
		site.LastPublished == nil || !site.LastPublished.Equal(published) {
		t.Fatalf("first import = %+v, created %v", site, created)
	}

	// Twice: the same site, updated, no second one.
	again := in
	again.ID, again.Name, again.Pages = store.NewID(), "Shop renamed", []string{"/", "/about", "/new"}
	site2, created, err := s.ImportPlatformSite(ctx, again, 50)
	must(t, err)
	if created || site2.ID != in.ID || site2.Name != "Shop renamed" || len(site2.Pages) != 3 {
		t.Errorf("second import = %+v, created %v", site2, created)
	}
	if sites, _ := s.SitesOf(ctx, a.ID); len(sites) != 1 {
		t.Errorf("a has %d sites after two imports, want 1", len(sites))
	}
	must(t, s.SetPlatformWebhook(ctx, a.ID, in.ID, "hook-1"))
	wantErr(t, s.SetPlatformWebhook(ctx, b.ID, in.ID, "hook-x"), store.ErrNotFound)
	if got, _ := s.SiteByPlatformID(ctx, "wf-1"); got.PlatformWebhookID != "hook-1" || got.UserID != a.ID {
		t.Errorf("by platform id = %+v", got)
	}

	// Another account cannot take a verified site.
	theft := in
	theft.ID, theft.UserID = store.NewID(), b.ID
	_, _, err = s.ImportPlatformSite(ctx, theft, 50)
	wantErr(t, err, store.ErrConflict)
	if sites, _ := s.SitesOf(ctx, b.ID); len(sites) != 0 {
		t.Errorf("b got %d sites", len(sites))
	}

	// A hand-typed link of another account gives way to a verified import; the old site stays b's.
	manual := store.Site{ID: store.NewID(), UserID: b.ID, Name: "Typed", Domain: "typed.test", PlatformSiteID: "wf-2", CreatedAt: t0}
	must(t, s.CreateSite(ctx, manual))
	scan := enqueue(t, s, manual, t0)
	verified, created, err := s.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: a.ID, Name: "Blog", Domain: "blog.webflow.io",
		PlatformSiteID: "wf-2", CreatedAt: t0}, 50)
	must(t, err)
	if !created || verified.UserID != a.ID {
		t.Errorf("verified import = %+v, created %v", verified, created)
	}
	old, err := s.Site(ctx, b.ID, manual.ID)
	must(t, err)
	if old.PlatformSiteID != "" || old.Name != "Typed" {
		t.Errorf("b's old site = %+v", old)
	}
	if _, err := s.Scan(ctx, b.ID, scan.ID); err != nil {
		t.Errorf("b's history went: %v", err)
	}
	if got, _ := s.SiteByPlatformID(ctx, "wf-2"); got.ID != verified.ID {
		t.Errorf("wf-2 is %+v, want the verified site", got)
	}

	// The user's own hand-typed link is verified in place, keeping its id.
	own := store.Site{ID: store.NewID(), UserID: a.ID, Name: "Own", Domain: "own.test", PlatformSiteID: "wf-3", CreatedAt: t0}
	must(t, s.CreateSite(ctx, own))
	got, created, err := s.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: a.ID, Name: "Own", Domain: "own.webflow.io",
		PlatformSiteID: "wf-3", CreatedAt: t0}, 50)
	must(t, err)
	if created || got.ID != own.ID || !got.PlatformVerified || got.Domain != "own.webflow.io" {
		t.Errorf("own import = %+v, created %v", got, created)
	}

	// Past the account's site cap an import creates nothing and drops no other user's link;
	// updating a site the account already has is no creation and passes.
	c := newUser(t, s, "c@example.com")
	typed := store.Site{ID: store.NewID(), UserID: b.ID, Name: "Typed 4", Domain: "t4.test", PlatformSiteID: "wf-4", CreatedAt: t0}
	must(t, s.CreateSite(ctx, typed))
	importSite(t, s, c, "wf-5")
	_, _, err = s.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: c.ID, Name: "Four", Domain: "four.webflow.io",
		PlatformSiteID: "wf-4", CreatedAt: t0}, 1)
	wantErr(t, err, store.ErrLimit)
	if got, _ := s.Site(ctx, b.ID, typed.ID); got.PlatformSiteID != "wf-4" {
		t.Errorf("a refused import dropped b's link: %+v", got)
	}
	if _, created, err := s.ImportPlatformSite(ctx, store.Site{ID: store.NewID(), UserID: c.ID, Name: "Five again", Domain: "five.webflow.io",
		PlatformSiteID: "wf-5", CreatedAt: t0}, 1); err != nil || created {
		t.Errorf("re-import at the cap: created %v, %v", created, err)
	}
}

// A refresh writes a platform site's pages only onto the site its owner still has verified for
// it: not after a disconnect, not onto another account's or a hand-typed link.
func testSetSitePages(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	site := importSite(t, s, a, "wf-1")
	must(t, s.SetSitePages(ctx, a.ID, site.ID, "wf-1", []string{"/only"}))
	if got, _ := s.Site(ctx, a.ID, site.ID); len(got.Pages) != 1 || got.Pages[0] != "/only" {
		t.Errorf("pages = %v", got.Pages)
	}
	typed := store.Site{ID: store.NewID(), UserID: a.ID, Name: "Typed", Domain: "typed.test", PlatformSiteID: "wf-2", CreatedAt: t0}
	must(t, s.CreateSite(ctx, typed))
	for _, c := range []struct{ name, user, site, platform string }{
		{"another user", b.ID, site.ID, "wf-1"},
		{"another platform site", a.ID, site.ID, "wf-2"},
		{"a hand-typed link", a.ID, typed.ID, "wf-2"},
		{"no such site", a.ID, store.NewID(), "wf-1"},
		{"not an id", "x", "y", "wf-1"},
	} {
		if err := s.SetSitePages(ctx, c.user, c.site, c.platform, []string{"/stolen"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", c.name, err)
		}
	}
	must(t, s.DisconnectPlatform(ctx, a.ID))
	taken := importSite(t, s, b, "wf-1")
	wantErr(t, s.SetSitePages(ctx, a.ID, site.ID, "wf-1", []string{"/stale"}), store.ErrNotFound)
	for _, c := range []struct {
		user string
		site store.Site
	}{{a.ID, site}, {a.ID, typed}, {b.ID, taken}} {
		got, err := s.Site(ctx, c.user, c.site.ID)
		must(t, err)
		for _, p := range got.Pages {
			if p == "/stolen" || p == "/stale" {
				t.Errorf("site %s got pages %v", got.Name, got.Pages)
			}
		}
	}
}
