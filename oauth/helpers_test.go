package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

const testBase = "https://sp.example"

var (
	t0  = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	ctx = context.Background()
)

// fixture is an authorization server on one store, with a clock tests move and a signed-up user.
type fixture struct {
	st   store.Store
	srv  *Server
	mu   sync.Mutex
	now  time.Time
	user store.User
}

// eachBackend runs fn against the memory store and, when DATABASE_URL is set, Postgres.
func eachBackend(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { fn(t, newFixture(t, b.Open(t))) })
	}
}

func newFixture(t testing.TB, st store.Store) *fixture {
	t.Helper()
	f := &fixture{st: st, now: t0}
	f.srv = New(Config{Store: st, BaseURL: testBase, Now: f.clock})
	f.user = f.newUser(t, "owner@example.com")
	return f
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// advance moves the clock forward.
func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *fixture) newUser(t testing.TB, email string) store.User {
	t.Helper()
	u := store.User{ID: store.NewID(), Email: email, PasswordHash: "x", CreatedAt: t0}
	if err := f.st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// do runs a request through a handler and returns the recorder.
func do(h http.Handler, method, target, contentType, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

const formType = "application/x-www-form-urlencoded"

func (f *fixture) registerRaw(body string) *httptest.ResponseRecorder {
	return do(f.srv.HandleRegister(), "POST", "/api/oauth/register", "application/json", body)
}

// register registers a client and fails the test unless it gets 201.
func (f *fixture) register(t testing.TB, authMethod string, redirectURIs ...string) clientInfo {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"client_name": "Test client", "redirect_uris": redirectURIs, "token_endpoint_auth_method": authMethod})
	rec := f.registerRaw(string(b))
	if rec.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	var c clientInfo
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) token(form url.Values) *httptest.ResponseRecorder {
	return do(f.srv.HandleToken(), "POST", "/api/oauth/token", formType, form.Encode())
}

func (f *fixture) revoke(form url.Values) *httptest.ResponseRecorder {
	return do(f.srv.HandleRevoke(), "POST", "/api/oauth/revoke", formType, form.Encode())
}

// pkcePair returns a fresh verifier and its S256 challenge.
func pkcePair() (verifier, challenge string) {
	verifier, _ = store.NewSecret("")
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeQuery is a valid authorization request of c for redirectURI, before mutation.
func authorizeQuery(c clientInfo, redirectURI, challenge string) url.Values {
	return url.Values{
		"client_id": {c.ClientID}, "redirect_uri": {redirectURI}, "response_type": {"code"},
		"state": {"xyz-state"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"},
	}
}

// grant is what one approval gave a client.
type grant struct {
	code, verifier, redirectURI string
	client                      clientInfo
}

// approve runs the authorization request q as the fixture's user, approves it and returns the
// code from the redirect.
func (f *fixture) approve(t testing.TB, c clientInfo, q url.Values, verifier string) grant {
	t.Helper()
	loc := f.decide(t, f.user.ID, q, true)
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	code := u.Query().Get("code")
	if !strings.HasPrefix(code, "ac_") {
		t.Fatalf("no code in %s", loc)
	}
	return grant{code: code, verifier: verifier, redirectURI: q.Get("redirect_uri"), client: c}
}

// decide runs Authorize, Begin and Decide and returns the redirect location.
func (f *fixture) decide(t testing.TB, userID string, q url.Values, approve bool) string {
	t.Helper()
	req, err := f.srv.Authorize(ctx, q.Encode())
	if err != nil {
		t.Fatalf("authorize: %v", err)
	}
	p, err := f.srv.Begin(ctx, userID, req)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := f.srv.Decide(ctx, userID, p.ID, approve)
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	return loc
}

// newGrant registers a public client and approves one request of it.
func (f *fixture) newGrant(t testing.TB) grant {
	t.Helper()
	c := f.register(t, "none", "http://127.0.0.1/callback")
	verifier, challenge := pkcePair()
	return f.approve(t, c, authorizeQuery(c, "http://127.0.0.1:49152/callback", challenge), verifier)
}

// exchangeForm is the token request that redeems g.
func (g grant) exchangeForm() url.Values {
	return url.Values{"grant_type": {"authorization_code"}, "code": {g.code}, "redirect_uri": {g.redirectURI},
		"code_verifier": {g.verifier}, "client_id": {g.client.ClientID}}
}

func refreshForm(clientID, rt string) url.Values {
	return url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}}
}

// tokens decodes a 200 token response, failing the test on any other status.
func (f *fixture) tokens(t testing.TB, rec *httptest.ResponseRecorder) tokenResponse {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("token: %d %s", rec.Code, rec.Body)
	}
	var r tokenResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// wantOAuthError checks status, error code and the exact {error, error_description} shape.
func wantOAuthError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d: %s", rec.Code, status, rec.Body)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body is not JSON: %q", rec.Body)
	}
	desc, _ := body["error_description"].(string)
	if body["error"] != code || desc == "" || len(body) != 2 {
		t.Fatalf("error body %s, want error %q with a description and nothing else", rec.Body, code)
	}
	if strings.ContainsAny(desc, "\r\n\"\\") {
		t.Errorf("error_description %q has characters RFC 6749 §5.2 forbids", desc)
	}
	if got := rec.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", got)
	}
}

// alive answers whether an access token is accepted.
func (f *fixture) alive(t testing.TB, at string) bool {
	t.Helper()
	_, _, err := f.srv.VerifyAccessToken(ctx, at)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}
