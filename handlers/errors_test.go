package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
)

// downStore is a store whose database has gone away while down is set: its calls fail as
// lib/pq's do when Postgres refuses connections.
type downStore struct {
	store.Store
	down atomic.Bool
}

var errRefused = fmt.Errorf("list sites: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})

func (d *downStore) Ping(ctx context.Context) error {
	if d.down.Load() {
		return errRefused
	}
	return d.Store.Ping(ctx)
}

func (d *downStore) SitesOf(ctx context.Context, userID string) ([]store.Site, error) {
	if d.down.Load() {
		return nil, errRefused
	}
	return d.Store.SitesOf(ctx, userID)
}

func (d *downStore) SitesIn(ctx context.Context, userID, workspaceID string) ([]store.Site, error) {
	if d.down.Load() {
		return nil, errRefused
	}
	return d.Store.SitesIn(ctx, userID, workspaceID)
}

func (d *downStore) SiteListings(ctx context.Context, userID, workspaceID string) ([]store.SiteListing, error) {
	if d.down.Load() {
		return nil, errRefused
	}
	return d.Store.SiteListings(ctx, userID, workspaceID)
}

func (d *downStore) SiteListingsPage(ctx context.Context, userID string, q store.ListingQuery) (store.ListingPage, error) {
	if d.down.Load() {
		return store.ListingPage{}, errRefused
	}
	return d.Store.SiteListingsPage(ctx, userID, q)
}

func (d *downStore) BudgetInputsByKey(ctx context.Context, keyHash, siteID string, now time.Time) (store.BudgetInputs, error) {
	if d.down.Load() {
		return store.BudgetInputs{}, errRefused
	}
	return d.Store.BudgetInputsByKey(ctx, keyHash, siteID, now)
}

// While the database is away, requests get a clean 503 with Retry-After in the surface's own
// shape, never a 500: it is not a bug, and clients should retry.
func TestDatabaseDownIs503(t *testing.T) {
	st := &downStore{Store: memory.New()}
	ts := newTestServer(t, st)
	b := ts.browser(t)
	b.signup("down@example.com")
	key, hash := store.NewSecret("svc_")
	if err := st.CreateAPIKey(context.Background(), store.APIKey{ID: store.NewID(), UserID: b.userIDOf(t, st, "down@example.com"),
		Name: "ci", KeyHash: hash, Prefix: key[:8], CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	tests := []struct {
		name, path, contentType, body string
		do                            func() (*http.Response, string)
	}{
		{name: "health check", path: "/healthz", contentType: "application/json", body: `"status":"unavailable"`,
			do: func() (*http.Response, string) { return b.get("/healthz") }},
		{name: "budget check (JSON API)", contentType: "application/json", body: `{"error":"the database is unavailable; retry shortly"}`,
			do: func() (*http.Response, string) {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/external/budget-check", strings.NewReader(`{"siteId":"`+store.NewID()+`"}`))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp, readBody(t, resp)
			}},
		{name: "MCP tools/call", contentType: "application/json", body: `"code":-32603,"message":"Internal error: the database is unavailable; retry shortly"`,
			do: func() (*http.Response, string) {
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sites","arguments":{}}}`))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp, readBody(t, resp)
			}},
		{name: "web UI page", contentType: "text/html", body: "cannot reach its database",
			do: func() (*http.Response, string) { return b.get("/") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := tt.do()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("status = %d, want 503; body %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("Retry-After"); got != "5" {
				t.Errorf("Retry-After = %q, want 5", got)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.contentType) {
				t.Errorf("Content-Type = %q, want %s", ct, tt.contentType)
			}
			if !strings.Contains(body, tt.body) {
				t.Errorf("body = %s, want it to contain %s", body, tt.body)
			}
		})
	}
}

// userIDOf finds a signed-up user's id.
func (b *browser) userIDOf(t *testing.T, st store.Store, email string) string {
	t.Helper()
	u, err := st.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u.ID
}

// A request whose client went away is no server error: it is logged as such at info level and
// recorded as 499, never as an ERROR line with a 500 (wrk closing its connections did that).
func TestClientGoneIsNotAServerError(t *testing.T) {
	var logs strings.Builder
	s := &server{Deps: Deps{Log: slog.New(slog.NewTextHandler(&logs, nil))}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest("GET", "/api/sites/x/export", nil).WithContext(ctx)
	w := httptest.NewRecorder()
	s.error(w, r, fmt.Errorf("export: read rows: %w", context.Canceled), "")
	if w.Code != 499 {
		t.Errorf("status %d, want 499", w.Code)
	}
	if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "client went away") {
		t.Errorf("log = %q", logs.String())
	}
}
