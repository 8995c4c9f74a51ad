package handlers

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestKeptAnswersFollowEveryChange holds the answers an API key's reads keep, the budget
// check's (budgetAnswers) and MCP get_latest_scan's (its payload and its encoded result), to
// what a new server answers, byte for byte, before and after every change they depend on: a
// budget edit, an alert rule, a new scan, the key's maker's role changed; and a revoked key, or
// one whose maker left the workspace, is refused at its next request, whatever was kept. On both
// stores (memory keeps no versions, so nothing is kept there; the same rules hold).
func TestKeptAnswersFollowEveryChange(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			f := newAPIFixture(t, st)
			ctx, a := context.Background(), f.a
			// An editor of A's workspace with two keys of it.
			u := store.User{ID: store.NewID(), Email: "editor@example.com", PasswordHash: "x", CreatedAt: f.now}
			must(t, st.CreateUser(ctx, u))
			token, hash := store.NewSecret("inv_")
			must(t, st.CreateInvitation(ctx, store.Invitation{ID: store.NewID(), TokenHash: hash, WorkspaceID: a.userID, Email: u.Email,
				Role: store.RoleEditor, InvitedBy: a.userID, CreatedAt: f.now, ExpiresAt: f.now.Add(store.InvitationTTL)}))
			_, err := st.AcceptInvitation(ctx, store.HashSecret(token), u.ID, u.Email, f.now)
			must(t, err)
			newKey := func() (key, id string) {
				key, keyHash := store.NewSecret("svc_")
				k := store.APIKey{ID: store.NewID(), UserID: u.ID, WorkspaceID: a.userID, Name: "ci", KeyHash: keyHash, Prefix: key[:12], Scope: store.ScopeRead, CreatedAt: f.now}
				must(t, st.CreateAPIKey(ctx, k))
				return key, k.ID
			}
			key, _ := newKey()
			other, otherID := newKey()

			// fresh answers as a new server does: nothing kept in its handler nor its MCP server.
			fresh := func(path, body, key string) (int, string) {
				h, err := NewHandler(withServers(st, withStore(st, Deps{BaseURL: "http://sitepulse.test", Now: func() time.Time { return f.now }, PasswordIterations: 1000})))
				must(t, err)
				req := httptest.NewRequest("POST", path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				b, _ := io.ReadAll(rec.Body)
				return rec.Code, string(b)
			}
			reads := []struct{ path, body string }{
				{"/api/external/budget-check", `{"siteId":"` + a.siteID + `"}`},
				{"/api/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"` + a.siteID + `"}}}`},
			}
			same := func(step string, key string, status int) {
				t.Helper()
				for _, r := range reads {
					wantStatus, want := fresh(r.path, r.body, key)
					if wantStatus != status {
						t.Fatalf("%s: %s answered %d on a new server, want %d: %s", step, r.path, wantStatus, status, want)
					}
					for i := range 2 { // the first call may keep the answer, the second serves it
						resp, got := f.do(t, "POST", r.path, "application/json", r.body, bearer(key))
						if resp.StatusCode != status || got != want {
							t.Fatalf("%s: %s, call %d: %d\n%s\nwant %d\n%s", step, r.path, i, resp.StatusCode, got, status, want)
						}
					}
				}
			}
			same("seeded", key, 200)
			same("seeded, the other key", other, 200)
			must(t, st.SetBudgets(ctx, a.userID, a.siteID, map[string]store.Budget{"performance": {Threshold: 99}, "lcp": {Threshold: 1000, Strategy: store.StrategyMobile}}))
			same("budgets edited", key, 200)
			must(t, st.AddAlertRule(ctx, a.userID, store.AlertRule{ID: store.NewID(), SiteID: a.siteID, Metric: "performance", Operator: store.OpMin, Threshold: 101, CreatedAt: f.now}))
			same("a rule added", key, 200)
			f.recordScan(t, a.siteID, fixtureResults(t, "fast.mobile", "fast.desktop"), f.now.Add(time.Hour))
			same("a new scan", key, 200)
			must(t, st.SetRole(ctx, a.userID, u.ID, store.RoleViewer))
			same("the maker made a viewer", key, 200) // a key reads as a viewer: the same answers
			must(t, st.RevokeAPIKey(ctx, u.ID, otherID, f.now))
			same("the other key revoked", other, 401)
			same("the other key revoked, this key", key, 200)
			must(t, st.RemoveMember(ctx, a.userID, u.ID))
			same("the maker removed", key, 401)
		})
	}
}
