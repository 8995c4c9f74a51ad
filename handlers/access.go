package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// accessView is the "Private pages" part of a site's edit page (DESIGN §17): the kind stored
// and where its credentials go. No credential is ever shown back: a field that is set says so
// and takes a replacement; only the login form's address, which is none, is shown.
type accessView struct {
	Origin    string           // the only origin the credentials go to
	Kind      store.AccessKind // stored
	Chosen    store.AccessKind // the kind the form shows chosen: posted, else stored
	LoginURL  string
	UpdatedAt time.Time
	Enabled   bool // AUDIT_BACKEND=lighthouse: the only backend that signs in
	NoKeys    bool // PLATFORM_TOKEN_KEY is not set (Postgres): nothing can be sealed
	Replayed  bool // the demo site: its audits are recorded runs
	// Stale is a stored setting that does not open: set for the site's former domain, or under a
	// PLATFORM_TOKEN_KEY no longer listed. Scans fail until it is set again.
	Stale  bool
	Errors map[string]string
}

// Kinds are the choices of the kind field, in order.
func (accessView) Kinds() []store.AccessKind { return store.AccessKinds }

// Set says whether the stored setting is of kind k, whose secret fields are then set (and kept
// when left empty); a stale setting keeps nothing.
func (a accessView) Set(k store.AccessKind) bool {
	return a.Kind == k && k != store.AccessNone && !a.Stale
}

// accessLabels name the kinds on the page.
var accessLabels = map[store.AccessKind]string{store.AccessNone: "None: audit what everyone sees",
	store.AccessBasic: "HTTP basic auth", store.AccessCookies: "Cookies", store.AccessForm: "A login form"}

// Label names a kind.
func (accessView) Label(k store.AccessKind) string { return accessLabels[k] }

// Now says how the site is audited now, by its stored kind.
func (a accessView) Now() string {
	return map[store.AccessKind]string{store.AccessBasic: "signed in with HTTP basic auth", store.AccessCookies: "signed in with cookies",
		store.AccessForm: "signed in with a login form"}[a.Kind]
}

// accessOf is the edit page's view of a site's access setting; the login form's address comes
// from the sealed setting, opened.
func (s *server) accessOf(ctx context.Context, site store.Site) (accessView, store.Access, error) {
	v := accessView{Origin: discover.SiteOrigin(site.Domain), Kind: store.AccessNone, Enabled: s.SignedInAudits,
		NoKeys: s.ChannelKeys == nil, Replayed: s.Replayed(site)}
	sealed, err := s.Sites.SiteAccess(ctx, visitorFrom(ctx).User.ID, site.ID)
	if err != nil {
		return v, store.Access{}, err
	}
	v.Kind, v.Chosen, v.UpdatedAt = sealed.Kind, sealed.Kind, sealed.UpdatedAt
	var old store.Access
	if sealed.Kind != store.AccessNone && s.ChannelKeys != nil {
		plain, err := s.ChannelKeys.OpenFor(platform.PurposeSiteAccess, sealed.Sealed, store.AccessSealedFor(site.ID, v.Origin))
		if err == nil {
			old, err = store.DecodeAccess(plain)
		}
		v.Stale = err != nil
	}
	v.LoginURL = old.LoginURL
	return v, old, nil
}

// editPage renders the site's edit page: the site's form and its access setting.
func (s *server) editPage(w http.ResponseWriter, r *http.Request, status int, site store.Site, f siteForm, access *accessView) {
	if access == nil {
		v, _, err := s.accessOf(r.Context(), site)
		if err != nil {
			s.error(w, r, err, "There is no such site in your account.")
			return
		}
		access = &v
	}
	f.MaxPages, f.Access = s.SiteRules.PageLimit(), access
	if s.Runners != nil {
		locs, err := s.Runners.SiteLocations(r.Context(), site.ID)
		if err != nil {
			s.error(w, r, err, "There is no such site in your account.")
			return
		}
		f.Locations, f.RunnersOn = strings.Join(locs, ", "), true
	}
	if f.ID != "" {
		b, err := s.beaconOf(r.Context(), visitorFrom(r.Context()).User.ID, site)
		if err != nil {
			s.error(w, r, err, "There is no such site in your account.")
			return
		}
		if b != nil {
			b.Error = f.beaconErr
		}
		f.Beacon = b
	}
	s.render(w, r, status, "site_form", page{Title: "Edit " + site.Name, Flash: uiFlash(r), Data: f})
}

// handleSetAccess saves a site's access setting, for owners and editors: the posted fields over
// the stored ones (a secret field left empty keeps what is set), checked against the site's
// origin, sealed bound to the site's id (PLATFORM_TOKEN_KEY, as channel URLs are) and stored.
// Only the local Lighthouse backend signs in: with PSI a setting is refused, 422. Kind none
// removes it, whatever the backend.
func (s *server) handleSetAccess() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site, ok := s.ownSite(w, r)
		if !ok {
			return
		}
		ctx, uid := r.Context(), visitorFrom(r.Context()).User.ID
		v, old, err := s.accessOf(ctx, site)
		if err != nil {
			s.error(w, r, err, "There is no such site in your account.")
			return
		}
		kind := store.AccessKind(strings.TrimSpace(r.PostForm.Get("kind")))
		v.Chosen, v.Errors = kind, map[string]string{}
		if posted := strings.TrimSpace(r.PostForm.Get("login_url")); posted != "" || kind == store.AccessForm {
			v.LoginURL = posted
		}
		fail := func(status int, field, msg string) {
			v.Errors[field] = msg
			s.editPage(w, r, status, site, formOf(site), &v)
		}
		switch {
		case !kind.Valid():
			fail(http.StatusUnprocessableEntity, "kind", "Choose none, basic auth, cookies or a login form.")
			return
		case kind == store.AccessNone:
			if err := s.Sites.SetSiteAccess(ctx, uid, store.SiteAccess{SiteID: site.ID, Kind: store.AccessNone}); err != nil {
				s.error(w, r, err, "There is no such site in your account.")
				return
			}
			if v.Kind != store.AccessNone {
				s.audit(ctx, site.WorkspaceID, store.LogAccessRemoved, site.Name, map[string]string{"siteId": site.ID})
				s.Log.Info("site access removed", "user", uid, "site", site.ID)
			}
			http.Redirect(w, r, "/sites/"+site.ID+"/edit?done=access-removed#access", http.StatusSeeOther)
			return
		case !s.SignedInAudits:
			fail(http.StatusUnprocessableEntity, "kind", "Signed-in audits need audits run by this SitePulse's own Lighthouse, which it is not set up for (docs/local-lighthouse.md). PageSpeed Insights cannot sign in, and SitePulse never sends it a site's credentials.")
			return
		case v.Replayed:
			fail(http.StatusUnprocessableEntity, "kind", "The demo site's audits are replayed from recorded runs: it cannot sign in.")
			return
		case s.ChannelKeys == nil:
			fail(http.StatusServiceUnavailable, "kind", "Access settings cannot be saved on this SitePulse yet: it has no key to seal them at rest. Whoever runs it must set one.")
			return
		}
		a, errs := accessFromForm(r, kind, old)
		if errs == nil {
			errs = a.Validate(v.Origin)
		}
		if errs != nil {
			v.Errors = store.FieldErrors(errs)
			s.editPage(w, r, http.StatusUnprocessableEntity, site, formOf(site), &v)
			return
		}
		sealed, err := s.ChannelKeys.SealFor(platform.PurposeSiteAccess, a.Encode(), store.AccessSealedFor(site.ID, v.Origin))
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if err := s.Sites.SetSiteAccess(ctx, uid, store.SiteAccess{SiteID: site.ID, Kind: kind, Sealed: sealed, UpdatedAt: s.Now()}); err != nil {
			s.error(w, r, err, "There is no such site in your account.")
			return
		}
		s.audit(ctx, site.WorkspaceID, store.LogAccessSet, site.Name, map[string]string{"siteId": site.ID, "access": string(kind)}) // never a credential
		s.Log.Info("site access set", "user", uid, "site", site.ID, "kind", kind)                                                   // never a credential
		http.Redirect(w, r, "/sites/"+site.ID+"/edit?done=access-saved#access", http.StatusSeeOther)
	})
}

// accessFromForm reads the posted setting of a kind; a secret field left empty keeps the one
// stored, when the stored setting is of the same kind.
func accessFromForm(r *http.Request, kind store.AccessKind, old store.Access) (store.Access, error) {
	same := old.Kind == kind
	keep := func(posted, stored string) string {
		if posted == "" && same {
			return stored
		}
		return posted
	}
	a := store.Access{Kind: kind}
	var errs []error
	switch kind {
	case store.AccessBasic:
		a.Username = keep(strings.TrimSpace(r.PostForm.Get("username")), old.Username)
		a.Password = keep(r.PostForm.Get("password"), old.Password)
	case store.AccessCookies:
		a.Cookies = old.Cookies
		if text := r.PostForm.Get("cookies"); strings.TrimSpace(text) != "" || !same {
			var err error
			if a.Cookies, err = store.ParseNameValues("cookies", text); err != nil {
				errs = append(errs, err)
			}
		}
	case store.AccessForm:
		a.LoginURL = strings.TrimSpace(r.PostForm.Get("login_url"))
		a.Proof = keep(strings.TrimSpace(r.PostForm.Get("proof")), old.Proof)
		a.Fields = old.Fields
		if text := r.PostForm.Get("fields"); strings.TrimSpace(text) != "" || !same {
			var err error
			if a.Fields, err = store.ParseNameValues("fields", text); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return a, errors.Join(errs...)
}
