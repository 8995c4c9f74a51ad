package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// platformStateTTL is how long a connect may take on the platform's consent page.
const platformStateTTL = 10 * time.Minute

// maxImportSites bounds one import form.
const maxImportSites = 200

// platformStatus is the connection as the sites list and the import page show it.
type platformStatus struct {
	Configured bool // PLATFORM_CLIENT_ID is set
	Connected  bool
	Reconnect  bool // the platform refused the token: connect again
}

func (s *server) platformStatus(r *http.Request) (platformStatus, error) {
	st := platformStatus{Configured: s.Platform != nil}
	if !st.Configured {
		return st, nil
	}
	c, err := s.Store.PlatformConnection(r.Context(), visitorFrom(r.Context()).User.ID)
	if errors.Is(err, store.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.Connected, st.Reconnect = c.DisabledAt == nil, c.DisabledAt != nil
	return st, nil
}

// platformPage is the import page's data.
type platformPage struct {
	Status  platformStatus
	Choices []platform.Choice
	Results []platform.Imported
	Error   string
}

func (s *server) platformRedirectURI() string { return s.BaseURL + "/platform/callback" }

// renderPlatform shows the import page in any state; a nil Platform says why nothing can be done.
func (s *server) renderPlatform(w http.ResponseWriter, r *http.Request, status int, d platformPage) {
	s.render(w, r, status, "platform_import", page{Title: "Connect platform", Flash: uiFlash(r), Data: d})
}

// handlePlatformConnect sends the signed-in user to the platform's authorize page with a fresh
// state bound to them (single use, platformStateTTL).
func (s *server) handlePlatformConnect() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Platform == nil {
			s.renderPlatform(w, r, http.StatusNotFound, platformPage{})
			return
		}
		v := visitorFrom(r.Context())
		state, hash := store.NewSecret("")
		if err := s.Store.CreatePlatformState(r.Context(), hash, v.User.ID, s.Now(), s.Now().Add(platformStateTTL)); err != nil {
			s.error(w, r, err, "")
			return
		}
		q := url.Values{"response_type": {"code"}, "client_id": {s.PlatformClientID}, "redirect_uri": {s.platformRedirectURI()},
			"scope": {platform.Scopes}, "state": {state}}
		sep := "?"
		if strings.Contains(s.PlatformAuthorizeURL, "?") {
			sep = "&"
		}
		http.Redirect(w, r, s.PlatformAuthorizeURL+sep+q.Encode(), http.StatusFound)
	})
}

// handlePlatformCallback is where the platform sends the user back: the state must be one this
// user was given and not yet used, then the code is exchanged and the token kept, sealed. A
// forged, replayed or expired state is a 400 page and nothing is stored.
func (s *server) handlePlatformCallback() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Platform == nil {
			s.renderPlatform(w, r, http.StatusNotFound, platformPage{})
			return
		}
		v := visitorFrom(r.Context())
		q := r.URL.Query()
		state := q.Get("state")
		err := store.ErrNotFound
		if state != "" && len(state) <= 200 {
			err = s.Store.TakePlatformState(r.Context(), store.HashSecret(state), v.User.ID, s.Now())
		}
		if errors.Is(err, store.ErrNotFound) {
			s.renderPlatform(w, r, http.StatusBadRequest, platformPage{Error: "This connect link is not valid: it was used already, it expired, or it was not made for your account. Nothing was connected; start again."})
			return
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if q.Get("error") != "" || q.Get("code") == "" {
			s.renderPlatform(w, r, http.StatusBadRequest, platformPage{Error: "The platform did not grant access (it answered “" + truncate(q.Get("error"), 60) + "”). Nothing was connected."})
			return
		}
		if err := s.Platform.Connect(r.Context(), v.User.ID, q.Get("code"), s.platformRedirectURI()); err != nil {
			s.Log.Warn("platform: code exchange failed", "user", v.User.ID, "err", err)
			s.renderPlatform(w, r, http.StatusBadGateway, platformPage{Error: "The platform did not accept the connection. Nothing was connected; try again in a moment."})
			return
		}
		s.Log.Info("platform: connected", "user", v.User.ID)
		http.Redirect(w, r, "/platform/import", http.StatusSeeOther)
	})
}

// handlePlatformImportPage lists the platform sites the user's connection sees, to tick.
func (s *server) handlePlatformImportPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := s.platformStatus(r)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		d := platformPage{Status: st}
		if !st.Connected {
			s.renderPlatform(w, r, http.StatusOK, d)
			return
		}
		d.Choices, err = s.Platform.Choices(r.Context(), visitorFrom(r.Context()).User.ID)
		if status, ok := s.platformFault(w, r, err, &d); !ok {
			s.renderPlatform(w, r, status, d)
			return
		}
		s.renderPlatform(w, r, http.StatusOK, d)
	})
}

// platformFault maps a Connector error onto the page: ok when err is nil.
func (s *server) platformFault(w http.ResponseWriter, r *http.Request, err error, d *platformPage) (int, bool) {
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, platform.ErrReconnect):
		d.Status.Connected, d.Status.Reconnect = false, true
		d.Error = "The platform no longer accepts SitePulse's access (the app was removed or its access revoked there). Reconnect to import sites again."
		return http.StatusConflict, false
	case errors.Is(err, platform.ErrNotConnected):
		d.Status.Connected = false
		return http.StatusConflict, false
	default:
		s.Log.Warn("platform: API call failed", "user", visitorFrom(r.Context()).User.ID, "err", err)
		d.Error = "The platform could not be reached. Try again in a moment."
		return http.StatusBadGateway, false
	}
}

// handlePlatformImport imports the ticked sites. A failure on one site leaves what was done in
// place; the page says which failed, and ticking them again resumes without duplicates.
func (s *server) handlePlatformImport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := s.platformStatus(r)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		d := platformPage{Status: st}
		if !st.Connected {
			s.renderPlatform(w, r, http.StatusConflict, d)
			return
		}
		ids := r.PostForm["site"]
		if len(ids) == 0 || len(ids) > maxImportSites {
			d.Error = "Tick at least one site to import."
			if len(ids) > maxImportSites {
				d.Error = fmt.Sprintf("Tick at most %d sites at a time.", maxImportSites)
			}
			d.Choices, err = s.Platform.Choices(r.Context(), visitorFrom(r.Context()).User.ID)
			if status, ok := s.platformFault(w, r, err, &d); !ok {
				s.renderPlatform(w, r, status, d)
				return
			}
			s.renderPlatform(w, r, http.StatusUnprocessableEntity, d)
			return
		}
		d.Results, err = s.Platform.Import(r.Context(), visitorFrom(r.Context()).User.ID, ids)
		if status, ok := s.platformFault(w, r, err, &d); !ok {
			s.renderPlatform(w, r, status, d)
			return
		}
		// 502 only when the platform failed; a site refused here (another account's, the site
		// cap) or none the connection sees is the request's: 409 and 422.
		failed, status := false, http.StatusConflict
		for i, res := range d.Results {
			if res.Err != nil {
				failed = true
				s.Log.Warn("platform: site import failed", "platform_site", res.PlatformID, "err", res.Err)
				switch {
				case errors.Is(res.Err, store.ErrConflict):
					d.Results[i].Err = errors.New("another SitePulse account has connected this site")
				case errors.Is(res.Err, store.ErrLimit):
					d.Results[i].Err = fmt.Errorf("this account already has %d sites, the most one account may have here", s.MaxSitesPerWorkspace)
				default:
					d.Results[i].Err = errors.New("the platform could not be reached; tick it again to finish")
					status = http.StatusBadGateway
				}
			}
		}
		if failed || len(d.Results) == 0 {
			if len(d.Results) == 0 {
				d.Error = "None of the ticked sites is one your connection sees."
				status = http.StatusUnprocessableEntity
			}
			d.Choices, _ = s.Platform.Choices(r.Context(), visitorFrom(r.Context()).User.ID)
			s.renderPlatform(w, r, status, d)
			return
		}
		http.Redirect(w, r, "/?done=platform-imported", http.StatusSeeOther)
	})
}

// handlePlatformDisconnect deletes SitePulse's webhooks on the platform, forgets the token and
// unlinks the imported sites, which keep their history.
func (s *server) handlePlatformDisconnect() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Platform == nil {
			s.renderPlatform(w, r, http.StatusNotFound, platformPage{})
			return
		}
		if _, _, err := s.Platform.Disconnect(r.Context(), visitorFrom(r.Context()).User.ID); err != nil {
			s.error(w, r, err, "")
			return
		}
		http.Redirect(w, r, "/?done=platform-disconnected", http.StatusSeeOther)
	})
}
