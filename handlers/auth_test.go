package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
)

type fakeTokens map[string]string

func (f fakeTokens) VerifyAccessToken(_ context.Context, token string) (string, string, error) {
	if u, ok := f[token]; ok {
		return u, store.ScopeRead, nil
	}
	return "", "", store.ErrNotFound
}

func TestRequireBearer(t *testing.T) {
	st := memory.New()
	ctx := context.Background()
	u := store.User{ID: store.NewID(), Email: "a@example.com", PasswordHash: "x"}
	st.CreateUser(ctx, u)
	key, hash := store.NewSecret("svc_")
	st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: u.ID, Name: "k", KeyHash: hash, Prefix: key[:12]})
	revoked, rhash := store.NewSecret("svc_")
	rk := store.APIKey{ID: store.NewID(), UserID: u.ID, Name: "r", KeyHash: rhash, Prefix: revoked[:12]}
	st.CreateAPIKey(ctx, rk)
	st.RevokeAPIKey(ctx, u.ID, rk.ID, testNow)

	s := &server{Deps: withStore(st, Deps{BaseURL: "https://sp.example", Now: func() time.Time { return testNow }}), tokens: fakeTokens{"at_good": u.ID}}
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(store.UserIDFrom(r.Context()))) })

	tests := []struct {
		name      string
		policy    bearerPolicy
		header    string
		status    int
		challenge string
	}{
		{"an API key passes an API-key route", apiKeyOnly, "Bearer " + key, 200, ""},
		{"the scheme is case-insensitive", apiKeyOnly, "bearer " + key, 200, ""},
		{"an access token is refused by an API-key route", apiKeyOnly, "Bearer at_good", 401, `error="invalid_token"`},
		{"no header gets a bare challenge", apiKeyOnly, "", 401, `Bearer realm="sitepulse"`},
		{"a revoked key is refused", apiKeyOnly, "Bearer " + revoked, 401, `error="invalid_token"`},
		{"an unknown key is refused", apiKeyOnly, "Bearer svc_nope", 401, `error="invalid_token"`},
		{"Basic auth is not a bearer", apiKeyOnly, "Basic YTpi", 401, `Bearer realm="sitepulse"`},
		{"MCP takes an API key", mcpBearer, "Bearer " + key, 200, ""},
		{"MCP takes an access token", mcpBearer, "Bearer at_good", 200, ""},
		{"MCP refuses an unknown access token", mcpBearer, "Bearer at_bad", 401, `error="invalid_token", resource_metadata="https://sp.example/.well-known/oauth-protected-resource", scope="mcp:read"`},
		{"MCP without a token points at the metadata and names the scope to ask for", mcpBearer, "", 401, `Bearer realm="sitepulse", resource_metadata="https://sp.example/.well-known/oauth-protected-resource", scope="mcp:read"`},
		{"garbage is refused", mcpBearer, "Bearer garbage", 401, `error="invalid_token"`},
		{"an oversized token is refused", mcpBearer, "Bearer svc_" + strings.Repeat("a", 5000), 401, `error="invalid_token"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/api/x", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			s.requireBearer(tt.policy, echo).ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tt.status, rec.Body)
			}
			if tt.status == 200 && rec.Body.String() != u.ID {
				t.Errorf("user %q, want %q", rec.Body, u.ID)
			}
			if got := rec.Header().Get("WWW-Authenticate"); !strings.Contains(got, tt.challenge) {
				t.Errorf("WWW-Authenticate %q lacks %q", got, tt.challenge)
			}
			if tt.status == 401 && !strings.HasPrefix(rec.Body.String(), `{"error":`) {
				t.Errorf("body %q is not the REST error shape", rec.Body)
			}
		})
	}
	// A query-string token is never read.
	req := httptest.NewRequest("POST", "/api/x?access_token="+key, nil)
	rec := httptest.NewRecorder()
	s.requireBearer(apiKeyOnly, echo).ServeHTTP(rec, req)
	if rec.Code != 401 {
		t.Errorf("query token accepted: %d", rec.Code)
	}
}

var testNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
