package handlers

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// oauthTest is the service with its authorization server wired as main wires it, a clock tests
// can move, and a stand-in for the MCP endpoint: POST /test/mcp answers the bearer's user id
// through requireBearer(mcpBearer). /api/mcp itself is built elsewhere.
type oauthTest struct {
	*testServer
	mu  sync.Mutex
	now time.Time
}

const testBaseURL = "http://sitepulse.test"

func newOAuthTest(t *testing.T, st store.Store) *oauthTest {
	t.Helper()
	ot := &oauthTest{testServer: &testServer{store: st, now: testNow}, now: testNow}
	d := withServers(st, Deps{BaseURL: testBaseURL, Now: ot.clock, PasswordIterations: 1000})
	h, err := NewHandler(d)
	if err != nil {
		t.Fatal(err)
	}
	s := &server{Deps: d, tokens: d.OAuth}
	mux := http.NewServeMux()
	mux.Handle("POST /test/mcp", s.requireBearer(mcpBearer, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, store.UserIDFrom(r.Context()))
	})))
	mux.Handle("/", h)
	ot.Server = httptest.NewServer(mux)
	t.Cleanup(ot.Close)
	return ot
}

func (ot *oauthTest) clock() time.Time {
	ot.mu.Lock()
	defer ot.mu.Unlock()
	return ot.now
}

func (ot *oauthTest) advance(d time.Duration) {
	ot.mu.Lock()
	defer ot.mu.Unlock()
	ot.now = ot.now.Add(d)
}

// eachOAuthBackend runs fn on a fresh service per store backend.
func eachOAuthBackend(t *testing.T, fn func(t *testing.T, ot *oauthTest)) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { fn(t, newOAuthTest(t, b.Open(t))) })
	}
}

func (ot *oauthTest) register(t *testing.T, name string, redirectURIs ...string) (clientID string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": redirectURIs})
	resp, err := http.Post(ot.URL+"/api/oauth/register", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		ClientID string `json:"client_id"`
	}
	json.Unmarshal([]byte(readBody(t, resp)), &c)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d", resp.StatusCode)
	}
	return c.ClientID
}

// authorizePath is a valid authorization request and the verifier that redeems its code.
func authorizePath(clientID, redirectURI, state string) (path, verifier string) {
	verifier, _ = store.NewSecret("")
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {clientID}, "redirect_uri": {redirectURI}, "response_type": {"code"}, "state": {state},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	return "/oauth/authorize?" + q.Encode(), verifier
}

// in returns the browser, same cookies and CSRF token, failing t instead of the test it was
// made in: subtests must not fail their parent.
func (b *browser) in(t *testing.T) *browser {
	c := *b
	c.t = t
	return &c
}

var requestRe = regexp.MustCompile(`name="request" value="([^"]+)"`)

// consent opens an authorization request in the browser and returns the pending request's id
// from the consent page.
func (b *browser) consent(path string) string {
	b.t.Helper()
	resp, body := b.get(path)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("authorize: %d %.300s", resp.StatusCode, body)
	}
	m := requestRe.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no pending request on the consent page: %.500s", body)
	}
	return m[1]
}

// answer posts the consent form and returns the redirect's location.
func (b *browser) answer(requestID, decision string) string {
	b.t.Helper()
	resp, body := b.post("/oauth/consent", url.Values{"csrf_token": {b.csrf}, "request": {requestID}, "decision": {decision}})
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("consent: %d %.300s", resp.StatusCode, body)
	}
	return resp.Header.Get("Location")
}

func (ot *oauthTest) postForm(t *testing.T, path string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := http.PostForm(ot.URL+path, form)
	if err != nil {
		t.Fatal(err)
	}
	return resp, readBody(t, resp)
}

// exchange redeems the code in an approval's location.
func (ot *oauthTest) exchange(t *testing.T, loc, clientID, redirectURI, verifier string) (accessToken, refreshToken string) {
	t.Helper()
	u, _ := url.Parse(loc)
	resp, body := ot.postForm(t, "/api/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")},
		"redirect_uri": {redirectURI}, "code_verifier": {verifier}, "client_id": {clientID}})
	var tok struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	json.Unmarshal([]byte(body), &tok)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(tok.AccessToken, "at_") {
		t.Fatalf("token: %d %s", resp.StatusCode, body)
	}
	return tok.AccessToken, tok.RefreshToken
}

// mcp calls the MCP stand-in with a bearer token and returns status and body.
func (ot *oauthTest) mcp(t *testing.T, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ot.URL+"/test/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, readBody(t, resp)
}

func TestAuthorizationFlow(t *testing.T) {
	eachOAuthBackend(t, func(t *testing.T, ot *oauthTest) {
		const cb = "http://127.0.0.1/callback"
		client := ot.register(t, `<script>alert(1)</script> & Co`, cb)
		b := ot.testServer.browser(t)
		b.signup("ann@example.com")
		annUser, err := ot.store.UserByEmail(t.Context(), "ann@example.com")
		if err != nil {
			t.Fatal(err)
		}
		ann := annUser.ID

		t.Run("a signed-out user is sent to log in and brought back to the request", func(t *testing.T) {
			path, _ := authorizePath(client, cb, "st")
			anon := ot.testServer.browser(t)
			resp, _ := anon.get(path)
			want := "/login?next=" + url.QueryEscape(path)
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
				t.Fatalf("%d to %q, want 303 to %q", resp.StatusCode, resp.Header.Get("Location"), want)
			}
			resp, _ = anon.post("/login", url.Values{"email": {"ann@example.com"}, "password": {"correct horse battery"}, "next": {path}})
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != path {
				t.Fatalf("login sent to %q, want %q", resp.Header.Get("Location"), path)
			}
			anon.consent(path)
		})
		t.Run("the consent page shows the escaped name, the redirect host and the scope, and cannot be framed", func(t *testing.T) {
			b := b.in(t)
			path, _ := authorizePath(client, "http://127.0.0.1:50123/callback", "st")
			resp, body := b.get(path)
			contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co")
			if strings.Contains(body, "<script>alert") {
				t.Error("client name not escaped")
			}
			for _, want := range []string{"127.0.0.1:50123", "mcp:read", `value="approve">Approve</button>`, `value="deny" class="secondary">Deny</button>`, `name="csrf_token"`} {
				contains(t, body, want)
			}
			h := resp.Header
			if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
				h.Get("Referrer-Policy") != "no-referrer" || h.Get("Cache-Control") != "no-store" {
				t.Errorf("headers %v", h)
			}
			if strings.Contains(h.Get("Content-Security-Policy"), "form-action") {
				t.Error("form-action would block the 303 to an app's redirect URI")
			}
		})
		t.Run("the consent page says in plain words what each scope asked for allows", func(t *testing.T) {
			b := b.in(t)
			path, _ := authorizePath(client, cb, "st")
			_, body := b.get(path + "&scope=mcp%3Aread+mcp%3Awrite+offline_access")
			for _, want := range []string{"It cannot change anything.", "(scope <code>mcp:read</code>)", "create shareable report links", "(scope <code>mcp:write</code>)"} {
				contains(t, body, want)
			}
			_, body = b.get(path)
			if strings.Contains(body, "mcp:write") {
				t.Error("a request for mcp:read shows mcp:write")
			}
		})
		t.Run("a client name mixing Latin and Cyrillic letters is shown with a warning and the redirect host", func(t *testing.T) {
			b := b.in(t)
			spoof := ot.register(t, "Cl\u0430ude", "https://claude.evil.example/cb")
			path, _ := authorizePath(spoof, "https://claude.evil.example/cb", "st")
			_, body := b.get(path)
			for _, want := range []string{"Cl\u0430ude", `role="alert"`, "mixes letters of different alphabets", "claude.evil.example"} {
				contains(t, body, want)
			}
			_, body = b.get(func() string { p, _ := authorizePath(client, cb, "st"); return p }())
			if strings.Contains(body, "different alphabets") {
				t.Error("a single-script name is warned about")
			}
		})
		t.Run("Approve sends a 303 with code and state; the tokens work on MCP until revoked", func(t *testing.T) {
			b := b.in(t)
			path, verifier := authorizePath(client, cb, "st/1+2")
			loc := b.answer(b.consent(path), "approve")
			u, _ := url.Parse(loc)
			if !strings.HasPrefix(loc, cb+"?code=ac_") || u.Query().Get("state") != "st/1+2" {
				t.Fatalf("location %q", loc)
			}
			at, rt := ot.exchange(t, loc, client, cb, verifier)
			if status, user := ot.mcp(t, at); status != 200 || user != ann {
				t.Fatalf("MCP with the access token: %d %q, want 200 %q", status, user, ann)
			}
			resp, _ := ot.postForm(t, "/api/oauth/revoke", url.Values{"token": {at}, "token_type_hint": {"access_token"}})
			wantStatus(t, resp, 200)
			if status, _ := ot.mcp(t, at); status != 401 {
				t.Errorf("MCP after revocation: %d, want 401", status)
			}
			resp, _ = ot.postForm(t, "/api/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client}})
			wantStatus(t, resp, 200)
		})
		t.Run("Deny sends a 303 with access_denied, a description and the state", func(t *testing.T) {
			b := b.in(t)
			path, _ := authorizePath(client, cb, "st")
			u, _ := url.Parse(b.answer(b.consent(path), "deny"))
			q := u.Query()
			if q.Get("error") != "access_denied" || q.Get("error_description") == "" || q.Get("state") != "st" || q.Has("code") {
				t.Errorf("deny location %q", u)
			}
		})
		t.Run("an unknown client or unregistered redirect URI gets a 400 page and no redirect", func(t *testing.T) {
			b := b.in(t)
			for _, p := range []string{
				strings.Replace(pathOnly(authorizePath(client, cb, "st")), client, "c_unknown", 1),
				pathOnly(authorizePath(client, "http://127.0.0.1/callback/x", "st")),
				pathOnly(authorizePath(client, "https://evil.example/callback", "st")),
			} {
				resp, body := b.get(p)
				if resp.StatusCode != 400 || resp.Header.Get("Location") != "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
					t.Errorf("%s: %d, Location %q", p, resp.StatusCode, resp.Header.Get("Location"))
				}
				contains(t, body, "will not send you back")
			}
		})
		t.Run("other refusals go back to the redirect URI with the error and the state", func(t *testing.T) {
			b := b.in(t)
			p := strings.Replace(pathOnly(authorizePath(client, cb, "st")), "S256", "plain", 1)
			resp, _ := b.get(p)
			u, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(u.String(), cb+"?") || u.Query().Get("error") != "invalid_request" || u.Query().Get("state") != "st" {
				t.Errorf("%d to %q", resp.StatusCode, u)
			}
		})
		t.Run("a refusal for a non-loopback redirect URI is a page naming the app and host, not a redirect", func(t *testing.T) {
			const web = "https://evil.example/landing"
			webClient := ot.register(t, "Evil & Co", web)
			p := strings.Replace(pathOnly(authorizePath(webClient, web, "st")), "S256", "plain", 1)
			for _, br := range []*browser{ot.testServer.browser(t), b.in(t)} { // signed out and signed in
				resp, body := br.get(p)
				if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
					t.Errorf("%d, Location %q, want 400 and none", resp.StatusCode, resp.Header.Get("Location"))
				}
				for _, want := range []string{"Evil &amp; Co", "evil.example", `href="https://evil.example/landing?error=invalid_request`, "state=st"} {
					contains(t, body, want)
				}
			}
		})
		t.Run("an access token stops working on MCP after 30 days (last: the session ends too)", func(t *testing.T) {
			b := b.in(t)
			path, verifier := authorizePath(client, cb, "st")
			at, _ := ot.exchange(t, b.answer(b.consent(path), "approve"), client, cb, verifier)
			ot.advance(30*24*time.Hour + time.Second)
			if status, _ := ot.mcp(t, at); status != 401 {
				t.Errorf("MCP with a 30-day-old token: %d, want 401", status)
			}
		})
	})
}

// pathOnly keeps the path of authorizePath's answer.
func pathOnly(path, _ string) string { return path }

func TestConsentForm(t *testing.T) {
	eachOAuthBackend(t, func(t *testing.T, ot *oauthTest) {
		const cb = "https://app.example/cb"
		client := ot.register(t, "App", cb)
		b := ot.testServer.browser(t)
		b.signup("ann@example.com")
		post := func(b *browser, form url.Values, header ...string) *http.Response {
			req, _ := http.NewRequest("POST", ot.URL+"/oauth/consent", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := b.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			readBody(t, resp)
			return resp
		}
		path, _ := authorizePath(client, cb, "st")
		tests := []struct {
			name   string
			form   func(id string) url.Values
			header []string
			status int
		}{
			{"a post without the CSRF token is refused", func(id string) url.Values {
				return url.Values{"request": {id}, "decision": {"approve"}}
			}, nil, 403},
			{"a post with a wrong CSRF token is refused", func(id string) url.Values {
				return url.Values{"csrf_token": {"nope"}, "request": {id}, "decision": {"approve"}}
			}, nil, 403},
			{"a cross-site post is refused", func(id string) url.Values {
				return url.Values{"csrf_token": {b.csrf}, "request": {id}, "decision": {"approve"}}
			}, []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, 403},
			{"a post without a decision is refused", func(id string) url.Values {
				return url.Values{"csrf_token": {b.csrf}, "request": {id}}
			}, nil, 400},
			{"a post with two decisions is refused", func(id string) url.Values {
				return url.Values{"csrf_token": {b.csrf}, "request": {id}, "decision": {"deny", "approve"}}
			}, nil, 400},
			{"a post with an unknown request is refused", func(string) url.Values {
				return url.Values{"csrf_token": {b.csrf}, "request": {"forged"}, "decision": {"approve"}}
			}, nil, 400},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				b := b.in(t)
				id := b.consent(path)
				if resp := post(b, tt.form(id), tt.header...); resp.StatusCode != tt.status || resp.Header.Get("Location") != "" {
					t.Fatalf("status %d, Location %q; want %d and no redirect", resp.StatusCode, resp.Header.Get("Location"), tt.status)
				}
				if tt.status == 403 {
					// The refused post did not use up the request.
					b.answer(id, "approve")
				}
			})
		}
		t.Run("fields added to the form change nothing: the server's copy decides", func(t *testing.T) {
			b := b.in(t)
			id := b.consent(path)
			resp := post(b, url.Values{"csrf_token": {b.csrf}, "request": {id}, "decision": {"approve"},
				"redirect_uri": {"https://evil.example/cb"}, "state": {"evil"}, "client_id": {"c_other"}, "code_challenge": {"x"}})
			u, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(u.String(), cb+"?code=ac_") || u.Query().Get("state") != "st" {
				t.Errorf("%d to %q", resp.StatusCode, u)
			}
		})
		t.Run("a request is answered once", func(t *testing.T) {
			b := b.in(t)
			id := b.consent(path)
			b.answer(id, "approve")
			if resp := post(b, url.Values{"csrf_token": {b.csrf}, "request": {id}, "decision": {"approve"}}); resp.StatusCode != 400 {
				t.Errorf("second answer: %d, want 400", resp.StatusCode)
			}
		})
		t.Run("another user cannot answer someone's request", func(t *testing.T) {
			b := b.in(t)
			id := b.consent(path)
			eve := ot.testServer.browser(t)
			eve.signup("eve@example.com")
			if resp := post(eve, url.Values{"csrf_token": {eve.csrf}, "request": {id}, "decision": {"approve"}}); resp.StatusCode != 400 {
				t.Errorf("eve's answer: %d, want 400", resp.StatusCode)
			}
			b.answer(id, "deny")
		})
		t.Run("a signed-out post is refused", func(t *testing.T) {
			anon := ot.testServer.browser(t)
			if resp := post(anon, url.Values{"request": {"x"}, "decision": {"approve"}}); resp.StatusCode != 401 {
				t.Errorf("status %d, want 401", resp.StatusCode)
			}
		})
	})
}

func TestConnectedApps(t *testing.T) {
	eachOAuthBackend(t, func(t *testing.T, ot *oauthTest) {
		const cb = "http://127.0.0.1/callback"
		client := ot.register(t, "Claude <Desktop>", cb)
		b := ot.testServer.browser(t)
		b.signup("ann@example.com")
		path, verifier := authorizePath(client, cb, "st")
		at, rt := ot.exchange(t, b.answer(b.consent(path), "approve"), client, cb, verifier)
		revokePath := "/settings/connected-apps/" + client + "/revoke"

		t.Run("the settings page lists an approved app with its scope, approval time and a revoke button", func(t *testing.T) {
			b := b.in(t)
			_, body := b.get("/settings")
			for _, want := range []string{"Connected apps", "Claude &lt;Desktop&gt;", "mcp:read", "1 Nov 2026, 12:00 UTC", `action="` + revokePath + `"`, "Revoke access"} {
				contains(t, body, want)
			}
		})
		t.Run("revoking without the CSRF token is refused", func(t *testing.T) {
			b := b.in(t)
			resp, _ := b.post(revokePath, url.Values{})
			wantStatus(t, resp, 403)
		})
		t.Run("another user cannot revoke someone's app", func(t *testing.T) {
			eve := ot.testServer.browser(t)
			eve.signup("eve@example.com")
			resp, _ := eve.post(revokePath, url.Values{"csrf_token": {eve.csrf}})
			wantStatus(t, resp, 404)
			if status, _ := ot.mcp(t, at); status != 200 {
				t.Errorf("ann's token stopped working: %d", status)
			}
		})
		t.Run("a malformed client id is not found", func(t *testing.T) {
			b := b.in(t)
			resp, _ := b.post("/settings/connected-apps/%00x/revoke", url.Values{"csrf_token": {b.csrf}})
			wantStatus(t, resp, 404)
		})
		t.Run("revoking an app ends all its tokens and removes it from the list", func(t *testing.T) {
			b := b.in(t)
			resp, _ := b.post(revokePath, url.Values{"csrf_token": {b.csrf}})
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/settings?done=app-revoked" {
				t.Fatalf("%d to %q", resp.StatusCode, resp.Header.Get("Location"))
			}
			if status, _ := ot.mcp(t, at); status != 401 {
				t.Errorf("access token after revoking the app: %d, want 401", status)
			}
			resp, _ = ot.postForm(t, "/api/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {client}})
			wantStatus(t, resp, 400)
			_, body := b.get("/settings?done=app-revoked")
			contains(t, body, "App disconnected")
			if strings.Contains(body, "Claude &lt;Desktop&gt;") {
				t.Error("the revoked app is still listed")
			}
			resp, _ = b.post(revokePath, url.Values{"csrf_token": {b.csrf}})
			wantStatus(t, resp, 404)
		})
	})
}

func TestOAuthRateLimits(t *testing.T) {
	ot := newOAuthTest(t, memory.New())
	tests := []struct {
		name  string
		path  string
		ct    string
		body  string
		burst int
		wait  time.Duration
	}{
		{"registration allows 30 requests per address, then one every 10 seconds", "/api/oauth/register", "application/json",
			`{"client_name":"x","redirect_uris":["https://a.example/cb"]}`, 30, 10 * time.Second},
		{"revocation allows 60 requests per address, then one a second", "/api/oauth/revoke", "application/x-www-form-urlencoded",
			"token=at_unknown", 60, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			send := func() (*http.Response, string) {
				resp, err := http.Post(ot.URL+tt.path, tt.ct, strings.NewReader(tt.body))
				if err != nil {
					t.Fatal(err)
				}
				return resp, readBody(t, resp)
			}
			for i := 0; i < tt.burst; i++ {
				if resp, body := send(); resp.StatusCode >= 400 {
					t.Fatalf("request %d: %d %s", i+1, resp.StatusCode, body)
				}
			}
			resp, body := send()
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("over the limit: %d, headers %v", resp.StatusCode, resp.Header)
			}
			var e map[string]string
			if json.Unmarshal([]byte(body), &e); e["error"] == "" || e["error_description"] == "" {
				t.Errorf("429 body %q is not the OAuth error shape", body)
			}
			ot.advance(tt.wait)
			if resp, _ := send(); resp.StatusCode >= 400 {
				t.Errorf("after waiting: %d", resp.StatusCode)
			}
		})
	}
}

func TestOAuthRoutes(t *testing.T) {
	ot := newOAuthTest(t, memory.New())
	tests := []struct {
		name, method, path string
		status             int
		want               string // in the body or a header value
	}{
		{"the AS metadata is served at the well-known address", "GET", "/.well-known/oauth-authorization-server", 200, `"issuer":"http://sitepulse.test"`},
		{"the AS metadata is also served path-suffixed", "GET", "/.well-known/oauth-authorization-server/api/mcp", 200, `"issuer":"http://sitepulse.test"`},
		{"the resource metadata is served at the well-known address", "GET", "/.well-known/oauth-protected-resource", 200, `"resource":"http://sitepulse.test/api/mcp"`},
		{"the resource metadata is also served path-suffixed", "GET", "/.well-known/oauth-protected-resource/api/mcp", 200, `"resource":"http://sitepulse.test/api/mcp"`},
		{"the documentation page the metadata names exists", "GET", "/docs/mcp", 200, "http://sitepulse.test/api/mcp"},
		{"the documentation page lists the thirteen tools with an example prompt", "GET", "/docs/mcp", 200, "<h2>The 13 tools</h2>"},
		{"the documentation page shows a view and the agent loop", "GET", "/docs/mcp", 200, `src="/static/mcp-app-trend.png"`},
		{"the view screenshot is served", "GET", "/static/mcp-app-trend.png", 200, "PNG"},
		{"the documentation page names the protocol versions spoken", "GET", "/docs/mcp", 200, "<code>2026-07-28</code>, <code>2025-11-25</code>, <code>2025-06-18</code>, <code>2025-03-26</code>"},
		{"the documentation page names each tool and its scope", "GET", "/docs/mcp", 200, "<code>get_regression_report</code> · Regressions since the previous scan <span class=\"muted\">(mcp:read)</span></dt><dd class=\"muted\">“Did the last publish make anything slower?”</dd>"},
		{"a CORS preflight for the token endpoint is answered", "OPTIONS", "/api/oauth/token", 204, ""},
		{"a CORS preflight for the metadata is answered", "OPTIONS", "/.well-known/oauth-authorization-server", 204, ""},
		{"GET on the token endpoint is 405 in JSON", "GET", "/api/oauth/token", 405, `{"error":`},
		{"an unknown well-known path is 404", "GET", "/.well-known/oauth-authorization-server/other", 404, `{"error":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ot.URL+tt.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body := readBody(t, resp)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			contains(t, body, tt.want)
			if tt.method == "OPTIONS" && (resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Content-Type")) {
				t.Errorf("preflight headers %v", resp.Header)
			}
		})
	}
}

// TestOAuthBadInput sends broken input to every OAuth endpoint through the whole middleware, on
// both stores (Postgres refuses NUL bytes and invalid UTF-8 in text): never a 5xx, and the
// JSON endpoints always answer in the OAuth error shape.
func TestOAuthBadInput(t *testing.T) {
	eachOAuthBackend(t, func(t *testing.T, ot *oauthTest) {
		client := ot.register(t, "App", "http://127.0.0.1/callback")
		b := ot.testServer.browser(t)
		b.signup("ann@example.com")
		big := strings.Repeat("a", 10<<20)
		bodies := []struct{ name, ct, body string }{
			{"an empty body", "application/x-www-form-urlencoded", ""},
			{"a 10 MB body", "application/x-www-form-urlencoded", "token=" + big},
			{"garbage form encoding", "application/x-www-form-urlencoded", "%zz=%%&&;=="},
			{"duplicate parameters", "application/x-www-form-urlencoded", "grant_type=refresh_token&grant_type=refresh_token&token=a&token=b&client_id=" + client + "&client_id=" + client},
			{"NUL bytes", "application/x-www-form-urlencoded", "grant_type=authorization_code&code=ac_%00&client_id=c_%00&redirect_uri=%00&code_verifier=%00&token=at_%00"},
			{"invalid UTF-8", "application/x-www-form-urlencoded", "grant_type=%ff%fe&client_id=c_%ff&token=rt_%c3%28"},
			{"a JSON body", "application/json", `{"client_name":"x\u0000","redirect_uris":["http://127.0.0.1/cb\u0000"]}`},
			{"a huge JSON array", "application/json", `{"client_name":"x","redirect_uris":[` + strings.Repeat(`"https://a.example/cb",`, 5000) + `"x"]}`},
			{"invalid UTF-8 JSON", "application/json", "{\"client_name\":\"\xff\xfe\",\"redirect_uris\":[\"https://a.example/\xff\"]}"},
			{"a JSON body of the wrong types", "application/json", `{"client_name":["x"],"redirect_uris":{"a":1},"grant_types":7}`},
			{"no content type", "", "grant_type=authorization_code"},
		}
		for _, path := range []string{"/api/oauth/register", "/api/oauth/token", "/api/oauth/revoke"} {
			for _, in := range bodies {
				t.Run(path+" with "+in.name, func(t *testing.T) {
					req, _ := http.NewRequest("POST", ot.URL+path, strings.NewReader(in.body))
					if in.ct != "" {
						req.Header.Set("Content-Type", in.ct)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					body := readBody(t, resp)
					if resp.StatusCode >= 500 || resp.StatusCode < 400 && path != "/api/oauth/revoke" {
						t.Fatalf("status %d: %.200s", resp.StatusCode, body)
					}
					var e map[string]any
					if resp.StatusCode >= 400 && (json.Unmarshal([]byte(body), &e) != nil || e["error"] == nil || e["error_description"] == nil) {
						t.Errorf("%d body %.200s is not the OAuth error shape", resp.StatusCode, body)
					}
				})
			}
		}
		queries := []string{
			"", "%zz", "client_id=" + client + "&client_id=" + client, "client_id=c_%00", "client_id=%ff%fe",
			"client_id=" + client + "&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback%00",
			"client_id=" + client + "&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&response_type=code&state=%00%ff&code_challenge=x",
			"client_id=" + client + "&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&response_type=code&code_challenge=" +
				strings.Repeat("A", 43) + "&code_challenge_method=S256&state=%ff&scope=%00",
			"client_id=" + client + "&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&response_type=code&code_challenge=" +
				strings.Repeat("A", 43) + "&code_challenge_method=S256&resource=%00",
			"client_id=" + strings.Repeat("c", 20000),
		}
		for _, q := range queries {
			name := q
			if len(name) > 60 {
				name = name[:60]
			}
			t.Run("/oauth/authorize?"+name, func(t *testing.T) {
				resp, body := b.get("/oauth/authorize?" + q)
				if resp.StatusCode >= 500 || resp.StatusCode == 200 {
					t.Errorf("status %d: %.200s", resp.StatusCode, body)
				}
			})
		}
	})
}
