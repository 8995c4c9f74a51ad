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
			call := func(id string) string {
				return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"` + f.demo.SiteID + `"}}}`
			}
			body := []byte(call("7"))
			// The kept result (keptResult) too, whatever the id, and inside a batch, whose
			// responses are encoded together.
			bodies := [][]byte{body, []byte(call(`"a\u003cb<"`)), []byte(call("-1.5e3")), []byte("[" + call("1") + "," + call(`"two"`) + "]")}
			same := func(step string) {
				t.Helper()
				for _, version := range []string{"", "2025-03-26", "2025-06-18", "2025-11-25"} {
					for _, body := range bodies {
						if body[0] == '[' && version != "" && version != "2025-03-26" {
							continue // batches are 2025-03-26's
						}
						req := Request{UserID: f.userID, Header: map[string][]string{}, Body: body}
						if version != "" {
							req.Header["Mcp-Protocol-Version"] = []string{version}
						}
						// A new server on a store that keeps no versions: it keeps nothing and
						// encodes every byte, so the kept answers are held to that.
						fresh := New(Config{Sites: unversioned{st}, Scans: st, Writes: st, BaseURL: testBase, Now: f.srv.now})
						_, want := fresh.ServeRequest(allScopes, req)
						for i := range 2 { // the first call may keep it, the second serves it
							status, got := f.srv.ServeRequest(allScopes, req)
							if status != 200 || !bytes.Equal(got, want) {
								t.Fatalf("%s, version %q, call %d: %d\n%s\nwant\n%s", step, version, i, status, got, want)
							}
						}
					}
				}
			}
			same("seeded")
			if kept := len(f.srv.latest.entries); kept != map[string]int{"memory": 0, "postgres": 1}[name] {
				t.Fatalf("%d payloads kept", kept)
			}
			// The 2025-03-26 result is kept with the payload; later eras' carry the view's data.
			for _, e := range f.srv.latest.entries {
				if r := e.scan.results; r.byEra[era20250326].Load() == nil || r.byEra[era20250618].Load() != nil || r.byEra[era20251125].Load() != nil {
					t.Fatalf("results kept: %v %v %v", r.byEra[era20250326].Load(), r.byEra[era20250618].Load(), r.byEra[era20251125].Load())
				}
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

// unversioned is a store whose budget inputs carry no version, so a server keeps none of them.
type unversioned struct{ store.Store }

func (u unversioned) BudgetInputs(ctx context.Context, userID, siteID string) (store.BudgetInputs, error) {
	in, err := u.Store.BudgetInputs(ctx, userID, siteID)
	in.Version = 0
	return in, err
}
