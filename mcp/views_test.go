package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sitepulse/handlers/svg"
	"sitepulse/store"
	"sitepulse/store/memory"
)

// TestViewsLinkedAndServed: from 2025-06-18 on initialize (and 2026-07-28's server/discover)
// declares resources and the MCP Apps extension; get_latest_scan, get_trend and
// get_regression_report and compare_scans name a ui:// view in _meta.ui.resourceUri,
// resources/list lists the five and resources/read serves each as text/html;profile=mcp-app with an empty csp. An
// unknown uri is -32002 (legacy) or -32602 (2026-07-28).
func TestViewsLinkedAndServed(t *testing.T) {
	f := newFixture(t, memory.New())
	h := map[string]string{"MCP-Protocol-Version": "2025-11-25"}
	_, init := f.send(t, f.userID, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
	caps := init["result"].(map[string]any)["capabilities"].(map[string]any)
	if caps["resources"] == nil || caps["extensions"].(map[string]any)[extUI] == nil {
		t.Fatalf("initialize capabilities = %v", caps)
	}
	_, disc := f.modern(t, "server/discover", "", "")
	dcaps := disc["result"].(map[string]any)["capabilities"].(map[string]any)
	if dcaps["resources"] == nil || dcaps["extensions"].(map[string]any)[extUI] == nil || dcaps["extensions"].(map[string]any)[extTasks] == nil {
		t.Fatalf("server/discover capabilities = %v", dcaps)
	}
	_, list := f.send(t, f.userID, h, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	linked := map[string]string{}
	for _, x := range list["result"].(map[string]any)["tools"].([]any) {
		tl := x.(map[string]any)
		if meta, ok := tl["_meta"].(map[string]any); ok {
			linked[tl["name"].(string)] = meta["ui"].(map[string]any)["resourceUri"].(string)
		}
	}
	want := map[string]string{"get_latest_scan": "ui://sitepulse/latest-scan", "get_trend": "ui://sitepulse/trend", "get_regression_report": "ui://sitepulse/regressions",
		"compare_scans": "ui://sitepulse/compare", "get_field_data": "ui://sitepulse/field"}
	if len(linked) != 5 {
		t.Fatalf("tools with a view: %v", linked)
	}
	_, rl := f.send(t, f.userID, h, `{"jsonrpc":"2.0","id":3,"method":"resources/list"}`)
	if n := len(rl["result"].(map[string]any)["resources"].([]any)); n != 5 {
		t.Fatalf("resources/list: %v", rl)
	}
	for tool, uri := range want {
		if linked[tool] != uri {
			t.Errorf("%s links %q, want %q", tool, linked[tool], uri)
		}
		_, rr := f.send(t, f.userID, h, `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"`+uri+`"}}`)
		c := rr["result"].(map[string]any)["contents"].([]any)[0].(map[string]any)
		html := c["text"].(string)
		csp := c["_meta"].(map[string]any)["ui"].(map[string]any)["csp"].(map[string]any)
		if c["mimeType"] != "text/html;profile=mcp-app" || len(csp) != 0 || !strings.HasPrefix(html, "<!doctype html>") {
			t.Errorf("%s: %v", uri, c["mimeType"])
		}
		// Self-contained: the shared style and host script inlined, nothing to fetch.
		for _, bad := range []string{"/*STYLE*/", "/*BRIDGE*/", "src=", "href=", "http://", "https://", "fetch(", "XMLHttpRequest", "import ", "WebSocket", "EventSource", "sendBeacon", "url("} {
			if strings.Contains(html, bad) {
				t.Errorf("%s contains %q", uri, bad)
			}
		}
		for _, need := range []string{"ui/initialize", "ui/notifications/tool-result", "ui/notifications/size-changed", "host-context-changed", "default-src 'none'"} {
			if !strings.Contains(html, need) {
				t.Errorf("%s lacks %q", uri, need)
			}
		}
	}
	// The compare view draws pictures: from data: URIs only, which its policy allows and nothing else.
	_, rr := f.send(t, f.userID, h, `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"ui://sitepulse/compare"}}`)
	html := rr["result"].(map[string]any)["contents"].([]any)[0].(map[string]any)["text"].(string)
	for _, need := range []string{`content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"`, `/^data:image\/(jpeg|png|webp);base64,`} {
		if !strings.Contains(html, need) {
			t.Errorf("the compare view lacks %q", need)
		}
	}
	status, rr := f.send(t, f.userID, h, `{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"ui://sitepulse/nope"}}`)
	if status != 200 || errCode(rr) != CodeResourceNotFound {
		t.Errorf("legacy unknown resource: %d %v", status, rr)
	}
	if _, m := f.modern(t, "resources/read", "ui://sitepulse/nope", `"uri":"ui://sitepulse/nope"`); errCode(m) != CodeInvalidParams {
		t.Errorf("modern unknown resource: %v", m)
	}
	if _, m := f.modern(t, "resources/read", "ui://sitepulse/trend", `"uri":"ui://sitepulse/trend"`); m["result"] == nil {
		t.Errorf("modern resources/read: %v", m)
	}
}

// TestViewData: the results the views draw carry, in _meta, what the payload lacks: the
// latest scan's pages and failed pages, and the trend chart drawn by the web UI's chart code.
func TestViewData(t *testing.T) {
	f := newFixture(t, memory.New())
	edge, _, _ := edgeSite(t, f)
	meta := func(tool, site string) map[string]any {
		r := f.call2025(t, allScopes, tool, map[string]any{"siteId": site})
		m, _ := r["_meta"].(map[string]any)
		return m[metaView].(map[string]any)
	}
	v := meta("get_latest_scan", edge)
	pages, failed := v["pages"].([]any), v["failed"].([]any)
	if len(pages) != 1 || len(failed) != 1 || failed[0].(map[string]any)["error"] != "PSI: 500" {
		t.Fatalf("latest view data = %v", v)
	}
	tr := meta("get_trend", f.demo.SiteID)
	scans, err := f.st.CompletedScans(context.Background(), f.userID, f.demo.SiteID, 20)
	if err != nil {
		t.Fatal(err)
	}
	var at []time.Time
	var scores []store.ScanScores
	for i := len(scans) - 1; i >= 0; i-- { // oldest first, at the second the payload carries
		at, scores = append(at, scans[i].CompletedAt.Truncate(time.Second)), append(scores, scans[i].Scores)
	}
	// The demo's publish (by Ana, an hour ago) is marked as the site page marks it.
	pubs, err := f.st.Publishes(context.Background(), f.userID, f.demo.SiteID, at[0], 50)
	if err != nil || len(pubs) != 1 {
		t.Fatalf("publishes %v, %v", pubs, err)
	}
	mark := svg.Mark{At: pubs[0].PublishedOn.Truncate(time.Second), Label: pubs[0].Line()}
	if chart := tr["chart"].(string); chart != svg.ScoresChart(at, scores, mark) || !strings.HasPrefix(chart, `<svg class="trend"`) {
		t.Fatalf("trend chart is not the web UI's drawing: %.300s", chart)
	}
	b, _ := json.Marshal(tr["series"])
	if !strings.Contains(string(b), "s-perf") || len(svg.ScoreSeries) != 4 {
		t.Errorf("series = %s", b)
	}
	// 2025-03-26 results stay the interface's: no _meta.
	r := f.tool(t, f.userID, "get_trend", map[string]any{"siteId": f.demo.SiteID})
	if r["_meta"] != nil {
		t.Errorf("2025-03-26 get_trend has _meta")
	}
}

// TestMcpNameOfNewMethods: a 2026-07-28 request's Mcp-Name must mirror params.uri for
// resources/read and params.taskId for tasks/get and tasks/cancel, as it mirrors params.name for
// tools/call (400, -32020), so an intermediary routing by the header never routes wrong.
func TestMcpNameOfNewMethods(t *testing.T) {
	f := newFixture(t, memory.New())
	for _, c := range []struct{ method, field, value string }{
		{"resources/read", "uri", "ui://sitepulse/trend"},
		{"tasks/get", "taskId", f.latestID},
		{"tasks/cancel", "taskId", f.latestID},
	} {
		params := `"` + c.field + `":"` + c.value + `"`
		send := func(name string) (int, map[string]any) { // the tasks methods only for a client declaring the extension
			if c.field == "taskId" {
				return f.modernCall(t, allScopes, true, c.method, name, params)
			}
			return f.modern(t, c.method, name, params)
		}
		if status, m := send("something-else"); status != 400 || errCode(m) != CodeHeaderMismatch {
			t.Errorf("%s with another Mcp-Name: %d %v", c.method, status, m)
		}
		if status, m := send(c.value); status != 200 || m["result"] == nil {
			t.Errorf("%s with its Mcp-Name: %d %v", c.method, status, m)
		}
	}
}

// TestViewDataOnlyForHostsThatDrawIt: a 2026-07-28 request carries its client's capabilities, so
// the view's data (the latest scan's every page, in _meta) rides only on the results of a client
// that declares io.modelcontextprotocol/ui; a legacy request cannot say, and gets it from
// 2025-06-18 on.
func TestViewDataOnlyForHostsThatDrawIt(t *testing.T) {
	f := newFixture(t, memory.New())
	call := func(caps string) map[string]any {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"` + f.demo.SiteID + `"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
		_, m := f.send(t, f.userID, map[string]string{"MCP-Protocol-Version": ModernVersion, "Mcp-Method": "tools/call", "Mcp-Name": "get_latest_scan"}, body)
		return m["result"].(map[string]any)["_meta"].(map[string]any)
	}
	if meta := call(`{}`); meta[metaView] != nil || meta[metaServerInfo] == nil {
		t.Errorf("a client without the ui extension got the view's data: %v", meta)
	}
	if meta := call(`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`); meta[metaView] == nil {
		t.Errorf("a host declaring the ui extension got no view data: %v", meta)
	}
}
