package oauth

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"sitepulse/store"
)

func TestRevoke(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		fresh := func() (grant, tokenResponse) {
			g := f.newGrant(t)
			return g, f.tokens(t, f.token(g.exchangeForm()))
		}
		ok := func(t *testing.T, form url.Values) {
			t.Helper()
			rec := f.revoke(form)
			if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Cache-Control") != "no-store" {
				t.Fatalf("status %d, body %q, headers %v", rec.Code, rec.Body, rec.Header())
			}
		}
		t.Run("revoking an access token ends it and leaves its refresh token", func(t *testing.T) {
			g, r := fresh()
			ok(t, url.Values{"token": {r.AccessToken}, "token_type_hint": {"access_token"}})
			if f.alive(t, r.AccessToken) {
				t.Error("access token still accepted")
			}
			f.tokens(t, f.token(refreshForm(g.client.ClientID, r.RefreshToken)))
		})
		t.Run("revoking a refresh token ends it and every access token of its family", func(t *testing.T) {
			g, r := fresh()
			r2 := f.tokens(t, f.token(refreshForm(g.client.ClientID, r.RefreshToken)))
			ok(t, url.Values{"token": {r2.RefreshToken}, "token_type_hint": {"refresh_token"}})
			if f.alive(t, r.AccessToken) || f.alive(t, r2.AccessToken) {
				t.Error("an access token of the family survived")
			}
			wantOAuthError(t, f.token(refreshForm(g.client.ClientID, r2.RefreshToken)), 400, "invalid_grant")
		})
		t.Run("a wrong or unknown token_type_hint is ignored", func(t *testing.T) {
			_, r := fresh()
			ok(t, url.Values{"token": {r.AccessToken}, "token_type_hint": {"banana"}})
			if f.alive(t, r.AccessToken) {
				t.Error("not revoked")
			}
			_, r = fresh()
			ok(t, url.Values{"token": {r.AccessToken}, "token_type_hint": {"refresh_token"}})
			if f.alive(t, r.AccessToken) {
				t.Error("not revoked under a wrong hint")
			}
		})
		t.Run("an unknown, foreign-looking or oversized token gets 200", func(t *testing.T) {
			for _, tok := range []string{"at_never_issued", "rt_never_issued", "svc_key", "garbage", "at_" + strings.Repeat("a", 5000)} {
				ok(t, url.Values{"token": {tok}})
			}
		})
		t.Run("a token of another client named in the request is left alone, still with 200", func(t *testing.T) {
			_, r := fresh()
			other := f.register(t, "none", "http://127.0.0.1/callback")
			ok(t, url.Values{"token": {r.AccessToken}, "client_id": {other.ClientID}})
			if !f.alive(t, r.AccessToken) {
				t.Error("another client revoked the token")
			}
		})
		t.Run("the owning client may revoke its token", func(t *testing.T) {
			g, r := fresh()
			ok(t, url.Values{"token": {r.AccessToken}, "client_id": {g.client.ClientID}})
			if f.alive(t, r.AccessToken) {
				t.Error("not revoked")
			}
		})
		t.Run("a confidential client with a wrong secret is 401 invalid_client and revokes nothing", func(t *testing.T) {
			c := f.register(t, "client_secret_post", "https://server.example/cb")
			verifier, challenge := pkcePair()
			g := f.approve(t, c, authorizeQuery(c, "https://server.example/cb", challenge), verifier)
			form := g.exchangeForm()
			form.Set("client_secret", c.ClientSecret)
			r := f.tokens(t, f.token(form))
			wantOAuthError(t, f.revoke(url.Values{"token": {r.AccessToken}, "client_id": {c.ClientID}, "client_secret": {"wrong"}}), 401, "invalid_client")
			if !f.alive(t, r.AccessToken) {
				t.Error("revoked despite failed client authentication")
			}
			ok(t, url.Values{"token": {r.AccessToken}, "client_id": {c.ClientID}, "client_secret": {c.ClientSecret}})
		})
		t.Run("a request without a token is invalid_request", func(t *testing.T) {
			wantOAuthError(t, f.revoke(url.Values{}), 400, "invalid_request")
			wantOAuthError(t, f.revoke(url.Values{"token": {""}}), 400, "invalid_request")
			wantOAuthError(t, f.revoke(url.Values{"token": {"a", "b"}}), 400, "invalid_request")
		})
	})
}

func TestVerifyAccessToken(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		g := f.newGrant(t)
		r := f.tokens(t, f.token(g.exchangeForm()))
		t.Run("a live access token gives its user and its scope", func(t *testing.T) {
			u, scope, err := f.srv.VerifyAccessToken(ctx, r.AccessToken)
			if err != nil || u != f.user.ID || scope != "mcp:read" {
				t.Errorf("user %q, scope %q, %v", u, scope, err)
			}
		})
		for name, tok := range map[string]string{
			"a refresh token is not an access token": r.RefreshToken,
			"an unknown access token is not found":   "at_unknown",
			"an API key is not an access token":      "svc_whatever",
			"an oversized token is not found":        "at_" + strings.Repeat("x", 300),
			"an empty token is not found":            "",
		} {
			t.Run(name, func(t *testing.T) {
				if _, _, err := f.srv.VerifyAccessToken(ctx, tok); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("err %v, want ErrNotFound", err)
				}
			})
		}
	})
}
