package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"sitepulse/scanner/platform"
	"sitepulse/store"
)

// PlatformStore is what connecting the platform needs of the store (the Connector does the rest):
// the OAuth state of a connect, and the workspace's connection.
type PlatformStore interface {
	CreatePlatformState(ctx context.Context, stateHash, userID string, now, expiresAt time.Time) error
	TakePlatformState(ctx context.Context, stateHash, userID string, now time.Time) error
	PlatformConnection(ctx context.Context, workspaceID string) (store.PlatformConnection, error)
}

// platformStateTTL is how long a connect may take on the platform's consent page.
const platformStateTTL = 10 * time.Minute

// maxImportSites bounds one import form.
const maxImportSites = 200

// platformStatus is the connection as the sites list and the import page show it.
type platformStatus struct {
	Configured bool // PLATFORM_CLIENT_ID is set
	Connected  bool
	Reconnect  bool // the platform refused the token: connect again
	Workspace  string
}

// platformWorkspace is the workspace a platform route acts for: the form's or query's
// workspace, else the visitor's personal one. Connecting, importing and disconnecting are an
// owner's actions (store.ActManage); the failure is answered here.
func (s *server) platformWorkspace(w http.ResponseWriter, r *http.Request) (string, bool) {
	ws := r.URL.Query().Get("workspace")
	if r.Method == http.MethodPost {
		ws = r.PostForm.Get("workspace")
	}
	ws = store.CanonicalID(ws)
	if ws == "" {
		ws = store.PersonalWorkspace(visitorFrom(r.Context()).User.ID)
	}
	if _, err := s.authorize(r.Context(), ws, store.ActManage); err != nil {
		s.error(w, r, err, "There is no such workspace in your account.")
		return "", false
	}
	return ws, true
}

func (s *server) platformStatus(r *http.Request) (platformStatus, error) {
	return s.platformStatusOf(r, store.PersonalWorkspace(visitorFrom(r.Context()).User.ID))
}

// platformStatusOf is the state of a workspace's platform connection.
func (s *server) platformStatusOf(r *http.Request, workspaceID string) (platformStatus, error) {
	st := platformStatus{Configured: s.Platform != nil, Workspace: workspaceID}
	if !st.Configured {
		return st, nil
	}
	c, err := s.Connections.PlatformConnection(r.Context(), workspaceID)
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
	Results []importResult
	Error   string
	// MaxPages is MAX_PAGES_PER_SCAN, for the results to say where it cut a site's pages.
	MaxPages int
}

// importResult is one ticked site's outcome on the import page.
type importResult struct {
	platform.Imported
	Duplicate *store.DuplicateError // refused: the user's site on the same domain, linked
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
		ws, ok := s.platformWorkspace(w, r)
		if !ok {
			return
		}
		// The state names the workspace it connects; single use and bound to the visitor, it
		// cannot be replayed into another workspace, and the callback asks the role again.
		secret, _ := store.NewSecret("")
		state := ws + "." + secret
		hash := store.HashSecret(state)
		if err := s.Connections.CreatePlatformState(r.Context(), hash, v.User.ID, s.Now(), s.Now().Add(platformStateTTL)); err != nil {
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
			err = s.Connections.TakePlatformState(r.Context(), store.HashSecret(state), v.User.ID, s.Now())
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
		ws, _, _ := strings.Cut(state, ".")
		if _, err := s.authorize(r.Context(), ws, store.ActManage); err != nil {
			s.error(w, r, err, "There is no such workspace in your account.")
			return
		}
		if err := s.Platform.Connect(r.Context(), ws, q.Get("code"), s.platformRedirectURI()); err != nil {
			s.Log.Warn("platform: code exchange failed", "user", v.User.ID, "err", err)
			s.renderPlatform(w, r, http.StatusBadGateway, platformPage{Error: "The platform did not accept the connection. Nothing was connected; try again in a moment."})
			return
		}
		s.Log.Info("platform: connected", "user", v.User.ID, "workspace", ws)
		s.audit(r.Context(), ws, store.LogPlatformConnected, "", nil)
		next := "/platform/import"
		if ws != store.PersonalWorkspace(v.User.ID) {
			next += "?workspace=" + ws
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	})
}

// handlePlatformImportPage lists the platform sites the user's connection sees, to tick.
func (s *server) handlePlatformImportPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, ok := s.platformWorkspace(w, r)
		if !ok {
			return
		}
		st, err := s.platformStatusOf(r, ws)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		d := platformPage{Status: st}
		if !st.Connected {
			s.renderPlatform(w, r, http.StatusOK, d)
			return
		}
		d.Choices, err = s.Platform.Choices(r.Context(), ws)
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
		ws, ok := s.platformWorkspace(w, r)
		if !ok {
			return
		}
		st, err := s.platformStatusOf(r, ws)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		d := platformPage{Status: st}
		if !st.Connected {
			s.renderPlatform(w, r, http.StatusConflict, d)
			return
		}
		ids, ok := formValues(r, "site", maxImportSites)
		if !ok || len(ids) == 0 {
			d.Error = "Tick at least one site to import."
			if !ok {
				d.Error = fmt.Sprintf("Tick at most %d sites at a time.", maxImportSites)
			}
			d.Choices, err = s.Platform.Choices(r.Context(), ws)
			if status, ok := s.platformFault(w, r, err, &d); !ok {
				s.renderPlatform(w, r, status, d)
				return
			}
			s.renderPlatform(w, r, http.StatusUnprocessableEntity, d)
			return
		}
		results, err := s.Platform.Import(r.Context(), visitorFrom(r.Context()).User.ID, ws, ids)
		if status, ok := s.platformFault(w, r, err, &d); !ok {
			s.renderPlatform(w, r, status, d)
			return
		}
		// 502 only when the platform failed; a site refused here (another account's, the site
		// cap, the user's site on the same domain: 409; data that breaks the rules of a site:
		// 422) or none the connection sees is the request's. The others are imported.
		failed, status, scans := false, http.StatusConflict, 0
		d.MaxPages = s.SiteRules.PageLimit()
		for _, res := range results {
			out := importResult{Imported: res}
			var dup *store.DuplicateError
			if res.Scan != "" {
				scans++
			}
			if res.Created && res.SiteID != "" {
				s.audit(r.Context(), ws, store.LogSiteAdded, res.Name, map[string]string{"siteId": res.SiteID, "platformSiteId": res.PlatformID, "via": "platform import"})
			}
			if res.Err != nil {
				failed = true
				s.Log.Warn("platform: site import failed", "platform_site", res.PlatformID, "err", res.Err)
				switch {
				case errors.As(res.Err, &dup):
					out.Duplicate = dup
					out.Err = errors.New("this workspace already has a site for " + store.DisplayDomain(dup.Domain) + ":")
				case errors.Is(res.Err, store.ErrInvalid):
					out.Err = errors.New("its data on the platform breaks SitePulse's rules: " + store.InvalidMessage(res.Err))
					status = max(status, http.StatusUnprocessableEntity)
				case errors.Is(res.Err, store.ErrConflict):
					out.Err = errors.New("another SitePulse account has connected this site")
				case errors.Is(res.Err, store.ErrLimit):
					out.Err = fmt.Errorf("this workspace already has %d sites, the most one workspace may have here", s.MaxSitesPerWorkspace)
				default:
					out.Err = errors.New("the platform could not be reached; tick it again to finish")
					status = http.StatusBadGateway
				}
			}
			d.Results = append(d.Results, out)
		}
		if failed || len(d.Results) == 0 {
			if len(d.Results) == 0 {
				d.Error = "None of the ticked sites is one your connection sees."
				status = http.StatusUnprocessableEntity
			}
			d.Choices, _ = s.Platform.Choices(r.Context(), ws)
			s.renderPlatform(w, r, status, d)
			return
		}
		http.Redirect(w, r, "/?done=platform-imported&scans="+strconv.Itoa(scans), http.StatusSeeOther)
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
		ws, ok := s.platformWorkspace(w, r)
		if !ok {
			return
		}
		if _, _, err := s.Platform.Disconnect(r.Context(), visitorFrom(r.Context()).User.ID, ws); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.audit(r.Context(), ws, store.LogPlatformDisconnected, "", nil)
		http.Redirect(w, r, "/?done=platform-disconnected", http.StatusSeeOther)
	})
}
