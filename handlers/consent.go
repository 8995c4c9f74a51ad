package handlers

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"

	"sitepulse/mcp"
	"sitepulse/oauth"
	"sitepulse/store"
)

// handleAuthorize is GET /oauth/authorize. A request that names an unknown client or an
// unregistered redirect URI gets an error page and is never redirected. Any other refusal goes
// back to the client's redirect URI when it is a loopback one; otherwise it is shown on a page
// naming the app and the destination host, with a link the user may follow: anyone can register
// a redirect URI, and an automatic redirect would make this server an open redirector (RFC 9700
// §4.11.2). A denial on the consent page still redirects (handleConsent). A signed-out user logs in first and comes back here. The
// consent page is shown at every request, also for an app approved before: a dynamically
// registered client is only as trustworthy as the person who starts the flow.
func (s *server) handleAuthorize() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No Referer from this page: its URL carries the request's state and challenge.
		w.Header().Set("Referrer-Policy", "no-referrer")
		if store.IsMetadataClientID(r.URL.Query().Get("client_id")) {
			// Such a client_id makes the server fetch a URL of the requester's choosing: only
			// for a signed-in user, and a bounded number of times per address.
			if visitorFrom(r.Context()) == nil {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			if ok, wait := s.metadataIP.allow(clientIP(r)); !ok {
				secs := strconv.Itoa(int(wait.Seconds()) + 1)
				w.Header().Set("Retry-After", secs)
				s.renderError(w, r, http.StatusTooManyRequests, "Too many app sign-in requests from your address. Try again in "+secs+" seconds.")
				return
			}
		}
		req, err := s.OAuth.Authorize(r.Context(), r.URL.RawQuery)
		var refused *oauth.AuthorizeError
		if errors.As(err, &refused) {
			if loc := refused.Location(); loc != "" && refused.Loopback() {
				redirect(w, loc)
				return
			}
			if loc := refused.Location(); loc != "" {
				// Registered redirect URIs are https, loopback http or an app's own scheme, never
				// javascript: or data: (checkRedirectURI), so the link may keep an app's scheme.
				s.render(w, r, http.StatusBadRequest, "authorize_error", page{Title: "This app's request is not valid", Data: struct {
					ClientName, Host, Description string
					Link                          template.URL
				}{refused.ClientName, refused.Host(), refused.Description, template.URL(loc)}})
				return
			}
			s.renderError(w, r, http.StatusBadRequest, "This sign-in link from an app is not valid, so SitePulse will not send you back to it: "+refused.Description+".")
			return
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		v := visitorFrom(r.Context())
		if v == nil {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		p, err := s.OAuth.Begin(r.Context(), v.User.ID, req)
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		s.render(w, r, http.StatusOK, "consent", page{Title: "Connect an app", Data: consentData{p, scopesOf(p.Scope)}})
	})
}

// consentData is what the consent page shows: the pending request and, in plain words, what
// each scope it asks for allows.
type consentData struct {
	oauth.Pending
	Scopes []scopeDoc
}

// scopeDoc is a scope in the words the consent page and the connect guide use.
type scopeDoc struct{ Name, Allows string }

var scopeDocs = []scopeDoc{
	{store.ScopeRead, "Read your sites, their scans and page results, trends, regressions, third-party scripts and accessibility issues. It cannot change anything."},
	{store.ScopeWrite, "Publish and scan: create shareable report links of your scans, which anyone who has the link can open without logging in (revoke them under Reports), and start scans of your sites, as Scan now does."},
}

// scopesOf describes the scopes of a space-separated scope string.
func scopesOf(scope string) []scopeDoc {
	var out []scopeDoc
	for _, d := range scopeDocs {
		if store.HasScope(scope, d.Name) {
			out = append(out, d)
		}
	}
	return out
}

// handleConsent is POST /oauth/consent: the consent page's answer. The form carries only the
// pending request's id and the decision; client, redirect URI, state and challenge are read
// back from the server's copy, so a tampered form changes nothing. A cross-site post is refused
// by the CSRF token and by cross-origin protection. The answer is a 303 (OAuth 2.1 §7.5.4).
func (s *server) handleConsent() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Referrer-Policy", "no-referrer")
		v := visitorFrom(r.Context())
		decision, ids := r.PostForm["decision"], r.PostForm["request"]
		if len(decision) != 1 || (decision[0] != "approve" && decision[0] != "deny") || len(ids) != 1 {
			s.renderError(w, r, http.StatusBadRequest, "That answer could not be read. Go back to the app and connect again.")
			return
		}
		loc, req, err := s.OAuth.DecideRequest(r.Context(), v.User.ID, ids[0], decision[0] == "approve")
		if errors.Is(err, store.ErrNotFound) {
			s.renderError(w, r, http.StatusBadRequest, "This request has expired or was already answered. Go back to the app and connect again.")
			return
		}
		if err != nil {
			s.error(w, r, err, "")
			return
		}
		if decision[0] == "approve" {
			s.auditAccount(r.Context(), v.User.ID, v.User.Email, store.LogAppGranted, map[string]string{"clientId": req.ClientID, "scope": req.Scope})
		}
		redirect(w, loc)
	})
}

// redirect answers 303 See Other to loc, which may be an app's own scheme or a loopback
// address. It writes no body: the location carries a code.
func redirect(w http.ResponseWriter, loc string) {
	w.Header().Set("Location", loc)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusSeeOther)
}

// throttleOAuth limits an OAuth endpoint per client address: past the limit, 429 with
// Retry-After in the OAuth error shape.
func (s *server) throttleOAuth(l *limiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := l.allow(clientIP(r)); !ok {
			secs := strconv.Itoa(int(wait.Seconds()) + 1)
			w.Header().Set("Retry-After", secs)
			w.Header().Set("Access-Control-Allow-Origin", "*")
			oauth.WriteError(w, http.StatusTooManyRequests, "temporarily_unavailable", "too many requests from this address; retry in "+secs+" seconds")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handleMCPDocs is the page the OAuth metadata names as service and resource documentation:
// how to connect an MCP client, and what its tools answer.
func (s *server) handleMCPDocs() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, http.StatusOK, "docs_mcp", page{Title: "Connect an AI assistant (MCP)", Data: struct {
			BaseURL, MCPURL, ResourceMetadata string
			Scopes                            []scopeDoc
			Tools                             []mcp.ToolDoc
			Versions                          []string
		}{s.BaseURL, s.BaseURL + oauth.MCPPath, s.resourceMetadataURL(), scopeDocs, mcp.ToolDocs(), mcp.SupportedVersions}})
	})
}
