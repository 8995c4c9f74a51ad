package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// cimdServer is a client's web server holding its Client ID Metadata Document at /client.json,
// serving whatever the test last set and counting fetches.
type cimdServer struct {
	*httptest.Server
	mu      sync.Mutex
	doc     string
	status  int
	headers map[string]string
	fetches int
}

func newCIMDServer(t *testing.T) *cimdServer {
	t.Helper()
	cs := &cimdServer{status: 200}
	cs.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		cs.fetches++
		for k, v := range cs.headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(cs.status)
		fmt.Fprint(w, cs.doc)
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *cimdServer) id() string { return cs.URL + "/client.json" }

// serve sets the document to doc with id as its client_id (unless doc sets its own), and the
// response headers.
func (cs *cimdServer) serve(doc map[string]any, headers map[string]string) {
	if _, ok := doc["client_id"]; !ok {
		doc["client_id"] = cs.id()
	}
	b, _ := json.Marshal(doc)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.doc, cs.headers, cs.status = string(b), headers, 200
}

func (cs *cimdServer) fetched() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.fetches
}

// cimdFixture is an authorization server that fetches metadata documents with the test
// server's client (it trusts the test certificate; the product's goes through the outbound guard).
func cimdFixture(t *testing.T, st store.Store, cs *cimdServer) *fixture {
	f := &fixture{st: st, now: t0}
	f.srv = New(Config{Store: st, BaseURL: testBase, Now: f.clock, MetadataClient: cs.Client()})
	f.user = f.newUser(t, "owner@example.com")
	return f
}

func cimdQuery(clientID, redirectURI string) (url.Values, string) {
	verifier, challenge := pkcePair()
	return url.Values{"client_id": {clientID}, "redirect_uri": {redirectURI}, "response_type": {"code"},
		"state": {"s1"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}, verifier
}

func TestClientIDMetadataDocument(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			cs := newCIMDServer(t)
			f := cimdFixture(t, b.Open(t), cs)
			const cb = "http://127.0.0.1/callback"
			good := func() map[string]any {
				return map[string]any{"client_name": "Example MCP Client", "redirect_uris": []string{cb, "https://app.example/cb"},
					"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"}
			}

			t.Run("an https client_id is fetched; its name and host reach the consent page, and the code exchanges as a public client", func(t *testing.T) {
				cs.serve(good(), nil)
				q, verifier := cimdQuery(cs.id(), "http://127.0.0.1:50000/callback")
				req, err := f.srv.Authorize(ctx, q.Encode())
				if err != nil {
					t.Fatal(err)
				}
				p, err := f.srv.Begin(ctx, f.user.ID, req)
				if err != nil {
					t.Fatal(err)
				}
				host := strings.TrimPrefix(cs.URL, "https://")
				if p.ClientName != "Example MCP Client" || p.ClientHost != host || p.RedirectHost != "127.0.0.1:50000" {
					t.Errorf("pending %+v, want the document's name and the client_id's host %s", p, host)
				}
				loc, err := f.srv.Decide(ctx, f.user.ID, p.ID, true)
				if err != nil {
					t.Fatal(err)
				}
				u, _ := url.Parse(loc)
				if u.Query().Get("iss") != testBase {
					t.Errorf("location %q lacks iss", loc)
				}
				g := grant{code: u.Query().Get("code"), verifier: verifier, redirectURI: "http://127.0.0.1:50000/callback", client: clientInfo{ClientID: cs.id()}}
				r := f.tokens(t, f.token(g.exchangeForm()))
				if !strings.HasPrefix(r.AccessToken, "at_") || r.RefreshToken == "" {
					t.Errorf("tokens %+v", r)
				}
				f.tokens(t, f.token(refreshForm(cs.id(), r.RefreshToken)))
				consents, _ := f.st.Consents(ctx, f.user.ID)
				if len(consents) != 1 || consents[0].ClientID != cs.id() || consents[0].ClientName != "Example MCP Client" {
					t.Errorf("consents %+v", consents)
				}
			})

			refused := []struct {
				name    string
				doc     map[string]any
				status  int
				headers map[string]string
			}{
				{"a document whose client_id is another URL", map[string]any{"client_id": "https://other.example/client.json", "client_name": "x", "redirect_uris": []string{cb}}, 200, nil},
				{"a document whose client_id differs by a trailing slash", map[string]any{"client_id": "", "client_name": "x", "redirect_uris": []string{cb}}, 200, nil},
				{"a document without redirect_uris", map[string]any{"client_name": "x"}, 200, nil},
				{"a document with a javascript: redirect URI", map[string]any{"client_name": "x", "redirect_uris": []string{"javascript:alert(1)"}}, 200, nil},
				{"a document with a client_secret", map[string]any{"client_name": "x", "redirect_uris": []string{cb}, "client_secret": "s"}, 200, nil},
				{"a document asking for client_secret_basic", map[string]any{"client_name": "x", "redirect_uris": []string{cb}, "token_endpoint_auth_method": "client_secret_basic"}, 200, nil},
				{"a document whose client_name hides a Hangul filler", map[string]any{"client_name": "Claude\u3164", "redirect_uris": []string{cb}}, 200, nil},
				{"a 404", good(), 404, nil},
				{"a redirect to another document", good(), 302, map[string]string{"Location": "/other.json"}},
				{"a document larger than 64 KiB", map[string]any{"client_name": "x", "redirect_uris": []string{cb}, "pad": strings.Repeat("a", 65<<10)}, 200, nil},
			}
			for _, tt := range refused {
				t.Run("refuses "+tt.name+" on the server's own page", func(t *testing.T) {
					if tt.doc["client_id"] == "" {
						tt.doc["client_id"] = cs.id() + "/"
					}
					cs.serve(tt.doc, tt.headers)
					cs.mu.Lock()
					cs.status = tt.status
					cs.mu.Unlock()
					q, _ := cimdQuery(cs.id(), cb)
					_, err := f.srv.Authorize(ctx, q.Encode())
					var ae *AuthorizeError
					if !errors.As(err, &ae) || ae.Code != errInvalidClient || ae.Location() != "" {
						t.Errorf("err %v, want invalid_client shown on a page, never redirected", err)
					}
				})
			}

			t.Run("a redirect_uri the document does not list is refused like a registered client's", func(t *testing.T) {
				cs.serve(good(), nil)
				q, _ := cimdQuery(cs.id(), "https://evil.example/cb")
				_, err := f.srv.Authorize(ctx, q.Encode())
				var ae *AuthorizeError
				if !errors.As(err, &ae) || ae.Location() != "" {
					t.Errorf("err %v, want a page without redirect", err)
				}
			})
			for _, id := range []string{"https://127.0.0.1", "https://127.0.0.1/", "http://127.0.0.1/client.json", "https://u:p@127.0.0.1/c.json", "https://127.0.0.1/a/../c.json", "https://127.0.0.1/c.json#f"} {
				t.Run("refuses the client_id "+id+" without fetching it", func(t *testing.T) {
					before := cs.fetched()
					q, _ := cimdQuery(id, cb)
					if _, err := f.srv.Authorize(ctx, q.Encode()); err == nil {
						t.Error("accepted")
					}
					if cs.fetched() != before {
						t.Error("fetched")
					}
				})
			}
		})
	}
}

// The document is cached as its HTTP caching headers say, for at most 24 hours, on the
// server's clock.
func TestClientIDMetadataDocumentCache(t *testing.T) {
	cs := newCIMDServer(t)
	f := cimdFixture(t, memory.New(), cs)
	const cb = "http://127.0.0.1/callback"
	doc := func(name string) map[string]any {
		return map[string]any{"client_name": name, "redirect_uris": []string{cb}}
	}
	nameSeen := func(t *testing.T) string {
		t.Helper()
		q, _ := cimdQuery(cs.id(), cb)
		req, err := f.srv.Authorize(ctx, q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		return req.Client.Name
	}
	t.Run("max-age=600 is kept 10 minutes, then fetched again", func(t *testing.T) {
		cs.serve(doc("One"), map[string]string{"Cache-Control": "public, max-age=600"})
		nameSeen(t)
		cs.serve(doc("Two"), map[string]string{"Cache-Control": "max-age=600"})
		f.advance(599 * time.Second)
		if got := nameSeen(t); got != "One" {
			t.Errorf("within max-age: %q, want the cached One", got)
		}
		f.advance(2 * time.Second)
		if got := nameSeen(t); got != "Two" {
			t.Errorf("after max-age: %q, want Two", got)
		}
	})
	t.Run("a week's max-age is cut to 24 hours", func(t *testing.T) {
		cs.serve(doc("Three"), map[string]string{"Cache-Control": "max-age=604800"})
		f.advance(time.Hour) // past Two's ten minutes
		nameSeen(t)
		cs.serve(doc("Four"), nil)
		f.advance(24*time.Hour - time.Second)
		if got := nameSeen(t); got != "Three" {
			t.Errorf("within 24 h: %q", got)
		}
		f.advance(2 * time.Second)
		if got := nameSeen(t); got != "Four" {
			t.Errorf("after 24 h: %q, want Four", got)
		}
	})
	t.Run("no-store and no caching headers are fetched every time", func(t *testing.T) {
		for _, h := range []map[string]string{{"Cache-Control": "no-store, max-age=600"}, {"Cache-Control": "no-cache"}, nil} {
			cs.serve(doc("Five"), h)
			nameSeen(t)
			before := cs.fetched()
			nameSeen(t)
			if cs.fetched() != before+1 {
				t.Errorf("headers %v: not fetched again", h)
			}
		}
	})
	t.Run("Expires is honoured when there is no max-age", func(t *testing.T) {
		cs.serve(doc("Six"), map[string]string{"Date": f.clock().UTC().Format(http.TimeFormat), "Expires": f.clock().Add(time.Minute).UTC().Format(http.TimeFormat)})
		nameSeen(t)
		before := cs.fetched()
		nameSeen(t)
		if cs.fetched() != before {
			t.Error("fetched again before Expires")
		}
	})
}

// Without a client to fetch with, https client_ids are unknown and the metadata does not
// advertise the mechanism.
func TestClientIDMetadataDocumentOff(t *testing.T) {
	f := newFixture(t, memory.New())
	q, _ := cimdQuery("https://app.example/client.json", "http://127.0.0.1/cb")
	_, err := f.srv.Authorize(ctx, q.Encode())
	var ae *AuthorizeError
	if !errors.As(err, &ae) || ae.Code != errInvalidClient {
		t.Errorf("err %v, want invalid_client", err)
	}
	if strings.Contains(string(f.srv.asMeta), `"client_id_metadata_document_supported":true`) {
		t.Error("advertised without a fetcher")
	}
}
