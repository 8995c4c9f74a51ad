package oauth

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"sitepulse/store/memory"
)

// FuzzTokenEndpoints sends arbitrary bodies to the token, revocation and registration
// endpoints: none may answer 500 or anything but the OAuth error shape. Errors are
// JSON with an RFC 6749/7591 code and a one-line description; token-endpoint answers are never
// cached (RFC 6749 §5.1) and, with no code or refresh token ever issued here, never a success.
func FuzzTokenEndpoints(f *testing.F) {
	fx := newFixture(f, memory.New())
	c := fx.register(f, "none", "http://127.0.0.1/callback")
	f.Add(uint8(0), "grant_type=authorization_code&code=ac_x&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&code_verifier="+strings.Repeat("a", 43)+"&client_id="+c.ClientID)
	f.Add(uint8(0), "grant_type=refresh_token&refresh_token=rt_x&client_id="+c.ClientID+"&client_id="+c.ClientID)
	f.Add(uint8(0), "%zz&;;==&grant_type")
	f.Add(uint8(0), "grant_type=authorization_code\x00&code=\xff\xfe")
	f.Add(uint8(1), "token=at_x&token_type_hint=banana&client_id="+c.ClientID)
	f.Add(uint8(1), "token=&token=")
	f.Add(uint8(2), `{"client_name":"x","redirect_uris":["http://127.0.0.1/cb"]}`)
	f.Add(uint8(2), `{"client_name":"\u0000","redirect_uris":[1,2,{}],"grant_types":"x"}`)
	f.Add(uint8(0), "grant_type=authorization_code&grant_type=refresh_token")
	f.Add(uint8(0), "grant_type=client_credentials&client_id="+c.ClientID+"&client_secret=x&scope=mcp%3Aread+mcp%3Aread")
	f.Add(uint8(0), "grant_type=refresh_token&refresh_token=rt_%00&resource=http%3A%2F%2Fevil.test")
	f.Add(uint8(0), strings.Repeat("a=b&", 20000))
	f.Add(uint8(1), "token=rt_x&client_id="+c.ClientID+"&client_id=other")
	f.Add(uint8(2), `{"redirect_uris":["http://127.0.0.1/cb"],"redirect_uris":["https://evil.test/cb"]}`)
	f.Add(uint8(2), `{"redirect_uris":["https://good.example\\@evil.test/cb"],"token_endpoint_auth_method":"client_secret_basic"}`)
	f.Fuzz(func(t *testing.T, endpoint uint8, body string) {
		var h http.Handler
		ct := formType
		switch endpoint % 3 {
		case 0:
			h = fx.srv.HandleToken()
		case 1:
			h = fx.srv.HandleRevoke()
		default:
			h, ct = fx.srv.HandleRegister(), "application/json"
		}
		rec := do(h, "POST", "/", ct, body)
		switch rec.Code {
		case 200, 201:
			if endpoint%3 == 0 {
				t.Fatalf("the token endpoint granted %q: %s", body, rec.Body)
			}
		case 400, 401, 413:
		case 422:
			if endpoint%3 != 2 {
				t.Fatalf("422 outside registration for %q", body)
			}
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if endpoint%3 == 0 && (rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Pragma") != "no-cache") {
			t.Fatalf("token answer without no-store for %q", body)
		}
		if rec.Code >= 400 {
			var e map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || strings.ContainsAny(e["error_description"], "\r\n") ||
				rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("error body %q for %q", rec.Body, body)
			}
			switch e["error"] {
			case "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
				"invalid_scope", "invalid_target", "invalid_redirect_uri", "invalid_client_metadata", "unsupported_token_type":
			default:
				t.Fatalf("error code %q for %q", e["error"], body)
			}
		}
	})
}
