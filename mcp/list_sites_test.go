package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// list_sites answers a workspace of 2,000 sites (issue 46) 100 at a time by name: nextCursor
// leads through every site once, query keeps the names holding it, an API key lists its
// workspace only, and a cursor naming another account's site reads as the first page.
func TestListSitesPages(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			ctx := context.Background()
			agency := store.Workspace{ID: store.NewID(), Name: "Agency", CreatedAt: f.now}
			if err := f.st.CreateWorkspace(ctx, agency, f.userID, 10); err != nil {
				t.Fatal(err)
			}
			const n = 205
			for i := range n {
				s := store.Site{ID: store.NewID(), UserID: f.userID, WorkspaceID: agency.ID, Name: fmt.Sprintf("Client %03d", n-i),
					Domain: fmt.Sprintf("client%d.test", i), CreatedAt: f.now}
				if err := f.st.CreateSite(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			walk := func(call func(args map[string]any) map[string]any, args map[string]any) (names []string, pages []int) {
				t.Helper()
				for range 10 {
					p := call(args)
					sites := p["sites"].([]any)
					if int(p["count"].(float64)) != len(sites) {
						t.Errorf("count %v for %d sites", p["count"], len(sites))
					}
					pages = append(pages, len(sites))
					for _, s := range sites {
						names = append(names, s.(map[string]any)["name"].(string))
					}
					next, _ := p["nextCursor"].(string)
					if next == "" {
						return names, pages
					}
					args = map[string]any{"cursor": next}
				}
				t.Fatal("nextCursor never ended")
				return nil, nil
			}
			asUser := func(args map[string]any) map[string]any { return payload(t, f.tool(t, f.userID, "list_sites", args)) }
			names, pages := walk(asUser, map[string]any{})
			if fmt.Sprint(pages) != "[100 100 6]" || len(names) != n+1 {
				t.Fatalf("pages %v of %d sites, want [100 100 6]: the demo site and the agency's %d", pages, len(names), n)
			}
			seen := map[string]bool{}
			for i, name := range names {
				if seen[name] || i > 0 && names[i-1] > name {
					t.Fatalf("site %d %q: repeated or out of name order after %q", i, name, names[max(i-1, 0)])
				}
				seen[name] = true
			}
			if got, _ := walk(asUser, map[string]any{"query": "client 19"}); fmt.Sprint(got) != "[Client 190 Client 191 Client 192 Client 193 Client 194 Client 195 Client 196 Client 197 Client 198 Client 199]" {
				t.Errorf("query \"client 19\": %v", got)
			}
			key := store.WithPrincipal(allScopes, store.Principal{UserID: f.userID, KeyWorkspaceID: agency.ID})
			asKey := func(args map[string]any) map[string]any {
				t.Helper()
				params, _ := json.Marshal(map[string]any{"name": "list_sites", "arguments": args})
				_, out := f.srv.Serve(key, f.userID, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+string(params)+`}`))
				var m map[string]any
				if err := json.Unmarshal(out, &m); err != nil || m["result"] == nil {
					t.Fatalf("answer %s", out)
				}
				return payload(t, m["result"].(map[string]any))
			}
			if got, pages := walk(asKey, map[string]any{}); len(got) != n || slices.ContainsFunc(got, func(s string) bool { return !strings.HasPrefix(s, "Client ") }) {
				t.Errorf("the agency's API key listed %d sites in pages %v, want its workspace's %d only", len(got), pages, n)
			}
			first := asUser(map[string]any{})
			if p := asUser(map[string]any{"cursor": f.otherSite}); fmt.Sprint(p["sites"]) != fmt.Sprint(first["sites"]) {
				t.Error("a cursor naming another account's site did not read as the first page")
			}
		})
	}
}
