package mcp

import (
	"bytes"
	"context"
	"testing"

	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// TestLatestScanKeptPayload holds get_latest_scan's kept payload (latestAnswers) to what a new
// server encodes, byte for byte, in every era, before and after each write the payload is made
// of (budgets, the site's name and domain): a kept payload is never stale. On Postgres, whose
// store keeps versions, and on memory, whose store keeps none (nothing is kept).
func TestLatestScanKeptPayload(t *testing.T) {
	for name, st := range map[string]store.Store{"memory": memory.New(), "postgres": storetest.Postgres(t)} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, st)
			ctx := context.Background()
			body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"` + f.demo.SiteID + `"}}}`)
			same := func(step string) {
				t.Helper()
				for _, version := range []string{"", "2025-03-26", "2025-06-18", "2025-11-25"} {
					req := Request{UserID: f.userID, Header: map[string][]string{}, Body: body}
					if version != "" {
						req.Header["Mcp-Protocol-Version"] = []string{version}
					}
					fresh := New(Config{Sites: st, Scans: st, Writes: st, BaseURL: testBase, Now: f.srv.now})
					_, want := fresh.ServeRequest(allScopes, req)
					for i := range 2 { // the first call may keep it, the second serves it
						status, got := f.srv.ServeRequest(allScopes, req)
						if status != 200 || !bytes.Equal(got, want) {
							t.Fatalf("%s, version %q, call %d: %d\n%s\nwant\n%s", step, version, i, status, got, want)
						}
					}
				}
			}
			same("seeded")
			if kept := len(f.srv.latest.entries); kept != map[string]int{"memory": 0, "postgres": 1}[name] {
				t.Fatalf("%d payloads kept", kept)
			}
			if err := st.SetBudgets(ctx, f.userID, f.demo.SiteID, map[string]store.Budget{"performance": {Threshold: 42}}); err != nil {
				t.Fatal(err)
			}
			same("budgets set")
			site, err := st.Site(ctx, f.userID, f.demo.SiteID)
			if err != nil {
				t.Fatal(err)
			}
			site.Name, site.Domain = "Renamed", "renamed.test"
			if err := st.UpdateSite(ctx, site); err != nil {
				t.Fatal(err)
			}
			same("renamed")
			// Another account asking for the site gets no payload, kept or not.
			status, m := f.rpc(t, f.otherUser, string(body))
			if status != 200 || m["result"] == nil || !bytes.Contains([]byte(textOf(t, m["result"].(map[string]any))), []byte("not found")) {
				t.Fatalf("another account: %d %v", status, m)
			}
		})
	}
}
