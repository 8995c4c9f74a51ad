// Package platformtest is a double of the site-builder platform (Webflow): its OAuth authorize
// page and token endpoint, and the Data API v2 endpoints SitePulse calls, with their real
// shapes (sites, pages with pagination, webhooks), plus the site_publish webhook it sends. Tests
// start it with New; `go run ./.ci/loadkit platform` serves it as a process for trying the flow
// offline. The custom code API (custom_code.go) keeps each site's registered scripts and the
// scripts applied to it, and asks for the custom_code scopes. Faults: Throttle (429 + Retry-After), Fail and FailCall (5xx), FailAfterCall (the
// call is done, then 5xx, as a timeout after the platform acted), Revoke (401).
package platformtest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/platform"
)

// Site is a platform site and its pages, as the double holds it.
type Site struct {
	platform.Site
	Pages []platform.Page
}

// Platform is the double. Its zero value is not usable: New or NewHandler makes one.
type Platform struct {
	URL          string // set by New; a process sets it to its own address
	ClientID     string
	ClientSecret string

	mu       sync.Mutex
	sites    []*Site
	codes    map[string]grant
	tokens   map[string]*issued
	webhooks []platform.Webhook
	// AppScopes are the scopes the app is registered for: a token is granted those of the
	// asked ones only. Nil grants whatever is asked.
	AppScopes []string
	scripts   map[string][]platform.RegisteredScript // site id -> registered scripts
	applied   map[string]appliedCode                 // site id -> the app's custom code
	bodies    map[string][]byte                      // "METHOD /path" -> the last body received
	throttle  int
	retry     string
	fail      int
	failCode  int
	failPath  map[string]int // "METHOD /path" -> calls left to answer 500
	failDone  map[string]int // "METHOD /path" -> calls left to do, then answer 500
	calls     map[string]int
	nextID    int
	// Deliver posts a webhook; default an http.Client with a 10 s timeout.
	Deliver *http.Client
	mux     *http.ServeMux
}

type grant struct {
	redirectURI string
	scopes      []string
	used        bool
}

// issued is an access token: revoked once the app is uninstalled, and its granted scopes.
type issued struct {
	valid  bool
	scopes []string
	at     time.Time
}

// grantScopes is what a consent to asked grants: the asked scopes the app is registered for.
func (p *Platform) grantScopes(asked string) []string {
	var out []string
	for _, sc := range strings.Fields(asked) {
		if p.AppScopes == nil || slices.Contains(p.AppScopes, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// New starts the double on 127.0.0.1 with an app of clientID and secret; it stops when the test ends.
func New(t testing.TB, clientID, secret string) *Platform {
	p := NewHandler(clientID, secret)
	srv := httptest.NewServer(p)
	p.URL = srv.URL
	t.Cleanup(srv.Close)
	return p
}

// NewHandler makes the double for a command that listens itself; set URL to its address.
func NewHandler(clientID, secret string) *Platform {
	p := &Platform{ClientID: clientID, ClientSecret: secret, codes: map[string]grant{}, tokens: map[string]*issued{},
		scripts: map[string][]platform.RegisteredScript{}, applied: map[string]appliedCode{}, bodies: map[string][]byte{},
		calls: map[string]int{}, failPath: map[string]int{}, failDone: map[string]int{}, Deliver: &http.Client{Timeout: 10 * time.Second}, mux: http.NewServeMux()}
	p.mux.HandleFunc("GET /oauth/authorize", p.authorizePage)
	p.mux.HandleFunc("POST /oauth/authorize", p.authorizeDecision)
	p.mux.HandleFunc("POST /oauth/access_token", p.accessToken)
	p.mux.HandleFunc("GET /v2/sites", p.api(p.listSites))
	p.mux.HandleFunc("GET /v2/sites/{site_id}/pages", p.api(p.listPages))
	p.mux.HandleFunc("GET /v2/sites/{site_id}/webhooks", p.api(p.listWebhooks))
	p.mux.HandleFunc("POST /v2/sites/{site_id}/webhooks", p.api(p.createWebhook))
	p.mux.HandleFunc("DELETE /v2/webhooks/{webhook_id}", p.api(p.deleteWebhook))
	p.mux.HandleFunc("GET /v2/token/introspect", p.api(p.introspect))
	p.mux.HandleFunc("GET /v2/sites/{site_id}/registered_scripts", p.api(p.scoped("custom_code:read", p.listScripts)))
	p.mux.HandleFunc("POST /v2/sites/{site_id}/registered_scripts/hosted", p.api(p.scoped("custom_code:write", p.registerHosted)))
	p.mux.HandleFunc("GET /v2/sites/{site_id}/custom_code", p.api(p.scoped("custom_code:read", p.getCustomCode)))
	p.mux.HandleFunc("PUT /v2/sites/{site_id}/custom_code", p.api(p.scoped("custom_code:write", p.putCustomCode)))
	p.mux.HandleFunc("POST /_double/publish/{site_id}", p.publishControl)
	return p
}

// AuthorizeURL is PLATFORM_AUTHORIZE_URL for the double.
func (p *Platform) AuthorizeURL() string { return p.URL + "/oauth/authorize" }

// AddSite adds a site the platform account owns.
func (p *Platform) AddSite(s Site) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sites = append(p.sites, &s)
}

// AddPage publishes one more page on a site.
func (p *Platform) AddPage(siteID string, pg platform.Page) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.site(siteID); s != nil {
		s.Pages = append(s.Pages, pg)
	}
}

// Throttle makes the next n API calls answer 429 with Retry-After retryAfter.
func (p *Platform) Throttle(n int, retryAfter string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.throttle, p.retry = n, retryAfter
}

// Fail makes the next n API calls answer status (a 5xx).
func (p *Platform) Fail(n, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail, p.failCode = n, status
}

// FailCall makes the next n calls of "METHOD /path" answer 500.
func (p *Platform) FailCall(key string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failPath[key] = n
}

// FailAfterCall makes the next n calls of "METHOD /path" do their work, then answer 500: the
// platform acted but the caller cannot know, as after a timeout.
func (p *Platform) FailAfterCall(key string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failDone[key] = n
}

// Revoke revokes every token issued so far, as uninstalling the app does.
func (p *Platform) Revoke() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range p.tokens {
		t.valid = false
	}
}

// Webhooks lists the webhooks registered on a site.
func (p *Platform) Webhooks(siteID string) []platform.Webhook {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []platform.Webhook
	for _, w := range p.webhooks {
		if w.SiteID == siteID {
			out = append(out, w)
		}
	}
	return out
}

// Calls is how many requests "METHOD /path" (path without the query) received.
func (p *Platform) Calls(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[key]
}

// Publish sends the site_publish event to every site_publish webhook of the site as Webflow's
// Data API v2 does: the body {"triggerType":"site_publish","payload":{siteId, publishedOn,
// domains, publishedBy}}, x-webflow-timestamp the milliseconds since the epoch and
// x-webflow-signature its Sign under the app's secret. It returns the answers' status codes.
func (p *Platform) Publish(ctx context.Context, siteID string) ([]int, error) {
	p.mu.Lock()
	s := p.site(siteID)
	var targets []string
	for _, w := range p.webhooks {
		if w.SiteID == siteID && w.TriggerType == platform.TriggerSitePublish {
			targets = append(targets, w.URL)
		}
	}
	p.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("no site %q", siteID)
	}
	domains := []string{s.ShortName + ".webflow.io"}
	for _, d := range s.CustomDomains {
		domains = append(domains, d.URL)
	}
	now := time.Now()
	body, _ := json.Marshal(map[string]any{"triggerType": platform.TriggerSitePublish, "payload": map[string]any{"siteId": siteID,
		"publishedOn": now.UTC().Format(time.RFC3339Nano), "domains": domains,
		"publishedBy": map[string]string{"displayName": "Platform Double"}}})
	timestamp := strconv.FormatInt(now.UnixMilli(), 10)
	var codes []int
	for _, target := range targets {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			return codes, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-webflow-timestamp", timestamp)
		req.Header.Set("x-webflow-signature", Sign(p.ClientSecret, timestamp, body))
		resp, err := p.Deliver.Do(req)
		if err != nil {
			return codes, err
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	return codes, nil
}

// Sign is Webflow's webhook signature: the lower-case hex HMAC-SHA256 of timestamp + ":" + body
// under the app's client secret.
func Sign(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + ":"))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func (p *Platform) site(id string) *Site {
	for _, s := range p.sites {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func random() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// objectID makes an id shaped like the platform's (24 hex digits).
func (p *Platform) objectID() string {
	p.nextID++
	return fmt.Sprintf("65%022x", p.nextID)
}

// ServeHTTP serves the double's endpoints.
func (p *Platform) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

var authorizeTmpl = template.Must(template.New("a").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Authorize app · Platform double</title><style>body{font:16px system-ui;background:#f4f4f8;margin:0}
main{max-width:28rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:12px;box-shadow:0 2px 12px #0002}
button{font:inherit;padding:.6rem 1.2rem;border-radius:6px;border:0;background:#4353ff;color:#fff;margin-right:.5rem}
button.deny{background:#ddd;color:#222}code{background:#eee;padding:0 .3rem}</style></head><body><main>
<h1>Authorize app</h1><p>An app (client <code>{{.ClientID}}</code>) asks for access to the sites of your workspace:</p>
<ul>{{range .Scopes}}<li><code>{{.}}</code></li>{{end}}</ul>
<form method="post" action="/oauth/authorize">
<input type="hidden" name="client_id" value="{{.ClientID}}"><input type="hidden" name="redirect_uri" value="{{.RedirectURI}}">
<input type="hidden" name="state" value="{{.State}}"><input type="hidden" name="scope" value="{{.Scope}}">
<button name="decision" value="approve">Authorize app</button><button class="deny" name="decision" value="deny">Cancel</button>
</form></main></body></html>`))

func (p *Platform) authorizePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("response_type") != "code" || q.Get("client_id") != p.ClientID || q.Get("redirect_uri") == "" {
		http.Error(w, "invalid authorization request: response_type=code, a known client_id and a redirect_uri are required", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	authorizeTmpl.Execute(w, map[string]any{"ClientID": p.ClientID, "RedirectURI": q.Get("redirect_uri"),
		"State": q.Get("state"), "Scope": q.Get("scope"), "Scopes": strings.Fields(q.Get("scope"))})
}

func (p *Platform) authorizeDecision(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	redirect, state := r.PostForm.Get("redirect_uri"), r.PostForm.Get("state")
	if r.PostForm.Get("client_id") != p.ClientID || redirect == "" {
		http.Error(w, "invalid authorization request", http.StatusBadRequest)
		return
	}
	sep := "?"
	if strings.Contains(redirect, "?") {
		sep = "&"
	}
	if r.PostForm.Get("decision") != "approve" {
		http.Redirect(w, r, redirect+sep+"error=access_denied&state="+state, http.StatusFound)
		return
	}
	code := random()
	p.mu.Lock()
	p.codes[code] = grant{redirectURI: redirect, scopes: p.grantScopes(r.PostForm.Get("scope"))}
	p.mu.Unlock()
	http.Redirect(w, r, redirect+sep+"code="+code+"&state="+state, http.StatusFound)
}

// Approve is what a person clicking "Authorize app" does: it answers the redirect the platform
// sends back, for an authorize URL SitePulse redirected to.
func (p *Platform) Approve(authorizeURL string) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, authorizeURL, nil)
	q := req.URL.Query()
	if q.Get("client_id") != p.ClientID || q.Get("response_type") != "code" {
		return "", fmt.Errorf("bad authorize URL %s", authorizeURL)
	}
	code := random()
	p.mu.Lock()
	p.codes[code] = grant{redirectURI: q.Get("redirect_uri"), scopes: p.grantScopes(q.Get("scope"))}
	p.mu.Unlock()
	return q.Get("redirect_uri") + "?code=" + code + "&state=" + q.Get("state"), nil
}

func (p *Platform) accessToken(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	f := r.PostForm
	oauthError := func(status int, code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if f.Get("client_id") != p.ClientID || !hmac.Equal([]byte(f.Get("client_secret")), []byte(p.ClientSecret)) {
		oauthError(http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	if f.Get("grant_type") != "authorization_code" {
		oauthError(http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	g, ok := p.codes[f.Get("code")]
	if !ok || g.used || g.redirectURI != f.Get("redirect_uri") {
		oauthError(http.StatusBadRequest, "invalid_grant", "the code is unknown, used, or was issued for another redirect_uri")
		return
	}
	g.used = true
	p.codes[f.Get("code")] = g
	token := random()
	p.tokens[token] = &issued{valid: true, scopes: g.scopes, at: time.Now().UTC()}
	writeJSON(w, http.StatusOK, map[string]string{"access_token": token, "token_type": "bearer"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// apiError is the API's error body.
func apiError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "externalReference": nil, "details": []any{}})
}

// api wraps a data endpoint: counts the call (and keeps its body), applies the faults, checks
// the bearer token.
func (p *Platform) api(h func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		p.mu.Lock()
		p.calls[r.Method+" "+r.URL.Path]++
		if len(body) > 0 {
			p.bodies[r.Method+" "+r.URL.Path] = body
		}
		if p.throttle > 0 {
			p.throttle--
			retry := p.retry
			p.mu.Unlock()
			w.Header().Set("Retry-After", retry)
			apiError(w, http.StatusTooManyRequests, "too_many_requests", "Too many requests")
			return
		}
		if p.failPath[r.Method+" "+r.URL.Path] > 0 {
			p.failPath[r.Method+" "+r.URL.Path]--
			p.fail, p.failCode = p.fail+1, http.StatusInternalServerError
		}
		if p.fail > 0 {
			p.fail--
			status := p.failCode
			p.mu.Unlock()
			apiError(w, status, "internal_error", "An internal error occurred")
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		valid := ok && p.tokens[token] != nil && p.tokens[token].valid
		done := p.failDone[r.Method+" "+r.URL.Path] > 0
		if done {
			p.failDone[r.Method+" "+r.URL.Path]--
		}
		p.mu.Unlock()
		if !valid {
			apiError(w, http.StatusUnauthorized, "not_authorized", "Request not authorized")
			return
		}
		if done {
			h(httptest.NewRecorder(), r.Clone(r.Context()))
			apiError(w, http.StatusInternalServerError, "internal_error", "An internal error occurred")
			return
		}
		h(w, r)
	}
}

func (p *Platform) listSites(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sites := []platform.Site{}
	for _, s := range p.sites {
		sites = append(sites, s.Site)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sites": sites})
}

func (p *Platform) listPages(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.site(r.PathValue("site_id"))
	if s == nil {
		apiError(w, http.StatusNotFound, "resource_not_found", "Requested resource not found")
		return
	}
	limit, offset := 100, 0
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 && n <= 100 {
		limit = n
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("offset")); err == nil && n >= 0 {
		offset = n
	}
	end := min(offset+limit, len(s.Pages))
	pages := []map[string]any{}
	for _, pg := range s.Pages[min(offset, end):end] {
		collection := any(nil)
		if len(pg.CollectionID) > 0 {
			collection = pg.CollectionID
		}
		pages = append(pages, map[string]any{"id": pg.ID, "siteId": s.ID, "title": pg.Title, "slug": pg.Slug,
			"parentId": nil, "collectionId": collection, "createdOn": "2026-01-05T10:00:00.000Z",
			"lastUpdated": "2026-11-01T10:00:00.000Z", "archived": pg.Archived, "draft": pg.Draft,
			"canBranch": false, "isBranch": false, "publishedPath": pg.PublishedPath})
	}
	writeJSON(w, http.StatusOK, map[string]any{"pages": pages,
		"pagination": platform.Pagination{Limit: limit, Offset: offset, Total: len(s.Pages)}})
}

func (p *Platform) listWebhooks(w http.ResponseWriter, r *http.Request) {
	siteID := r.PathValue("site_id")
	p.mu.Lock()
	known := p.site(siteID) != nil
	p.mu.Unlock()
	if !known {
		apiError(w, http.StatusNotFound, "resource_not_found", "Requested resource not found")
		return
	}
	hooks := p.Webhooks(siteID)
	if hooks == nil {
		hooks = []platform.Webhook{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"webhooks": hooks,
		"pagination": platform.Pagination{Limit: 100, Offset: 0, Total: len(hooks)}})
}

func (p *Platform) createWebhook(w http.ResponseWriter, r *http.Request) {
	var in struct {
		TriggerType string `json:"triggerType"`
		URL         string `json:"url"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.URL == "" ||
		!slices.Contains([]string{platform.TriggerSitePublish, "form_submission", "page_created"}, in.TriggerType) {
		apiError(w, http.StatusBadRequest, "validation_error", "triggerType and url are required")
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.site(r.PathValue("site_id"))
	if s == nil {
		apiError(w, http.StatusNotFound, "resource_not_found", "Requested resource not found")
		return
	}
	hook := platform.Webhook{ID: p.objectID(), TriggerType: in.TriggerType, URL: in.URL, WorkspaceID: s.WorkspaceID,
		SiteID: s.ID, CreatedOn: time.Now().UTC().Format(time.RFC3339Nano)}
	p.webhooks = append(p.webhooks, hook)
	writeJSON(w, http.StatusOK, hook)
}

func (p *Platform) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.webhooks, func(h platform.Webhook) bool { return h.ID == r.PathValue("webhook_id") })
	if i < 0 {
		apiError(w, http.StatusNotFound, "resource_not_found", "Requested resource not found")
		return
	}
	p.webhooks = slices.Delete(p.webhooks, i, i+1)
	w.WriteHeader(http.StatusNoContent)
}

// publishControl is the double's own control endpoint for trying the flow by hand:
// POST /_double/publish/{site_id} publishes the site (sends its site_publish webhooks).
func (p *Platform) publishControl(w http.ResponseWriter, r *http.Request) {
	codes, err := p.Publish(r.Context(), r.PathValue("site_id"))
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]any{"error": err.Error(), "delivered": codes})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"delivered": codes})
}

// Sample seeds the sites the offline flow shows: two sites whose published pages are the PSI
// double's sample pages (scantest.SamplePages), plus a draft, an archived page and a collection
// template that SitePulse must skip.
func (p *Platform) Sample() {
	published := time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)
	pages := func(prefix string) []platform.Page {
		return []platform.Page{
			{ID: prefix + "01", Title: "Home", Slug: "", PublishedPath: "/"},
			{ID: prefix + "02", Title: "About", Slug: "about", PublishedPath: "/about"},
			{ID: prefix + "03", Title: "Pricing", Slug: "pricing", PublishedPath: "/pricing"},
			{ID: prefix + "04", Title: "Blog", Slug: "blog", PublishedPath: "/blog/"},
			{ID: prefix + "05", Title: "Next launch", Slug: "next-launch", PublishedPath: "/next-launch", Draft: true},
			{ID: prefix + "06", Title: "Old offer", Slug: "old-offer", PublishedPath: "/old-offer", Archived: true},
			{ID: prefix + "07", Title: "Blog post template", Slug: "detail_post", PublishedPath: "/post/detail",
				CollectionID: json.RawMessage(`"6390c49774a71f12831a08e3"`)},
		}
	}
	p.AddSite(Site{Site: platform.Site{ID: "6258612d1ee792848f805dcf", WorkspaceID: "6258612d1ee792848f805dc0",
		DisplayName: "Northwind Studio", ShortName: "northwind-studio", LastPublished: &published,
		CustomDomains: []platform.CustomDomain{{ID: "589a331aa51e760df7ccb89d", URL: "northwind.example"}}}, Pages: pages("6596da6045e56dee495bcb")})
	p.AddSite(Site{Site: platform.Site{ID: "6258612d1ee792848f805dd0", WorkspaceID: "6258612d1ee792848f805dc0",
		DisplayName: "Acme Blog", ShortName: "acme-blog", LastPublished: &published}, Pages: pages("6596da6045e56dee495bcc")})
}
