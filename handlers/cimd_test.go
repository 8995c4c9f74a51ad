package handlers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/oauth"
	"sitepulse/store/memory"
)

// A client known only by its Client ID Metadata Document goes through consent like a
// registered one: the page shows the document's name beside the host that publishes it, and
// the connected-apps list can disconnect it although its id is a URL.
func TestMetadataDocumentClient(t *testing.T) {
	const cb = "http://127.0.0.1/callback"
	var clientID string
	var fetches atomic.Int32
	doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Doc Client","redirect_uris":[%q]}`, clientID, cb)
	}))
	defer doc.Close()
	clientID = doc.URL + "/oauth/client.json"

	st := memory.New()
	ot := &oauthTest{testServer: &testServer{store: st, now: testNow}, now: testNow}
	d := withStore(st, Deps{BaseURL: testBaseURL, Now: ot.clock, PasswordIterations: 1000})
	d = withServers(st, d)
	d.OAuth = oauth.New(oauth.Config{Store: st, BaseURL: testBaseURL, Now: ot.clock, MetadataClient: doc.Client()})
	h, err := NewHandler(d)
	if err != nil {
		t.Fatal(err)
	}
	ot.Server = httptest.NewServer(h)
	defer ot.Close()

	path, verifier := authorizePath(clientID, cb, "st")
	// Anyone can name any URL as a client_id: a signed-out visitor is sent to log in before the
	// server fetches anything.
	anon := ot.testServer.browser(t)
	if resp, _ := anon.get(path); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") || fetches.Load() != 0 {
		t.Errorf("signed out: %d to %q after %d fetches; want 303 to /login and no fetch", resp.StatusCode, resp.Header.Get("Location"), fetches.Load())
	}
	b := ot.testServer.browser(t)
	b.signup("ann@example.com")
	_, body := b.get(path)
	host := strings.TrimPrefix(doc.URL, "https://")
	for _, want := range []string{"Doc Client", "described by <span class=\"mono\">" + host + "</span>", "127.0.0.1"} {
		contains(t, body, want)
	}
	loc := b.answer(b.consent(path), "approve")
	if u, _ := url.Parse(loc); u.Query().Get("iss") != testBaseURL {
		t.Errorf("location %q, want iss=%s", loc, testBaseURL)
	}
	at, _ := ot.exchange(t, loc, clientID, cb, verifier)

	_, body = b.get("/settings")
	revokePath := "/settings/connected-apps/" + url.PathEscape(clientID) + "/revoke"
	contains(t, body, "Doc Client")
	contains(t, body, `action="`+revokePath+`"`)
	resp, _ := b.post(revokePath, url.Values{"csrf_token": {b.csrf}})
	wantStatus(t, resp, http.StatusSeeOther)
	if _, _, err := d.OAuth.VerifyAccessToken(t.Context(), at); err == nil {
		t.Error("the app's access token still works after disconnecting it")
	}
}

// Each authorization request naming a metadata-document URL may make the server fetch it, so an
// address gets 30 such requests, then one every 2 seconds.
func TestMetadataDocumentFetchesAreLimited(t *testing.T) {
	ot := newOAuthTest(t, memory.New())
	b := ot.testServer.browser(t)
	b.signup("ann@example.com")
	path, _ := authorizePath("https://app.example/client.json", "http://127.0.0.1/cb", "st")
	for i := range 30 {
		if resp, _ := b.get(path); resp.StatusCode == http.StatusTooManyRequests {
			t.Fatalf("request %d refused", i+1)
		}
	}
	resp, body := b.get(path)
	wantStatus(t, resp, http.StatusTooManyRequests)
	contains(t, body, "Too many")
	ot.advance(2 * time.Second)
	if resp, _ := b.get(path); resp.StatusCode == http.StatusTooManyRequests {
		t.Error("still refused after 2 seconds")
	}
}
