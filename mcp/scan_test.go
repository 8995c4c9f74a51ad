package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// call2025 calls a tool as a 2025-11-25 client (start_scan and get_scan start at 2025-06-18)
// and returns the result object; it fails on a JSON-RPC error.
func (f *fixture) call2025(t testing.TB, ctx context.Context, name string, args map[string]any) map[string]any {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	status, out := f.srv.ServeRequest(ctx, Request{UserID: f.userID, Header: map[string][]string{"Mcp-Protocol-Version": {"2025-11-25"}},
		Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + string(params) + `}`)})
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil || status != 200 || m["error"] != nil {
		t.Fatalf("%s: status %d %s", name, status, out)
	}
	return m["result"].(map[string]any)
}

// runScan plays a worker: claims the scan's job, audits total pairs of which the first ok
// succeed, and completes it (or fails it when none did).
func runScan(t testing.TB, st store.Store, now time.Time, total, ok int) {
	t.Helper()
	ctx := context.Background()
	job, err := st.ClaimJob(ctx, store.QueueScan, "test", now)
	if err != nil {
		t.Fatal(err)
	}
	l := job.Lease()
	if err := st.StartScan(ctx, l, total, now); err != nil {
		t.Fatal(err)
	}
	var results []store.PageResult
	for i := range total {
		path := "/p" + string(rune('a'+i))
		if i < ok {
			perf := 50 + i
			r := store.PageResult{PagePath: path, PageURL: "https://x.test" + path, Strategy: store.StrategyMobile,
				Scores: store.PageScores{Performance: &perf}}
			results = append(results, r)
			if err := st.SavePageResult(ctx, l, r); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := st.SavePageError(ctx, l, store.PageError{PagePath: path, PageURL: "https://x.test" + path, Strategy: store.StrategyMobile, Error: "PSI: 500"}); err != nil {
			t.Fatal(err)
		}
	}
	if ok == 0 {
		if err := st.FailScan(ctx, l, "no page could be audited", now); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := st.CompleteScan(ctx, l, analysis.ScanScores(results), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
}

// TestStartScanFollowedByGetScan: start_scan starts one "Scan now" scan; a second call while it
// is in flight answers the same scan; get_scan says queued, then running with pages done of
// total, then complete with exactly get_latest_scan's payload of that scan.
func TestStartScanFollowedByGetScan(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			first := payload(t, f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.demo.SiteID}))
			if first["status"] != "queued" || first["alreadyRunning"] != false || first["strategy"] != "both" {
				t.Fatalf("start_scan = %v", first)
			}
			again := payload(t, f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.demo.SiteID, "strategy": "mobile"}))
			if again["scanId"] != first["scanId"] || again["alreadyRunning"] != true {
				t.Fatalf("second start_scan = %v, want scan %v again", again, first["scanId"])
			}
			scans, _ := f.st.ScansOf(context.Background(), f.userID, f.demo.SiteID, 10)
			if len(scans) != 3 {
				t.Fatalf("%d scans, want the two demo ones and one more", len(scans))
			}
			id := first["scanId"].(string)
			runScan(t, f.st, f.now.Add(time.Hour), 3, 3)
			done := payload(t, f.call2025(t, allScopes, "get_scan", map[string]any{"scanId": id}))
			latest := payload(t, f.call2025(t, allScopes, "get_latest_scan", map[string]any{"siteId": f.demo.SiteID}))
			got, _ := json.Marshal(done["result"])
			want, _ := json.Marshal(latest)
			if done["status"] != "complete" || done["pagesDone"] != 3.0 || done["pagesTotal"] != 3.0 || string(got) != string(want) {
				t.Fatalf("get_scan = %v\nresult %s\nwant   %s", done, got, want)
			}
			// The site is free again: the next call starts a new scan.
			next := payload(t, f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.demo.SiteID, "strategy": "desktop"}))
			if next["scanId"] == id || next["alreadyRunning"] != false || next["strategy"] != "desktop" {
				t.Fatalf("start_scan after completion = %v", next)
			}
		})
	}
}

// TestGetScanFailedSaysWhy: a scan whose pages all failed is failed with its reason.
func TestGetScanFailedSaysWhy(t *testing.T) {
	f := newFixture(t, storetest.Backends(t)[0].Open(t))
	id := payload(t, f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.demo.SiteID}))["scanId"]
	runScan(t, f.st, f.now, 2, 0)
	got := payload(t, f.call2025(t, allScopes, "get_scan", map[string]any{"scanId": id}))
	if got["status"] != "failed" || got["reason"] != "no page could be audited" || got["result"] != nil {
		t.Fatalf("get_scan = %v", got)
	}
}

type spentQuota struct{}

func (spentQuota) Check(string, time.Time) error {
	return errors.New("this account's scans wait until 23 Nov 2026, 00:00 UTC: its daily budget of 200 audits is used up")
}

// TestStartScanQuotaAndScope: past the daily audits start_scan is a tool error that says when to
// retry and starts nothing; another user's site is not found; a read-only credential is refused
// with -32003 (403, the step-up), and get_scan is allowed to it.
func TestStartScanQuotaAndScope(t *testing.T) {
	f := newFixture(t, storetest.Backends(t)[0].Open(t))
	f.srv.quota = spentQuota{}
	r := f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.demo.SiteID})
	if r["isError"] != true || !strings.Contains(textOf(t, r), "until 23 Nov 2026, 00:00 UTC") || !strings.Contains(textOf(t, r), "Retry after") {
		t.Fatalf("start_scan past the quota = %v", r)
	}
	if scans, _ := f.st.ScansOf(context.Background(), f.userID, f.demo.SiteID, 10); len(scans) != 2 {
		t.Fatalf("%d scans: a refused start_scan enqueued one", len(scans))
	}
	r = f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.otherSite})
	if r["isError"] != true || textOf(t, r) != string(errSiteNotFound) {
		t.Fatalf("start_scan of another user's site = %v", r)
	}
	readOnly := store.WithScope(context.Background(), store.ScopeRead)
	status, out := f.srv.ServeRequest(readOnly, Request{UserID: f.userID, Header: map[string][]string{"Mcp-Protocol-Version": {"2025-11-25"}},
		Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"start_scan","arguments":{"siteId":"` + f.demo.SiteID + `"}}}`)})
	if status != 403 || !strings.Contains(string(out), `"code":-32003`) {
		t.Fatalf("start_scan with mcp:read: %d %s", status, out)
	}
	if got := payload(t, f.call2025(t, readOnly, "get_scan", map[string]any{"scanId": f.latestID})); got["status"] != "complete" {
		t.Fatalf("get_scan with mcp:read = %v", got)
	}
}
