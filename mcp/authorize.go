package mcp

import (
	"context"
	"errors"
	"sync"

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
	if selfAuthorized(ctx, t, action) {
		return nil
	}
	var siteID, id string
	notFound := errSiteNotFound
	switch {
	case a.str("siteId", "") != "":
		siteID = store.CanonicalID(a.str("siteId", ""))
		id = siteID
	case a.str("scanId", "") != "":
		notFound = errScanNotFound
		id = store.CanonicalID(a.str("scanId", ""))
	default:
		return nil
	}
	// An API key's read: its lookup, this request, found the key's maker a member of the key's
	// workspace, a read is every member's, and the tool's read is scoped to the maker's
	// workspaces; what is left is whether the site is in the key's workspace, and a site never
	// moves (nor a scan to another site), so once read it is remembered.
	p := store.PrincipalFrom(ctx)
	keyRead := p.KeyWorkspaceID != "" && action == store.ActRead
	if ws, ok := s.homes.get(id); keyRead && ok {
		if ws != p.KeyWorkspaceID {
			return notFound
		}
		return nil
	}
	if siteID == "" {
		sc, err := s.scans.Scan(ctx, userID, id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound
		}
		if err != nil {
			return err
		}
		siteID = sc.SiteID
	}
	ws, err := s.authorizeSite(ctx, userID, siteID, action)
	if ws != "" {
		s.homes.put(id, ws)
	}
	switch {
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
// store.ErrForbidden (the role does not allow it), and the site's workspace when it was read.
// tasks/get and tasks/cancel ask it too.
func (s *Server) authorizeSite(ctx context.Context, userID, siteID string, action store.Action) (string, error) {
	site, w, err := s.sites.SiteAndWorkspace(ctx, userID, siteID)
	if err != nil {
		return "", err
	}
	w.ID = site.WorkspaceID
	p := store.PrincipalFrom(ctx)
	if p.UserID == "" { // Serve's caller named the user without a principal: a user's call
		p = store.Principal{UserID: userID}
	}
	return site.WorkspaceID, store.Authorize(p, w, action)
}

// homes remembers the workspace of sites and of scans (by id) that authorize has read, for an
// API key's reads (see authorize). It is bounded and starts over when full. What it holds
// never goes stale: a site stays in its workspace, a scan with its site, and a deleted one is
// not found by the tool's own read.
type homes struct {
	mu sync.Mutex
	m  map[string]string
}

// maxHomes bounds homes: 100,000 ids of about 100 bytes each, some 10 MB.
const maxHomes = 100_000

func (h *homes) get(id string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws, ok := h.m[id]
	return ws, ok
}

func (h *homes) put(id, workspaceID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxHomes {
		h.m = map[string]string{}
	}
	h.m[id] = workspaceID
}

// selfAuthorized says whether tool t answers its own authorization in the statement that reads
// (or writes) what it asks, so the door reads nothing first. A user's read is: every role may
// read (store.Role.Can(store.ActRead)), so store.Authorize answers nil exactly when the user is
// a member of the site's workspace, which is the membership JOIN inside every read the reading
// tools make; a site outside it is not found, the same tool error. An API key, which reads its
// own workspace only, still goes through the door, as does every action other than reading
// but generate_client_report's, whose one statement checks the role (store.CreateScanReport).
func selfAuthorized(ctx context.Context, t *tool, action store.Action) bool {
	if store.PrincipalFrom(ctx).KeyWorkspaceID != "" {
		return false
	}
	return action == store.ActRead || t.SelfAuthorizing
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
