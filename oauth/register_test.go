package oauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

func TestRegister(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		t.Run("a public client gets a c_ id, an issue time and no secret, and every field back", func(t *testing.T) {
			rec := f.registerRaw(`{"client_name":"Claude","redirect_uris":["https://claude.example/cb","http://127.0.0.1/cb"],
				"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none","scope":"mcp:read",
				"response_types":["code"],"logo_uri":"https://claude.example/logo.png","client_id":"c_chosen"}`)
			if rec.Code != http.StatusCreated {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var got map[string]any
			json.Unmarshal(rec.Body.Bytes(), &got)
			id, _ := got["client_id"].(string)
			if !strings.HasPrefix(id, "c_") || id == "c_chosen" || len(id) < 40 {
				t.Errorf("client_id %q: want a random c_ id the client did not choose", id)
			}
			want := map[string]any{
				"client_id": id, "client_id_issued_at": float64(t0.Unix()), "client_name": "Claude",
				"redirect_uris": []any{"https://claude.example/cb", "http://127.0.0.1/cb"},
				"grant_types":   []any{"authorization_code", "refresh_token"}, "response_types": []any{"code"},
				"token_endpoint_auth_method": "none", "scope": "mcp:read",
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
			if rec.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", rec.Header().Get("Cache-Control"))
			}
			if !strings.Contains(rec.Body.String(), `"client_id_issued_at":1793`) {
				t.Errorf("client_id_issued_at is not an integer of Unix seconds: %s", rec.Body)
			}
		})
		t.Run("a registration with only a name and redirect URIs gets the defaults", func(t *testing.T) {
			c := f.register(t, "", "https://a.example/cb")
			if c.TokenEndpointAuthMethod != "none" || c.Scope != "mcp:read mcp:write" || !reflect.DeepEqual(c.GrantTypes, []string{"authorization_code", "refresh_token"}) {
				t.Errorf("defaults: %+v", c)
			}
		})
		t.Run("a confidential client gets its secret once and only its hash is stored", func(t *testing.T) {
			rec := f.registerRaw(`{"client_name":"Server app","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_post"}`)
			var got map[string]any
			json.Unmarshal(rec.Body.Bytes(), &got)
			secret, _ := got["client_secret"].(string)
			if rec.Code != http.StatusCreated || len(secret) < 40 || got["client_secret_expires_at"] != float64(0) {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			c, err := f.st.Client(ctx, got["client_id"].(string))
			if err != nil {
				t.Fatal(err)
			}
			if c.SecretHash != store.HashSecret(secret) || strings.Contains(c.SecretHash, secret) {
				t.Errorf("stored %q, want the hash of the secret", c.SecretHash)
			}
		})

		name := func(uris string) string { return `{"client_name":"x","redirect_uris":` + uris + `}` }
		tests := []struct {
			name   string
			body   string
			status int
			code   string
		}{
			{"plain http to another host is an invalid redirect URI", name(`["http://evil.example/cb"]`), 400, "invalid_redirect_uri"},
			{"javascript: is an invalid redirect URI", name(`["javascript:alert(1)"]`), 400, "invalid_redirect_uri"},
			{"data: is an invalid redirect URI", name(`["data:text/html,x"]`), 400, "invalid_redirect_uri"},
			{"file: is an invalid redirect URI", name(`["file:///etc/passwd"]`), 400, "invalid_redirect_uri"},
			{"a fragment is an invalid redirect URI", name(`["https://a.example/cb#x"]`), 400, "invalid_redirect_uri"},
			{"a wildcard is an invalid redirect URI", name(`["https://*.a.example/cb"]`), 400, "invalid_redirect_uri"},
			{"userinfo is an invalid redirect URI", name(`["https://good.example@evil.example/cb"]`), 400, "invalid_redirect_uri"},
			{"one bad URI among good ones is refused", name(`["https://a.example/cb","http://evil.example/cb"]`), 400, "invalid_redirect_uri"},
			{"a NUL byte in a redirect URI is refused", name(`["https://a.example/cb\u0000"]`), 400, "invalid_redirect_uri"},
			{"missing redirect_uris is refused", `{"client_name":"x"}`, 400, "invalid_redirect_uri"},
			{"an empty redirect_uris is refused", name(`[]`), 400, "invalid_redirect_uri"},
			{"redirect_uris as a string is refused", name(`"https://a.example/cb"`), 400, "invalid_redirect_uri"},
			{"more than 10 redirect URIs are refused", name(`[` + strings.Repeat(`"https://a.example/cb",`, 10) + `"https://a.example/cb"]`), 400, "invalid_redirect_uri"},
			{"a missing client_name is a validation error", `{"redirect_uris":["https://a.example/cb"]}`, 422, "invalid_client_metadata"},
			{"a blank client_name is a validation error", `{"client_name":"  ","redirect_uris":["https://a.example/cb"]}`, 422, "invalid_client_metadata"},
			{"a null client_name is a validation error", `{"client_name":null,"redirect_uris":["https://a.example/cb"]}`, 422, "invalid_client_metadata"},
			{"a numeric client_name is a validation error", `{"client_name":7,"redirect_uris":["https://a.example/cb"]}`, 422, "invalid_client_metadata"},
			{"a client_name of 201 characters is a validation error", `{"client_name":"` + strings.Repeat("é", 201) + `","redirect_uris":["https://a.example/cb"]}`, 422, "invalid_client_metadata"},
			{"a client_name with a NUL byte is a validation error", `{"client_name":"a\u0000b","redirect_uris":["https://a.example/cb"]}`, 422, "invalid_client_metadata"},
			{"a client_name with a right-to-left override (U+202E) is a validation error", `{"client_name":"Claude\u202Eppa.live","redirect_uris":["https://a.example/cb"]}`, 422, "invalid_client_metadata"},
			{"a client_name with a zero-width joiner is a validation error", "{\"client_name\":\"Cla\u200dude\",\"redirect_uris\":[\"https://a.example/cb\"]}", 422, "invalid_client_metadata"},
			{"a client_name with a byte-order mark is a validation error", "{\"client_name\":\"\ufeffClaude\",\"redirect_uris\":[\"https://a.example/cb\"]}", 422, "invalid_client_metadata"},
			{"a client_name with invalid UTF-8 is a validation error", "{\"client_name\":\"a\xffb\",\"redirect_uris\":[\"https://a.example/cb\"]}", 422, "invalid_client_metadata"},
			{"the implicit grant is a validation error", `{"client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":["implicit"]}`, 422, "invalid_client_metadata"},
			{"refresh_token without authorization_code is a validation error", `{"client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":["refresh_token"]}`, 422, "invalid_client_metadata"},
			{"a huge grant_types array is a validation error", `{"client_name":"x","redirect_uris":["https://a.example/cb"],"grant_types":[` + strings.Repeat(`"refresh_token",`, 500) + `"authorization_code"]}`, 422, "invalid_client_metadata"},
			{"private_key_jwt is a validation error", `{"client_name":"x","redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"private_key_jwt"}`, 422, "invalid_client_metadata"},
			{"a client_name followed by Hangul fillers (U+3164) is a validation error", "{\"client_name\":\"Claude\u3164\u3164\",\"redirect_uris\":[\"https://a.example/cb\"]}", 422, "invalid_client_metadata"},
			{"a client_name with a Braille blank (U+2800) is a validation error", "{\"client_name\":\"A\u2800B\",\"redirect_uris\":[\"https://a.example/cb\"]}", 422, "invalid_client_metadata"},
			{"a client_name with a halfwidth Hangul filler (U+FFA0) is a validation error", "{\"client_name\":\"Cl\uffa0aude\",\"redirect_uris\":[\"https://a.example/cb\"]}", 422, "invalid_client_metadata"},
			{"a client_name with a variation selector is a validation error", "{\"client_name\":\"Claude\ufe0f\",\"redirect_uris\":[\"https://a.example/cb\"]}", 422, "invalid_client_metadata"},
			{"an empty body is not JSON", ``, 400, "invalid_client_metadata"},
			{"a JSON array is not a JSON object", `[]`, 400, "invalid_client_metadata"},
			{"garbage is not JSON", `client_name=x`, 400, "invalid_client_metadata"},
			{"truncated JSON is not JSON", `{"client_name":"x",`, 400, "invalid_client_metadata"},
			{"a body over 64 KiB is too large", `{"client_name":"` + strings.Repeat("a", 70<<10) + `"}`, 413, "invalid_client_metadata"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				wantOAuthError(t, f.registerRaw(tt.body), tt.status, tt.code)
			})
		}
		t.Run("client_secret_basic registers a confidential client with a secret", func(t *testing.T) {
			c := f.register(t, "client_secret_basic", "https://a.example/cb")
			if c.TokenEndpointAuthMethod != "client_secret_basic" || !strings.HasPrefix(c.ClientSecret, "cs_") {
				t.Errorf("client %+v", c)
			}
		})
		t.Run("unknown scopes are dropped from the registration, not refused", func(t *testing.T) {
			rec := f.registerRaw(`{"client_name":"x","redirect_uris":["https://a.example/cb"],"scope":"mcp:read admin offline_access"}`)
			if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"scope":"mcp:read"`) {
				t.Errorf("%d %s, want 201 with scope mcp:read", rec.Code, rec.Body)
			}
		})
		t.Run("a registration without scope may ask for every scope", func(t *testing.T) {
			rec := f.registerRaw(`{"client_name":"x","redirect_uris":["https://a.example/cb"]}`)
			if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"scope":"mcp:read mcp:write"`) {
				t.Errorf("%d %s, want 201 with scope mcp:read mcp:write", rec.Code, rec.Body)
			}
		})
		t.Run("a Latin name with a Cyrillic letter registers, and the consent page is told it mixes scripts", func(t *testing.T) {
			rec := f.registerRaw("{\"client_name\":\"Cl\u0430ude\",\"redirect_uris\":[\"https://a.example/cb\"]}")
			if rec.Code != http.StatusCreated {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			var c clientInfo
			json.Unmarshal(rec.Body.Bytes(), &c)
			_, challenge := pkcePair()
			req, err := f.srv.Authorize(ctx, authorizeQuery(c, "https://a.example/cb", challenge).Encode())
			if err != nil {
				t.Fatal(err)
			}
			p, err := f.srv.Begin(ctx, f.user.ID, req)
			if err != nil {
				t.Fatal(err)
			}
			if !p.MixedScripts || p.RedirectHost != "a.example" {
				t.Errorf("pending %+v, want MixedScripts and the redirect host", p)
			}
		})
		t.Run("the accepted redirect URI shapes all register", func(t *testing.T) {
			for _, uri := range []string{"http://localhost:53682/callback", "com.example.mcpcheck:/oauth/callback", "https://client.example/cb",
				"http://[::1]:3000/cb", "cursor://anysphere.cursor-mcp/oauth/callback"} {
				if rec := f.registerRaw(fmt.Sprintf(`{"client_name":"x","redirect_uris":[%q]}`, uri)); rec.Code != http.StatusCreated {
					t.Errorf("%s: %d %s", uri, rec.Code, rec.Body)
				}
			}
		})
	})
}

// Registration is open to anyone, so a client that was never used goes a day after it came;
// a client with a grant stays.
func TestNeverUsedClientsExpire(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		idle := f.register(t, "none", "http://127.0.0.1/cb")
		g := f.newGrant(t)
		f.advance(UnusedClientTTL + time.Minute)
		f.register(t, "none", "http://127.0.0.1/cb")
		if _, err := f.st.Client(t.Context(), idle.ClientID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a never-used client a day old: %v, want it deleted", err)
		}
		if _, err := f.st.Client(t.Context(), g.client.ClientID); err != nil {
			t.Errorf("a used client: %v, want it kept", err)
		}
	})
}
