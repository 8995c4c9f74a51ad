package oauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"sitepulse/store/memory"
)

func TestMetadata(t *testing.T) {
	// A trailing slash on BASE_URL must not reach the issuer (RFC 8414 §3.3 compares strings).
	srv := New(Config{Store: memory.New(), BaseURL: testBase + "/", MetadataClient: http.DefaultClient})
	tests := []struct {
		name string
		doc  []byte
		want map[string]any
	}{
		{"the authorization server metadata has exactly the interface's fields", srv.asMeta, map[string]any{
			"issuer":                                         testBase,
			"authorization_endpoint":                         testBase + "/oauth/authorize",
			"token_endpoint":                                 testBase + "/api/oauth/token",
			"registration_endpoint":                          testBase + "/api/oauth/register",
			"revocation_endpoint":                            testBase + "/api/oauth/revoke",
			"scopes_supported":                               []any{"mcp:read", "mcp:write"},
			"response_types_supported":                       []any{"code"},
			"response_modes_supported":                       []any{"query"},
			"grant_types_supported":                          []any{"authorization_code", "refresh_token"},
			"token_endpoint_auth_methods_supported":          []any{"none", "client_secret_post", "client_secret_basic"},
			"code_challenge_methods_supported":               []any{"S256"},
			"service_documentation":                          testBase + "/docs/mcp",
			"authorization_response_iss_parameter_supported": true,
			"client_id_metadata_document_supported":          true,
		}},
		{"the protected resource metadata names the MCP endpoint and this issuer", srv.prmMeta, map[string]any{
			"resource":                 testBase + "/api/mcp",
			"authorization_servers":    []any{testBase},
			"scopes_supported":         []any{"mcp:read", "mcp:write"},
			"bearer_methods_supported": []any{"header"},
			"resource_documentation":   testBase + "/docs/mcp",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]any
			if err := json.Unmarshal(tt.doc, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}

	t.Run("both documents are JSON, cacheable for an hour and readable cross-origin", func(t *testing.T) {
		for _, rec := range []*httptest.ResponseRecorder{
			do(srv.HandleMetadata(), "GET", "/.well-known/oauth-authorization-server", "", ""),
			do(srv.HandleResourceMetadata(), "GET", "/.well-known/oauth-protected-resource", "", ""),
		} {
			h := rec.Header()
			if rec.Code != 200 || h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "public, max-age=3600" || h.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("status %d, headers %v", rec.Code, h)
			}
		}
	})
}
