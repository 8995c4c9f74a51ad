package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// An MCP task outlives the process that created it: a 2026-07-28 client declaring the tasks
// extension starts a scan with start_scan on one process, which is killed (SIGKILL) mid-scan; a
// second process answers tasks/get for the same task id (the scan row), first working, then
// completed with exactly what its get_latest_scan returns, once it has finished the scan.
func TestSystemTaskSurvivesAKill(t *testing.T) {
	if runAsChild() {
		return
	}
	ctx := context.Background()
	st, dsn := storetest.PostgresDSN(t)
	psi := scantest.NewPSI(t, "testdata/psi")
	psi.Delay(150 * time.Millisecond)
	user := store.User{ID: store.NewID(), Email: "task@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "Sample", Domain: "sample.test", Pages: scantest.SamplePages(), CreatedAt: time.Now()}
	key, hash := store.NewSecret("svc_")
	for _, err := range []error{st.CreateUser(ctx, user), st.CreateSite(ctx, site),
		st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: user.ID, Name: "agent", KeyHash: hash, Prefix: key[:12], Scope: store.ScopeAll, CreatedAt: time.Now()})} {
		if err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"DATABASE_URL": dsn, "PAGESPEED_API_URL": psi.Endpoint(), "SCAN_WORKERS": "1", "PSI_MAX_INFLIGHT": "2"}

	// mcp sends one 2026-07-28 request declaring the tasks extension and returns its result.
	mcp := func(c *child, method, name, params string) map[string]any {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},` + params + `}}`
		req, _ := http.NewRequest("POST", c.base+"/api/mcp", bytes.NewBufferString(body))
		for k, v := range map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m struct{ Result map[string]any }
		if json.Unmarshal(b, &m) != nil || resp.StatusCode != 200 || m.Result == nil {
			t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
		}
		return m.Result
	}

	first := startChild(t, "first", env)
	task := mcp(first, "tools/call", "start_scan", `"name":"start_scan","arguments":{"siteId":"`+site.ID+`"}`)
	id, _ := task["taskId"].(string)
	if task["resultType"] != "task" || id == "" {
		t.Fatalf("start_scan: %v", task)
	}
	if !storetest.Eventually(func() bool {
		sc, err := st.Scan(ctx, user.ID, id)
		return err == nil && sc.PagesDone >= 2
	}) {
		t.Fatalf("the first process stored no pages:\n%s", first.log)
	}
	first.kill() // SIGKILL: no shutdown, no lease released
	if sc, _ := st.Scan(ctx, user.ID, id); sc.Status == store.StatusComplete {
		t.Fatal("the scan finished before the kill")
	}

	second := startChild(t, "second", env)
	if got := mcp(second, "tasks/get", id, `"taskId":"`+id+`"`); got["taskId"] != id || got["status"] != "working" {
		t.Fatalf("tasks/get from the second process right after the kill: %v", got)
	}
	// The dead process's lease lapses; the rescuer of any process returns the job to the queue.
	if n, err := st.RescueJobs(ctx, time.Now().Add(time.Hour), time.Now()); err != nil || n != 1 {
		t.Fatalf("rescued %d jobs: %v", n, err)
	}
	var got map[string]any
	if !storetest.Eventually(func() bool {
		got = mcp(second, "tasks/get", id, `"taskId":"`+id+`"`)
		return got["status"] != "working"
	}) || got["status"] != "completed" {
		t.Fatalf("task = %v:\n%s", got, second.log)
	}
	latest := mcp(second, "tools/call", "get_latest_scan", `"name":"get_latest_scan","arguments":{"siteId":"`+site.ID+`"}`)
	a, _ := json.Marshal(got["result"])
	b, _ := json.Marshal(latest)
	if string(a) != string(b) {
		t.Fatalf("completed task result\n%s\nwant get_latest_scan's\n%s", a, b)
	}
	second.stop(t)
}
