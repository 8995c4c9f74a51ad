package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	job, err := st.ClaimJob(ctx, store.KindScan, "test", now, 0)
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
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			id := payload(t, f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.demo.SiteID}))["scanId"]
			runScan(t, f.st, f.now, 2, 0)
			got := payload(t, f.call2025(t, allScopes, "get_scan", map[string]any{"scanId": id}))
			if got["status"] != "failed" || got["reason"] != "no page could be audited" || got["result"] != nil {
				t.Fatalf("get_scan = %v", got)
			}
		})
	}
}

type spentQuota struct{}

func (spentQuota) Check(string, time.Time) error {
	return errors.New("this account's scans wait until 23 Nov 2026, 00:00 UTC: its daily budget of 200 audits is used up")
}

// TestStartScanQuotaAndScope: past the daily audits start_scan is a tool error that says when to
// retry and starts nothing; another user's site and scan are not found; a read-only credential is refused
// with -32003 (403, the step-up), and get_scan is allowed to it.
func TestStartScanQuotaAndScope(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			f.srv.quota = spentQuota{}
			r := f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.demo.SiteID})
			if r["isError"] != true || !strings.Contains(textOf(t, r), "until 23 Nov 2026, 00:00 UTC") || !strings.Contains(textOf(t, r), "Retry after") {
				t.Fatalf("start_scan past the quota = %v", r)
			}
			// A client declaring the tasks extension gets the same tool error, not a task.
			if _, m := f.modernCall(t, allScopes, true, "tools/call", "start_scan", `"name":"start_scan","arguments":{"siteId":"`+f.demo.SiteID+`"}`); !strings.Contains(fmt.Sprint(m["result"]), "isError:true") || strings.Contains(fmt.Sprint(m["result"]), "resultType:task") {
				t.Fatalf("start_scan past the quota, tasks extension declared = %v", m)
			}
			if scans, _ := f.st.ScansOf(context.Background(), f.userID, f.demo.SiteID, 10); len(scans) != 2 {
				t.Fatalf("%d scans: a refused start_scan enqueued one", len(scans))
			}
			r = f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.otherSite})
			if r["isError"] != true || textOf(t, r) != string(errSiteNotFound) {
				t.Fatalf("start_scan of another user's site = %v", r)
			}
			other := *f
			other.userID = f.otherUser
			if r := other.call2025(t, allScopes, "get_scan", map[string]any{"scanId": f.latestID}); r["isError"] != true || textOf(t, r) != string(errScanNotFound) {
				t.Fatalf("get_scan of another user's scan = %v", r)
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
		})
	}
}

// modernCall sends a 2026-07-28 request as the fixture's user under ctx, declaring the tasks
// extension when tasks is true, and returns the status and the decoded answer.
func (f *fixture) modernCall(t testing.TB, ctx context.Context, tasks bool, method, name, params string) (int, map[string]any) {
	t.Helper()
	caps := `{}`
	if tasks {
		caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	body := `{"jsonrpc":"2.0","id":9,"method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps + `},` + params + `}}`
	status, out := f.srv.ServeRequest(ctx, Request{UserID: f.userID, Body: []byte(body),
		Header: map[string][]string{"Mcp-Protocol-Version": {ModernVersion}, "Mcp-Method": {method}, "Mcp-Name": {name}}})
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s: %d %s", method, status, out)
	}
	return status, m
}

func (f *fixture) startTask(t testing.TB) map[string]any {
	t.Helper()
	status, m := f.modernCall(t, allScopes, true, "tools/call", "start_scan", `"name":"start_scan","arguments":{"siteId":"`+f.demo.SiteID+`"}`)
	r, _ := m["result"].(map[string]any)
	if status != 200 || r == nil || r["resultType"] != "task" || r["status"] != "working" || r["ttlMs"] != nil || r["pollIntervalMs"] == nil {
		t.Fatalf("start_scan with the tasks extension: %d %v", status, m)
	}
	return r
}

func (f *fixture) getTask(t testing.TB, id string) map[string]any {
	t.Helper()
	status, m := f.modernCall(t, allScopes, true, "tasks/get", id, `"taskId":"`+id+`"`)
	r, _ := m["result"].(map[string]any)
	if status != 200 || r == nil || r["resultType"] != "complete" || r["taskId"] != id {
		t.Fatalf("tasks/get: %d %v", status, m)
	}
	return r
}

// TestStartScanTask: a 2026-07-28 client that declares io.modelcontextprotocol/tasks gets a task
// whose id is the scan's; tasks/get says working with pages done of total, then completed with
// exactly the tool result get_latest_scan gives for that scan. A client that does not declare it
// gets the scan at once. Unknown and other users' tasks are -32602.
func TestStartScanTask(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			_, plain := f.modernCall(t, allScopes, false, "tools/call", "start_scan", `"name":"start_scan","arguments":{"siteId":"`+f.demo.SiteID+`"}`)
			pr, _ := plain["result"].(map[string]any)
			if pr == nil || pr["resultType"] != "complete" {
				t.Fatalf("start_scan without the extension = %v", plain)
			}
			id := pr["structuredContent"].(map[string]any)["scanId"].(string)
			if got := f.startTask(t); got["taskId"] != id {
				t.Fatalf("task %v, want the scan in flight %s", got["taskId"], id)
			}
			ctx := context.Background()
			job, err := f.st.ClaimJob(ctx, store.KindScan, "w", f.now, 0)
			if err != nil {
				t.Fatal(err)
			}
			l := job.Lease()
			if err := f.st.StartScan(ctx, l, 2, f.now); err != nil {
				t.Fatal(err)
			}
			perf := 77
			r := store.PageResult{PagePath: "/", PageURL: "https://x.test/", Strategy: store.StrategyMobile, Scores: store.PageScores{Performance: &perf}}
			if err := f.st.SavePageResult(ctx, l, r); err != nil {
				t.Fatal(err)
			}
			if got := f.getTask(t, id); got["status"] != "working" || !strings.Contains(got["statusMessage"].(string), "1 of 2 page audits done") {
				t.Fatalf("tasks/get mid-scan = %v", got)
			}
			if err := f.st.SavePageError(ctx, l, store.PageError{PagePath: "/b", PageURL: "https://x.test/b", Strategy: store.StrategyMobile, Error: "PSI: 500"}); err != nil {
				t.Fatal(err)
			}
			if err := f.st.CompleteScan(ctx, l, analysis.ScanScores([]store.PageResult{r}), f.now.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			done := f.getTask(t, id)
			_, latest := f.modernCall(t, allScopes, false, "tools/call", "get_latest_scan", `"name":"get_latest_scan","arguments":{"siteId":"`+f.demo.SiteID+`"}`)
			got, _ := json.Marshal(done["result"])
			want, _ := json.Marshal(latest["result"])
			if done["status"] != "completed" || string(got) != string(want) {
				t.Fatalf("completed task result\n%s\nwant get_latest_scan's\n%s", got, want)
			}
			for _, unknown := range []string{store.NewID(), "nope"} {
				if status, m := f.modernCall(t, allScopes, true, "tasks/get", unknown, `"taskId":"`+unknown+`"`); status != 200 || errCode(m) != CodeInvalidParams {
					t.Errorf("tasks/get of %s: %d %v", unknown, status, m)
				}
			}
			f.userID = f.otherUser // another user does not see the task
			if _, m := f.modernCall(t, allScopes, true, "tasks/get", id, `"taskId":"`+id+`"`); errCode(m) != CodeInvalidParams {
				t.Errorf("another user's tasks/get = %v", m)
			}
		})
	}
}

// TestCancelTask: tasks/cancel stops the running scan (the site is free for the next one) and the
// task says cancelled; it needs mcp:write (403, -32003, the step-up); a finished task stays as it is.
func TestCancelTask(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			id := f.startTask(t)["taskId"].(string)
			readOnly := store.WithScope(context.Background(), store.ScopeRead)
			if status, m := f.modernCall(t, readOnly, true, "tasks/cancel", id, `"taskId":"`+id+`"`); status != 403 || errCode(m) != CodeInsufficientScope {
				t.Fatalf("tasks/cancel with mcp:read: %d %v", status, m)
			}
			if status, m := f.modernCall(t, readOnly, true, "tools/call", "start_scan", `"name":"start_scan","arguments":{"siteId":"`+f.demo.SiteID+`"}`); status != 403 || errCode(m) != CodeInsufficientScope {
				t.Fatalf("start_scan with mcp:read: %d %v", status, m)
			}
			status, m := f.modernCall(t, allScopes, true, "tasks/cancel", id, `"taskId":"`+id+`"`)
			if r, _ := m["result"].(map[string]any); status != 200 || r == nil || r["resultType"] != "complete" {
				t.Fatalf("tasks/cancel: %d %v", status, m)
			}
			if got := f.getTask(t, id); got["status"] != "cancelled" {
				t.Fatalf("tasks/get after cancel = %v", got)
			}
			sc, err := f.st.Scan(context.Background(), f.userID, id)
			if err != nil || sc.Status != store.StatusFailed {
				t.Fatalf("scan after cancel: %+v %v", sc, err)
			}
			if next := f.startTask(t); next["taskId"] == id {
				t.Fatal("start_scan after cancel answered the cancelled scan")
			}
			if status, m := f.modernCall(t, allScopes, true, "tasks/cancel", id, `"taskId":"`+id+`"`); status != 200 || m["result"] == nil {
				t.Fatalf("tasks/cancel of a finished task: %d %v", status, m)
			}
			if got := f.getTask(t, id); got["status"] != "cancelled" {
				t.Fatalf("a second cancel changed the task: %v", got)
			}
		})
	}
}

// TestTaskFoundFromAnotherProcess: the task lives in the scan row, so a server on another
// connection to the same Postgres (another replica, or the process restarted) finds it after the
// server that created it is gone, mid-scan and once complete.
func TestTaskFoundFromAnotherProcess(t *testing.T) {
	first, dsn := storetest.PostgresDSN(t)
	f := newFixture(t, first)
	id := f.startTask(t)["taskId"].(string)
	ctx := context.Background()
	job, err := first.ClaimJob(ctx, store.KindScan, "w", f.now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.StartScan(ctx, job.Lease(), 4, f.now); err != nil {
		t.Fatal(err)
	}
	first.Close() // the first process is gone mid-scan: its connections and its Server with it
	second := storetest.Open(t, dsn)
	f.st = second
	f.srv = New(Config{Sites: second, Scans: second, Writes: second, BaseURL: testBase, Now: func() time.Time { return f.now }})
	if got := f.getTask(t, id); got["status"] != "working" || !strings.Contains(got["statusMessage"].(string), "0 of 4") {
		t.Fatalf("tasks/get from the second process = %v", got)
	}
	status, m := f.modernCall(t, allScopes, true, "tasks/cancel", id, `"taskId":"`+id+`"`)
	if status != 200 || m["result"] == nil || f.getTask(t, id)["status"] != "cancelled" {
		t.Fatalf("tasks/cancel from the second process: %d %v", status, m)
	}
}

// TestTaskMethodsNeedTheExtension: tasks/get, tasks/update and tasks/cancel of a request that does
// not declare io.modelcontextprotocol/tasks are -32021 (missing required client capability, 400)
// naming the extension, as the extension and the conformance suite's
// sep-2663-tasks-methods-non-declaring ask; tasks/update of a task is an empty acknowledgement (a
// scan never waits for input), of an unknown one -32602.
func TestTaskMethodsNeedTheExtension(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			id := f.startTask(t)["taskId"].(string)
			for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
				status, m := f.modernCall(t, allScopes, false, method, id, `"taskId":"`+id+`","inputResponses":{}`)
				e, _ := m["error"].(map[string]any)
				data, _ := json.Marshal(e["data"])
				if status != 400 || errCode(m) != CodeMissingClientCapability || string(data) != `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` {
					t.Errorf("%s without the extension: %d %v", method, status, m)
				}
			}
			status, m := f.modernCall(t, allScopes, true, "tasks/update", id, `"taskId":"`+id+`","inputResponses":{}`)
			if r, _ := m["result"].(map[string]any); status != 200 || r == nil || r["resultType"] != "complete" || r["taskId"] != nil {
				t.Errorf("tasks/update: %d %v", status, m)
			}
			unknown := store.NewID()
			if status, m := f.modernCall(t, allScopes, true, "tasks/update", unknown, `"taskId":"`+unknown+`","inputResponses":{}`); status != 200 || errCode(m) != CodeInvalidParams {
				t.Errorf("tasks/update of an unknown task: %d %v", status, m)
			}
			if got := f.getTask(t, id); got["status"] != "working" {
				t.Errorf("tasks/update changed the task: %v", got)
			}
		})
	}
}
