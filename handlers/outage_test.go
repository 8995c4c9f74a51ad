package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/demo"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// cutProxy forwards TCP connections to Postgres until cut: then it stops listening (new
// connections are refused) and drops the open ones, as a database that went away does.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	t.Cleanup(p.cut)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	return p
}

func (p *cutProxy) pipe(c net.Conn) {
	d, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, d)
	p.mu.Unlock()
	go func() { io.Copy(d, c); d.Close() }()
	io.Copy(c, d)
	c.Close()
}

func (p *cutProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// routePattern reads a route of routes.go: method and path.
var routePattern = regexp.MustCompile(`mux\.Handle\("([A-Z]+) ([^"]+)"`)

// TestDatabaseOutageIs503OnEveryRoute walks every route of routes.go, signed in, with a CSRF
// token and an API key, while Postgres is unreachable, after the store was closed (a request
// racing the shutdown) (issue 37: POST /login showed a 500 page), after its database was dropped
// under it and after its schema was (every relation missing; issue 43: "/", "/settings", POST
// /login and the budget check answered 500 "pq: database ... does not exist"): none answers
// 500, and every route that reads the store answers 503 with Retry-After.
func TestDatabaseOutageIs503OnEveryRoute(t *testing.T) {
	for _, outage := range []string{"unreachable", "closed", "database dropped", "schema dropped"} {
		t.Run(outage, func(t *testing.T) { testOutage(t, outage) })
	}
}

func testOutage(t *testing.T, outage string) {
	dsn, dropDatabase := storetest.SchemaDSN(t), func() {}
	if outage == "database dropped" {
		dsn, dropDatabase = storetest.DatabaseDSN(t)
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Skipf("DATABASE_URL is not a URL: %v", err)
	}
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	st := storetest.Open(t, u.String())
	const hookSecret = "whsec_outage"
	ts := newTestServerWith(t, st, func(d *Deps) { d.DemoWebhookSecret, d.DemoPlatformID = hookSecret, demo.PlatformID })
	ctx := context.Background()
	d, err := demo.Seed(ctx, st, demo.Fixtures{FS: os.DirFS(".."), Before: "testdata/psi-before", Latest: "testdata/psi"}, ts.now.Add(-48*time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	b := ts.browser(t)
	if resp, _ := b.post("/login", url.Values{"email": {d.Email}, "password": {d.Password}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	b.refreshCSRF()
	user, _ := st.UserByEmail(ctx, d.Email)
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	routes := routePattern.FindAllStringSubmatch(string(src), -1)
	if len(routes) < 80 {
		t.Fatalf("read %d routes from routes.go", len(routes))
	}
	params := strings.NewReplacer("{siteId}", d.SiteID, "{scanId}", d.LatestScanID, "{workspaceId}", store.PersonalWorkspace(user.ID),
		"{userId}", user.ID, "{index}", "0", "{$}", "", "{token}", "tok", "{keyID}", store.NewID(), "{clientID}", store.NewID(),
		"{invitationId}", store.NewID(), "{channelId}", store.NewID(), "{ruleId}", store.NewID(), "{reportId}", store.NewID(),
		"{leaseId}", store.NewID(), "{tokenId}", store.NewID(), "{publicId}", store.NewBeaconKey())
	// These answer without the store: files, fixed documents and pages, and the preflight; the
	// metrics scrape too (it writes every family but the queue's, whose read failed; off here).
	noStore := map[string]bool{"GET /static/": true, "GET /beacon/v1.js": true, "GET /favicon.ico": true, "GET /docs/mcp": true, "GET /metrics": true,
		"GET /.well-known/oauth-authorization-server": true, "GET /.well-known/oauth-authorization-server/api/mcp": true,
		"GET /.well-known/oauth-protected-resource": true, "GET /.well-known/oauth-protected-resource/api/mcp": true}
	// These refuse the request before any read: a malformed token, a body their protocol refuses.
	refusedFirst := map[string]bool{"POST /signup/confirm/{token}": true, "POST /password/reset/{token}": true,
		"POST /api/oauth/register": true, "POST /api/oauth/token": true, "POST /api/oauth/revoke": true,
		"POST /api/beacon/{publicId}": true} // JSON, not the beacon's text/plain

	switch outage {
	case "closed":
		st.Close()
	case "database dropped":
		dropDatabase()
	case "schema dropped":
		storetest.DropSchema(t, dsn)
	default:
		proxy.cut()
	}
	for _, rt := range routes {
		method, pattern := rt[1], rt[2]
		if pattern == "" || !strings.HasPrefix(pattern, "/") {
			continue // the preflight of every path ("OPTIONS ")
		}
		path := params.Replace(pattern)
		if path == "/static/" {
			path = "/static/style.css"
		}
		t.Run(method+" "+pattern, func(t *testing.T) {
			var body io.Reader
			form := url.Values{"csrf_token": {b.csrf}, "email": {d.Email}, "password": {d.Password}, "name": {"x"}}
			contentType := "application/x-www-form-urlencoded"
			if strings.HasPrefix(pattern, "/api/") && method == http.MethodPost {
				contentType = "application/json"
				body = strings.NewReader(`{"siteId":"` + d.SiteID + `","jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			} else if method == http.MethodPost {
				body = strings.NewReader(form.Encode())
			}
			req, _ := http.NewRequest(method, ts.URL+path, body)
			req.Header.Set("Content-Type", contentType)
			req.Header.Set("Accept", "application/json, text/event-stream")
			if strings.HasPrefix(pattern, "/api/runner/") { // runner tokens, looked up first
				req.Header.Set("Authorization", "Bearer rnr_unknown")
			} else if strings.HasPrefix(pattern, "/api/") {
				req.Header.Set("Authorization", "Bearer "+d.APIKey)
			} else {
				req.Header.Set("Origin", ts.URL)
			}
			if pattern == "/api/webhooks/platform" {
				payload := `{"siteId":"` + demo.PlatformID + `"}`
				m := hmac.New(sha256.New, []byte(hookSecret))
				m.Write([]byte(payload))
				req.Body = io.NopCloser(strings.NewReader(payload))
				req.ContentLength = int64(len(payload))
				req.Header.Set("x-platform-signature", hex.EncodeToString(m.Sum(nil)))
			}
			resp, err := b.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got := readBody(t, resp)
			switch {
			case resp.StatusCode == http.StatusInternalServerError:
				t.Errorf("500 while the database is away: %.300s", got)
			case noStore[method+" "+pattern]:
			case refusedFirst[method+" "+pattern]:
				if resp.StatusCode < 400 || resp.StatusCode > 499 {
					t.Errorf("status %d, want the refusal (4xx) that comes before any read", resp.StatusCode)
				}
			case resp.StatusCode != http.StatusServiceUnavailable:
				t.Errorf("status %d, want 503: %.300s", resp.StatusCode, got)
			case resp.Header.Get("Retry-After") == "":
				t.Error("503 without Retry-After")
			}
		})
	}
}
