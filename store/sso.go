package store

import (
	"context"
	"strings"
	"time"
)

// Identity is an account's identity at an OpenID provider: (Issuer, Subject) names the person,
// never the e-mail alone (DESIGN §21). RefreshSealed is the provider's refresh token, sealed,
// for the re-check of the person's vouch; LostAt is set when the provider stopped vouching.
type Identity struct {
	Issuer        string
	Subject       string
	UserID        string
	Email         string // as the provider last asserted it, for the settings page
	RefreshSealed string
	CreatedAt     time.Time
	CheckedAt     time.Time // the provider last vouched for the person (sign-in or re-check)
	LostAt        *time.Time
}

// WorkspaceSSO is a workspace's single sign-on rule: a domain its owner verified, whether SSO
// is required of members with that domain, and the role people from it join with (JIT).
type WorkspaceSSO struct {
	WorkspaceID string
	Domain      string     // lower case, no trailing dot
	Token       string     // the value of the TXT record or file that proves the domain
	VerifiedAt  *time.Time // nil until the domain was verified
	RequiredAt  *time.Time // nil: password sign-in and older keys still work
	JITRole     Role       // "" admits nobody just in time
	UpdatedAt   time.Time
}

// Requires says whether the rule binds a member with e-mail address email: SSO is required
// and the address is of the verified domain.
func (w WorkspaceSSO) Requires(email string) bool {
	return w.RequiredAt != nil && w.VerifiedAt != nil && w.Domain != "" && EmailDomain(email) == w.Domain
}

// EmailDomain is the domain of an e-mail address, lower case; "" when it has none.
func EmailDomain(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(email[at+1:]), ".")
}

// SSO keeps identities at OpenID providers, the single sign-on sessions bound to them and the
// workspaces' rules.
type SSO interface {
	WorkspaceProviders
	// Identity finds the identity (system: the sign-in callback); ErrNotFound when the
	// provider's person has no account here yet.
	Identity(ctx context.Context, issuer, subject string) (Identity, error)
	// CreateIdentityUser stores a new account (with its personal workspace, as CreateUser) and
	// its identity together; ErrConflict when the e-mail or the identity is taken.
	CreateIdentityUser(ctx context.Context, u User, id Identity) error
	// LinkIdentity binds an identity to an existing account; ErrConflict when the identity is
	// bound already or the account has another identity at the same issuer.
	LinkIdentity(ctx context.Context, id Identity) error
	// IdentitiesOf lists an account's identities.
	IdentitiesOf(ctx context.Context, userID string) ([]Identity, error)
	// Vouched records that the provider vouched for the person at now (a sign-in or a
	// re-check): the refresh token to use next, LostAt cleared, and every single sign-on
	// session of the identity re-checked at now.
	Vouched(ctx context.Context, issuer, subject, refreshSealed string, now time.Time) error
	// LoseVouch records that the provider refused to vouch for the person at now and ends every
	// single sign-on session of the identity, in one transaction.
	LoseVouch(ctx context.Context, issuer, subject string, now time.Time) error

	// WorkspaceSSO reads a workspace's rule (a zero rule with WorkspaceID set when it has none);
	// ErrNotFound unless userID is a member.
	WorkspaceSSO(ctx context.Context, userID, workspaceID string) (WorkspaceSSO, error)
	// SetWorkspaceSSO replaces a workspace's rule; ErrNotFound for a non-member, ErrForbidden
	// for a member who is not an owner, ErrConflict when the domain is another workspace's
	// verified domain.
	SetWorkspaceSSO(ctx context.Context, userID string, w WorkspaceSSO) error
	// SSORule reads a workspace's rule (system: enforcement on every request in it).
	SSORule(ctx context.Context, workspaceID string) (WorkspaceSSO, error)
	// SSORulesForDomain lists the rules whose verified domain is domain (system: the sign-in
	// callback, for the just-in-time join).
	SSORulesForDomain(ctx context.Context, domain string) ([]WorkspaceSSO, error)
	// JoinJustInTime makes userID a member of workspaceID with role, unless they are one
	// already (system: the sign-in callback, under the workspace's rule); joined says whether
	// it did.
	JoinJustInTime(ctx context.Context, workspaceID, userID string, role Role, now time.Time) (joined bool, err error)
}

// WorkspaceProvider is a workspace's own OpenID provider, set up by its owner. It vouches only
// for e-mails of the workspace's verified domain (docs/sso.md), and its identities are (iss,
// sub) of Issuer. SecretSealed is the client secret sealed (platform keys): never shown back.
type WorkspaceProvider struct {
	WorkspaceID  string
	Issuer       string
	ClientID     string
	SecretSealed string
	UpdatedAt    time.Time
}

// WorkspaceProviders keeps the workspaces' own providers.
type WorkspaceProviders interface {
	// SetWorkspaceProvider replaces a workspace's provider; ErrNotFound for a non-member,
	// ErrForbidden for a member who is not an owner, ErrConflict when another workspace's
	// provider has the same issuer (a session's issuer must name one provider).
	SetWorkspaceProvider(ctx context.Context, userID string, p WorkspaceProvider) error
	// WorkspaceProviderOf reads a workspace's provider (system: the sign-in and the settings
	// page behind the membership check); ErrNotFound when it has none.
	WorkspaceProviderOf(ctx context.Context, workspaceID string) (WorkspaceProvider, error)
	// WorkspaceProviderByIssuer finds the provider of issuer (system: the callback and the
	// re-check, from the session's issuer); ErrNotFound when no workspace has it.
	WorkspaceProviderByIssuer(ctx context.Context, issuer string) (WorkspaceProvider, error)
	// RemoveWorkspaceProvider deletes a workspace's provider and answers what it was;
	// ErrNotFound for a non-member or when it has none, ErrForbidden for a member who is not an
	// owner, ErrConflict while the workspace requires single sign-on (its requirement is met
	// through the provider: the owner lifts it first, so nobody is locked out).
	RemoveWorkspaceProvider(ctx context.Context, userID, workspaceID string) (WorkspaceProvider, error)
	// AnyWorkspaceProvider says whether some workspace has its own provider (system: the login
	// page then asks for a work e-mail).
	AnyWorkspaceProvider(ctx context.Context) (bool, error)
}
