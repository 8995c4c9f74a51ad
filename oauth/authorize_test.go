package oauth

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

func TestAuthorize(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		const cb = "https://app.example/cb?tenant=7"
		c := f.register(t, "none", cb, "http://127.0.0.1/callback")
		_, challenge := pkcePair()
		valid := func() url.Values { return authorizeQuery(c, cb, challenge) }
		with := func(edit func(q url.Values)) string {
			q := valid()
			edit(q)
			return q.Encode()
		}
		set := func(k string, v ...string) string { return with(func(q url.Values) { q[k] = v }) }
		del := func(k string) string { return with(func(q url.Values) { q.Del(k) }) }

		tests := []struct {
			name  string
			query string
			// page is true when the error must be shown, never redirected.
			page  bool
			code  string // "" for an accepted request
			state string // the state the error redirect must carry
		}{
			{"a complete request is accepted", valid().Encode(), false, "", ""},
			{"a request without scope is accepted", del("scope"), false, "", ""},
			{"a request with an empty scope is accepted", set("scope", ""), false, "", ""},
			{"a request with resource naming the MCP endpoint is accepted", set("resource", testBase+"/api/mcp"), false, "", ""},
			{"a loopback redirect URI on another port is accepted", set("redirect_uri", "http://127.0.0.1:61000/callback"), false, "", ""},
			{"an unknown client is shown an error page", set("client_id", "c_unknown"), true, "invalid_client", ""},
			{"a client id of another shape is shown an error page", set("client_id", "c_\x00'; drop"), true, "invalid_client", ""},
			{"a missing client_id is shown an error page", del("client_id"), true, "invalid_request", ""},
			{"an empty client_id counts as missing", set("client_id", ""), true, "invalid_request", ""},
			{"a repeated client_id is shown an error page", set("client_id", c.ClientID, c.ClientID), true, "invalid_request", ""},
			{"a missing redirect_uri is shown an error page", del("redirect_uri"), true, "invalid_request", ""},
			{"a repeated redirect_uri is shown an error page", set("redirect_uri", cb, cb), true, "invalid_request", ""},
			{"a redirect_uri with a trailing slash is shown an error page", set("redirect_uri", "https://app.example/cb/?tenant=7"), true, "invalid_request", ""},
			{"a redirect_uri with an extra path is shown an error page", set("redirect_uri", "https://app.example/cb/x?tenant=7"), true, "invalid_request", ""},
			{"a redirect_uri with an added query is shown an error page", set("redirect_uri", cb+"&x=1"), true, "invalid_request", ""},
			{"a redirect_uri in another case is shown an error page", set("redirect_uri", "https://APP.example/cb?tenant=7"), true, "invalid_request", ""},
			{"a redirect_uri with a fragment is shown an error page", set("redirect_uri", cb+"#x"), true, "invalid_request", ""},
			{"a redirect_uri with the userinfo trick is shown an error page", set("redirect_uri", "https://app.example@evil.example/cb?tenant=7"), true, "invalid_request", ""},
			{"a javascript: redirect_uri is shown an error page", set("redirect_uri", "javascript:alert(1)"), true, "invalid_request", ""},
			{"a malformed query is shown an error page", "client_id=" + c.ClientID + "&redirect_uri=%zz", true, "invalid_request", ""},
			{"a missing response_type goes back as invalid_request", del("response_type"), false, "invalid_request", "xyz-state"},
			{"response_type=token goes back as unsupported_response_type", set("response_type", "token"), false, "unsupported_response_type", "xyz-state"},
			{"a repeated response_type goes back as invalid_request", set("response_type", "code", "code"), false, "invalid_request", "xyz-state"},
			{"a missing code_challenge goes back as invalid_request", del("code_challenge"), false, "invalid_request", "xyz-state"},
			{"an empty code_challenge counts as missing", set("code_challenge", ""), false, "invalid_request", "xyz-state"},
			{"a repeated code_challenge goes back as invalid_request", set("code_challenge", challenge, challenge), false, "invalid_request", "xyz-state"},
			{"a code_challenge that is not a SHA-256 goes back as invalid_request", set("code_challenge", "short"), false, "invalid_request", "xyz-state"},
			{"a missing code_challenge_method goes back as invalid_request", del("code_challenge_method"), false, "invalid_request", "xyz-state"},
			{"code_challenge_method=plain goes back as invalid_request", set("code_challenge_method", "plain"), false, "invalid_request", "xyz-state"},
			{"an unknown scope is dropped, not refused", set("scope", "admin"), false, "", ""},
			{"offline_access beside mcp:read is dropped, not refused", set("scope", "offline_access mcp:read"), false, "", ""},
			{"a foreign resource goes back as invalid_target", set("resource", "https://other.example/mcp"), false, "invalid_target", "xyz-state"},
			{"a foreign resource beside ours goes back as invalid_target", set("resource", testBase+"/api/mcp", "https://other.example/mcp"), false, "invalid_target", "xyz-state"},
			{"a repeated state goes back without a state", set("state", "a", "b"), false, "invalid_request", ""},
			{"a state with control characters goes back without it", set("state", "a\nb"), false, "invalid_request", ""},
			{"a state over 1024 characters goes back without it", set("state", strings.Repeat("s", 1025)), false, "invalid_request", ""},
			{"an empty state is simply absent", with(func(q url.Values) { q.Set("state", ""); q.Del("response_type") }), false, "invalid_request", ""},
			{"a state is echoed exactly", with(func(q url.Values) { q.Set("state", "a b&c=d+/?~"); q.Del("response_type") }), false, "invalid_request", "a b&c=d+/?~"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req, err := f.srv.Authorize(ctx, tt.query)
				if tt.code == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if req.Scope != "mcp:read" || req.Client.ID != c.ClientID || req.CodeChallenge != challenge {
						t.Errorf("request %+v", req)
					}
					return
				}
				var ae *AuthorizeError
				if !errors.As(err, &ae) {
					t.Fatalf("err %v, want an AuthorizeError", err)
				}
				if ae.Code != tt.code {
					t.Errorf("code %q, want %q (%s)", ae.Code, tt.code, ae.Description)
				}
				loc := ae.Location()
				if tt.page {
					if loc != "" {
						t.Errorf("redirects to %q; an untrusted client or redirect URI must never be redirected to", loc)
					}
					return
				}
				if !strings.HasPrefix(loc, cb+"&") {
					t.Fatalf("location %q does not keep the registered URI and its query", loc)
				}
				q, _ := url.ParseQuery(strings.TrimPrefix(loc, cb+"&"))
				if q.Get("error") != tt.code || q.Get("error_description") == "" || q.Get("state") != tt.state || q.Has("code") || q.Get("iss") != testBase {
					t.Errorf("error redirect %q", loc)
				}
				if q.Has("state") != (tt.state != "") {
					t.Errorf("state present = %v in %q, want %v", q.Has("state"), loc, tt.state != "")
				}
			})
		}
		t.Run("mcp:write is granted when asked for, with mcp:read, whatever else is asked", func(t *testing.T) {
			req, err := f.srv.Authorize(ctx, set("scope", "mcp:write offline_access"))
			if err != nil || req.Scope != "mcp:read mcp:write" {
				t.Errorf("scope %q, %v; want mcp:read mcp:write", req.Scope, err)
			}
		})
		t.Run("a resource is kept with the request", func(t *testing.T) {
			req, err := f.srv.Authorize(ctx, set("resource", testBase+"/api/mcp"))
			if err != nil || req.Resource != testBase+"/api/mcp" {
				t.Errorf("resource %q, %v", req.Resource, err)
			}
		})
	})
}

func TestDecide(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		const cb = "https://app.example/cb?tenant=7"
		c := f.register(t, "none", cb)
		_, challenge := pkcePair()
		begin := func(t *testing.T, userID string, q url.Values) Pending {
			req, err := f.srv.Authorize(ctx, q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			p, err := f.srv.Begin(ctx, userID, req)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}

		t.Run("the consent page gets the client's name, where the answer goes and the scope", func(t *testing.T) {
			p := begin(t, f.user.ID, authorizeQuery(c, cb, challenge))
			if p.ClientName != "Test client" || p.RedirectHost != "app.example" || p.Scope != "mcp:read" || len(p.ID) < 40 {
				t.Errorf("pending %+v", p)
			}
		})
		t.Run("approval issues a 10-minute code bound to client, redirect URI, challenge and resource", func(t *testing.T) {
			q := authorizeQuery(c, cb, challenge)
			q.Set("resource", testBase+"/api/mcp")
			p := begin(t, f.user.ID, q)
			loc, err := f.srv.Decide(ctx, f.user.ID, p.ID, true)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(loc, cb+"&code=ac_") || !strings.HasSuffix(loc, "&state=xyz-state") {
				t.Fatalf("location %q", loc)
			}
			if q, _ := url.ParseQuery(strings.TrimPrefix(loc, cb+"&")); q.Get("iss") != testBase {
				t.Errorf("location %q: want iss=%s (RFC 9207)", loc, testBase)
			}
			code, _ := url.ParseQuery(strings.TrimPrefix(loc, cb+"&"))
			got, err := f.st.Code(ctx, store.HashSecret(code.Get("code")))
			if err != nil {
				t.Fatal(err)
			}
			if got.ClientID != c.ClientID || got.RedirectURI != cb || got.CodeChallenge != challenge || got.Resource != testBase+"/api/mcp" ||
				got.UserID != f.user.ID || !got.ExpiresAt.Equal(t0.Add(10*time.Minute)) || got.FamilyID == "" {
				t.Errorf("code %+v", got)
			}
			consents, _ := f.st.Consents(ctx, f.user.ID)
			if len(consents) != 1 || consents[0].ClientID != c.ClientID {
				t.Errorf("consents %+v", consents)
			}
			if _, err := f.srv.Decide(ctx, f.user.ID, p.ID, true); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a request answered twice: %v", err)
			}
		})
		t.Run("denial goes back with access_denied, a description and the state, and no code", func(t *testing.T) {
			p := begin(t, f.user.ID, authorizeQuery(c, cb, challenge))
			loc, err := f.srv.Decide(ctx, f.user.ID, p.ID, false)
			if err != nil {
				t.Fatal(err)
			}
			q, _ := url.ParseQuery(strings.TrimPrefix(loc, cb+"&"))
			if !strings.HasPrefix(loc, cb+"&") || q.Get("error") != "access_denied" || q.Get("error_description") == "" || q.Get("state") != "xyz-state" || q.Has("code") || q.Get("iss") != testBase {
				t.Errorf("location %q", loc)
			}
		})
		t.Run("another user cannot answer someone's request", func(t *testing.T) {
			other := f.newUser(t, "other@example.com")
			p := begin(t, f.user.ID, authorizeQuery(c, cb, challenge))
			if _, err := f.srv.Decide(ctx, other.ID, p.ID, true); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("err %v, want ErrNotFound", err)
			}
		})
		t.Run("a request not answered within 10 minutes expires", func(t *testing.T) {
			p := begin(t, f.user.ID, authorizeQuery(c, cb, challenge))
			f.advance(10*time.Minute + time.Second)
			defer f.advance(-10*time.Minute - time.Second)
			if _, err := f.srv.Decide(ctx, f.user.ID, p.ID, true); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("err %v, want ErrNotFound", err)
			}
		})
		t.Run("an unknown or oversized request id is not found", func(t *testing.T) {
			for _, id := range []string{"", "nope", strings.Repeat("x", 500), "\x00"} {
				if _, err := f.srv.Decide(ctx, f.user.ID, id, true); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%q: err %v, want ErrNotFound", id, err)
				}
			}
		})
	})
}
