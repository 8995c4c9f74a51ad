package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// A workspace may have at most MAX_SITES_PER_WORKSPACE sites; the next is refused with a sentence.
func TestSitesPerWorkspaceCap(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			ts := &testServer{store: st, now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
			h, err := NewHandler(withServers(st, Deps{BaseURL: "http://sitepulse.test", Now: func() time.Time { return ts.now },
				PasswordIterations: 1000, MaxSitesPerWorkspace: 2}))
			if err != nil {
				t.Fatal(err)
			}
			ts.Server = httptest.NewServer(h)
			t.Cleanup(ts.Close)
			br := ts.browser(t)
			br.signup("many-sites@example.com")
			for i, want := range []int{http.StatusSeeOther, http.StatusSeeOther, http.StatusUnprocessableEntity} {
				resp, body := br.postCSRF("/sites", url.Values{"name": {"Shop"}, "domain": {fmt.Sprintf("shop%d.example.com", i)}})
				if resp.StatusCode != want {
					t.Fatalf("site %d: %d, want %d", i+1, resp.StatusCode, want)
				}
				if want != http.StatusSeeOther {
					contains(t, body, "already has 2 sites, the most one workspace may have")
				}
			}
			// Parallel posts of another account all pass the first count; the cap holds anyway.
			other := ts.browser(t)
			other.signup("parallel-sites@example.com")
			var wg sync.WaitGroup
			for i := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					other.postCSRF("/sites", url.Values{"name": {"Shop"}, "domain": {fmt.Sprintf("shop%d.example.com", i)}})
				}()
			}
			wg.Wait()
			u, err := st.UserByEmail(t.Context(), "parallel-sites@example.com")
			if err != nil {
				t.Fatal(err)
			}
			if sites, _ := st.SitesOf(t.Context(), u.ID); len(sites) != 2 {
				t.Errorf("%d sites after 12 parallel posts, want the cap of 2", len(sites))
			}
		})
	}
}

// Every route whose path carries a secret ({token}: a report link, an invitation link, and any
// reset or confirm link added later) is redacted from the log at every level, DEBUG's access
// log included: the third red team read invitation tokens there. The routes come from
// routes.go, so a new one is walked without being listed here.
func TestSecretPathsRedactedFromLogs(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	must(t, err)
	routes := regexp.MustCompile(`mux\.Handle\("([A-Z]+) ([^"]*\{token\}[^"]*)"`).FindAllStringSubmatch(string(src), -1)
	if len(routes) < 3 { // GET /report, GET and POST /invite
		t.Fatalf("found %d routes with a {token} in routes.go, want at least 3", len(routes))
	}
	var logs scantest.LogBuffer
	h, err := NewHandler(withServers(memory.New(), Deps{BaseURL: "http://sitepulse.test",
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
	must(t, err)
	const token = "Zk3x9QmT0pLr7sVw2yBn4cHd6fJg8aEu1iOo5tKq"
	for _, m := range routes {
		p := strings.Replace(m[2], "{token}", token, 1)
		prefix, _, _ := strings.Cut(m[2], "{token}")
		// The router answers a path that cleans to the route (with a redirect), so the log
		// redacts the path as the router sees it after cleaning, not only its literal prefix.
		for _, path := range []string{p, p + "/x", p + "?a=b", "/" + p, "/." + p, "/x/.." + p, strings.Replace(p, prefix, prefix+"./", 1),
			"//" + strings.Replace(p, prefix, prefix+"/", 1), "/static/.." + p, "/api/.." + p} {
			req := httptest.NewRequest(m[1], "/", strings.NewReader(""))
			req.URL.Path, req.URL.RawQuery, _ = strings.Cut(path, "?")
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
		if !strings.Contains(logs.String(), prefix+"[redacted]") {
			t.Errorf("%s %s: no line with %s[redacted]", m[1], m[2], prefix)
		}
	}
	if out := logs.String(); strings.Contains(out, token) {
		t.Errorf("a token reached the log:\n%s", out)
	}
}

// A session unused for SESSION_IDLE_MINUTES ends; one in use lives on, up to its 30 days.
func TestSessionIdleTimeout(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ts := newTestServer(t, b.Open(t))
			br := ts.browser(t)
			br.signup("idle@example.com")
			for range 3 { // 18 days of use, six days apart: more than the idle limit in all
				ts.now = ts.now.Add(6 * 24 * time.Hour)
				if resp, _ := br.get("/settings"); resp.StatusCode != http.StatusOK {
					t.Fatalf("a session used every 6 days: %d, want 200", resp.StatusCode)
				}
			}
			ts.now = ts.now.Add(7*24*time.Hour + time.Minute)
			if resp, _ := br.get("/settings"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
				t.Errorf("a session idle for 7 days: %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
			}
		})
	}
}
