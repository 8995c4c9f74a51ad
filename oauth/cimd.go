package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"sitepulse/store"
)

// Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP 2025-11-25
// authorization, "Client ID Metadata Documents"): a client with no registration here names
// itself by an https URL, and the JSON document at that URL says what registration would have.
// Anyone can make the server fetch any URL this way, so the fetch goes through the outbound
// guard main hands in (no internal addresses, checked when connecting), follows no redirect,
// gives up after 5 s and reads at most 64 KiB.
const (
	metadataFetchTimeout = 5 * time.Second
	maxMetadataDocument  = 64 << 10
	// maxMetadataCache bounds how long a document is trusted without fetching it again,
	// whatever its caching headers say.
	maxMetadataCache = 24 * time.Hour
	// maxMetadataEntries bounds the cache: past it, expired entries go, then everything.
	maxMetadataEntries = 1000
)

// metadataDocument is the part of a Client ID Metadata Document SitePulse reads.
type metadataDocument struct {
	ClientID                string   `json:"client_id"`
	ClientName              *string  `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope"`
	ClientSecret            *string  `json:"client_secret"`
}

// metadataCache keeps fetched documents, as clients, until their HTTP freshness ends.
type metadataCache struct {
	mu      sync.Mutex
	entries map[string]cachedClient
}

type cachedClient struct {
	client  store.OAuthClient
	expires time.Time
}

func (c *metadataCache) get(id string, now time.Time) (store.OAuthClient, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok || !now.Before(e.expires) {
		return store.OAuthClient{}, false
	}
	return e.client, true
}

func (c *metadataCache) put(id string, client store.OAuthClient, expires time.Time, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]cachedClient{}
	}
	if len(c.entries) >= maxMetadataEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxMetadataEntries {
			clear(c.entries)
		}
	}
	c.entries[id] = cachedClient{client, expires}
}

// metadataURLProblem says why id cannot be a client_id URL, or "": https, a host, a path other
// than "/", no userinfo, fragment or dot segments (the draft's section 3).
func metadataURLProblem(id string) string {
	if len(id) > maxRedirectURILen {
		return "the client_id URL is longer than 2000 characters"
	}
	u, err := url.Parse(id)
	switch {
	case err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return "a client_id URL must be an absolute https URL"
	case u.User != nil:
		return "a client_id URL must not contain userinfo"
	case u.Fragment != "" || strings.Contains(id, "#"):
		return "a client_id URL must not contain a fragment"
	case u.Path == "" || u.Path == "/":
		return "a client_id URL must have a path"
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return "a client_id URL must not contain . or .. path segments"
		}
	}
	return ""
}

// metadataClient returns the client a Client ID Metadata Document describes, from the cache
// while it is fresh, else fetched. A document that cannot be fetched or used is an
// *AuthorizeError with no Location: the client cannot be trusted with a redirect.
func (s *Server) metadataClient(ctx context.Context, id string) (store.OAuthClient, error) {
	refuse := func(why string) error {
		return &AuthorizeError{Code: errInvalidClient, Description: "the app's metadata document (client_id " + id + ") cannot be used: " + why}
	}
	if s.fetch == nil {
		return store.OAuthClient{}, &AuthorizeError{Code: errInvalidClient, Description: "the app (client_id) is not registered here"}
	}
	if why := metadataURLProblem(id); why != "" {
		return store.OAuthClient{}, refuse(why)
	}
	now := s.now()
	if c, ok := s.cimd.get(id, now); ok {
		return c, nil
	}
	doc, fresh, err := s.fetchMetadata(ctx, id)
	if err != nil {
		s.log.Info("oauth: client metadata document refused", "client", id, "err", err)
		return store.OAuthClient{}, refuse(err.Error())
	}
	c, err := clientFromDocument(id, doc, now)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return store.OAuthClient{}, refuse(e.Description)
		}
		return store.OAuthClient{}, err
	}
	if fresh > 0 {
		s.cimd.put(id, c, now.Add(min(fresh, maxMetadataCache)), now)
	}
	return c, nil
}

// fetchMetadata GETs a metadata document: 200 only, no redirects, at most 64 KiB, 5 s. It
// answers how long the response may be reused by its Cache-Control max-age or Expires
// (RFC 9111 §4.2.1); 0 when it says no-store or no-cache, or nothing.
func (s *Server) fetchMetadata(ctx context.Context, id string) (metadataDocument, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, metadataFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return metadataDocument{}, 0, errors.New("the URL cannot be fetched")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.fetch.Do(req)
	if err != nil {
		return metadataDocument{}, 0, fmt.Errorf("fetching it failed: %w", errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return metadataDocument{}, 0, fmt.Errorf("it answered HTTP %d, not 200", resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return metadataDocument{}, 0, errors.New("it is not application/json")
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataDocument+1))
	if err != nil {
		return metadataDocument{}, 0, errors.New("reading it failed")
	}
	if len(body) > maxMetadataDocument {
		return metadataDocument{}, 0, errors.New("it is larger than 64 KiB")
	}
	var doc metadataDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		return metadataDocument{}, 0, errors.New("it is not a JSON object of client metadata")
	}
	return doc, freshness(resp.Header, s.now()), nil
}

// freshness is how long a response may be reused: Cache-Control max-age (s-maxage is for
// shared caches, which this one is not), else Expires less Date or now; 0 for no-store,
// no-cache or no header.
func freshness(h http.Header, now time.Time) time.Duration {
	maxAge := -1
	for _, cc := range h.Values("Cache-Control") {
		for _, d := range strings.Split(cc, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(strings.ToLower(d)), "=")
			switch name {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				if n, err := strconv.Atoi(strings.Trim(value, `"`)); err == nil && n >= 0 {
					maxAge = n
				}
			}
		}
	}
	if maxAge >= 0 {
		return time.Duration(maxAge) * time.Second
	}
	if exp, err := http.ParseTime(h.Get("Expires")); err == nil {
		base := now
		if date, err := http.ParseTime(h.Get("Date")); err == nil {
			base = date
		}
		if d := exp.Sub(base); d > 0 {
			return d
		}
	}
	return 0
}

// clientFromDocument checks a document as registration checks a request, and more: its
// client_id is exactly its URL, and it names no shared secret (a document is public, so its
// client can only be a public one).
func clientFromDocument(id string, doc metadataDocument, now time.Time) (store.OAuthClient, error) {
	if doc.ClientID != id {
		return store.OAuthClient{}, invalidMetadata("its client_id must be exactly its own URL")
	}
	if doc.ClientSecret != nil {
		return store.OAuthClient{}, invalidMetadata("it must not contain a client_secret")
	}
	if m := doc.TokenEndpointAuthMethod; m != "" && m != authNone {
		return store.OAuthClient{}, invalidMetadata("token_endpoint_auth_method must be none: a published document cannot hold a secret")
	}
	uris, err := checkRedirectURIs(doc.RedirectURIs)
	if err != nil {
		return store.OAuthClient{}, err
	}
	c := store.OAuthClient{ID: id, RedirectURIs: uris, AuthMethod: authNone, Scope: store.ScopeAll, CreatedAt: now}
	if c.GrantTypes, err = checkGrantTypes(doc.GrantTypes); err != nil {
		return store.OAuthClient{}, err
	}
	if known := store.KnownScopes(doc.Scope); known != "" {
		c.Scope = known
	}
	if doc.ClientName == nil {
		// The name is optional in a document: the host that publishes it stands for it.
		host := ""
		if u, err := url.Parse(id); err == nil {
			host = u.Host
		}
		doc.ClientName = &host
	}
	if c.Name, err = checkClientName(doc.ClientName); err != nil {
		return store.OAuthClient{}, err
	}
	return c, nil
}
