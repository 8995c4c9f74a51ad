package handlers

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/demo"
	"sitepulse/store"
	"sitepulse/store/memory"
)

// mcpServer is the whole handler on a memory store with the demo seeded, an access token for the
// demo user and one for a second user.
type mcpServer struct {
	*httptest.Server
	st   store.Store
	now  time.Time
	demo demo.Seeded
}

func newMCPServer(t *testing.T) *mcpServer {
	t.Helper()
	ctx := context.Background()
	ms := &mcpServer{st: memory.New(), now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	d, err := demo.Seed(ctx, ms.st, demo.Fixtures{FS: os.DirFS(".."), Before: "testdata/psi-before", Latest: "testdata/psi"}, ms.now, 1000)
	if err != nil {
		t.Fatal(err)
	}
	ms.demo = d
	u, _ := ms.st.UserByEmail(ctx, demo.Email)
	other := store.User{ID: store.NewID(), Email: "other@example.com", PasswordHash: "x"}
	ms.st.CreateUser(ctx, other)
	// Two access tokens as the OAuth server would have issued them to a registered client.
	if err := ms.st.CreateClient(ctx, store.OAuthClient{ID: "test-client", Name: "Test client", RedirectURIs: []string{"http://127.0.0.1/cb"},
		GrantTypes: []string{"authorization_code"}, AuthMethod: "none", CreatedAt: ms.now}); err != nil {
		t.Fatal(err)
	}
	for token, grant := range map[string]struct{ userID, scope string }{"at_demo": {u.ID, store.ScopeAll}, "at_other": {other.ID, store.ScopeAll}, "at_read": {u.ID, store.ScopeRead}} {
		if err := ms.st.CreateTokens(ctx, store.OAuthToken{TokenHash: store.HashSecret(token), Kind: store.TokenAccess, ClientID: "test-client",
			UserID: grant.userID, FamilyID: store.NewID(), Scope: grant.scope, CreatedAt: ms.now, ExpiresAt: ms.now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := NewHandler(withServers(ms.st, Deps{BaseURL: "http://sitepulse.test", Now: func() time.Time { return ms.now }, PasswordIterations: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	ms.Server = httptest.NewServer(h)
	t.Cleanup(ms.Close)
	return ms
}

func (ms *mcpServer) do(t *testing.T, method, token, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ms.URL+"/api/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestMCPEndpoint covers the HTTP rows of POST /api/mcp (interface "POST /api/mcp", "Errors").
func TestMCPEndpoint(t *testing.T) {
	ms := newMCPServer(t)
	key := ms.demo.APIKey
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	report := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate_client_report","arguments":{"scanId":"` + ms.demo.LatestScanID + `"}}}`
	cases := []struct {
		name, method, token, body string
		headers                   map[string]string
		status                    int
		bodyHas                   string
		challenge                 string
	}{
		{"API key", "POST", key, ping, nil, 200, `{"jsonrpc":"2.0","id":1,"result":{}}`, ""},
		{"access token", "POST", "at_demo", ping, nil, 200, `"result":{}`, ""},
		{"no token", "POST", "", ping, nil, 401, `"error"`, `Bearer realm="sitepulse", resource_metadata="http://sitepulse.test/.well-known/oauth-protected-resource", scope="mcp:read"`},
		{"a read-only token publishing a report is 403 with a step-up challenge", "POST", "at_read", report, nil, 403, `"code":-32003`,
			`Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="http://sitepulse.test/.well-known/oauth-protected-resource"`},
		{"a read-only token starting a scan is 403 with a step-up challenge", "POST", "at_read",
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"start_scan","arguments":{"siteId":"` + ms.demo.SiteID + `"}}}`,
			map[string]string{"MCP-Protocol-Version": "2025-11-25"}, 403, `"code":-32003`, `Bearer error="insufficient_scope", scope="mcp:read mcp:write"`},
		{"a read-only token cancelling a task is 403 with a step-up challenge", "POST", "at_read",
			`{"jsonrpc":"2.0","id":9,"method":"tasks/cancel","params":{"taskId":"` + ms.demo.LatestScanID + `","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/cancel", "Mcp-Name": ms.demo.LatestScanID}, 403, `"code":-32003`, `Bearer error="insufficient_scope", scope="mcp:read mcp:write"`},
		{"a read-only token reads", "POST", "at_read", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sites"}}`, nil, 200, `"result"`, ""},
		{"a token with mcp:write publishes a report", "POST", "at_demo", report, nil, 200, `/report/`, ""},
		{"unknown API key", "POST", "svc_nope", ping, nil, 401, "", `error="invalid_token", resource_metadata="http://sitepulse.test/.well-known/oauth-protected-resource"`},
		{"unknown access token", "POST", "at_nope", ping, nil, 401, "", `error="invalid_token"`},
		{"garbage token", "POST", "garbage", ping, nil, 401, "", `error="invalid_token"`},
		{"body not JSON", "POST", key, `{"jsonrpc":`, nil, 400, `"code":-32700`, ""},
		{"notification", "POST", key, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil, 202, "", ""},
		{"unknown method", "POST", key, `{"jsonrpc":"2.0","id":2,"method":"nope"}`, nil, 200, `"message":"Unknown method: nope"`, ""},
		{"invalid arguments", "POST", key, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_trend","arguments":{"siteId":"s","limit":99}}}`, nil, 200, `"code":-32602,"message":"Invalid arguments: limit must be at most 50`, ""},
		{"tool failure is 200", "POST", key, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"00000000-0000-4000-8000-000000000000"}}}`, nil, 200, `"isError":true`, ""},
		{"a site id that is not a uuid is invalid arguments", "POST", key, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"not-a-uuid"}}}`, nil, 200, `"code":-32602,"message":"Invalid arguments: siteId must be a uuid`, ""},
		{"GET with a token", "GET", key, "", nil, 405, "", ""},
		{"DELETE with a token", "DELETE", key, "", nil, 405, "", ""},
		{"GET without a token", "GET", "", "", nil, 401, "", "resource_metadata="},
		{"own origin", "POST", key, ping, map[string]string{"Origin": "http://sitepulse.test"}, 200, `"result":{}`, ""},
		{"foreign origin", "POST", key, ping, map[string]string{"Origin": "http://evil.example"}, 403, "", ""},
		{"null origin", "POST", key, ping, map[string]string{"Origin": "null"}, 403, "", ""},
		{"other scheme", "POST", key, ping, map[string]string{"Origin": "https://sitepulse.test"}, 403, "", ""},
		{"supported protocol header", "POST", key, ping, map[string]string{"MCP-Protocol-Version": "2025-03-26"}, 200, `"result":{}`, ""},
		{"unsupported protocol header", "POST", key, ping, map[string]string{"MCP-Protocol-Version": "1999-01-01"}, 400, "MCP-Protocol-Version", ""},
		{"a 2026-07-28 request: headers and _meta reach package mcp", "POST", key, `{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}, 200, `"resultType":"complete"`, ""},
		{"a 2026-07-28 request with a mismatched Mcp-Method", "POST", key, `{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, 400, `"code":-32020`, ""},
		{"a 2026-07-28 unknown method is 404", "POST", key, `{"jsonrpc":"2.0","id":9,"method":"nope","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "nope"}, 404, `"code":-32601`, ""},
		{"body over 1 MiB", "POST", key, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("a", 1<<20) + `"}}`, nil, 413, "", ""},
		{"batch", "POST", key, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, nil, 200, `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := ms.do(t, c.method, c.token, c.body, c.headers)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, c.status, body)
			}
			if !strings.Contains(body, c.bodyHas) {
				t.Errorf("body %.300s lacks %s", body, c.bodyHas)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, c.challenge) || c.challenge == "" && got != "" {
				t.Errorf("WWW-Authenticate %q, want %q", got, c.challenge)
			}
			if resp.Header.Get("Mcp-Session-Id") != "" {
				t.Error("Mcp-Session-Id sent")
			}
			switch {
			case c.status == 202 && body != "":
				t.Errorf("202 with body %q", body)
			case c.status == 405 && resp.Header.Get("Allow") != "POST":
				t.Errorf("Allow %q", resp.Header.Get("Allow"))
			case c.status != 202 && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"):
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
		})
	}
	t.Run("a second user's token sees only its own data", func(t *testing.T) {
		_, body := ms.do(t, "POST", "at_other", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_regression_report","arguments":{"siteId":"`+ms.demo.SiteID+`"}}}`, nil)
		if !strings.Contains(body, `"text":"Site not found or not owned by you"}],"isError":true`) {
			t.Errorf("body %s", body)
		}
		_, body = ms.do(t, "POST", "at_other", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sites"}}`, nil)
		if !strings.Contains(body, `{\"sites\":[],\"count\":0}`) {
			t.Errorf("body %s", body)
		}
	})
}

var reportURLRe = regexp.MustCompile(`http://sitepulse\.test/report/([A-Za-z0-9_-]{43})`)

// TestClientReportPage: the link generate_client_report returns opens without login, is kept
// out of indexes, caches and referrers, and answers 410 once expired or revoked.
func TestClientReportPage(t *testing.T) {
	ms := newMCPServer(t)
	create := func(args string) string {
		t.Helper()
		_, body := ms.do(t, "POST", ms.demo.APIKey, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate_client_report","arguments":{"scanId":"`+ms.demo.LatestScanID+`"`+args+`}}}`, nil)
		m := reportURLRe.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no report url in %s", body)
		}
		return m[1]
	}
	get := func(token string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(ms.URL + "/report/" + token)
		if err != nil {
			t.Fatal(err)
		}
		return resp, readBody(t, resp)
	}
	week := create(`,"title":"Acme <speed> review","expiresInDays":7`)
	forever := create(`,"expiresInDays":0`)

	resp, body := get(week)
	wantStatus(t, resp, 200)
	for h, want := range map[string]string{"X-Robots-Tag": "noindex, nofollow", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	for _, want := range []string{
		`<meta name="robots" content="noindex, nofollow">`,
		"<h1>Acme &lt;speed&gt; review</h1>", // escaped
		"Demo Site", "demo.sitepulse.test",
		"Health", `<span class="gauge big ni">77</span>`, `<ul class="report-gauges">`,
		"Largest Contentful Paint", "Needs improvement", "Poor", "Good",
		"/pricing", "What would help most", "saves about",
		"This report's link works until <time datetime=\"2026-11-29T12:00:00Z\">29 Nov 2026, 12:00 UTC</time>.",
	} {
		contains(t, body, want)
	}
	if strings.Contains(body, `href="/login"`) {
		t.Error("the public report shows the app's log-in navigation to a client")
	}
	resp, body = get(forever)
	wantStatus(t, resp, 200)
	contains(t, body, "Demo Site Performance Report")
	contains(t, body, "This report's link does not expire.")
	if n := strings.Count(body, "Demo Site"); n != 2 { // the <title> and the <h1>
		t.Errorf("the site name appears %d times, want it once on the page (and in the title)", n)
	}

	resp, _ = get("not-a-token")
	wantStatus(t, resp, 404)
	if resp.Header.Get("X-Robots-Tag") == "" {
		t.Error("404 report page without X-Robots-Tag")
	}

	ms.now = ms.now.Add(7 * 24 * time.Hour) // exactly expiresInDays later
	resp, body = get(week)
	wantStatus(t, resp, 410)
	contains(t, body, "expired")
	resp, _ = get(forever)
	wantStatus(t, resp, 200)

	reps, _ := ms.st.ReportsOf(context.Background(), mustUser(t, ms.st).ID)
	for _, r := range reps {
		if r.ExpiresAt == nil {
			ms.st.RevokeReport(context.Background(), r.UserID, r.ID, ms.now)
		}
	}
	resp, _ = get(forever)
	wantStatus(t, resp, 410)
}

func mustUser(t *testing.T, st store.Store) store.User {
	t.Helper()
	u, err := st.UserByEmail(context.Background(), demo.Email)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
