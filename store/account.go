package store

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"time"
)

// CanonicalEmail is the one form e-mail addresses are kept and compared in, by both stores and
// every handler (sign-up, login and its throttle, invitations, e-mail changes): surrounding
// space trimmed and the ASCII letters A-Z lower-cased, nothing else. Unicode case folding is
// not applied on purpose: it maps the long s (ſ, U+017F) to s and the Kelvin sign (U+212A) to
// k, so "ſam@x" would answer for "sam@x", which is another mailbox. Two addresses are the same
// account exactly when their canonical forms are equal bytes.
func CanonicalEmail(s string) string {
	s = strings.TrimSpace(s)
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// MaxEmail bounds an e-mail address, in bytes (RFC 5321's path limit).
const MaxEmail = 254

// ParseEmail returns the canonical form of an address a person typed, and false when it is
// not a bare address (no display name, no angle brackets) of at most MaxEmail bytes.
func ParseEmail(s string) (string, bool) {
	e := CanonicalEmail(s)
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || len(e) > MaxEmail {
		return e, false
	}
	return e, true
}

// LinkPurpose says what an e-mailed account link does.
type LinkPurpose string

const (
	LinkReset LinkPurpose = "reset" // choose a new password: "Forgot password"
	LinkEmail LinkPurpose = "email" // confirm a new e-mail address
)

// Lifetimes of the e-mailed account links: a reset link is short-lived (OWASP Forgot Password
// cheat sheet), an e-mail change waits a day for its new mailbox to be read.
const (
	ResetLinkTTL = time.Hour
	EmailLinkTTL = 24 * time.Hour
)

// AccountLink is an e-mailed, single-use account link: only its token's hash is kept.
type AccountLink struct {
	TokenHash string
	UserID    string
	Purpose   LinkPurpose
	Email     string // the new address, for LinkEmail
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// AccountUse is what deleting an account would do to its workspaces: those only it uses go
// with it (Deleted, the personal one among them), those others use and that need it keep it
// (InUse: it is their only owner, or it is its personal workspace). The others it is a member
// of stay, without it.
type AccountUse struct {
	Deleted []Workspace
	InUse   []Workspace
}

// AccountUseOf is the rule DeleteAccount and AccountUse share, for the stores: ws are the
// user's workspaces in WorkspacesOf's order (each with the user's Role), others and otherOwners
// their counts of members and of owners other than the user.
func AccountUseOf(userID string, ws []Workspace, others, otherOwners []int) AccountUse {
	var u AccountUse
	for i, w := range ws {
		switch {
		case others[i] == 0:
			u.Deleted = append(u.Deleted, w)
		case w.ID == PersonalWorkspace(userID) || w.Role == RoleOwner && otherOwners[i] == 0:
			u.InUse = append(u.InUse, w)
		}
	}
	return u
}

// AccountInUseError refuses to delete an account that others still need: a workspace it is the
// last owner of has other members, or its personal workspace has. It wraps ErrConflict.
type AccountInUseError struct{ Workspaces []Workspace }

func (e *AccountInUseError) Error() string {
	names := make([]string, len(e.Workspaces))
	for i, w := range e.Workspaces {
		names[i] = fmt.Sprintf("%q", w.Name)
	}
	return "the account is the last owner of workspaces others use: " + strings.Join(names, ", ")
}

func (e *AccountInUseError) Unwrap() error { return ErrConflict }

// Accounts are what a person does to their own account: recover it, change its password and
// e-mail, see and end its sessions, delete it. Every method is scoped to one user; the links'
// lookups by hash serve the system (the token is the credential).
type Accounts interface {
	// CreateAccountLink stores a link for its user, replacing the user's pending links of the
	// same purpose: one works at a time. ErrNotFound for an unknown user.
	CreateAccountLink(ctx context.Context, l AccountLink) error
	// AccountLink reads a link of a purpose by its token's hash: ErrNotFound for an unknown
	// one, ErrGone for one used or expired at now.
	AccountLink(ctx context.Context, tokenHash string, purpose LinkPurpose, now time.Time) (AccountLink, error)
	// ResetPassword uses a reset link, in one transaction: the link is marked used (of any
	// number of concurrent uses one succeeds, the others get ErrGone), the password hash
	// replaced, every session of the account and every other pending link deleted. It answers
	// the account (with its new hash).
	ResetPassword(ctx context.Context, tokenHash, passwordHash string, now time.Time) (User, error)
	// ChangePassword replaces the password hash (PasswordChangedAt becomes now) and deletes
	// every session of the user but keepSession (a token hash, or "" for none) and every
	// pending link, in one transaction. ResetPassword sets PasswordChangedAt to its now too.
	ChangePassword(ctx context.Context, userID, passwordHash, keepSession string, now time.Time) error
	// EndGrantsSince ends the OAuth grants of the user made at or after since (the time the
	// password was last set): every token of a family whose first token was issued since is
	// revoked, and every consent given since is forgotten with all its client's tokens. It
	// answers the apps ended, newest first, with their names. Grants made before since stay.
	EndGrantsSince(ctx context.Context, userID string, since, now time.Time) ([]Consent, error)
	// ConfirmEmail uses an e-mail change link, in one transaction: the account's e-mail
	// becomes the link's and the link is marked used. It answers the account as it was (its
	// old e-mail) and the new address. ErrConflict, and the link left unused, when another
	// account has that address now; ErrGone for a used or expired link.
	ConfirmEmail(ctx context.Context, tokenHash string, now time.Time) (old User, email string, err error)
	// SessionsOf lists a user's unexpired sessions, most recently seen first.
	SessionsOf(ctx context.Context, userID string, now time.Time) ([]Session, error)
	// EndSessions deletes every session of the user but keepSession and answers how many.
	EndSessions(ctx context.Context, userID, keepSession string) (int, error)
	// AccountUse answers what deleting the account would do now (the settings page says it,
	// and the handler disconnects the platform of the workspaces that would go).
	AccountUse(ctx context.Context, userID string) (AccountUse, error)
	// DeleteAccount deletes a user, in one transaction: the workspaces only they use (the
	// personal one among them) with everything in them, their memberships elsewhere (the sites
	// and reports they made there pass to the workspace's oldest other owner, as RemoveMember
	// does), sessions, API keys, OAuth grants, links and pending connects. It answers the ids
	// of the workspaces deleted. An *AccountInUseError (ErrConflict) names the workspaces that
	// keep it, and nothing is deleted: one where the user is the only owner and others are
	// members, or their personal workspace when others are members of it. ErrNotFound for an
	// unknown user.
	DeleteAccount(ctx context.Context, userID string) (deleted []string, err error)
}
