package handlers

import (
	"context"
	"strings"
	"testing"

	"sitepulse/store/storetest"
)

// An API key's MCP reads skip the site's workspace lookup once the process knows it (issue 36),
// but never the key's own: the call right after a revocation is refused, on any replica, and a
// key of another workspace still cannot read the site.
func TestMCPWithAnAPIKeyAfterRevocation(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			f := newAPIFixture(t, st)
			a := f.a
			call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"` + a.siteID + `"}}}`
			for i := range 2 { // the second call reads the site's workspace from memory
				if resp, body := f.do(t, "POST", "/api/mcp", "application/json", call, bearer(a.apiKey)); resp.StatusCode != 200 || strings.Contains(body, `"isError":true`) {
					t.Fatalf("call %d before the revocation: status %d: %.300s", i+1, resp.StatusCode, body)
				}
			}
			// Account b's key, of another workspace, asks for a's site: not found, as before.
			if _, body := f.do(t, "POST", "/api/mcp", "application/json", call, bearer(f.b.apiKey)); !strings.Contains(body, `"isError":true`) {
				t.Fatalf("another workspace's key read the site: %.300s", body)
			}
			must(t, st.RevokeAPIKey(context.Background(), a.userID, a.apiKeyID, f.now))
			if resp, body := f.do(t, "POST", "/api/mcp", "application/json", call, bearer(a.apiKey)); resp.StatusCode != 401 {
				t.Fatalf("the call after the revocation: status %d, want 401: %.300s", resp.StatusCode, body)
			}
		})
	}
}
