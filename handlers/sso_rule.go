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

type cachedRule struct {
	rule store.WorkspaceSSO
	at   time.Time
}

// ruleCache keeps the rules read at the doors, so a request into a workspace without a
// requirement costs one read each ruleTTL rather than one per request.
type ruleCache struct {
	mu sync.Mutex
	m  map[string]cachedRule
}

func (s *server) ssoRule(ctx context.Context, workspaceID string) (store.WorkspaceSSO, error) {
	now := s.Now()
	s.ssoRules.mu.Lock()
	c, ok := s.ssoRules.m[workspaceID]
	s.ssoRules.mu.Unlock()
	if ok && now.Sub(c.at) < ruleTTL && now.Sub(c.at) >= 0 {
		return c.rule, nil
	}
	rule, err := s.SSO.SSORule(ctx, workspaceID)
	if err != nil {
		return rule, err
	}
	s.ssoRules.mu.Lock()
	if len(s.ssoRules.m) > 10000 {
		clear(s.ssoRules.m)
	}
	s.ssoRules.m[workspaceID] = cachedRule{rule: rule, at: now}
	s.ssoRules.mu.Unlock()
	return rule, nil
}

// forgetRule drops a rule this process changed, so its own next request sees the change.
func (s *server) forgetRule(workspaceID string) {
	s.ssoRules.mu.Lock()
	delete(s.ssoRules.m, workspaceID)
	s.ssoRules.mu.Unlock()
}

// ssoRequiredError is a credential the workspace's rule refuses; it says how to get one it
// accepts.
type ssoRequiredError struct{ why string }

func (e *ssoRequiredError) Error() string { return e.why }

// binding answers the rule of workspaceID when it binds the user of email, else nil.
func (s *server) binding(ctx context.Context, workspaceID, email string) (*store.WorkspaceSSO, error) {
	// Without a provider no requirement can be met, so none is enforced: unsetting
	// OIDC_ISSUER is the break-glass of every workspace, SSO_BREAK_GLASS of some.
	if s.SSO == nil || s.SSOProvider == nil || s.SSOBreakGlass[workspaceID] {
		return nil, nil
	}
	rule, err := s.ssoRule(ctx, workspaceID)
	if err != nil || !rule.Requires(email) {
		return nil, err
	}
	return &rule, nil
}

// sessionGate refuses a password session of a member the workspace requires SSO of.
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
	if s.SSOProvider != nil && v.Session.SSOIssuer == s.SSOProvider.Issuer() {
		return nil
	}
	s.ssoEvent(r.Context(), r, ssoCredRefused, "user", v.User.ID, "workspace", workspaceID, "credential", "password session")
	return &ssoRequiredError{why: "This workspace requires single sign-on for @" + rule.Domain + " addresses. Log out and sign in with " + s.ssoName() + " to open it."}
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
		return &ssoRequiredError{why: "this workspace requires single sign-on, and this API key was made before it did: sign in with " + s.ssoName() + " and make a new key"}
	}
	if !s.vouchedFor(r, u.ID) {
		s.ssoEvent(r.Context(), r, ssoCredRefused, "user", u.ID, "workspace", k.WorkspaceID, "credential", "api key, no vouch", "key", k.ID)
		return &ssoRequiredError{why: "this workspace requires single sign-on, and " + s.ssoName() + " no longer vouches for the key's maker: they must sign in with it again"}
	}
	return nil
}

// tokenGate refuses an OAuth access token of a user any of whose workspaces requires SSO of
// them while the provider does not vouch for them: the token acts in every workspace of the
// user, so the strictest rule among them is its rule.
func (s *server) tokenGate(r *http.Request, userID string) error {
	if s.SSO == nil || s.SSOProvider == nil {
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
	for _, rule := range rules {
		if rule.RequiredAt == nil || s.SSOBreakGlass[rule.WorkspaceID] {
			continue
		}
		if _, err := s.Auth.Workspace(r.Context(), userID, rule.WorkspaceID); err != nil {
			continue // not a member there
		}
		if !s.vouchedFor(r, userID) {
			s.ssoEvent(r.Context(), r, ssoCredRefused, "user", userID, "workspace", rule.WorkspaceID, "credential", "oauth token, no vouch")
			return &ssoRequiredError{why: "a workspace of this account requires single sign-on, and " + s.ssoName() + " has not vouched for you recently: sign in with it again, then reconnect the app"}
		}
		return nil
	}
	return nil
}

// vouchedFor answers whether the provider vouches for the user: their identity there was
// vouched for within SSORecheck, or is now when asked again (revouch).
func (s *server) vouchedFor(r *http.Request, userID string) bool {
	if s.SSOProvider == nil {
		return false
	}
	ids, err := s.SSO.IdentitiesOf(r.Context(), userID)
	if err != nil {
		return false
	}
	for _, id := range ids {
		if id.Issuer != s.SSOProvider.Issuer() || id.LostAt != nil {
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
	if s.SSOProvider == nil || s.SSOProvider.Issuer() != issuer {
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
	next, err := s.SSOProvider.Recheck(ctx, refresh, subject)
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
	if s.SSO == nil || s.SSOProvider == nil {
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
