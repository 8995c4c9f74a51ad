package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"sitepulse/store"
)

// TXTResolver looks up a domain's TXT records (net.Resolver does).
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// verificationPrefix starts the TXT record, or the file, that proves a domain.
const verificationPrefix = "sitepulse-verification="

// ssoSettingsData is the workspace's single sign-on page.
type ssoSettingsData struct {
	Workspace   store.Workspace
	Rule        store.WorkspaceSSO
	Provider    string // the operator's provider's name; "" when it has none
	Issuer      string // the operator's provider's issuer
	RedirectURI string
	CanManage   bool
	// RuleIssuer is the provider the requirement is met through (ruleIssuer): the workspace's
	// own, else the operator's; RuleProvider names it. SSOSession: the visitor signed in
	// through it (required before requiring it).
	RuleIssuer, RuleProvider string
	SSOSession               bool
	BreakGlass               bool
	Error                    string
	// The workspace's own provider (sso_workspace.go): its issuer and client id, never its
	// secret; SignInURL is the page that signs in with it.
	OwnIssuer, OwnClientID, SignInURL string
}

func (s *server) handleSSOSettings() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderSSOSettings(w, r, http.StatusOK, "")
	})
}

func (s *server) renderSSOSettings(w http.ResponseWriter, r *http.Request, status int, problem string) {
	ws := workspaceFrom(r.Context())
	v := visitorFrom(r.Context())
	rule, err := s.SSO.WorkspaceSSO(r.Context(), v.User.ID, ws.ID)
	if err != nil {
		s.error(w, r, err, "There is no such workspace in your account.")
		return
	}
	d := ssoSettingsData{Workspace: ws, Rule: rule, Provider: s.SSOName, CanManage: ws.Role.Can(store.ActManage),
		RedirectURI: s.BaseURL + "/login/sso/callback", BreakGlass: s.SSOBreakGlass[ws.ID], Error: problem}
	if s.SSOProvider != nil {
		d.Issuer, d.Provider = s.SSOProvider.Issuer(), s.ssoName()
	}
	if p, err := s.SSO.WorkspaceProviderOf(r.Context(), ws.ID); err == nil {
		d.OwnIssuer, d.OwnClientID, d.SignInURL = p.Issuer, p.ClientID, s.BaseURL+"/login/sso/w/"+ws.ID
	}
	if d.RuleIssuer, err = s.ruleIssuer(r.Context(), ws.ID); err != nil {
		s.error(w, r, err, "")
		return
	}
	d.RuleProvider, d.SSOSession = s.issuerName(d.RuleIssuer), d.RuleIssuer != "" && v.Session.SSOIssuer == d.RuleIssuer
	s.render(w, r, status, "workspace_sso", page{Title: "Single sign-on · " + ws.Name, Data: d})
}

// validDomain checks a domain as an owner typed it: DNS labels, at least two, lower case.
func validDomain(d string) (string, bool) {
	d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
	if len(d) < 3 || len(d) > 253 || !strings.Contains(d, ".") {
		return "", false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", false
			}
		}
	}
	return d, true
}

// handleSSODomain sets the domain to verify, with a fresh token; a new domain is unverified
// and required of nobody until verified and required again.
func (s *server) handleSSODomain() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		domain, ok := validDomain(r.PostForm.Get("domain"))
		if !ok {
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Enter a domain name such as example.com.")
			return
		}
		b := make([]byte, 16)
		rand.Read(b)
		rule := store.WorkspaceSSO{WorkspaceID: ws.ID, Domain: domain, Token: hex.EncodeToString(b), UpdatedAt: s.Now()}
		if !s.saveRule(w, r, rule) {
			return
		}
		s.ssoEvent(r.Context(), r, ssoSettings, "user", visitorFrom(r.Context()).User.ID, "workspace", ws.ID, "change", "domain set", "domain", domain)
		http.Redirect(w, r, "/workspaces/"+ws.ID+"/sso", http.StatusSeeOther)
	})
}

// handleSSOVerify checks the domain's proof: the TXT record, else the HTTPS file fetched
// through the outbound guard.
func (s *server) handleSSOVerify() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		rule, err := s.SSO.WorkspaceSSO(r.Context(), visitorFrom(r.Context()).User.ID, ws.ID)
		if err != nil {
			s.error(w, r, err, "There is no such workspace in your account.")
			return
		}
		if rule.Domain == "" {
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Enter the domain to verify first.")
			return
		}
		if how := s.checkDomain(r.Context(), rule); how == "" {
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Neither a TXT record "+verificationPrefix+rule.Token+" on "+rule.Domain+
				" nor the file https://"+rule.Domain+"/.well-known/sitepulse-verification.txt holding it was found. DNS changes can take a few minutes to be seen.")
			return
		}
		now := s.Now()
		rule.VerifiedAt, rule.UpdatedAt = &now, now
		if !s.saveRule(w, r, rule) {
			return
		}
		s.ssoEvent(r.Context(), r, ssoDomainChecked, "user", visitorFrom(r.Context()).User.ID, "workspace", ws.ID, "domain", rule.Domain)
		http.Redirect(w, r, "/workspaces/"+ws.ID+"/sso", http.StatusSeeOther)
	})
}

// checkDomain answers how the domain was proven ("dns" or "https"), or "".
func (s *server) checkDomain(ctx context.Context, rule store.WorkspaceSSO) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	want := verificationPrefix + rule.Token
	var res TXTResolver = net.DefaultResolver
	if s.SSOResolver != nil {
		res = s.SSOResolver
	}
	if txts, err := res.LookupTXT(ctx, rule.Domain); err == nil {
		for _, t := range txts {
			if strings.TrimSpace(t) == want {
				return "dns"
			}
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+rule.Domain+"/.well-known/sitepulse-verification.txt", nil)
	if err != nil {
		return ""
	}
	resp, err := s.Guard.Client().Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == want {
		return "https"
	}
	return ""
}

// handleSSORequire turns the requirement on or off and sets the just-in-time role. Turning it
// on needs a verified domain, a provider to meet it through (ruleIssuer: the workspace's own,
// else the operator's), and the owner's own session made through that provider: an owner who
// could not sign in with it cannot lock themselves out with it.
func (s *server) handleSSORequire() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws := workspaceFrom(r.Context())
		v := visitorFrom(r.Context())
		rule, err := s.SSO.WorkspaceSSO(r.Context(), v.User.ID, ws.ID)
		if err != nil {
			s.error(w, r, err, "There is no such workspace in your account.")
			return
		}
		role := store.Role(r.PostForm.Get("jit_role"))
		if role != "" && role != store.RoleEditor && role != store.RoleViewer {
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Newcomers join as editor or viewer, or not at all.")
			return
		}
		require := r.PostForm.Get("required") == "on"
		issuer, err := s.ruleIssuer(r.Context(), ws.ID)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		now := s.Now()
		switch {
		case require && rule.VerifiedAt == nil:
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Verify the domain before requiring single sign-on.")
			return
		case require && issuer == "":
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "There is no identity provider to require: add this workspace's own provider, or ask the operator to set OIDC_ISSUER.")
			return
		case require && v.Session.SSOIssuer != issuer:
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Sign in with "+s.issuerName(issuer)+" first: requiring single sign-on from a password session could lock you out.")
			return
		case require && rule.RequiredAt == nil:
			rule.RequiredAt = &now
		case !require:
			rule.RequiredAt = nil
		}
		if role != "" && rule.VerifiedAt == nil {
			s.renderSSOSettings(w, r, http.StatusUnprocessableEntity, "Verify the domain before admitting people from it.")
			return
		}
		rule.JITRole, rule.UpdatedAt = role, now
		if !s.saveRule(w, r, rule) {
			return
		}
		s.ssoEvent(r.Context(), r, ssoSettings, "user", v.User.ID, "workspace", ws.ID, "required", require, "jit_role", string(role))
		http.Redirect(w, r, "/workspaces/"+ws.ID+"/sso", http.StatusSeeOther)
	})
}

func (s *server) saveRule(w http.ResponseWriter, r *http.Request, rule store.WorkspaceSSO) bool {
	err := s.SSO.SetWorkspaceSSO(r.Context(), visitorFrom(r.Context()).User.ID, rule)
	s.forgetRule(rule.WorkspaceID)
	if errors.Is(err, store.ErrConflict) {
		s.renderSSOSettings(w, r, http.StatusConflict, "Another workspace has verified "+rule.Domain+".")
		return false
	}
	if err != nil {
		s.error(w, r, err, "There is no such workspace in your account.")
		return false
	}
	return true
}
