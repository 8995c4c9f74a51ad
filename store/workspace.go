package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Workspace owns sites, keys, reports and the platform connection; users reach them through a
// membership. Every user has a personal workspace whose id is the user's own id (PersonalWorkspace),
// made with the account, so a user who never creates another sees what a single account always saw.
type Workspace struct {
	ID            string
	Name          string
	CreatedAt     time.Time
	RetentionDays int
	// Role is the reading user's role in it: filled by the reads that take a user id.
	Role Role
}

// PersonalWorkspace is the id of a user's personal workspace: the user's id.
func PersonalWorkspace(userID string) string { return userID }

// PersonalWorkspaceName names the workspace an account starts with after its e-mail's local part.
func PersonalWorkspaceName(email string) string {
	local, _, _ := strings.Cut(email, "@")
	return local + "'s workspace"
}

// MaxWorkspaceName bounds a workspace's name, in characters.
const MaxWorkspaceName = 100

// Normalize trims the name.
func (w *Workspace) Normalize() { w.Name = strings.TrimSpace(w.Name) }

// Validate refuses an empty, overlong or invisible-character name: other members read it.
func (w Workspace) Validate() error {
	switch {
	case w.Name == "":
		return invalid("name", "a workspace needs a name")
	case utf8.RuneCountInString(w.Name) > MaxWorkspaceName:
		return invalid("name", fmt.Sprintf("at most %d characters", MaxWorkspaceName))
	case !displaySafe(w.Name):
		return invalid("name", "control or invisible characters are not allowed")
	}
	return nil
}

// FieldError is a workspace or invitation field that breaks a rule: handlers answer 422 with
// its message.
type FieldError struct{ Field, Message string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

func invalid(field, message string) error { return &FieldError{Field: field, Message: message} }

// displaySafe refuses control, format (Cf: bidi overrides, zero-width) and unassigned
// characters in a name other people read.
func displaySafe(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.In(r, unicode.Cf) || !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	return true
}

// Role is what a member may do in a workspace.
type Role string

const (
	RoleOwner  Role = "owner"  // everything: members, roles, the platform connection
	RoleEditor Role = "editor" // sites, budgets, alert rules, schedules, Scan now, reports, API keys
	RoleViewer Role = "viewer" // reads everything in the workspace, changes nothing
)

// ParseRole reads a form's or a store's role; ErrInvalid for anything else.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleOwner, RoleEditor, RoleViewer:
		return r, nil
	}
	return "", invalid("role", "owner, editor or viewer")
}

// Action is what a request asks to do in a workspace: the one authorization question is
// Role.Can(Action), asked by every handler and tool (handlers' authorize, mcp's tools).
type Action string

const (
	ActRead    Action = "read"    // pages, scans, exports, MCP's reading tools
	ActEdit    Action = "edit"    // sites, budgets, alert rules, schedules, Scan now, API keys
	ActReport  Action = "report"  // publish a client report (an editor, or an API key allowed to)
	ActScan    Action = "scan"    // start or cancel a scan through MCP (an editor, or an API key allowed to write)
	ActManage  Action = "manage"  // members, roles, invitations, the platform connection
	ActLeave   Action = "leave"   // any member leaves
	ActConnect Action = ActManage // the platform connection is an owner's
	ActDelete  Action = ActManage // deleting the workspace is an owner's
	ActAudit   Action = ActManage // reading and exporting the audit log is an owner's (there is no admin role)
)

// Can answers whether a member with role r may do a.
func (r Role) Can(a Action) bool {
	switch a {
	case ActRead, ActLeave:
		return r == RoleOwner || r == RoleEditor || r == RoleViewer
	case ActEdit, ActReport, ActScan:
		return r == RoleOwner || r == RoleEditor
	case ActManage:
		return r == RoleOwner
	}
	return false
}

// ErrForbidden is a member's request their role does not allow: 403, nothing changed. A
// non-member gets ErrNotFound instead, so a workspace's existence does not leak.
var ErrForbidden = errors.New("forbidden")

// ErrGone is an invitation already used, revoked or expired: 410, it grants nothing.
var ErrGone = errors.New("gone")

// Member is a user's membership of a workspace.
type Member struct {
	WorkspaceID       string
	UserID            string
	Email             string // filled by reads
	Role              Role
	CreatedAt         time.Time
	NotifyRegressions bool // this member's regression e-mails for this workspace
}

// MaxPendingInvitations is how many pending invitations one workspace may hold: each may be
// e-mailed, and a workspace must not become a way to mail strangers in bulk.
const MaxPendingInvitations = 50

// InvitationTTL is how long an invitation link works.
const InvitationTTL = 7 * 24 * time.Hour

// Daily caps on invitations, so that a workspace cannot be turned into a way to mail strangers
// (invite, revoke, invite again): each counts invitations made, revoked ones included, in the
// store's attempt counter (TakeLoginAttempt), which outlives a deleted workspace. Past the
// workspace's or the inviter's cap no invitation is made; past the recipient's, across every
// workspace and inviter, the invitation is made but not e-mailed (its link is shown to the
// inviter, as without SMTP), so a stranger cannot stop a team from inviting someone.
var (
	InvitesPerWorkspace = LoginLimit{Burst: 50, Window: 24 * time.Hour, Every: 24 * time.Hour}
	InvitesPerInviter   = LoginLimit{Burst: 50, Window: 24 * time.Hour, Every: 24 * time.Hour}
	InviteMailsPerEmail = LoginLimit{Burst: 3, Window: 24 * time.Hour, Every: 24 * time.Hour}
)

// Invitation is a single-use link to join a workspace with a role, bound to an e-mail address.
type Invitation struct {
	ID            string
	TokenHash     string
	WorkspaceID   string
	WorkspaceName string // filled by reads
	Email         string
	Role          Role
	InvitedBy     string
	InviterEmail  string // filled by reads
	CreatedAt     time.Time
	ExpiresAt     time.Time
	UsedAt        *time.Time
	RevokedAt     *time.Time
}

// Usable answers whether the invitation still grants its role at now.
func (i Invitation) Usable(now time.Time) bool {
	return i.UsedAt == nil && i.RevokedAt == nil && now.Before(i.ExpiresAt)
}

// Normalize puts the e-mail in its canonical form (CanonicalEmail).
func (i *Invitation) Normalize() { i.Email = CanonicalEmail(i.Email) }

// Validate checks the e-mail and the role of a new invitation.
func (i Invitation) Validate() error {
	if e, ok := ParseEmail(i.Email); !ok || e != i.Email {
		return invalid("email", "not an e-mail address")
	}
	if _, err := ParseRole(string(i.Role)); err != nil {
		return err
	}
	return nil
}

// Workspaces holds workspaces, memberships and invitations (their changes go to the SecurityLog). Reads that take a
// user id answer ErrNotFound for a workspace the user is not a member of.
type Workspaces interface {
	// CreateWorkspace stores w with ownerID as its owner, and records its creator, when ownerID
	// owns fewer than max workspaces; ErrLimit otherwise (MAX_WORKSPACES_PER_USER). Atomic.
	CreateWorkspace(ctx context.Context, w Workspace, ownerID string, max int) error
	// WorkspacesOf lists the user's workspaces by name, personal first, each with its Role.
	WorkspacesOf(ctx context.Context, userID string) ([]Workspace, error)
	// Workspace reads one of the user's workspaces with the user's Role, read afresh on every
	// call: the membership check of every request.
	Workspace(ctx context.Context, userID, workspaceID string) (Workspace, error)
	// Members lists a workspace's members by e-mail.
	Members(ctx context.Context, workspaceID string) ([]Member, error)
	// SetRole changes a member's role; ErrNotFound for a non-member, ErrConflict when the
	// workspace would be left without an owner or the member is the holder of this personal
	// workspace (its id is theirs), who stays its owner. A member who stops being an owner
	// loses the pending invitations they made there (revoked in the same transaction): an
	// invitation grants what its inviter could grant when it is accepted.
	SetRole(ctx context.Context, workspaceID, userID string, role Role) error
	// RemoveMember ends a membership (removal or leaving); ErrConflict when it is the last owner
	// or the holder of this personal workspace. The sites the member added pass to the
	// workspace's oldest owner, so a site's UserID is always a member who may read it (the
	// scanner reads a site's scans as its user); the pending invitations they made there are
	// revoked.
	RemoveMember(ctx context.Context, workspaceID, userID string) error
	// DeleteWorkspace deletes a workspace userID owns with everything it holds, in one
	// transaction: its sites (their scans, results and queued jobs, as DeleteSite), API keys,
	// reports, invitations, memberships and the platform connection (not its SecurityLog lines,
	// which stay until their retention). ErrNotFound for a
	// non-member, ErrForbidden for a member who is not an owner, ErrConflict for a personal
	// workspace (some account's home: its id is a user's id).
	DeleteWorkspace(ctx context.Context, userID, workspaceID string) error
	// SetMemberNotify sets a member's regression e-mails for the workspace.
	SetMemberNotify(ctx context.Context, workspaceID, userID string, on bool) error

	CreateInvitation(ctx context.Context, inv Invitation) error
	// Invitations lists a workspace's pending (unused, unrevoked, unexpired at now) invitations.
	Invitations(ctx context.Context, workspaceID string, now time.Time) ([]Invitation, error)
	// InvitationByHash finds an invitation by its token's hash (system: the token is the
	// credential), used, revoked and expired ones included so the page can answer 410.
	InvitationByHash(ctx context.Context, tokenHash string) (Invitation, error)
	// AcceptInvitation makes the user a member with the invitation's role and marks it used, in
	// one transaction: single use however many accept at once. ErrNotFound for an unknown
	// token, ErrGone for a used, revoked or expired one, ErrForbidden when email is not the
	// invited address (compared in CanonicalEmail form, bytes equal). An invitation whose
	// inviter is no longer an owner of the workspace is ErrGone too, whatever the order of the
	// removal and the accept. A user already a member keeps the higher of the two roles.
	AcceptInvitation(ctx context.Context, tokenHash, userID, email string, now time.Time) (Invitation, error)
	// RevokeInvitation revokes a pending invitation of the workspace.
	RevokeInvitation(ctx context.Context, workspaceID, invitationID string, now time.Time) error
}
