package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"sitepulse/oidc"
	"sitepulse/store"
)

// SSOStore is what single sign-on keeps (store.SSO) and the accounts it reads.
type SSOStore interface {
	store.SSO
	UserByID(ctx context.Context, id string) (store.User, error)
	UserByEmail(ctx context.Context, email string) (store.User, error)
	DeleteSession(ctx context.Context, tokenHash string) error
}

// ssoFlowTTL bounds the time between leaving for the provider and coming back.
const ssoFlowTTL = 10 * time.Minute

// purposeSSORefresh seals a provider's refresh token, bound to its identity.
const purposeSSORefresh = "sso refresh token"

// ssoFlow is what the flow cookie holds, MACed with a key derived from AUTH_KEY: the flow's
// secrets (state, nonce, PKCE verifier) never leave the browser's cookie jar but to come back
// here, and a cookie made for one sign-in cannot be altered.
type ssoFlow struct {
	oidc.Flow
	Next string `json:"x"`
	Exp  int64  `json:"e"`
	// WS is the workspace whose own provider this sign-in went to; "" is the operator's.
	WS string `json:"w,omitempty"`
}

func (s *server) flowCookieName() string {
	if s.secure {
		return "__Host-sso_flow"
	}
	return "sso_flow"
}

func (s *server) sealFlow(f ssoFlow) string {
	b, _ := json.Marshal(f)
	body := base64.RawURLEncoding.EncodeToString(b)
	m := hmac.New(sha256.New, deriveKey(s.AuthKey, "sso flow"))
	m.Write([]byte(body))
	return body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *server) openFlow(v string) (ssoFlow, bool) {
	body, mac, ok := strings.Cut(v, ".")
	if !ok {
		return ssoFlow{}, false
	}
	m := hmac.New(sha256.New, deriveKey(s.AuthKey, "sso flow"))
	m.Write([]byte(body))
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, m.Sum(nil)) {
		return ssoFlow{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	var f ssoFlow
	if err != nil || json.Unmarshal(raw, &f) != nil || s.Now().Unix() > f.Exp {
		return ssoFlow{}, false
	}
	return f, true
}

// handleSSOStart sends the browser to the provider: with a work e-mail (the login page asks
// for one when workspaces have their own providers), to the provider of the workspace whose
// verified domain it is; else to the operator's.
func (s *server) handleSSOStart() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if email := strings.TrimSpace(r.URL.Query().Get("email")); email != "" && s.SSO != nil {
			s.ssoByEmail(w, r, email)
			return
		}
		if s.SSOProvider == nil {
			s.renderError(w, r, http.StatusNotFound, "Single sign-on is not set up on this server.")
			return
		}
		s.startFlow(w, r, s.SSOProvider, "")
	})
}

// startFlow sends the browser to provider c with a fresh state, nonce and PKCE challenge, kept
// in the flow cookie with the workspace whose provider it is ("" for the operator's).
func (s *server) startFlow(w http.ResponseWriter, r *http.Request, c *oidc.Client, workspaceID string) {
	f := ssoFlow{Flow: oidc.NewFlow(), Next: safeNext(r.URL.Query().Get("next")), Exp: s.Now().Add(ssoFlowTTL).Unix(), WS: workspaceID}
	to, err := c.AuthURL(r.Context(), f.Flow)
	if err != nil {
		s.ssoRefused(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.flowCookieName(), Value: s.sealFlow(f), Path: "/", MaxAge: int(ssoFlowTTL.Seconds()),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// handleSSOCallback is where the provider sends the browser back: the flow cookie is used
// once, the state compared, the code redeemed and the ID token verified (oidc), then the
// person is signed in to the account of their identity.
func (s *server) handleSSOCallback() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.SSOProvider == nil {
			exists, err := s.anyWorkspaceProvider(r.Context())
			if err != nil {
				s.error(w, r, err, "")
				return
			}
			if !exists {
				s.renderError(w, r, http.StatusNotFound, "Single sign-on is not set up on this server.")
				return
			}
		}
		// No Referer from this page: its URL carries the provider's code.
		w.Header().Set("Referrer-Policy", "no-referrer")
		c, err := r.Cookie(s.flowCookieName())
		http.SetCookie(w, &http.Cookie{Name: s.flowCookieName(), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
		var f ssoFlow
		ok := err == nil && len(c.Value) < 4096
		if ok {
			f, ok = s.openFlow(c.Value)
		}
		q := r.URL.Query()
		switch {
		case !ok:
			s.ssoRefusedBecause(w, r, http.StatusBadRequest, "this sign-in was started in another browser, or more than 10 minutes ago. Start again from the login page.")
			return
		case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1:
			s.ssoRefusedBecause(w, r, http.StatusBadRequest, "the provider's answer is for another sign-in (its state does not match this browser's). Start again from the login page.")
			return
		case q.Get("error") != "":
			code := q.Get("error")
			if len(code) > 60 || strings.ContainsAny(code, "<>\"'&") {
				code = "an error"
			}
			s.ssoRefusedBecause(w, r, http.StatusUnauthorized, "the identity provider did not sign you in ("+code+").")
			return
		}
		provider := s.SSOProvider
		if f.WS != "" {
			c, _, err := s.workspaceClient(r.Context(), f.WS)
			if err != nil {
				s.Log.Warn("sso: workspace provider", "workspace", f.WS, "err", err)
				s.ssoRefusedBecause(w, r, http.StatusBadRequest, "this workspace's identity provider is no longer set up. Start again from the login page.")
				return
			}
			provider = c
		}
		if provider == nil {
			s.renderError(w, r, http.StatusNotFound, "Single sign-on is not set up on this server.")
			return
		}
		id, err := provider.Exchange(r.Context(), f.Flow, q.Get("code"))
		if err != nil {
			s.ssoRefused(w, r, err)
			return
		}
		if f.WS != "" {
			why, err := s.workspaceVouchRefusal(r.Context(), f.WS, id)
			if err != nil {
				s.error(w, r, err, "")
				return
			}
			if why != "" {
				s.ssoRefusedBecause(w, r, http.StatusForbidden, why)
				return
			}
		}
		u, err := s.ssoAccount(r, id)
		if err != nil {
			s.ssoRefused(w, r, err)
			return
		}
		if v, _ := s.loadVisitor(r); v != nil {
			s.SSO.DeleteSession(r.Context(), v.Session.TokenHash)
		}
		now := s.Now()
		if _, err := s.newSession(w, r, store.Session{UserID: u.ID, SSOIssuer: id.Issuer, SSOSubject: id.Subject, SSOCheckedAt: now}); err != nil {
			s.error(w, r, err, "")
			return
		}
		s.ssoEvent(r.Context(), r, ssoSignIn, "user", u.ID, "issuer", id.Issuer)
		http.Redirect(w, r, f.Next, http.StatusSeeOther)
	})
}

// ssoAccount finds or makes the account of a verified identity, records the provider's
// vouch and admits the person just in time to the workspaces whose verified domain is their
// e-mail's. The identity is (issuer, subject). An identity seen for the first time:
//   - gets a new account when no account has its e-mail;
//   - is linked to the account with its e-mail only when the provider asserts email_verified
//     and a workspace here verified the e-mail's domain (the owner proved the domain, the
//     provider proved the address);
//   - is refused otherwise: an e-mail alone never opens someone's account.
func (s *server) ssoAccount(r *http.Request, id oidc.Identity) (store.User, error) {
	ctx := r.Context()
	now := s.Now()
	sealed := s.sealRefresh(id)
	known, err := s.SSO.Identity(ctx, id.Issuer, id.Subject)
	var u store.User
	switch {
	case err == nil:
		if u, err = s.SSO.UserByID(ctx, known.UserID); err != nil {
			return store.User{}, err
		}
	case errors.Is(err, store.ErrNotFound):
		email := store.CanonicalEmail(id.Email)
		if email == "" || !strings.Contains(email, "@") || len(email) > store.MaxEmail {
			return store.User{}, &oidc.Refusal{Reason: "the identity provider did not share an e-mail address, and a new account needs one (ask for the email scope)."}
		}
		existing, err := s.SSO.UserByEmail(ctx, email)
		switch {
		case errors.Is(err, store.ErrNotFound):
			u = store.User{ID: store.NewID(), Email: email, NotifyRegressions: true, CreatedAt: now}
			err = s.SSO.CreateIdentityUser(ctx, u, store.Identity{Issuer: id.Issuer, Subject: id.Subject, Email: email, RefreshSealed: sealed, CreatedAt: now, CheckedAt: now})
			if errors.Is(err, store.ErrConflict) {
				return store.User{}, &oidc.Refusal{Reason: "this identity or e-mail was just bound to an account by another sign-in. Start again."}
			}
			if err != nil {
				return store.User{}, err
			}
		case err != nil:
			return store.User{}, err
		default:
			rules, err := s.SSO.SSORulesForDomain(ctx, store.EmailDomain(email))
			if err != nil {
				return store.User{}, err
			}
			if !id.EmailVerified || len(rules) == 0 {
				return store.User{}, &oidc.Refusal{Reason: "an account with the e-mail " + email + " already exists here, and SitePulse links an identity to it only when the provider says the address is verified and a workspace verified its domain. Log in with the account's password instead."}
			}
			u = existing
			if err := s.SSO.LinkIdentity(ctx, store.Identity{Issuer: id.Issuer, Subject: id.Subject, UserID: u.ID, Email: email, RefreshSealed: sealed, CreatedAt: now, CheckedAt: now}); err != nil {
				if errors.Is(err, store.ErrConflict) {
					return store.User{}, &oidc.Refusal{Reason: "the account with the e-mail " + email + " is bound to another identity at this provider."}
				}
				return store.User{}, err
			}
			s.ssoEvent(ctx, r, ssoLinked, "user", u.ID, "issuer", id.Issuer)
		}
	default:
		return store.User{}, err
	}
	if err := s.SSO.Vouched(ctx, id.Issuer, id.Subject, sealed, now); err != nil {
		return store.User{}, err
	}
	if id.EmailVerified {
		s.joinJustInTime(r, u, id)
	}
	return u, nil
}

// joinJustInTime adds the person to every workspace whose verified domain is their e-mail's
// and whose owner chose a role for newcomers. The e-mail is the provider's, verified by it,
// and the person's own account's.
func (s *server) joinJustInTime(r *http.Request, u store.User, id oidc.Identity) {
	if store.CanonicalEmail(id.Email) != u.Email {
		return
	}
	rules, err := s.SSO.SSORulesForDomain(r.Context(), store.EmailDomain(u.Email))
	if err != nil {
		s.Log.Warn("sso: rules for domain", "err", err)
		return
	}
	for _, rule := range rules {
		if rule.JITRole != store.RoleEditor && rule.JITRole != store.RoleViewer {
			continue
		}
		// Only the provider the workspace's requirement is met through admits newcomers: a
		// workspace with its own provider takes no one the operator's provider vouched for.
		if issuer, err := s.ruleIssuer(r.Context(), rule.WorkspaceID); err != nil || issuer != id.Issuer {
			continue
		}
		joined, err := s.SSO.JoinJustInTime(r.Context(), rule.WorkspaceID, u.ID, rule.JITRole, s.Now())
		if err != nil {
			s.Log.Warn("sso: join just in time", "workspace", rule.WorkspaceID, "err", err)
			continue
		}
		if joined {
			s.ssoEvent(r.Context(), r, ssoJITJoin, "user", u.ID, "workspace", rule.WorkspaceID, "role", string(rule.JITRole))
		}
	}
}

func (s *server) sealRefresh(id oidc.Identity) string {
	if id.RefreshToken == "" || s.ChannelKeys == nil {
		return ""
	}
	sealed, err := s.ChannelKeys.SealFor(purposeSSORefresh, id.RefreshToken, id.Issuer+"\x00"+id.Subject)
	if err != nil {
		return ""
	}
	return sealed
}

// ssoRefused shows why a sign-in was refused: the oidc.Refusal's reason, or that the provider
// could not be reached.
func (s *server) ssoRefused(w http.ResponseWriter, r *http.Request, err error) {
	var refusal *oidc.Refusal
	var down *oidc.Unreachable
	switch {
	case errors.As(err, &down):
		s.ssoEvent(r.Context(), r, ssoSignInRefused, "reason", "provider unreachable")
		s.Log.Warn("sso: provider unreachable", "err", err)
		s.ssoRefusedBecause(w, r, http.StatusBadGateway, "the identity provider could not be reached. Try again in a minute.")
	case errors.As(err, &refusal):
		s.ssoRefusedBecause(w, r, http.StatusUnauthorized, refusal.Reason)
	default:
		s.error(w, r, err, "")
	}
}

func (s *server) ssoRefusedBecause(w http.ResponseWriter, r *http.Request, status int, reason string) {
	s.ssoEvent(r.Context(), r, ssoSignInRefused, "reason", reason)
	s.render(w, r, status, "sso_refused", page{Title: "Single sign-on refused", Data: struct{ Reason, Provider string }{reason, s.SSOName}})
}
