package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"sitepulse/store"
)

// Authorization (DESIGN §9). Every route that touches a workspace's data names the action it
// takes in routes.go, through onSite or onWorkspace; both ask store.Authorize, the one
// authorization question, with the membership read afresh for the request: a removal takes
// effect on the very next request. A stranger or removed member gets the same 404 as an unknown
// id; a member without the role 403, before anything is changed.

// authorize answers whether the request's principal may do a in workspace workspaceID: nil,
// store.ErrNotFound or store.ErrForbidden. It returns the workspace with the user's role.
func (s *server) authorize(ctx context.Context, workspaceID string, a store.Action) (store.Workspace, error) {
	p := store.PrincipalFrom(ctx)
	w, err := s.Auth.Workspace(ctx, p.UserID, workspaceID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return w, err
	}
	w.ID = workspaceID
	return w, store.Authorize(p, w, a)
}

// authorizeSite is authorize for the workspace of a site the user can read.
func (s *server) authorizeSite(ctx context.Context, userID, siteID string, a store.Action) error {
	site, err := s.Auth.Site(ctx, userID, siteID)
	if err != nil {
		return err
	}
	_, err = s.authorize(ctx, site.WorkspaceID, a)
	return err
}

type siteKey struct{}
type workspaceKey struct{}

// onSite loads the {siteId} of the path for the request's user and lets the request through
// when the principal may do a in the site's workspace. The handler reads the site with ownSite.
func (s *server) onSite(a store.Action, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := store.CanonicalID(r.PathValue("siteId"))
		var site store.Site
		var ws store.Workspace
		err := store.ErrNotFound
		if store.ValidUUID(id) {
			// One read: the site with the user's role in its workspace.
			site, ws, err = s.Auth.SiteAndWorkspace(r.Context(), store.UserIDFrom(r.Context()), id)
		}
		if err == nil {
			err = store.Authorize(store.PrincipalFrom(r.Context()), ws, a)
		}
		if err == nil {
			err = s.sessionGate(r, ws.ID)
		}
		if err != nil {
			s.refuse(w, r, err, "There is no such site in your account.")
			return
		}
		ctx := context.WithValue(r.Context(), siteKey{}, site)
		ctx = context.WithValue(ctx, workspaceKey{}, ws)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// onWorkspace lets the request through when the principal may do a in the {workspaceId} of
// the path; the handler reads the workspace with workspaceFrom.
func (s *server) onWorkspace(a store.Action, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := store.CanonicalID(r.PathValue("workspaceId"))
		ws, err := store.Workspace{}, error(store.ErrNotFound)
		if store.ValidUUID(id) {
			ws, err = s.authorize(r.Context(), id, a)
		}
		if err == nil && !strings.HasSuffix(r.Pattern, "/sso") {
			// The SSO page stays open: it is where a member reads the rule that refuses them.
			err = s.sessionGate(r, ws.ID)
		}
		if err != nil {
			s.refuse(w, r, err, "There is no such workspace in your account.")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), workspaceKey{}, ws)))
	})
}

// refuse answers a failed door: the workspace's single sign-on rule with its own words (403),
// anything else through the one error mapping.
func (s *server) refuse(w http.ResponseWriter, r *http.Request, err error, notFound string) {
	var sso *ssoRequiredError
	if errors.As(err, &sso) {
		s.renderError(w, r, http.StatusForbidden, sso.why)
		return
	}
	s.error(w, r, err, notFound)
}

// workspaceFrom is the workspace onSite or onWorkspace authorized, with the user's role.
func workspaceFrom(ctx context.Context) store.Workspace {
	w, _ := ctx.Value(workspaceKey{}).(store.Workspace)
	return w
}

// ownSite is the site onSite authorized for this request. A handler reached without onSite
// (a route table mistake) gets 404, never another workspace's site.
func (s *server) ownSite(w http.ResponseWriter, r *http.Request) (store.Site, bool) {
	site, ok := r.Context().Value(siteKey{}).(store.Site)
	if !ok {
		s.error(w, r, store.ErrNotFound, "There is no such site in your account.")
	}
	return site, ok
}
