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
// allow a writing tool gets a tool error saying so. Tools without a site (list_sites) pass.
func (s *Server) authorize(ctx context.Context, userID string, t *tool, a args) error {
	action := store.ActRead
	if !t.ReadOnly {
		action = store.ActReport
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
	site, err := s.store.Site(ctx, userID, siteID)
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	w, err := s.store.Workspace(ctx, userID, site.WorkspaceID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	w.ID = site.WorkspaceID
	p := store.PrincipalFrom(ctx)
	if p.UserID == "" { // Serve's caller named the user without a principal: a user's call
		p = store.Principal{UserID: userID}
	}
	switch err := store.Authorize(p, w, action); {
	case errors.Is(err, store.ErrNotFound):
		return notFound
	case errors.Is(err, store.ErrForbidden):
		return errForbidden
	default:
		return err
	}
}

// errForbidden is a writing tool called by a viewer (or an API key not allowed to publish).
const errForbidden = toolError("Your role in this site's workspace is viewer: you can read its data but not create reports. Ask an owner of the workspace for the editor role.")
