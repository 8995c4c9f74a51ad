package handlers

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"sitepulse/oidc"
	"sitepulse/store"
)

// The rule of a workspace that requires single sign-on (docs/sso.md), enforced at every door
// of the workspace: a member whose e-mail is of the workspace's verified domain reaches its
// pages only with a single sign-on session, its API only with keys made after the requirement
// while the provider vouches for them, and MCP only with OAuth tokens while the provider
// vouches for them. The provider vouches when it signed the person in, or answered a refresh
// grant, within SSORecheck.

// ruleTTL bounds how long a process serves a workspace's rule from memory: a requirement an
// owner turns on binds every replica within it.
const ruleTTL = 30 * time.Second

// boundRule is a workspace's rule with the issuer whose sign-ins meet it (ruleIssuer), read
// when the rule requires single sign-on.
type boundRule struct {
	store.WorkspaceSSO
	Issuer string
}

type cachedRule struct {
	rule boundRule
	at   time.Time
}

// ruleCache keeps the rules read at the doors, so a request into a workspace without a
// requirement costs one read each ruleTTL rather than one per request; and whether any
// workspace has a provider of its own, so a server with no provider at all costs nothing.
type ruleCache struct {
	mu        sync.Mutex
	m         map[string]cachedRule
	anyAt     time.Time
	anyOwn    bool
	anyCached bool
}

func (s *server) ssoRule(ctx context.Context, workspaceID string) (boundRule, error) {
	now := s.Now()
	s.ssoRules.mu.Lock()
	c, ok := s.ssoRules.m[workspaceID]
	s.ssoRules.mu.Unlock()
	if ok && now.Sub(c.at) < ruleTTL && now.Sub(c.at) >= 0 {
		return c.rule, nil
	}
	rule, err := s.SSO.SSORule(ctx, workspaceID)
	if err != nil {
		return boundRule{WorkspaceSSO: rule}, err
	}
	bound := boundRule{WorkspaceSSO: rule}
	if rule.RequiredAt != nil {
		if bound.Issuer, err = s.ruleIssuer(ctx, workspaceID); err != nil {
			return bound, err
		}
	}
	s.ssoRules.mu.Lock()
	if len(s.ssoRules.m) > 10000 {
		clear(s.ssoRules.m)
	}
	s.ssoRules.m[workspaceID] = cachedRule{rule: bound, at: now}
	s.ssoRules.mu.Unlock()
	return bound, nil
}

// forgetRule drops a rule this process changed, so its own next request sees the change.
func (s *server) forgetRule(workspaceID string) {
	s.ssoRules.mu.Lock()
	delete(s.ssoRules.m, workspaceID)
	s.ssoRules.anyCached = false
	s.ssoRules.mu.Unlock()
}

// ruleIssuer is the issuer whose sign-ins meet a workspace's requirement: the workspace's own
// provider's when it has one (the company's provider is the one that vouches for its people),
// else the operator's; "" when there is neither, and then nothing can be required.
func (s *server) ruleIssuer(ctx context.Context, workspaceID string) (string, error) {
	p, err := s.SSO.WorkspaceProviderOf(ctx, workspaceID)
	switch {
	case err == nil:
		return p.Issuer, nil
	case !errors.Is(err, store.ErrNotFound):
		return "", err
	case s.SSOProvider != nil:
		return s.SSOProvider.Issuer(), nil
	}
	return "", nil
}

// issuerName is how pages name the provider of issuer.
func (s *server) issuerName(issuer string) string {
	if s.SSOProvider != nil && issuer == s.SSOProvider.Issuer() {
		return s.ssoName()
	}
	return "the workspace's identity provider"
}

// ssoOn says whether some provider (the operator's, or a workspace's own) is set up here, so
// that a rule could bind: false lets the doors skip the rules. It answers true when it cannot
// tell, so the doors check.
func (s *server) ssoOn(ctx context.Context) bool {
	if s.SSO == nil {
		return false
	}
	if s.SSOProvider != nil {
		return true
	}
	if s.ssoRules == nil { // a server not built by NewHandler (tests): no cache, ask the store
		own, err := s.SSO.AnyWorkspaceProvider(ctx)
		return err != nil || own
	}
	now := s.Now()
	s.ssoRules.mu.Lock()
	defer s.ssoRules.mu.Unlock()
	if s.ssoRules.anyCached && now.Sub(s.ssoRules.anyAt) < ruleTTL && now.Sub(s.ssoRules.anyAt) >= 0 {
		return s.ssoRules.anyOwn
	}
	own, err := s.SSO.AnyWorkspaceProvider(ctx)
	if err != nil {
		return true
	}
	s.ssoRules.anyOwn, s.ssoRules.anyAt, s.ssoRules.anyCached = own, now, true
	return own
}

// ssoRequiredError is a credential the workspace's rule refuses; it says how to get one it
// accepts.
type ssoRequiredError struct{ why string }

func (e *ssoRequiredError) Error() string { return e.why }

// binding answers the rule of workspaceID when it binds the user of email, else nil.
func (s *server) binding(ctx context.Context, workspaceID, email string) (*boundRule, error) {
	// Without a provider no requirement can be met, so none is enforced: unsetting
	// OIDC_ISSUER is the break-glass of every workspace that requires the operator's provider,
	// SSO_BREAK_GLASS of any (a workspace's own provider is not removed while required).
	if s.SSOBreakGlass[workspaceID] || !s.ssoOn(ctx) {
		return nil, nil
	}
	rule, err := s.ssoRule(ctx, workspaceID)
	if err != nil || !rule.Requires(email) || rule.Issuer == "" {
		return nil, err
	}
	return &rule, nil
}

// ssoBindsDomain says whether a workspace that verified the domain of email requires single
// sign-on of it (binding): such an address signs up through the provider.
func (s *server) ssoBindsDomain(ctx context.Context, email string) (bool, error) {
	if !s.ssoOn(ctx) {
		return false, nil
	}
	rules, err := s.SSO.SSORulesForDomain(ctx, store.EmailDomain(email))
	if err != nil {
		return false, err
	}
	for _, r := range rules {
		if rule, err := s.binding(ctx, r.WorkspaceID, email); err != nil || rule != nil {
			return rule != nil, err
		}
	}
	return false, nil
}

// sessionGate refuses a session of a member the workspace requires SSO of unless it was made
// through the workspace's provider (ruleIssuer).
func (s *server) sessionGate(r *http.Request, workspaceID string) error {
	v := visitorFrom(r.Context())
	if v == nil || store.PrincipalFrom(r.Context()).KeyWorkspaceID != "" {
		return nil
	}
	rule, err := s.binding(r.Context(), workspaceID, v.User.Email)
	if err != nil || rule == nil {
		return err
	}
	// loadVisitor ended the session already if its provider stopped vouching.
	if v.Session.SSOIssuer == rule.Issuer {
		return nil
	}
	what := "password session"
	if v.Session.SSOIssuer != "" {
		what = "session of another provider"
	}
	s.ssoEvent(r.Context(), r, ssoCredRefused, "user", v.User.ID, "workspace", workspaceID, "credential", what)
	return &ssoRequiredError{why: "This workspace requires single sign-on for @" + rule.Domain + " addresses. Log out and sign in with " + s.issuerName(rule.Issuer) + " to open it."}
}

// keyGate refuses an API key of a member the workspace requires SSO of when the key was made
// before the requirement, or the provider no longer vouches for its maker.
func (s *server) keyGate(r *http.Request, k store.APIKey) error {
	if s.SSO == nil {
		return nil
	}
	u, err := s.SSO.UserByID(r.Context(), k.UserID)
	if err != nil {
		return err
	}
	rule, err := s.binding(r.Context(), k.WorkspaceID, u.Email)
	if err != nil || rule == nil {
		return err
	}
	if k.CreatedAt.Before(*rule.RequiredAt) {
		s.ssoEvent(r.Context(), r, ssoCredRefused, "user", u.ID, "workspace", k.WorkspaceID, "credential", "api key made before the requirement", "key", k.ID)
		return &ssoRequiredError{why: "this workspace requires single sign-on, and this API key was made before it did: sign in with " + s.issuerName(rule.Issuer) + " and make a new key"}
	}
	if !s.vouchedFor(r, u.ID, rule.Issuer) {
		s.ssoEvent(r.Context(), r, ssoCredRefused, "user", u.ID, "workspace", k.WorkspaceID, "credential", "api key, no vouch", "key", k.ID)
		return &ssoRequiredError{why: "this workspace requires single sign-on, and " + s.issuerName(rule.Issuer) + " no longer vouches for the key's maker: they must sign in with it again"}
	}
	return nil
}

// tokenGate refuses an OAuth access token of a user any of whose workspaces requires SSO of
// them while that workspace's provider does not vouch for them: the token acts in every
// workspace of the user, so every rule among them is its rule.
func (s *server) tokenGate(r *http.Request, userID string) error {
	if !s.ssoOn(r.Context()) {
		return nil
	}
	u, err := s.SSO.UserByID(r.Context(), userID)
	if err != nil {
		return err
	}
	rules, err := s.SSO.SSORulesForDomain(r.Context(), store.EmailDomain(u.Email))
	if err != nil {
		return err
	}
	for _, r0 := range rules {
		if r0.RequiredAt == nil {
			continue
		}
		rule, err := s.binding(r.Context(), r0.WorkspaceID, u.Email)
		if err != nil {
			return err
		}
		if rule == nil {
			continue
		}
		if _, err := s.Auth.Workspace(r.Context(), userID, rule.WorkspaceID); err != nil {
			continue // not a member there
		}
		if !s.vouchedFor(r, userID, rule.Issuer) {
			s.ssoEvent(r.Context(), r, ssoCredRefused, "user", userID, "workspace", rule.WorkspaceID, "credential", "oauth token, no vouch")
			return &ssoRequiredError{why: "a workspace of this account requires single sign-on, and " + s.issuerName(rule.Issuer) + " has not vouched for you recently: sign in with it again, then reconnect the app"}
		}
	}
	return nil
}

// vouchedFor answers whether the provider of issuer vouches for the user: their identity
// there was vouched for within SSORecheck, or is now when asked again (revouch).
func (s *server) vouchedFor(r *http.Request, userID, issuer string) bool {
	ids, err := s.SSO.IdentitiesOf(r.Context(), userID)
	if err != nil {
		return false
	}
	for _, id := range ids {
		if id.Issuer != issuer || id.LostAt != nil {
			continue
		}
		if s.Now().Sub(id.CheckedAt) < s.SSORecheck {
			return true
		}
		return s.revouch(r, id.Issuer, id.Subject)
	}
	return false
}

// revouch asks the provider again whether it vouches for the identity, with its refresh
// token: yes records the new vouch (and re-checks every session of it); a refusal, or no
// refresh token to ask with, loses the vouch and ends the identity's sessions. A provider
// that cannot be reached is not a refusal: the answer is no for this request, and nothing is
// ended.
func (s *server) revouch(r *http.Request, issuer, subject string) bool {
	ok, _ := s.revouchOrLose(r, issuer, subject)
	return ok
}

// revouchOrLose is revouch that also says whether the vouch was lost (false: the provider
// could not be asked, and nothing was ended).
func (s *server) revouchOrLose(r *http.Request, issuer, subject string) (ok, lost bool) {
	ctx := r.Context()
	provider := s.providerFor(ctx, issuer)
	if provider == nil {
		return false, true
	}
	id, err := s.SSO.Identity(ctx, issuer, subject)
	if err != nil || id.LostAt != nil {
		return false, true
	}
	var refresh string
	if id.RefreshSealed != "" && s.ChannelKeys != nil {
		refresh, _ = s.ChannelKeys.OpenFor(purposeSSORefresh, id.RefreshSealed, issuer+"\x00"+subject)
	}
	if refresh == "" {
		s.loseVouch(r, id, "no refresh token to ask the provider with: sign in again")
		return false, true
	}
	next, err := provider.Recheck(ctx, refresh, subject)
	var refusal *oidc.Refusal
	var down *oidc.Unreachable
	switch {
	case errors.As(err, &down):
		s.Log.Warn("sso: re-check: the provider cannot be asked", "err", err)
		return false, false
	case errors.As(err, &refusal):
		s.loseVouch(r, id, refusal.Reason)
		return false, true
	case err != nil:
		s.Log.Warn("sso: re-check", "err", err)
		return false, false
	}
	if err := s.SSO.Vouched(ctx, issuer, subject, s.sealRefresh(oidc.Identity{Issuer: issuer, Subject: subject, RefreshToken: next}), s.Now()); err != nil {
		s.Log.Warn("sso: record vouch", "err", err)
	}
	return true, false
}

func (s *server) loseVouch(r *http.Request, id store.Identity, why string) {
	if err := s.SSO.LoseVouch(r.Context(), id.Issuer, id.Subject, s.Now()); err != nil {
		s.Log.Warn("sso: lose vouch", "err", err)
	}
	s.ssoEvent(r.Context(), r, ssoVouchLost, "user", id.UserID, "issuer", id.Issuer, "reason", why)
}

func (s *server) ssoName() string {
	if s.SSOName != "" {
		return s.SSOName
	}
	return "your identity provider"
}

// bearerGate applies the rule to a bearer credential that verified: an API key to its
// workspace's rule (keyGate), an OAuth access token to its user's (tokenGate).
func (s *server) bearerGate(r *http.Request, p store.Principal, token string) error {
	if !s.ssoOn(r.Context()) {
		return nil
	}
	if p.KeyWorkspaceID != "" {
		// Most workspaces require nothing: their (cached) rule is all a key costs.
		if rule, err := s.ssoRule(r.Context(), p.KeyWorkspaceID); err != nil || rule.RequiredAt == nil {
			return err
		}
		k, err := s.Auth.APIKeyByHash(r.Context(), store.HashSecret(token), s.Now())
		if err != nil {
			return err
		}
		return s.keyGate(r, k)
	}
	return s.tokenGate(r, p.UserID)
}
