package oauth

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
)

// TestStatesAndTransitions walks every row of the interface's "States and transitions" for
// codes and tokens, with the clock moved across the 10-minute, 30-day and 90-day limits.
func TestStatesAndTransitions(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		t.Run("an approved code is exchanged with matching redirect_uri and verifier for tokens", func(t *testing.T) {
			g := f.newGrant(t)
			rec := f.token(g.exchangeForm())
			r := f.tokens(t, rec)
			if !strings.HasPrefix(r.AccessToken, "at_") || !strings.HasPrefix(r.RefreshToken, "rt_") || r.TokenType != "Bearer" ||
				r.ExpiresIn != 2592000 || r.Scope != "mcp:read" {
				t.Errorf("response %+v", r)
			}
			h := rec.Header()
			if h.Get("Cache-Control") != "no-store" || h.Get("Pragma") != "no-cache" || h.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v", h)
			}
			if !f.alive(t, r.AccessToken) {
				t.Error("the new access token is not accepted")
			}
		})
		t.Run("a code is still valid at exactly 10 minutes", func(t *testing.T) {
			g := f.newGrant(t)
			f.advance(10 * time.Minute)
			f.tokens(t, f.token(g.exchangeForm()))
		})
		t.Run("a code older than 10 minutes has expired", func(t *testing.T) {
			g := f.newGrant(t)
			f.advance(10*time.Minute + time.Second)
			wantOAuthError(t, f.token(g.exchangeForm()), 400, "invalid_grant")
		})
		t.Run("a used code is unusable, and its replay revokes every token issued from it", func(t *testing.T) {
			g := f.newGrant(t)
			r1 := f.tokens(t, f.token(g.exchangeForm()))
			r2 := f.tokens(t, f.token(refreshForm(g.client.ClientID, r1.RefreshToken)))
			wantOAuthError(t, f.token(g.exchangeForm()), 400, "invalid_grant")
			if f.alive(t, r1.AccessToken) || f.alive(t, r2.AccessToken) {
				t.Error("the tokens issued from a replayed code still work")
			}
			wantOAuthError(t, f.token(refreshForm(g.client.ClientID, r2.RefreshToken)), 400, "invalid_grant")
		})
		t.Run("a replay with a wrong verifier is refused and revokes nothing", func(t *testing.T) {
			g := f.newGrant(t)
			r := f.tokens(t, f.token(g.exchangeForm()))
			replay := g.exchangeForm()
			wrong, _ := pkcePair()
			replay.Set("code_verifier", wrong)
			wantOAuthError(t, f.token(replay), 400, "invalid_grant")
			if !f.alive(t, r.AccessToken) {
				t.Error("a wrong-verifier replay revoked the access token")
			}
			f.tokens(t, f.token(refreshForm(g.client.ClientID, r.RefreshToken)))
		})
		t.Run("a replay by another client is refused and revokes nothing", func(t *testing.T) {
			g := f.newGrant(t)
			r := f.tokens(t, f.token(g.exchangeForm()))
			other := f.register(t, "none", "http://127.0.0.1/callback")
			replay := g.exchangeForm()
			replay.Set("client_id", other.ClientID)
			wantOAuthError(t, f.token(replay), 400, "invalid_grant")
			if !f.alive(t, r.AccessToken) {
				t.Error("another client's replay revoked the access token")
			}
		})
		t.Run("a refresh token rotates into a new 30-day access token and a new 90-day refresh token", func(t *testing.T) {
			g := f.newGrant(t)
			r1 := f.tokens(t, f.token(g.exchangeForm()))
			f.advance(time.Hour)
			r2 := f.tokens(t, f.token(refreshForm(g.client.ClientID, r1.RefreshToken)))
			if r2.AccessToken == r1.AccessToken || r2.RefreshToken == r1.RefreshToken || !strings.HasPrefix(r2.RefreshToken, "rt_") ||
				r2.ExpiresIn != 2592000 || r2.Scope != "mcp:read" || r2.TokenType != "Bearer" {
				t.Errorf("refresh response %+v", r2)
			}
			at, _ := f.st.Token(ctx, store.HashSecret(r2.AccessToken))
			rt, _ := f.st.Token(ctx, store.HashSecret(r2.RefreshToken))
			if now := f.clock(); !at.ExpiresAt.Equal(now.Add(30*24*time.Hour)) || !rt.ExpiresAt.Equal(now.Add(90*24*time.Hour)) {
				t.Errorf("expiries %v and %v, want 30 and 90 days from %v", at.ExpiresAt, rt.ExpiresAt, now)
			}
			if !f.alive(t, r1.AccessToken) || !f.alive(t, r2.AccessToken) {
				t.Error("rotation ended an access token")
			}
		})
		t.Run("a rotated-out refresh token is refused and revokes its whole family", func(t *testing.T) {
			g := f.newGrant(t)
			r1 := f.tokens(t, f.token(g.exchangeForm()))
			r2 := f.tokens(t, f.token(refreshForm(g.client.ClientID, r1.RefreshToken)))
			wantOAuthError(t, f.token(refreshForm(g.client.ClientID, r1.RefreshToken)), 400, "invalid_grant")
			if f.alive(t, r1.AccessToken) || f.alive(t, r2.AccessToken) {
				t.Error("the family's access tokens survived a refresh-token reuse")
			}
			wantOAuthError(t, f.token(refreshForm(g.client.ClientID, r2.RefreshToken)), 400, "invalid_grant")
		})
		t.Run("a refresh token is valid 90 days from issue", func(t *testing.T) {
			g := f.newGrant(t)
			r := f.tokens(t, f.token(g.exchangeForm()))
			f.advance(90 * 24 * time.Hour)
			f.tokens(t, f.token(refreshForm(g.client.ClientID, r.RefreshToken)))
		})
		t.Run("a refresh token older than 90 days has expired", func(t *testing.T) {
			g := f.newGrant(t)
			r := f.tokens(t, f.token(g.exchangeForm()))
			f.advance(90*24*time.Hour + time.Second)
			wantOAuthError(t, f.token(refreshForm(g.client.ClientID, r.RefreshToken)), 400, "invalid_grant")
		})
		t.Run("each rotated refresh token lives 90 days from its own issue", func(t *testing.T) {
			g := f.newGrant(t)
			r := f.tokens(t, f.token(g.exchangeForm()))
			f.advance(80 * 24 * time.Hour)
			r = f.tokens(t, f.token(refreshForm(g.client.ClientID, r.RefreshToken)))
			f.advance(80 * 24 * time.Hour)
			f.tokens(t, f.token(refreshForm(g.client.ClientID, r.RefreshToken)))
		})
		t.Run("an access token is accepted for 30 days and not a second longer", func(t *testing.T) {
			g := f.newGrant(t)
			r := f.tokens(t, f.token(g.exchangeForm()))
			f.advance(30 * 24 * time.Hour)
			if !f.alive(t, r.AccessToken) {
				t.Error("refused at exactly 30 days")
			}
			f.advance(time.Second)
			if f.alive(t, r.AccessToken) {
				t.Error("accepted after 30 days")
			}
		})
		t.Run("a refresh token of another client is invalid_grant and stays usable by its own", func(t *testing.T) {
			g := f.newGrant(t)
			r := f.tokens(t, f.token(g.exchangeForm()))
			other := f.register(t, "none", "http://127.0.0.1/callback")
			wantOAuthError(t, f.token(refreshForm(other.ClientID, r.RefreshToken)), 400, "invalid_grant")
			f.tokens(t, f.token(refreshForm(g.client.ClientID, r.RefreshToken)))
		})
		t.Run("revoking a token returns 200, also when it is already revoked", func(t *testing.T) {
			g := f.newGrant(t)
			r := f.tokens(t, f.token(g.exchangeForm()))
			for i := 0; i < 2; i++ {
				if rec := f.revoke(url.Values{"token": {r.AccessToken}}); rec.Code != 200 {
					t.Fatalf("revoke %d: %d %s", i, rec.Code, rec.Body)
				}
			}
			if f.alive(t, r.AccessToken) {
				t.Error("a revoked access token still works")
			}
		})
	})
}

func TestTokenErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		g := f.newGrant(t)
		other := f.register(t, "none", "http://127.0.0.1/callback")
		lg := f.newGrant(t)
		live := f.tokens(t, f.token(lg.exchangeForm()))
		code := func(edit func(url.Values)) url.Values {
			v := g.exchangeForm()
			edit(v)
			return v
		}
		set := func(k string, v ...string) url.Values { return code(func(f url.Values) { f[k] = v }) }
		del := func(k string) url.Values { return code(func(f url.Values) { f.Del(k) }) }
		refresh := func(edit func(url.Values)) url.Values {
			v := refreshForm(lg.client.ClientID, live.RefreshToken)
			edit(v)
			return v
		}
		tests := []struct {
			name   string
			form   url.Values
			status int
			code   string
		}{
			{"a missing grant_type is invalid_request", del("grant_type"), 400, "invalid_request"},
			{"an empty grant_type counts as missing", set("grant_type", ""), 400, "invalid_request"},
			{"a repeated grant_type is invalid_request", set("grant_type", "authorization_code", "authorization_code"), 400, "invalid_request"},
			{"the password grant is unsupported_grant_type", set("grant_type", "password"), 400, "unsupported_grant_type"},
			{"client_credentials is unsupported_grant_type", set("grant_type", "client_credentials"), 400, "unsupported_grant_type"},
			{"a missing code is invalid_request", del("code"), 400, "invalid_request"},
			{"a repeated code is invalid_request", set("code", g.code, g.code), 400, "invalid_request"},
			{"a missing redirect_uri is invalid_request", del("redirect_uri"), 400, "invalid_request"},
			{"a missing code_verifier is invalid_request", del("code_verifier"), 400, "invalid_request"},
			{"a missing client_id is invalid_request", del("client_id"), 400, "invalid_request"},
			{"a repeated client_id is invalid_request", set("client_id", g.client.ClientID, g.client.ClientID), 400, "invalid_request"},
			{"a 42-character verifier is invalid_request", set("code_verifier", strings.Repeat("a", 42)), 400, "invalid_request"},
			{"a 129-character verifier is invalid_request", set("code_verifier", strings.Repeat("a", 129)), 400, "invalid_request"},
			{"a verifier with a character outside [A-Za-z0-9-._~] is invalid_request", set("code_verifier", strings.Repeat("a", 42)+"+"), 400, "invalid_request"},
			{"a well-formed 43-character verifier that does not match is invalid_grant", set("code_verifier", strings.Repeat("a", 43)), 400, "invalid_grant"},
			{"a well-formed 128-character verifier that does not match is invalid_grant", set("code_verifier", strings.Repeat("-._~", 32)), 400, "invalid_grant"},
			{"an unknown code is invalid_grant", set("code", "ac_unknown"), 400, "invalid_grant"},
			{"a code without the ac_ prefix is invalid_grant", set("code", "unknown"), 400, "invalid_grant"},
			{"an oversized code is invalid_grant", set("code", "ac_"+strings.Repeat("a", 5000)), 400, "invalid_grant"},
			{"a redirect_uri other than the authorized one is invalid_grant", set("redirect_uri", "http://127.0.0.1:49153/callback"), 400, "invalid_grant"},
			{"a redirect_uri with a trailing slash is invalid_grant", set("redirect_uri", g.redirectURI+"/"), 400, "invalid_grant"},
			{"an unknown client_id is invalid_client with 400", set("client_id", "c_unknown"), 400, "invalid_client"},
			{"a client_id of another shape is invalid_client with 400", set("client_id", "x\x00y"), 400, "invalid_client"},
			{"a code presented by another client is invalid_grant", set("client_id", other.ClientID), 400, "invalid_grant"},
			{"a foreign resource is invalid_target", set("resource", "https://other.example/mcp"), 400, "invalid_target"},
			{"a missing refresh_token is invalid_request", refresh(func(v url.Values) { v.Del("refresh_token") }), 400, "invalid_request"},
			{"a repeated refresh_token is invalid_request", refresh(func(v url.Values) { v.Add("refresh_token", live.RefreshToken) }), 400, "invalid_request"},
			{"an unknown refresh token is invalid_grant", refresh(func(v url.Values) { v.Set("refresh_token", "rt_unknown") }), 400, "invalid_grant"},
			{"an access token presented as a refresh token is invalid_grant", refresh(func(v url.Values) { v.Set("refresh_token", live.AccessToken) }), 400, "invalid_grant"},
			{"a refresh asking for mcp:write beyond its grant of mcp:read is invalid_scope", refresh(func(v url.Values) { v.Set("scope", "mcp:read mcp:write") }), 400, "invalid_scope"},
			{"a refresh for a foreign resource is invalid_target", refresh(func(v url.Values) { v.Set("resource", "https://other.example/mcp") }), 400, "invalid_target"},
			{"a refresh by an unknown client is invalid_client", refresh(func(v url.Values) { v.Set("client_id", "c_unknown") }), 400, "invalid_client"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				wantOAuthError(t, f.token(tt.form), tt.status, tt.code)
			})
		}
		t.Run("after all those refusals the code and the refresh token still work", func(t *testing.T) {
			f.tokens(t, f.token(g.exchangeForm()))
			f.tokens(t, f.token(refreshForm(lg.client.ClientID, live.RefreshToken)))
		})
		t.Run("a body that is not a form is invalid_request", func(t *testing.T) {
			rec := do(f.srv.HandleToken(), "POST", "/api/oauth/token", "application/json", `{"grant_type":"authorization_code"}`)
			wantOAuthError(t, rec, 400, "invalid_request")
		})
		t.Run("parameters in the URL's query are not read", func(t *testing.T) {
			rec := do(f.srv.HandleToken(), "POST", "/api/oauth/token?grant_type=refresh_token", formType, "")
			wantOAuthError(t, rec, 400, "invalid_request")
		})
		t.Run("resource naming the MCP endpoint is accepted on exchange and refresh", func(t *testing.T) {
			g := f.newGrant(t)
			form := g.exchangeForm()
			form.Set("resource", testBase+"/api/mcp")
			r := f.tokens(t, f.token(form))
			rf := refreshForm(g.client.ClientID, r.RefreshToken)
			rf.Set("resource", testBase+"/api/mcp")
			rf.Set("scope", "mcp:read")
			f.tokens(t, f.token(rf))
		})
	})
}

func TestScopesGranted(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.register(t, "none", "http://127.0.0.1/callback")
		grantWith := func(t *testing.T, scope string) tokenResponse {
			verifier, challenge := pkcePair()
			q := authorizeQuery(c, "http://127.0.0.1/callback", challenge)
			if scope != "" {
				q.Set("scope", scope)
			}
			return f.tokens(t, f.token(f.approve(t, c, q, verifier).exchangeForm()))
		}
		t.Run("offline_access is dropped and the token response says mcp:read was granted", func(t *testing.T) {
			if r := grantWith(t, "mcp:read offline_access"); r.Scope != "mcp:read" {
				t.Errorf("scope %q, want mcp:read", r.Scope)
			}
		})
		t.Run("no scope grants mcp:read only", func(t *testing.T) {
			if r := grantWith(t, ""); r.Scope != "mcp:read" {
				t.Errorf("scope %q, want mcp:read", r.Scope)
			}
		})
		t.Run("mcp:write is granted with mcp:read, and its access token carries both", func(t *testing.T) {
			r := grantWith(t, "mcp:write")
			if r.Scope != "mcp:read mcp:write" {
				t.Errorf("scope %q, want mcp:read mcp:write", r.Scope)
			}
			_, scope, err := f.srv.VerifyAccessToken(ctx, r.AccessToken)
			if err != nil || scope != "mcp:read mcp:write" {
				t.Errorf("VerifyAccessToken scope %q, %v", scope, err)
			}
		})
		t.Run("a refresh may narrow the scope, drops unknown ones, and says what it granted", func(t *testing.T) {
			r := grantWith(t, "mcp:read mcp:write")
			rf := refreshForm(c.ClientID, r.RefreshToken)
			rf.Set("scope", "mcp:read offline_access")
			if r2 := f.tokens(t, f.token(rf)); r2.Scope != "mcp:read" {
				t.Errorf("refreshed scope %q, want mcp:read", r2.Scope)
			}
		})
	})
}

// RFC 6749 §2.3.1: the client id and secret are form-urlencoded, joined by a colon, base64
// encoded, and sent as HTTP Basic credentials.
func TestClientSecretBasic(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.register(t, "client_secret_basic", "https://server.example/cb")
		basic := func(id, secret string) string {
			return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
		}
		send := func(form url.Values, authorization string) *httptest.ResponseRecorder {
			req := httptest.NewRequest("POST", "/api/oauth/token", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", formType)
			if authorization != "" {
				req.Header.Set("Authorization", authorization)
			}
			rec := httptest.NewRecorder()
			f.srv.HandleToken().ServeHTTP(rec, req)
			return rec
		}
		newCode := func(t *testing.T) url.Values {
			verifier, challenge := pkcePair()
			form := f.approve(t, c, authorizeQuery(c, "https://server.example/cb", challenge), verifier).exchangeForm()
			form.Del("client_id")
			return form
		}
		t.Run("the right credentials in the Authorization header get tokens, without client_id in the body", func(t *testing.T) {
			r := f.tokens(t, send(newCode(t), basic(c.ClientID, c.ClientSecret)))
			t.Run("and a refresh with them rotates", func(t *testing.T) {
				f.tokens(t, send(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.RefreshToken}}, basic(c.ClientID, c.ClientSecret)))
			})
		})
		t.Run("a wrong secret is 401 invalid_client with a Basic challenge", func(t *testing.T) {
			rec := send(newCode(t), basic(c.ClientID, "cs_wrong"))
			wantOAuthError(t, rec, 401, "invalid_client")
			if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Basic") {
				t.Errorf("WWW-Authenticate %q, want a Basic challenge (RFC 6749 §5.2)", got)
			}
		})
		t.Run("credentials not form-encoded before base64 still match when they need no encoding", func(t *testing.T) {
			raw := "Basic " + base64.StdEncoding.EncodeToString([]byte(c.ClientID+":"+c.ClientSecret))
			f.tokens(t, send(newCode(t), raw))
		})
		t.Run("Basic credentials and a client_secret in the body together are invalid_request", func(t *testing.T) {
			form := newCode(t)
			form.Set("client_secret", c.ClientSecret)
			wantOAuthError(t, send(form, basic(c.ClientID, c.ClientSecret)), 400, "invalid_request")
		})
		t.Run("a body client_id other than the Basic one is invalid_request", func(t *testing.T) {
			form := newCode(t)
			form.Set("client_id", "c_other")
			wantOAuthError(t, send(form, basic(c.ClientID, c.ClientSecret)), 400, "invalid_request")
		})
		t.Run("a Basic header that is not base64 is invalid_request", func(t *testing.T) {
			wantOAuthError(t, send(newCode(t), "Basic !!!"), 400, "invalid_request")
		})
		t.Run("client_secret_post works for the same client too", func(t *testing.T) {
			form := newCode(t)
			form.Set("client_id", c.ClientID)
			form.Set("client_secret", c.ClientSecret)
			f.tokens(t, send(form, ""))
		})
	})
}

func TestConfidentialClient(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.register(t, "client_secret_post", "https://server.example/cb")
		if c.ClientSecret == "" {
			t.Fatal("no secret")
		}
		verifier, challenge := pkcePair()
		g := f.approve(t, c, authorizeQuery(c, "https://server.example/cb", challenge), verifier)
		withSecret := func(form url.Values, secret ...string) url.Values {
			form["client_secret"] = secret
			return form
		}
		t.Run("an exchange without the secret is 401 invalid_client", func(t *testing.T) {
			wantOAuthError(t, f.token(g.exchangeForm()), 401, "invalid_client")
		})
		t.Run("an exchange with a wrong secret is 401 invalid_client", func(t *testing.T) {
			wantOAuthError(t, f.token(withSecret(g.exchangeForm(), "wrong-secret")), 401, "invalid_client")
		})
		t.Run("an exchange with a repeated secret is invalid_request", func(t *testing.T) {
			wantOAuthError(t, f.token(withSecret(g.exchangeForm(), c.ClientSecret, c.ClientSecret)), 400, "invalid_request")
		})
		var r tokenResponse
		t.Run("an exchange with the right secret gets tokens", func(t *testing.T) {
			r = f.tokens(t, f.token(withSecret(g.exchangeForm(), c.ClientSecret)))
		})
		t.Run("a refresh with a wrong secret is 401 invalid_client and leaves the token usable", func(t *testing.T) {
			wantOAuthError(t, f.token(withSecret(refreshForm(c.ClientID, r.RefreshToken), "nope")), 401, "invalid_client")
			f.tokens(t, f.token(withSecret(refreshForm(c.ClientID, r.RefreshToken), c.ClientSecret)))
		})
	})
}

func TestClientWithoutRefreshGrant(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		rec := f.registerRaw(`{"client_name":"one-shot","redirect_uris":["https://a.example/cb"],"grant_types":["authorization_code"]}`)
		if rec.Code != http.StatusCreated {
			t.Fatal(rec.Body)
		}
		var c clientInfo
		if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		verifier, challenge := pkcePair()
		g := f.approve(t, c, authorizeQuery(c, "https://a.example/cb", challenge), verifier)
		t.Run("a client registered without refresh_token gets no refresh token", func(t *testing.T) {
			if r := f.tokens(t, f.token(g.exchangeForm())); r.RefreshToken != "" {
				t.Errorf("refresh token %q issued", r.RefreshToken)
			}
		})
	})
}

// TestConcurrentUse races one code, then one refresh token, across goroutines: exactly one
// request wins. A raced code leaves the winner's tokens working (PKCE binds the code to its
// client); a raced refresh token is reuse, which revokes the family.
func TestConcurrentUse(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		race := func(form url.Values) (wins []tokenResponse, refusals int) {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := 0; i < 20; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rec := f.token(form)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case rec.Code == 200:
						var r tokenResponse
						if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
							t.Error(err)
						}
						wins = append(wins, r)
					case rec.Code == 400 && strings.Contains(rec.Body.String(), `"invalid_grant"`):
						refusals++
					default:
						t.Errorf("status %d: %s", rec.Code, rec.Body)
					}
				}()
			}
			wg.Wait()
			return wins, refusals
		}
		t.Run("of 20 concurrent redemptions of one code exactly one gets tokens, which the replays revoke", func(t *testing.T) {
			wins, refusals := race(f.newGrant(t).exchangeForm())
			if len(wins) != 1 || refusals != 19 {
				t.Fatalf("%d wins, %d refusals", len(wins), refusals)
			}
			if f.alive(t, wins[0].AccessToken) {
				t.Error("the winner's access token survived the replays of its code")
			}
		})
		t.Run("of 20 concurrent refreshes with one token exactly one succeeds, and the family is revoked", func(t *testing.T) {
			g := f.newGrant(t)
			r := f.tokens(t, f.token(g.exchangeForm()))
			wins, refusals := race(refreshForm(g.client.ClientID, r.RefreshToken))
			if len(wins) != 1 || refusals != 19 {
				t.Fatalf("%d wins, %d refusals", len(wins), refusals)
			}
			if f.alive(t, wins[0].AccessToken) || f.alive(t, r.AccessToken) {
				t.Error("tokens survived a detected refresh-token reuse")
			}
		})
	})
}
