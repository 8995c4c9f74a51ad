package store

import (
	"context"
	"fmt"
)

// Principal is who a request acts for: a signed-in user (session), the user of an OAuth access
// token, or an API key, which acts for its own workspace only, as a viewer, plus publishing
// client reports and starting scans when its scope allows (mcp:write: a CI pipeline that
// publishes a site also starts its scan).
type Principal struct {
	UserID string
	// KeyWorkspaceID is set for an API key: the one workspace it reads.
	KeyWorkspaceID string
	// KeyPublish is an API key's mcp:write: it may publish client reports (generate_client_report)
	// and start or cancel scans (start_scan, tasks/cancel).
	KeyPublish bool
}

// Authorize is the one authorization question of SitePulse (DESIGN §9): may principal p do a
// in workspace w, where w.Role is p's user's membership as read for this very request (an empty
// Role: not a member). A non-member, and an API key outside its workspace, get ErrNotFound,
// the same answer as an unknown id; a member whose role does not allow a gets ErrForbidden.
// Every handler and MCP tool asks it before acting.
func Authorize(p Principal, w Workspace, a Action) error {
	if w.Role == "" || p.UserID == "" {
		return NotFound("workspace")
	}
	role := w.Role
	if p.KeyWorkspaceID != "" {
		if p.KeyWorkspaceID != w.ID {
			return NotFound("workspace")
		}
		if (a == ActReport || a == ActScan) && p.KeyPublish && role.Can(a) {
			return nil
		}
		role = RoleViewer
	}
	if !role.Can(a) {
		return fmt.Errorf("%s may not %s in workspace %s: %w", role, a, w.ID, ErrForbidden)
	}
	return nil
}

// WithPrincipal returns a context carrying the request's principal, and its user's id
// (UserIDFrom) for the code that needs only that.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	c := credentialFrom(ctx)
	c.userID, c.principal, c.hasPrincipal = p.UserID, p, true
	return withCredential(ctx, c)
}

// WithPrincipalScope is WithScope(WithPrincipal(ctx, p), scope) in one context value: what a
// bearer credential establishes, on every API request.
func WithPrincipalScope(ctx context.Context, p Principal, scope string) context.Context {
	c := credentialFrom(ctx)
	c.userID, c.principal, c.hasPrincipal, c.scope = p.UserID, p, true, scope
	return withCredential(ctx, c)
}

// PrincipalFrom returns the request's principal; a context with only a user id (WithUserID)
// is that user's.
func PrincipalFrom(ctx context.Context) Principal {
	c := credentialFrom(ctx)
	if c.hasPrincipal {
		return c.principal
	}
	return Principal{UserID: c.userID}
}
