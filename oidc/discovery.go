package oidc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Metadata is what SitePulse reads of a provider's discovery document (OpenID Connect
// Discovery 1.0 §3).
type Metadata struct {
	Issuer                        string   `json:"issuer"`
	AuthorizationEndpoint         string   `json:"authorization_endpoint"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	UserinfoEndpoint              string   `json:"userinfo_endpoint"`
	JWKSURI                       string   `json:"jwks_uri"`
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	ScopesSupported               []string `json:"scopes_supported"`
}

// ValidIssuer checks an issuer URL as configured: https (http only with allowHTTP), a host, no
// query or fragment.
func ValidIssuer(issuer string, allowHTTP bool) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return refuse("the issuer %q is not an https URL without query or fragment", clip(issuer))
	}
	if u.Scheme != "https" && !(allowHTTP && u.Scheme == "http") {
		return refuse("the issuer %q is not https", clip(issuer))
	}
	return nil
}

// discover reads issuer's discovery document. Its issuer must be the configured one exactly
// (§4.3): a document that names another is someone else's.
func discover(ctx context.Context, client *http.Client, issuer string, allowHTTP bool) (Metadata, error) {
	if err := ValidIssuer(issuer, allowHTTP); err != nil {
		return Metadata{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(issuer, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return Metadata{}, refuse("the issuer is not a URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return Metadata{}, refuse("the provider's discovery document could not be fetched: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Metadata{}, refuse("the provider's discovery document answered %d", resp.StatusCode)
	}
	var m Metadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<10)).Decode(&m); err != nil {
		return Metadata{}, refuse("the provider's discovery document is not JSON")
	}
	if m.Issuer != issuer {
		return Metadata{}, refuse("the provider's discovery document names issuer %q, not the configured %q", clip(m.Issuer), clip(issuer))
	}
	for _, e := range []struct{ name, v string }{{"authorization_endpoint", m.AuthorizationEndpoint}, {"token_endpoint", m.TokenEndpoint}, {"jwks_uri", m.JWKSURI}} {
		if err := ValidIssuer(e.v, allowHTTP); err != nil {
			return Metadata{}, refuse("the provider's %s is not an https URL", e.name)
		}
	}
	if m.UserinfoEndpoint != "" && ValidIssuer(m.UserinfoEndpoint, allowHTTP) != nil {
		m.UserinfoEndpoint = ""
	}
	if len(m.CodeChallengeMethodsSupported) > 0 && !contains(m.CodeChallengeMethodsSupported, "S256") {
		return Metadata{}, refuse("the provider does not support PKCE with S256")
	}
	return m, nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
