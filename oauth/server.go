// Package oauth is SitePulse's OAuth 2.1 authorization server for MCP clients: its metadata
// (RFC 8414, RFC 9728), dynamic client registration (RFC 7591) and Client ID Metadata
// Documents, the authorization code grant with PKCE S256 and iss on every authorization
// response (RFC 9207), client_secret_post and client_secret_basic, the scopes mcp:read and
// mcp:write, refresh-token rotation with reuse detection, revocation (RFC 7009), and the
// verification of the access tokens it issues.
//
// It knows nothing of sessions or pages. The handlers package signs the user in, shows the
// consent page and calls Authorize, Begin and Decide; every other endpoint is an http.Handler
// made here. It imports only store; the HTTP client that fetches metadata documents through the
// outbound guard is handed in by main.
package oauth

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"sitepulse/store"
)

// DefaultScope is what an authorization request without a known scope gets (interface, GET
// /oauth/authorize): reading. Publishing (mcp:write) is asked for, by name or after a 403
// insufficient_scope challenge.
const DefaultScope = store.ScopeRead

// Lifetimes (interface, Limits).
const (
	CodeTTL         = 10 * time.Minute
	AccessTokenTTL  = 30 * 24 * time.Hour
	RefreshTokenTTL = 90 * 24 * time.Hour
	// pendingTTL is how long a consent page can still be answered.
	pendingTTL = 10 * time.Minute
	// UnusedClientTTL is how long a registered client that was never used (no consent page,
	// code or token) is kept; registration sweeps older ones at most once per sweepEvery.
	UnusedClientTTL = 24 * time.Hour
	sweepEvery      = time.Hour
)

// Credential prefixes (interface, Credentials). Client secrets have no prefix in the interface;
// cs_ makes a leaked one recognisable to secret scanners.
const (
	prefixClient  = "c_"
	prefixSecret  = "cs_"
	prefixCode    = "ac_"
	prefixAccess  = "at_"
	prefixRefresh = "rt_"
)

// maxSecretLen bounds every credential read from a request before it is hashed: ours are 46
// characters, so anything longer is not one of them.
const maxSecretLen = 200

// DocumentationPath is the page the metadata documents point people at (service_documentation,
// resource_documentation). The handlers package serves it.
const DocumentationPath = "/docs/mcp"

// MCPPath is the protected resource: the MCP endpoint.
const MCPPath = "/api/mcp"

// Config is what a Server needs.
type Config struct {
	Store store.OAuth
	// BaseURL is the interface's {base_url} and the issuer: scheme and host, no trailing slash.
	BaseURL string
	// Now is the clock; nil means time.Now. Tests move it to cross the 10-minute, 30-day and
	// 90-day limits.
	Now func() time.Time
	Log *slog.Logger
	// MetadataClient fetches Client ID Metadata Documents. main gives it the outbound guard's
	// client, so no document is read from an internal address; nil turns the mechanism off.
	MetadataClient *http.Client
}

// Server is the authorization server.
type Server struct {
	store    store.OAuth
	issuer   string
	resource string // the MCP endpoint's URL: RFC 8707 resource and RFC 9728 resource
	now      func() time.Time
	log      *slog.Logger
	asMeta   []byte
	prmMeta  []byte
	fetch    *http.Client // nil: Client ID Metadata Documents are off
	cimd     metadataCache

	sweepMu   sync.Mutex
	lastSweep time.Time
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	s := &Server{
		store:  cfg.Store,
		issuer: strings.TrimRight(cfg.BaseURL, "/"),
		now:    cfg.Now,
		log:    cfg.Log,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.MetadataClient != nil {
		// A copy that never follows a redirect: the document must be at its URL.
		c := *cfg.MetadataClient
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		s.fetch = &c
	}
	s.resource = s.issuer + MCPPath
	s.asMeta, s.prmMeta = s.metadata()
	return s
}

// sweepClients deletes the clients registered more than UnusedClientTTL ago and never used,
// when it last did more than sweepEvery ago: dynamic registration is open to anyone, so its
// leftovers must not accumulate. A failure is logged; registration goes on.
func (s *Server) sweepClients(ctx context.Context) {
	now := s.now()
	s.sweepMu.Lock()
	if now.Sub(s.lastSweep) < sweepEvery {
		s.sweepMu.Unlock()
		return
	}
	s.lastSweep = now
	s.sweepMu.Unlock()
	n, err := s.store.DeleteUnusedClients(ctx, now.Add(-UnusedClientTTL))
	if err != nil {
		s.log.Warn("oauth: sweep never-used clients", "err", err)
		return
	}
	if n > 0 {
		s.log.Info("oauth: never-used clients deleted", "clients", n)
	}
}

// Issuer is the authorization server's issuer identifier: BASE_URL exactly.
func (s *Server) Issuer() string { return s.issuer }

// Resource is the URL of the protected resource, {base_url}/api/mcp.
func (s *Server) Resource() string { return s.resource }
