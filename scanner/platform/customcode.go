package platform

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrMissingScope is a 403 missing_scopes: the token was not granted what the call needs.
var ErrMissingScope = errors.New("the platform connection was not granted the scope this needs")

// ScriptScopes are the scopes adding a script needs: custom_code:read to read the site's
// applied scripts (so applying keeps the others), custom_code:write to register and apply.
var ScriptScopes = []string{"custom_code:read", "custom_code:write"}

// RegisteredScript is a script registered to a site (/v2/sites/{site_id}/registered_scripts):
// for a hosted one, its URL and the Sub-Resource Integrity hash of its exact bytes. A version
// (semver) is immutable once registered; id is the platform's, derived from displayName.
type RegisteredScript struct {
	ID             string `json:"id,omitempty"`
	DisplayName    string `json:"displayName"`
	HostedLocation string `json:"hostedLocation,omitempty"`
	IntegrityHash  string `json:"integrityHash,omitempty"`
	CanCopy        bool   `json:"canCopy"`
	Version        string `json:"version"`
	CreatedOn      string `json:"createdOn,omitempty"`
	LastUpdated    string `json:"lastUpdated,omitempty"`
}

// AppliedScript is one script of a site's custom code (/v2/sites/{site_id}/custom_code): a
// registered script's id and version, where it goes (header or footer) and the attributes its
// tag gets.
type AppliedScript struct {
	ID         string         `json:"id"`
	Location   string         `json:"location"`
	Version    string         `json:"version"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// Script locations of the custom code API.
const (
	LocationHeader = "header"
	LocationFooter = "footer"
)

// ScriptVersion is the semver a hosted script is registered under, derived from where it is
// and the hash of its bytes: the same script is never registered twice, a changed one gets a
// version of its own (registered versions cannot change).
func ScriptVersion(hostedLocation, integrity string) string {
	h := sha256.Sum256([]byte(hostedLocation + "\n" + integrity))
	return fmt.Sprintf("1.%d.%d", int(h[0])<<8|int(h[1]), int(h[2])<<8|int(h[3]))
}

// Introspect answers the scopes the token was granted (GET /v2/token/introspect).
func (c *Client) Introspect(ctx context.Context, token string) ([]string, error) {
	var out struct {
		Authorization struct {
			Scope string `json:"scope"`
		} `json:"authorization"`
	}
	if err := c.do(ctx, http.MethodGet, "/v2/token/introspect", token, "", nil, &out); err != nil {
		return nil, fmt.Errorf("introspect token: %w", err)
	}
	return strings.FieldsFunc(out.Authorization.Scope, func(r rune) bool { return r == ',' || r == ' ' }), nil
}

// RegisteredScripts lists the scripts registered to a site.
func (c *Client) RegisteredScripts(ctx context.Context, token, siteID string) ([]RegisteredScript, error) {
	var out struct {
		RegisteredScripts []RegisteredScript `json:"registeredScripts"`
	}
	if err := c.do(ctx, http.MethodGet, "/v2/sites/"+url.PathEscape(siteID)+"/registered_scripts", token, "", nil, &out); err != nil {
		return nil, fmt.Errorf("list registered scripts: %w", err)
	}
	return out.RegisteredScripts, nil
}

// RegisterHostedScript registers a hosted script to a site (POST
// /v2/sites/{site_id}/registered_scripts/hosted): hostedLocation, integrityHash, version,
// displayName and canCopy. Not retried on a 5xx or timeout (it may be done): the caller lists.
func (c *Client) RegisterHostedScript(ctx context.Context, token, siteID string, s RegisteredScript) (RegisteredScript, error) {
	body, _ := json.Marshal(struct {
		HostedLocation string `json:"hostedLocation"`
		IntegrityHash  string `json:"integrityHash"`
		Version        string `json:"version"`
		DisplayName    string `json:"displayName"`
		CanCopy        bool   `json:"canCopy"`
	}{s.HostedLocation, s.IntegrityHash, s.Version, s.DisplayName, s.CanCopy})
	var out RegisteredScript
	if err := c.do(ctx, http.MethodPost, "/v2/sites/"+url.PathEscape(siteID)+"/registered_scripts/hosted", token, "application/json", body, &out); err != nil {
		return RegisteredScript{}, fmt.Errorf("register script: %w", err)
	}
	if out.ID == "" {
		return RegisteredScript{}, errors.New("register script: the platform answered no id")
	}
	return out, nil
}

// SiteCustomCode lists the scripts the app applied to a site.
func (c *Client) SiteCustomCode(ctx context.Context, token, siteID string) ([]AppliedScript, error) {
	var out struct {
		Scripts []AppliedScript `json:"scripts"`
	}
	if err := c.do(ctx, http.MethodGet, "/v2/sites/"+url.PathEscape(siteID)+"/custom_code", token, "", nil, &out); err != nil {
		return nil, fmt.Errorf("read custom code: %w", err)
	}
	return out.Scripts, nil
}

// SetSiteCustomCode replaces the scripts the app applies to a site (PUT
// /v2/sites/{site_id}/custom_code {"scripts": [...]}): a script left out is removed. The whole
// list is sent each time, so a retry after a 5xx does the same thing.
func (c *Client) SetSiteCustomCode(ctx context.Context, token, siteID string, scripts []AppliedScript) error {
	if scripts == nil {
		scripts = []AppliedScript{}
	}
	body, _ := json.Marshal(map[string]any{"scripts": scripts})
	if err := c.do(ctx, http.MethodPut, "/v2/sites/"+url.PathEscape(siteID)+"/custom_code", token, "application/json", body, nil); err != nil {
		return fmt.Errorf("apply custom code: %w", err)
	}
	return nil
}

// versionTaken reports a registration refused because the version exists (409, or 400 as the
// platform also answers it).
func versionTaken(err error) bool {
	var e *apiError
	return errors.As(err, &e) && (e.Status == http.StatusConflict || e.Status == http.StatusBadRequest)
}
