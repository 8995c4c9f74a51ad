package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"sitepulse/oidc"
	"sitepulse/store"
)

// A workspace's own OpenID provider (docs/sso.md): its owner sets the issuer, the client id
// and the secret (sealed, never shown back). It vouches only for addresses of the workspace's
// verified domain, so a hostile owner's provider cannot assert someone else's address and take
// their account through the linking rule.

// purposeSSOClientSecret seals a workspace provider's client secret, bound to the workspace.
const purposeSSOClientSecret = "sso client secret"

type cachedProvider struct {
	at     time.Time // the provider's UpdatedAt: a change makes a new relying party
	client *oidc.Client
}

// providerCache keeps one relying party per workspace provider, for its discovery document
// and key cache.
type providerCache struct {
	mu sync.Mutex
	m  map[string]cachedProvider
}

// workspaceClient is the relying party of a workspace's provider; ErrNotFound when it has none.
func (s *server) workspaceClient(ctx context.Context, workspaceID string) (*oidc.Client, store.WorkspaceProvider, error) {
	p, err := s.SSO.WorkspaceProviderOf(ctx, workspaceID)
	if err != nil {
		return nil, p, err
	}
	s.wsProviders.mu.Lock()
	defer s.wsProviders.mu.Unlock()
	if c, ok := s.wsProviders.m[p.WorkspaceID]; ok && c.at.Equal(p.UpdatedAt) {
		return c.client, p, nil
	}
	if s.ChannelKeys == nil {
		return nil, p, errors.New("sso: no sealing key to open a workspace provider's secret")
	}
	secret, err := s.ChannelKeys.OpenFor(purposeSSOClientSecret, p.SecretSealed, p.WorkspaceID)
	if err != nil {
		return nil, p, errors.New("sso: a workspace provider's secret does not open")
	}
	c := s.newWorkspaceClient(p.Issuer, p.ClientID, secret)
	s.wsProviders.m[p.WorkspaceID] = cachedProvider{at: p.UpdatedAt, client: c}
	return c, p, nil
}

func (s *server) newWorkspaceClient(issuer, clientID, secret string) *oidc.Client {
	return oidc.New(oidc.Config{Issuer: issuer, ClientID: clientID, ClientSecret: secret,
		RedirectURL: s.BaseURL + "/login/sso/callback", HTTP: s.Guard.Client(), Now: s.Now, AllowHTTP: s.SSOAllowHTTP})
}

// providerFor is the relying party of issuer: the operator's provider, else the workspace
// provider whose issuer it is; nil when neither (the re-check of a session finds its provider
// from the session's issuer).
func (s *server) providerFor(ctx context.Context, issuer string) *oidc.Client {
	if s.SSOProvider != nil && s.SSOProvider.Issuer() == issuer {
		return s.SSOProvider
	}
	if s.SSO == nil || issuer == "" {
		return nil
	}
	p, err := s.SSO.WorkspaceProviderByIssuer(ctx, issuer)
	if err != nil {
		return nil
	}
	c, _, err := s.workspaceClient(ctx, p.WorkspaceID)
	if err != nil {
		s.Log.Warn("sso: workspace provider", "workspace", p.WorkspaceID, "err", err)
		return nil
	}
	return c
}

// handleSSOWorkspaceStart signs in with a workspace's own provider.
func (s *server) handleSSOWorkspaceStart() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := store.CanonicalID(r.PathValue("workspaceId"))
		err := store.ErrNotFound
		if store.ValidUUID(id) && s.SSO != nil {
			_, err = s.SSO.WorkspaceProviderOf(r.Context(), id)
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.error(w, r, err, "")
			return
		}
		var c *oidc.Client
		if err == nil {
			if c, _, err = s.workspaceClient(r.Context(), id); err != nil {
				s.Log.Warn("sso: workspace provider", "workspace", id, "err", err)
			}
		}
		if err != nil {
			s.renderError(w, r, http.StatusNotFound, "This workspace has no single sign-on provider.")
			return
		}
		s.startFlow(w, r, c, id)
	})
}

// ssoByEmail routes a work e-mail to the provider of the workspace whose verified domain is
// the address's, else to the operator's provider; it says nothing of other domains.
func (s *server) ssoByEmail(w http.ResponseWriter, r *http.Request, email string) {
	domain := store.EmailDomain(store.CanonicalEmail(email))
	if domain != "" && len(email) <= store.MaxEmail {
		rules, err := s.SSO.SSORulesForDomain(r.Context(), domain)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		for _, rule := range rules {
			if _, err := s.SSO.WorkspaceProviderOf(r.Context(), rule.WorkspaceID); errors.Is(err, store.ErrNotFound) {
				continue
			} else if err != nil {
				s.error(w, r, err, "")
				return
			}
			c, _, err := s.workspaceClient(r.Context(), rule.WorkspaceID)
			if err == nil {
				s.startFlow(w, r, c, rule.WorkspaceID)
				return
			}
			s.Log.Warn("sso: workspace provider", "workspace", rule.WorkspaceID, "err", err)
		}
	}
	if s.SSOProvider != nil {
		s.startFlow(w, r, s.SSOProvider, "")
		return
	}
	s.renderError(w, r, http.StatusNotFound, "Single sign-on is not set up for that address here. Log in with your e-mail and password.")
}

// workspaceVouchRefusal says why a workspace provider's identity is refused, or "": the
// provider may vouch only for verified addresses of the workspace's verified domain, and an
// identity of it already bound to an account opens only an account of that domain.
func (s *server) workspaceVouchRefusal(ctx context.Context, workspaceID string, id oidc.Identity) (string, error) {
	rule, err := s.SSO.SSORule(ctx, workspaceID)
	if err != nil {
		return "", err
	}
	if rule.VerifiedAt == nil || rule.Domain == "" {
		return "this workspace's identity provider vouches for nobody until the workspace verifies its domain.", nil
	}
	email := store.CanonicalEmail(id.Email)
	if !id.EmailVerified || store.EmailDomain(email) != rule.Domain {
		shown := email
		if len(shown) > 80 {
			shown = shown[:80] + "…"
		}
		if shown == "" {
			shown = "no address"
		}
		return "this workspace's identity provider vouches only for verified @" + rule.Domain + " addresses, and it asserted " + shown + ".", nil
	}
	known, err := s.SSO.Identity(ctx, id.Issuer, id.Subject)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	u, err := s.SSO.UserByID(ctx, known.UserID)
	if err != nil {
		return "", err
	}
	if store.EmailDomain(u.Email) != rule.Domain {
		return "this workspace's identity provider vouches only for @" + rule.Domain + " accounts.", nil
	}
	return "", nil
}

// handleSSOProviderSave sets the workspace's own provider: the issuer's discovery document is
// read through the outbound guard (its issuer must be the one typed), the secret sealed. A
// blank secret keeps the one set before.
func (s *server) handleSSOProviderSave() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		v := visitorFrom(r.Context())
		issuer := strings.TrimSpace(r.PostForm.Get("issuer"))
		clientID := strings.TrimSpace(r.PostForm.Get("client_id"))
		secret := r.PostForm.Get("client_secret")
		if err := oidc.ValidIssuer(issuer, s.SSOAllowHTTP); err != nil || len(issuer) > 500 {
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Enter the provider's issuer URL, such as https://acme.okta.com.")
			return
		}
		if clientID == "" || len(clientID) > 255 || len(secret) > 1024 {
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Enter the client id (and secret) the provider gave for SitePulse.")
			return
		}
		if s.SSOProvider != nil && s.SSOProvider.Issuer() == issuer {
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "That is this server's own provider: members sign in with it already.")
			return
		}
		if s.ChannelKeys == nil {
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "This server has no key to seal the secret with (PLATFORM_TOKEN_KEY): ask its operator.")
			return
		}
		// While single sign-on is required, the provider it is met through keeps its issuer
		// (its client id and secret may change): another issuer's people, the owner among
		// them, have signed in through none of it yet.
		rule, err := s.SSO.SSORule(r.Context(), ws.ID)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if rule.RequiredAt != nil {
			current, err := s.ruleIssuer(r.Context(), ws.ID)
			if err != nil {
				s.error(w, r, err, "")
				return
			}
			if current != issuer {
				s.renderSSOSettings(w, r, http.StatusConflict, "This workspace requires single sign-on through "+current+": lift the requirement first, then change the provider, sign in through the new one and require it again.")
				return
			}
		}
		if secret == "" {
			prev, err := s.SSO.WorkspaceProviderOf(r.Context(), ws.ID)
			if err == nil {
				secret, err = s.ChannelKeys.OpenFor(purposeSSOClientSecret, prev.SecretSealed, ws.ID)
			}
			if err != nil || secret == "" {
				s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Enter the client secret the provider gave for SitePulse.")
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := s.newWorkspaceClient(issuer, clientID, secret).Discover(ctx); err != nil {
			why := "its discovery document could not be read"
			var refusal *oidc.Refusal
			if errors.As(err, &refusal) {
				why = refusal.Reason
			}
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "The provider was not saved: "+why+".")
			return
		}
		sealed, err := s.ChannelKeys.SealFor(purposeSSOClientSecret, secret, ws.ID)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		err = s.SSO.SetWorkspaceProvider(r.Context(), v.User.ID, store.WorkspaceProvider{WorkspaceID: ws.ID, Issuer: issuer, ClientID: clientID, SecretSealed: sealed, UpdatedAt: s.Now()})
		if errors.Is(err, store.ErrConflict) {
			s.renderSSOSettings(w, r, http.StatusConflict, "Another workspace has this issuer as its provider.")
			return
		}
		if err != nil {
			s.error(w, r, err, "There is no such workspace in your account.")
			return
		}
		s.forgetRule(ws.ID)
		s.ssoEvent(r.Context(), r, ssoSettings, "user", v.User.ID, "workspace", ws.ID, "change", "provider set", "issuer", issuer)
		http.Redirect(w, r, "/workspaces/"+ws.ID+"/sso", http.StatusSeeOther)
	})
}

// handleSSOProviderRemove removes the workspace's own provider. It is refused while the
// workspace requires single sign-on (the store checks it with the rule locked): the owner
// lifts the requirement first, deliberately and in the log, rather than have a removal lift
// it or move it to the operator's provider that nobody here has signed in through. A
// workspace with no provider has nothing to remove.
func (s *server) handleSSOProviderRemove() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		v := visitorFrom(r.Context())
		p, err := s.SSO.RemoveWorkspaceProvider(r.Context(), v.User.ID, ws.ID)
		switch {
		case errors.Is(err, store.ErrConflict):
			s.renderSSOSettings(w, r, http.StatusConflict, "This workspace requires single sign-on through this provider: lift the requirement first, then remove the provider.")
			return
		case errors.Is(err, store.ErrNotFound):
			http.Redirect(w, r, "/workspaces/"+ws.ID+"/sso", http.StatusSeeOther)
			return
		case err != nil:
			s.error(w, r, err, "There is no such workspace in your account.")
			return
		}
		s.wsProviders.mu.Lock()
		delete(s.wsProviders.m, ws.ID)
		s.wsProviders.mu.Unlock()
		s.forgetRule(ws.ID)
		s.ssoEvent(r.Context(), r, ssoSettings, "user", v.User.ID, "workspace", ws.ID, "change", "provider removed", "issuer", p.Issuer)
		http.Redirect(w, r, "/workspaces/"+ws.ID+"/sso", http.StatusSeeOther)
	})
}

// anyWorkspaceProvider says whether some workspace has its own provider.
func (s *server) anyWorkspaceProvider(ctx context.Context) (bool, error) {
	if s.SSO == nil {
		return false, nil
	}
	return s.SSO.AnyWorkspaceProvider(ctx)
}
