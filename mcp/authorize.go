package mcp

import (
	"context"
	"errors"

	"sitepulse/store"
)

// authorize is the tools' door (DESIGN §9): before a tool runs, the site it names (siteId, or
// the site of scanId) is read for the user, scoped in SQL to their workspaces, and
// store.Authorize decides with the membership read for this very call. A site outside the
// principal's reach is the same tool error as an unknown id; a member whose role does not
// allow the tool's action gets a tool error saying so. Tools without a site (list_sites) pass.
func (s *Server) authorize(ctx context.Context, userID string, t *tool, a args) error {
	action := t.Action
	if action == "" {
		action = store.ActRead
	}
	var siteID string
	notFound := errSiteNotFound
	switch {
	case a.str("siteId", "") != "":
		siteID = store.CanonicalID(a.str("siteId", ""))
	case a.str("scanId", "") != "":
		notFound = errScanNotFound
		sc, err := s.store.Scan(ctx, userID, store.CanonicalID(a.str("scanId", "")))
		if errors.Is(err, store.ErrNotFound) {
			return notFound
		}
		if err != nil {
			return err
		}
		siteID = sc.SiteID
	default:
		return nil
	}
	switch err := s.authorizeSite(ctx, userID, siteID, action); {
	case errors.Is(err, store.ErrNotFound):
		return notFound
	case errors.Is(err, store.ErrForbidden):
		return toolError(forbidden(action))
	default:
		return err
	}
}

// authorizeSite asks store.Authorize whether the request's principal may do action on a site
// of the user's: nil, store.ErrNotFound (not the user's, or outside an API key's workspace) or
// store.ErrForbidden (the role does not allow it). tasks/get and tasks/cancel ask it too.
func (s *Server) authorizeSite(ctx context.Context, userID, siteID string, action store.Action) error {
	_, w, err := s.store.SiteAndWorkspace(ctx, userID, siteID)
	if err != nil {
		return err
	}
	return authorizeIn(ctx, userID, w, action)
}

// authorizeIn is authorizeSite's decision on workspace w read with the user's role.
func authorizeIn(ctx context.Context, userID string, w store.Workspace, action store.Action) error {
	p := store.PrincipalFrom(ctx)
	if p.UserID == "" { // Serve's caller named the user without a principal: a user's call
		p = store.Principal{UserID: userID}
	}
	return store.Authorize(p, w, action)
}

// decide maps authorizeIn's answer for a tool that authorizes itself (tool.Authorizes) as
// authorize does: the same tool errors.
func decide(ctx context.Context, userID string, w store.Workspace, action store.Action) error {
	switch err := authorizeIn(ctx, userID, w, action); {
	case errors.Is(err, store.ErrNotFound):
		return errSiteNotFound
	case errors.Is(err, store.ErrForbidden):
		return toolError(forbidden(action))
	default:
		return err
	}
}

// forbidden is the message of a call the principal's role does not allow.
func forbidden(a store.Action) string {
	if a == store.ActReport {
		return "Your role in this site's workspace does not allow creating reports: viewers (and API keys not allowed to publish) read only. Ask an owner of the workspace for the editor role."
	}
	if a == store.ActScan {
		return "Your role in this site's workspace does not allow starting or cancelling scans: viewers (and API keys not allowed to write) read only. Ask an owner of the workspace for the editor role."
	}
	return "Your role in this site's workspace does not allow this: viewers, and API keys, read only. Ask an owner of the workspace for the editor role."
}
