// Package platform connects SitePulse to the site-builder platform, Webflow, through its public
// Data API v2: the app's OAuth code exchange, the sites and published pages a user's connection
// can see, and the site_publish webhooks SitePulse registers. The API is trusted
// configuration (PLATFORM_API_URL), so a plain http.Client with timeouts talks to it; tokens are
// sealed at rest (keys.go); Connector (connector.go) composes the client with the store.
package platform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Errors of the platform API. Callers test with errors.Is.
var (
	// ErrUnauthorized is a 401: the token was revoked on the platform (the app uninstalled).
	ErrUnauthorized = errors.New("the platform refused the access token")
	// ErrNotFound is a 404: the site or webhook is gone.
	ErrNotFound = errors.New("not found on the platform")
	// ErrUnavailable is the platform still failing (5xx, timeouts, 429) after the retries.
	ErrUnavailable = errors.New("the platform is unavailable")
)

// Site is a site of GET /v2/sites, the fields SitePulse reads.
type Site struct {
	ID            string         `json:"id"`
	WorkspaceID   string         `json:"workspaceId,omitempty"`
	DisplayName   string         `json:"displayName"`
	ShortName     string         `json:"shortName"`
	LastPublished *time.Time     `json:"lastPublished,omitempty"`
	CustomDomains []CustomDomain `json:"customDomains"`
}

// CustomDomain is one of a site's customDomains.
type CustomDomain struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

// Domain is the host SitePulse audits: the first custom domain, else the platform's own
// <shortName>.webflow.io.
func (s Site) Domain() string {
	for _, d := range s.CustomDomains {
		host := strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(d.URL)), "https://"), "http://")
		if host = strings.TrimRight(host, "/"); host != "" {
			return host
		}
	}
	return strings.ToLower(s.ShortName) + ".webflow.io"
}

// Page is a page of GET /v2/sites/{site_id}/pages, the fields SitePulse reads.
type Page struct {
	ID            string          `json:"id"`
	Title         string          `json:"title,omitempty"`
	Slug          string          `json:"slug,omitempty"`
	CollectionID  json.RawMessage `json:"collectionId,omitempty"`
	Draft         bool            `json:"draft"`
	Archived      bool            `json:"archived"`
	PublishedPath string          `json:"publishedPath,omitempty"`
}

// template reports a collection template page (a CMS item's layout, not a page of its own).
func (p Page) template() bool {
	switch strings.TrimSpace(string(p.CollectionID)) {
	case "", "null", `""`, "{}":
		return false
	}
	return true
}

// PublishedPaths are the paths SitePulse audits: published pages only (no drafts, archived
// pages or collection templates), each once, in the platform's order.
func PublishedPaths(pages []Page) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, p := range pages {
		path := strings.TrimSpace(p.PublishedPath)
		if p.Draft || p.Archived || p.template() || path == "" {
			continue
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		if !seen[path] {
			seen[path] = true
			out = append(out, path)
		}
	}
	return out
}

// Pagination is the API's list window.
type Pagination struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
	Total  int `json:"total"`
}

// Webhook is a webhook registration of /v2/sites/{site_id}/webhooks.
type Webhook struct {
	ID          string `json:"id"`
	TriggerType string `json:"triggerType"`
	URL         string `json:"url"`
	WorkspaceID string `json:"workspaceId,omitempty"`
	SiteID      string `json:"siteId,omitempty"`
	CreatedOn   string `json:"createdOn,omitempty"`
}

// TriggerSitePublish is the event SitePulse subscribes to.
const TriggerSitePublish = "site_publish"

// Scopes are what the app asks the user to grant: read sites and pages, write webhooks, read
// and write custom code (to add the beacon script, customcode.go).
const Scopes = "sites:read sites:write pages:read custom_code:read custom_code:write"

// ClientConfig configures a Client. Zero values get the defaults noted.
type ClientConfig struct {
	APIURL       string // PLATFORM_API_URL: token endpoint {APIURL}/oauth/access_token, data {APIURL}/v2/...
	ClientID     string
	ClientSecret string
	HTTP         *http.Client // default: 15 s timeout
	// Attempts bounds the tries of one call through 429 (any method), 5xx and timeouts (GET, PUT
	// and DELETE only). Default 4.
	Attempts int
	// Backoff is the wait before try n+1 after a 5xx or timeout. Default 500 ms × 2^(n-1).
	Backoff func(n int) time.Duration
	// MaxRetryAfter is the longest Retry-After honoured by waiting; longer is ErrUnavailable. Default 60 s.
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx ends; tests record the waits instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Client calls the platform's API.
type Client struct{ cfg ClientConfig }

// NewClient fills in cfg's defaults.
func NewClient(cfg ClientConfig) *Client {
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 15 * time.Second}
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 4
	}
	if cfg.Backoff == nil {
		cfg.Backoff = func(n int) time.Duration { return 500 * time.Millisecond << (n - 1) }
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = time.Minute
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	return &Client{cfg: cfg}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Exchange trades an authorization code for an access token (form POST to /oauth/access_token).
// A code is single-use, so a 5xx or timeout is not retried (a second try could only be refused).
func (c *Client) Exchange(ctx context.Context, code, redirectURI string) (string, error) {
	form := url.Values{"client_id": {c.cfg.ClientID}, "client_secret": {c.cfg.ClientSecret}, "code": {code},
		"grant_type": {"authorization_code"}, "redirect_uri": {redirectURI}}
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	err := c.do(ctx, http.MethodPost, "/oauth/access_token", "", "application/x-www-form-urlencoded", []byte(form.Encode()), &out)
	if err != nil {
		return "", fmt.Errorf("exchange code: %w", err)
	}
	if out.AccessToken == "" {
		return "", errors.New("exchange code: the platform answered no access_token")
	}
	return out.AccessToken, nil
}

// Sites lists the sites the token can see.
func (c *Client) Sites(ctx context.Context, token string) ([]Site, error) {
	var out struct {
		Sites []Site `json:"sites"`
	}
	if err := c.do(ctx, http.MethodGet, "/v2/sites", token, "", nil, &out); err != nil {
		return nil, fmt.Errorf("list sites: %w", err)
	}
	return out.Sites, nil
}

// pageLimit is the largest page window the API gives; maxPages stops a platform that never ends.
const (
	pageLimit = 100
	maxPages  = 10000
)

// Pages lists every page of a site, following pagination (limit, offset, total) to the end.
func (c *Client) Pages(ctx context.Context, token, siteID string) ([]Page, error) {
	var all []Page
	for offset := 0; ; {
		var out struct {
			Pages      []Page     `json:"pages"`
			Pagination Pagination `json:"pagination"`
		}
		path := fmt.Sprintf("/v2/sites/%s/pages?limit=%d&offset=%d", url.PathEscape(siteID), pageLimit, offset)
		if err := c.do(ctx, http.MethodGet, path, token, "", nil, &out); err != nil {
			return nil, fmt.Errorf("list pages: %w", err)
		}
		all = append(all, out.Pages...)
		offset += len(out.Pages)
		if len(out.Pages) == 0 || offset >= out.Pagination.Total || offset >= maxPages {
			return all, nil
		}
	}
}

// Webhooks lists the app's webhooks of a site.
func (c *Client) Webhooks(ctx context.Context, token, siteID string) ([]Webhook, error) {
	var out struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	if err := c.do(ctx, http.MethodGet, "/v2/sites/"+url.PathEscape(siteID)+"/webhooks", token, "", nil, &out); err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out.Webhooks, nil
}

// CreateWebhook registers a webhook of triggerType to target on a site. A 5xx or timeout is not
// retried (the platform may have created it): ErrUnavailable, and the caller lists to find out.
func (c *Client) CreateWebhook(ctx context.Context, token, siteID, triggerType, target string) (Webhook, error) {
	body, _ := json.Marshal(map[string]string{"triggerType": triggerType, "url": target})
	var out Webhook
	if err := c.do(ctx, http.MethodPost, "/v2/sites/"+url.PathEscape(siteID)+"/webhooks", token, "application/json", body, &out); err != nil {
		return Webhook{}, fmt.Errorf("create webhook: %w", err)
	}
	if out.ID == "" {
		return Webhook{}, errors.New("create webhook: the platform answered no id")
	}
	return out, nil
}

// DeleteWebhook removes a webhook; one already gone is not an error.
func (c *Client) DeleteWebhook(ctx context.Context, token, webhookID string) error {
	err := c.do(ctx, http.MethodDelete, "/v2/webhooks/"+url.PathEscape(webhookID), token, "", nil, nil)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("delete webhook: %w", err)
	}
	return nil
}

// apiError is a refusal the retries cannot fix, with the platform's own code and message.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
	OAuth   string `json:"error"`
}

func (e *apiError) Error() string {
	code := e.Code
	if code == "" {
		code = e.OAuth
	}
	return fmt.Sprintf("platform answered %d %s %s", e.Status, code, e.Message)
}

// maxBody caps what is read of one answer.
const maxBody = 8 << 20

// do makes one API call, retrying 429 after its Retry-After (the platform did not act), and,
// for GET, PUT (a whole replacement) and DELETE only, 5xx and transport failures (timeouts included) after a backoff, up
// to Attempts tries. A POST that got a 5xx or timed out may have been done by the platform
// (a webhook created, a code spent), so it is not repeated blindly: it fails with
// ErrUnavailable and the caller decides (ensureWebhook lists before creating again). The token
// goes in the Authorization header only and is never part of an error or a log line.
func (c *Client) do(ctx context.Context, method, path, token, contentType string, body []byte, out any) error {
	idempotent := method == http.MethodGet || method == http.MethodPut || method == http.MethodDelete
	var last error
	for n := 1; ; n++ {
		wait, err := c.try(ctx, method, path, token, contentType, body, out)
		if wait < 0 || err == nil {
			return err
		}
		last = err
		if n >= c.cfg.Attempts || ctx.Err() != nil || (wait == 0 && !idempotent) {
			return fmt.Errorf("%w: %v", ErrUnavailable, last)
		}
		if wait == 0 {
			wait = c.cfg.Backoff(n)
		}
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return fmt.Errorf("%w: %v", ErrUnavailable, last)
		}
	}
}

// try makes one attempt. wait < 0: final (success or a refusal); 0: retry after the backoff;
// > 0: retry after that long (Retry-After).
func (c *Client) try(ctx context.Context, method, path, token, contentType string, body []byte, out any) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.cfg.APIURL+path, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.cfg.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is ours, but keep errors short
		}
		return 0, fmt.Errorf("%s %s: %w", method, strings.SplitN(path, "?", 2)[0], err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, fmt.Errorf("%s %s: read answer: %w", method, strings.SplitN(path, "?", 2)[0], err)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		wait := retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if wait > c.cfg.MaxRetryAfter {
			return -1, fmt.Errorf("%w: rate limited for %s", ErrUnavailable, wait)
		}
		return max(wait, time.Second), errors.New("platform answered 429 Too Many Requests")
	case resp.StatusCode >= 500:
		return 0, fmt.Errorf("platform answered %d", resp.StatusCode)
	case resp.StatusCode == http.StatusUnauthorized:
		return -1, ErrUnauthorized
	case resp.StatusCode == http.StatusNotFound:
		return -1, ErrNotFound
	case resp.StatusCode == http.StatusForbidden:
		e := &apiError{Status: resp.StatusCode}
		json.Unmarshal(raw, e)
		if e.Code == "missing_scopes" {
			return -1, fmt.Errorf("%w: %v", ErrMissingScope, e)
		}
		return -1, e
	case resp.StatusCode >= 300:
		e := &apiError{Status: resp.StatusCode}
		json.Unmarshal(raw, e)
		return -1, e
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return -1, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return 0, fmt.Errorf("%s %s: answer is not the expected JSON: %v", method, strings.SplitN(path, "?", 2)[0], err)
	}
	return -1, nil
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date. Missing or malformed
// is one second.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return time.Second
}
