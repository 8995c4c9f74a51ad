package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

func TestBatchLimit(t *testing.T) {
	f := newFixture(t, memory.New())
	batch := func(n int) string {
		calls := make([]string, n)
		for i := range calls {
			calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i)
		}
		return "[" + strings.Join(calls, ",") + "]"
	}
	if status, out := f.srv.Serve(allScopes, f.userID, []byte(batch(MaxBatch))); status != 200 || !strings.HasPrefix(string(out), "[") {
		t.Errorf("a batch of %d: %d %.100s, want 200 and an array", MaxBatch, status, out)
	}
	status, m := f.rpc(t, f.userID, batch(MaxBatch+1))
	e, _ := m["error"].(map[string]any)
	if status != 400 || e == nil || e["code"] != float64(CodeInvalidRequest) || !strings.Contains(fmt.Sprint(e["message"]), "at most 50 calls") {
		t.Errorf("a batch of %d: %d %v, want 400 and one -32600 error", MaxBatch+1, status, m)
	}
}

// An account holds at most MaxActiveReports active reports; revoked and expired ones do not count.
func TestActiveReportsCap(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			ctx := context.Background()
			past := f.now.Add(-time.Hour)
			for i := range MaxActiveReports + 1 {
				_, hash := store.NewSecret("")
				r := store.Report{ID: store.NewID(), TokenHash: hash, ScanID: f.latestID, UserID: f.userID, Title: "r", CreatedAt: past}
				if i == MaxActiveReports { // one expired
					r.ExpiresAt = &past
				}
				if err := f.st.CreateReport(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			args := map[string]any{"scanId": f.latestID}
			res := f.tool(t, f.userID, "generate_client_report", args)
			if res["isError"] != true || !strings.Contains(textOf(t, res), "1000 active report links") {
				t.Fatalf("report past the cap: %v, want a tool error naming the cap", res)
			}
			reports, _ := f.st.ReportsOf(ctx, f.userID)
			for _, r := range reports {
				if r.ExpiresAt == nil {
					if err := f.st.RevokeReport(ctx, f.userID, r.ID, f.now); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			payload(t, f.tool(t, f.userID, "generate_client_report", args))
		})
	}
}
