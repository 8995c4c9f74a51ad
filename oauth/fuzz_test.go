package oauth

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"sitepulse/store"
)

// FuzzTokenEndpoints sends arbitrary bodies to the token, revocation and registration
// endpoints: none may answer 500 or anything but the OAuth error shape (DESIGN §8).
func FuzzTokenEndpoints(f *testing.F) {
	fx := newFixture(f, store.NewMemory())
	c := fx.register(f, "none", "http://127.0.0.1/callback")
	f.Add(uint8(0), "grant_type=authorization_code&code=ac_x&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcallback&code_verifier="+strings.Repeat("a", 43)+"&client_id="+c.ClientID)
	f.Add(uint8(0), "grant_type=refresh_token&refresh_token=rt_x&client_id="+c.ClientID+"&client_id="+c.ClientID)
	f.Add(uint8(0), "%zz&;;==&grant_type")
	f.Add(uint8(0), "grant_type=authorization_code\x00&code=\xff\xfe")
	f.Add(uint8(1), "token=at_x&token_type_hint=banana&client_id="+c.ClientID)
	f.Add(uint8(1), "token=&token=")
	f.Add(uint8(2), `{"client_name":"x","redirect_uris":["http://127.0.0.1/cb"]}`)
	f.Add(uint8(2), `{"client_name":"\u0000","redirect_uris":[1,2,{}],"grant_types":"x"}`)
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
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code >= 400 {
			var e map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e["error"] == "" || strings.ContainsAny(e["error_description"], "\r\n") {
				t.Fatalf("error body %q for %q", rec.Body, body)
			}
		}
	})
}
