package storetest_test

import (
	"testing"
	"time"

	"sitepulse/store"
)

// A site's access setting is written by its workspace's owners and editors only, read by its
// members (and the scan), replaced whole, removed with kind none and with its site; a setting
// that is not sealed is refused.
func testSiteAccess(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	ed := newUser(t, s, "editor@example.com")
	vw := newUser(t, s, "viewer@example.com")
	w := team(t, s, a, "Agency", map[store.User]store.Role{ed: store.RoleEditor, vw: store.RoleViewer})
	site := teamSite(t, s, a, w, "shop")

	got, err := s.SiteAccess(ctx, vw.ID, site.ID)
	must(t, err)
	if got.Kind != store.AccessNone || got.Sealed != "" || got.SiteID != site.ID {
		t.Errorf("a site without a setting: %+v, want kind none", got)
	}
	set := store.SiteAccess{SiteID: site.ID, Kind: store.AccessBasic, Sealed: "k1.sealed-basic", UpdatedAt: t0}
	for _, u := range []store.User{vw, b} { // a viewer and a stranger are refused as not found
		wantErr(t, s.SetSiteAccess(ctx, u.ID, set), store.ErrNotFound)
	}
	if got, _ := s.SiteAccessForScan(ctx, site.ID); got.Kind != store.AccessNone {
		t.Errorf("a refused write was stored: %+v", got)
	}
	must(t, s.SetSiteAccess(ctx, ed.ID, set))
	for _, u := range []store.User{a, ed, vw} {
		got, err := s.SiteAccess(ctx, u.ID, site.ID)
		must(t, err)
		if got != set {
			t.Errorf("%s reads %+v, want %+v", u.Email, got, set)
		}
	}
	_, err = s.SiteAccess(ctx, b.ID, site.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.SiteAccess(ctx, a.ID, "not-a-uuid")
	wantErr(t, err, store.ErrNotFound)

	replaced := store.SiteAccess{SiteID: site.ID, Kind: store.AccessForm, Sealed: "k1.sealed-form", UpdatedAt: t0.Add(time.Hour)}
	must(t, s.SetSiteAccess(ctx, a.ID, replaced))
	if got, _ := s.SiteAccessForScan(ctx, site.ID); got != replaced {
		t.Errorf("the scan reads %+v, want %+v", got, replaced)
	}
	for _, bad := range []store.SiteAccess{
		{SiteID: site.ID, Kind: store.AccessCookies, UpdatedAt: t0}, // not sealed
		{SiteID: site.ID, Kind: "header", Sealed: "k1.x", UpdatedAt: t0},
	} {
		wantErr(t, s.SetSiteAccess(ctx, a.ID, bad), store.ErrInvalid)
	}
	wantErr(t, s.SetSiteAccess(ctx, vw.ID, store.SiteAccess{SiteID: site.ID, Kind: store.AccessNone}), store.ErrNotFound)
	must(t, s.SetSiteAccess(ctx, ed.ID, store.SiteAccess{SiteID: site.ID, Kind: store.AccessNone}))
	if got, _ := s.SiteAccessForScan(ctx, site.ID); got.Kind != store.AccessNone || got.Sealed != "" {
		t.Errorf("after kind none: %+v", got)
	}

	must(t, s.SetSiteAccess(ctx, a.ID, set))
	must(t, s.DeleteSite(ctx, a.ID, site.ID))
	_, err = s.SiteAccessForScan(ctx, site.ID)
	wantErr(t, err, store.ErrNotFound)
}
