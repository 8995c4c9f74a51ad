package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// send posts body with the given MCP headers (name: value, "" values left out) as userID and
// returns the status and the decoded answer (nil for 202).
func (f *fixture) send(t testing.TB, userID string, headers map[string]string, body string) (int, map[string]any) {
	t.Helper()
	h := http.Header{}
	for k, v := range headers {
		if v != "" {
			h.Set(k, v)
		}
	}
	status, out := f.srv.ServeRequest(allScopes, Request{UserID: userID, Header: h, Body: []byte(body)})
	if out == nil {
		return status, nil
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %s", out)
	}
	return status, m
}

// modernMeta is the _meta a 2026-07-28 client puts on every request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// modern sends a well-formed 2026-07-28 request: headers mirrored from the body.
func (f *fixture) modern(t testing.TB, method, name, params string) (int, map[string]any) {
	t.Helper()
	if params != "" {
		params = "," + params
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{` + modernMeta + params + `}}`
	return f.send(t, f.userID, map[string]string{"MCP-Protocol-Version": ModernVersion, "Mcp-Method": method, "Mcp-Name": name}, body)
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0
	}
	c, _ := e["code"].(float64)
	return c
}

// TestInitializeNegotiates: initialize answers the client's version when it is a legacy version
// spoken here, else 2025-11-25 (2026-07-28 has no initialize, so it is not answered either).
func TestInitializeNegotiates(t *testing.T) {
	f := newFixture(t, memory.New())
	for _, c := range []struct{ asked, want string }{
		{"2025-03-26", "2025-03-26"}, {"2025-06-18", "2025-06-18"}, {"2025-11-25", "2025-11-25"},
		{"2024-11-05", "2025-11-25"}, {"2026-07-28", "2025-11-25"}, {"2099-01-01", "2025-11-25"}, {"", "2025-11-25"},
	} {
		t.Run("asked "+c.asked, func(t *testing.T) {
			status, m := f.send(t, f.userID, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+c.asked+`","capabilities":{}}}`)
			r, _ := m["result"].(map[string]any)
			if status != 200 || r == nil || r["protocolVersion"] != c.want {
				t.Fatalf("status %d, %v; want protocolVersion %s", status, m, c.want)
			}
		})
	}
}

// TestToolListPerVersion: one tool table, shown as each version defines a tool.
func TestToolListPerVersion(t *testing.T) {
	f := newFixture(t, memory.New())
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	cases := []struct {
		version                       string
		title, outputSchema, icons    bool
		resultType, ttlMs, cacheScope bool
	}{
		{"", false, false, false, false, false, false},
		{"2025-03-26", false, false, false, false, false, false},
		{"2025-06-18", true, true, false, false, false, false},
		{"2025-11-25", true, true, true, false, false, false},
		{ModernVersion, true, true, true, true, true, true},
	}
	for _, c := range cases {
		t.Run("version "+c.version, func(t *testing.T) {
			var status int
			var m map[string]any
			if c.version == ModernVersion {
				status, m = f.modern(t, "tools/list", "", "")
			} else {
				status, m = f.send(t, f.userID, map[string]string{"MCP-Protocol-Version": c.version}, list)
			}
			r, _ := m["result"].(map[string]any)
			if status != 200 || r == nil {
				t.Fatalf("status %d, %v", status, m)
			}
			if _, ok := r["resultType"]; ok != c.resultType {
				t.Errorf("resultType present %v, want %v", ok, c.resultType)
			}
			if r["ttlMs"] != nil != c.ttlMs || r["cacheScope"] != nil != c.cacheScope {
				t.Errorf("ttlMs %v cacheScope %v, want present %v", r["ttlMs"], r["cacheScope"], c.ttlMs)
			}
			if c.ttlMs && (r["cacheScope"] != "public" || r["ttlMs"].(float64) < 0) {
				t.Errorf("ttlMs %v cacheScope %v", r["ttlMs"], r["cacheScope"])
			}
			got := r["tools"].([]any)
			want := len(tools)
			if c.version == "" || c.version == "2025-03-26" {
				want = 9 // the interface's nine: start_scan and get_scan start at 2025-06-18
			}
			if len(got) != want {
				t.Fatalf("%d tools, want %d", len(got), want)
			}
			for i, x := range got {
				tl := x.(map[string]any)
				if tl["name"] != tools[i].Name { // deterministic: the table's order
					t.Errorf("tool %d is %v, want %s", i, tl["name"], tools[i].Name)
				}
				if _, ok := tl["title"]; ok != c.title {
					t.Errorf("%s: title present %v", tools[i].Name, ok)
				}
				if _, ok := tl["icons"]; ok != c.icons {
					t.Errorf("%s: icons present %v", tools[i].Name, ok)
				}
				os, ok := tl["outputSchema"].(map[string]any)
				if ok != c.outputSchema || ok && os["type"] != "object" {
					t.Errorf("%s: outputSchema %v", tools[i].Name, tl["outputSchema"])
				}
				ann, _ := tl["annotations"].(map[string]any)
				if ann["readOnlyHint"] != tools[i].ReadOnly {
					t.Errorf("%s: annotations %v", tools[i].Name, ann)
				}
			}
		})
	}
}

// TestBatchesPerVersion: batches were removed by 2025-06-18; a 2025-03-26 client keeps them.
func TestBatchesPerVersion(t *testing.T) {
	f := newFixture(t, memory.New())
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`
	for _, c := range []struct {
		version string
		status  int
	}{{"", 200}, {"2024-11-05", 200}, {"2025-03-26", 200}, {"2025-06-18", 400}, {"2025-11-25", 400}, {ModernVersion, 400}, {"2099-01-01", 400}} {
		t.Run("version "+c.version, func(t *testing.T) {
			h := http.Header{}
			if c.version != "" {
				h.Set("MCP-Protocol-Version", c.version)
			}
			status, out := f.srv.ServeRequest(allScopes, Request{UserID: f.userID, Header: h, Body: []byte(batch)})
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, out)
			}
			if c.status == 200 {
				var arr []any
				if json.Unmarshal(out, &arr) != nil || len(arr) != 2 {
					t.Fatalf("want an array of two answers, got %s", out)
				}
				return
			}
			var m map[string]any
			json.Unmarshal(out, &m)
			if errCode(m) != CodeInvalidRequest || m["id"] != nil {
				t.Fatalf("want -32600 with a null id, got %s", out)
			}
		})
	}
}

// TestInvalidArgumentsPerVersion: up to 2025-06-18 invalid arguments are a -32602 error; from
// 2025-11-25 a tool execution error with the same words. An unknown tool stays -32602.
func TestInvalidArgumentsPerVersion(t *testing.T) {
	f := newFixture(t, memory.New())
	bad := []struct{ name, args, msg string }{
		{"missing", `{}`, "Invalid arguments: siteId is required"},
		{"out of range", `{"siteId":"` + f.demo.SiteID + `","limit":51}`, "Invalid arguments: limit must be at most 50, got 51"},
		{"mistyped", `{"siteId":7}`, "Invalid arguments: siteId must be a string, got a number"},
		{"not an object", `[1]`, "Invalid arguments: arguments must be an object"},
	}
	for _, version := range []string{"", "2025-03-26", "2025-06-18", "2025-11-25", ModernVersion} {
		for _, b := range bad {
			t.Run(version+" "+b.name, func(t *testing.T) {
				var status int
				var m map[string]any
				params := `"name":"get_trend","arguments":` + b.args
				if version == ModernVersion {
					status, m = f.modern(t, "tools/call", "get_trend", params)
				} else {
					status, m = f.send(t, f.userID, map[string]string{"MCP-Protocol-Version": version},
						`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{`+params+`}}`)
				}
				if status != 200 {
					t.Fatalf("status %d: %v", status, m)
				}
				if version == "" || version < "2025-11-25" {
					e, _ := m["error"].(map[string]any)
					if errCode(m) != CodeInvalidParams || e["message"] != b.msg {
						t.Fatalf("want -32602 %q, got %v", b.msg, m)
					}
					return
				}
				r, _ := m["result"].(map[string]any)
				if r == nil || r["isError"] != true || textOf(t, r) != b.msg || r["structuredContent"] != nil {
					t.Fatalf("want a tool error %q, got %v", b.msg, m)
				}
			})
		}
		t.Run(version+" unknown tool", func(t *testing.T) {
			var m map[string]any
			params := `"name":"drop_tables","arguments":{}`
			if version == ModernVersion {
				_, m = f.modern(t, "tools/call", "drop_tables", params)
			} else {
				_, m = f.send(t, f.userID, map[string]string{"MCP-Protocol-Version": version}, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{`+params+`}}`)
			}
			if errCode(m) != CodeInvalidParams {
				t.Fatalf("want -32602, got %v", m)
			}
		})
	}
}

// TestModernRequestRules: the 2026-07-28 rules for _meta, headers, versions and methods, each
// with its HTTP status and code, the request's id echoed.
func TestModernRequestRules(t *testing.T) {
	f := newFixture(t, memory.New())
	meta := func(pv, caps string) string {
		m := map[string]json.RawMessage{}
		if pv != "" {
			m["io.modelcontextprotocol/protocolVersion"] = json.RawMessage(pv)
		}
		if caps != "" {
			m["io.modelcontextprotocol/clientCapabilities"] = json.RawMessage(caps)
		}
		b, _ := json.Marshal(m)
		return `"_meta":` + string(b)
	}
	good := meta(`"2026-07-28"`, `{}`)
	hdr := func(pv, method, name string) map[string]string {
		return map[string]string{"MCP-Protocol-Version": pv, "Mcp-Method": method, "Mcp-Name": name}
	}
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{` + params + `}}`
	}
	discover := func(params string) string {
		return `{"jsonrpc":"2.0","id":"r1","method":"server/discover","params":{` + params + `}}`
	}
	b64 := "=?base64?" + base64.StdEncoding.EncodeToString([]byte("list_sites")) + "?="
	cases := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		code    float64
	}{
		{"discover", hdr(ModernVersion, "server/discover", ""), discover(good), 200, 0},
		{"discover without clientInfo is served", hdr(ModernVersion, "server/discover", ""), discover(good), 200, 0},
		{"no params at all", hdr(ModernVersion, "server/discover", ""), `{"jsonrpc":"2.0","id":"r1","method":"server/discover"}`, 400, CodeInvalidParams},
		{"no _meta", hdr(ModernVersion, "server/discover", ""), discover(`"x":1`), 400, CodeInvalidParams},
		{"_meta without protocolVersion", hdr(ModernVersion, "server/discover", ""), discover(meta("", `{}`)), 400, CodeInvalidParams},
		{"_meta without clientCapabilities", hdr(ModernVersion, "server/discover", ""), discover(meta(`"2026-07-28"`, "")), 400, CodeInvalidParams},
		{"clientCapabilities not an object", hdr(ModernVersion, "server/discover", ""), discover(meta(`"2026-07-28"`, `[]`)), 400, CodeInvalidParams},
		{"protocolVersion not a string", hdr(ModernVersion, "server/discover", ""), discover(meta(`20260728`, `{}`)), 400, CodeInvalidParams},
		{"params an array", hdr(ModernVersion, "server/discover", ""), `{"jsonrpc":"2.0","id":"r1","method":"server/discover","params":[]}`, 400, CodeInvalidParams},
		{"no MCP-Protocol-Version header", hdr("", "server/discover", ""), discover(good), 400, CodeHeaderMismatch},
		{"MCP-Protocol-Version differs from _meta", hdr(ModernVersion, "server/discover", ""), discover(meta(`"v999.0.0"`, `{}`)), 400, CodeHeaderMismatch},
		{"unsupported version", hdr("v999.0.0", "server/discover", ""), discover(meta(`"v999.0.0"`, `{}`)), 400, CodeUnsupportedProtocolVersion},
		{"no Mcp-Method", hdr(ModernVersion, "", ""), discover(good), 400, CodeHeaderMismatch},
		{"Mcp-Method differs", hdr(ModernVersion, "tools/list", ""), discover(good), 400, CodeHeaderMismatch},
		{"Mcp-Method differs in case", hdr(ModernVersion, "Server/Discover", ""), discover(good), 400, CodeHeaderMismatch},
		{"tools/call", hdr(ModernVersion, "tools/call", "list_sites"), call(good + `,"name":"list_sites"`), 200, 0},
		{"tools/call with a base64 Mcp-Name", hdr(ModernVersion, "tools/call", b64), call(good + `,"name":"list_sites"`), 200, 0},
		{"tools/call without Mcp-Name", hdr(ModernVersion, "tools/call", ""), call(good + `,"name":"list_sites"`), 400, CodeHeaderMismatch},
		{"tools/call with another Mcp-Name", hdr(ModernVersion, "tools/call", "get_trend"), call(good + `,"name":"list_sites"`), 400, CodeHeaderMismatch},
		{"tools/call with a broken base64 Mcp-Name", hdr(ModernVersion, "tools/call", "=?base64?!!?="), call(good + `,"name":"list_sites"`), 400, CodeHeaderMismatch},
		{"unknown method", hdr(ModernVersion, "unknown/method", ""), `{"jsonrpc":"2.0","id":"r1","method":"unknown/method","params":{` + good + `}}`, 404, CodeMethodNotFound},
		{"initialize is not a modern method", hdr(ModernVersion, "initialize", ""), `{"jsonrpc":"2.0","id":"r1","method":"initialize","params":{` + good + `}}`, 404, CodeMethodNotFound},
		{"ping was removed", hdr(ModernVersion, "ping", ""), `{"jsonrpc":"2.0","id":"r1","method":"ping","params":{` + good + `}}`, 404, CodeMethodNotFound},
		{"prompts/list is not offered", hdr(ModernVersion, "prompts/list", ""), `{"jsonrpc":"2.0","id":"r1","method":"prompts/list","params":{` + good + `}}`, 404, CodeMethodNotFound},
		{"invalid envelope", hdr(ModernVersion, "server/discover", ""), `{"jsonrpc":"1.0","id":"r1","method":"server/discover","params":{` + good + `}}`, 400, CodeInvalidRequest},
		{"_meta version without the header is still modern", hdr("", "server/discover", ""), discover(meta(`"2027-01-01"`, `{}`)), 400, CodeHeaderMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, m := f.send(t, f.userID, c.headers, c.body)
			if status != c.status || errCode(m) != c.code {
				t.Fatalf("status %d code %v, want %d %v: %v", status, errCode(m), c.status, c.code, m)
			}
			if m["id"] != "r1" {
				t.Errorf("id %v, want r1", m["id"])
			}
			if c.code == CodeUnsupportedProtocolVersion {
				data := m["error"].(map[string]any)["data"].(map[string]any)
				if fmt.Sprint(data["supported"]) != fmt.Sprint(SupportedVersions) || data["requested"] != "v999.0.0" {
					t.Errorf("data %v", data)
				}
			}
			if c.code != 0 {
				return
			}
			r := m["result"].(map[string]any)
			info, _ := r["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"].(map[string]any)
			if r["resultType"] != "complete" || info["name"] != ServerName || info["version"] != ServerVersion {
				t.Errorf("result %v", r)
			}
		})
	}
	t.Run("a notification is 202", func(t *testing.T) {
		status, m := f.send(t, f.userID, hdr(ModernVersion, "notifications/cancelled", ""), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{`+good+`}}`)
		if status != 202 || m != nil {
			t.Fatalf("status %d %v", status, m)
		}
	})
	t.Run("discover names versions, capabilities, instructions and cache hints", func(t *testing.T) {
		_, m := f.modern(t, "server/discover", "", "")
		r := m["result"].(map[string]any)
		if fmt.Sprint(r["supportedVersions"]) != fmt.Sprint(SupportedVersions) || r["instructions"] == "" || r["cacheScope"] != "public" ||
			r["ttlMs"] == nil || r["capabilities"].(map[string]any)["tools"] == nil {
			t.Errorf("discover = %v", r)
		}
	})
}

// TestVersionsNotSpokenFailAsBefore: a legacy-looking request with an MCP-Protocol-Version this
// server does not speak is refused as it always was (400, -32600), so a client falls back.
func TestVersionsNotSpokenFailAsBefore(t *testing.T) {
	f := newFixture(t, memory.New())
	for _, v := range []string{"1999-01-01", "2025-01-01", "2026-07-29"} {
		status, m := f.send(t, f.userID, map[string]string{"MCP-Protocol-Version": v}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if status != 400 || errCode(m) != CodeInvalidRequest {
			t.Errorf("%s: status %d %v", v, status, m)
		}
	}
}

// edgeSite gives the demo user a site whose only completed scan has one page with no scores, no
// vitals and no CrUX data (nil everywhere) and one page whose audit failed, and a site with no
// scan at all.
func edgeSite(t testing.TB, f *fixture) (siteID, scanID, emptySiteID string) {
	t.Helper()
	ctx := context.Background()
	site := store.Site{ID: store.NewID(), UserID: f.userID, Name: "Edge <Site> & co", Domain: "edge.test", CreatedAt: f.now}
	empty := store.Site{ID: store.NewID(), UserID: f.userID, Name: "Never scanned", Domain: "never.test", CreatedAt: f.now}
	for _, s := range []store.Site{site, empty} {
		if err := f.st.CreateSite(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyMobile, Trigger: store.TriggerManual, CreatedAt: f.now}
	if err := f.st.EnqueueScan(ctx, scan, "edge", f.now); err != nil {
		t.Fatal(err)
	}
	job, err := f.st.ClaimJob(ctx, "edge", "edge", f.now, 0)
	if err != nil {
		t.Fatal(err)
	}
	l := job.Lease()
	if err := f.st.StartScan(ctx, l, 2, f.now); err != nil {
		t.Fatal(err)
	}
	bare := store.PageResult{PagePath: "/bare", PageURL: "https://edge.test/bare", Strategy: store.StrategyMobile}
	if err := f.st.SavePageResult(ctx, l, bare); err != nil {
		t.Fatal(err)
	}
	if err := f.st.SavePageError(ctx, l, store.PageError{PagePath: "/broken", PageURL: "https://edge.test/broken", Strategy: store.StrategyMobile, Error: "PSI: 500"}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.CompleteScan(ctx, l, analysis.ScanScores([]store.PageResult{bare}), f.now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return site.ID, scan.ID, empty.ID
}

// everyCall is each tool called on the demo data and on the edge data.
func everyCall(f *fixture, edgeSiteID, edgeScanID, emptySiteID string) []struct {
	tool string
	args map[string]any
} {
	type c = struct {
		tool string
		args map[string]any
	}
	var out []c
	for _, site := range []string{f.demo.SiteID, edgeSiteID, emptySiteID} {
		out = append(out, c{"get_latest_scan", map[string]any{"siteId": site}}, c{"get_third_party_scripts", map[string]any{"siteId": site}},
			c{"get_accessibility_issues", map[string]any{"siteId": site}}, c{"get_regression_report", map[string]any{"siteId": site}},
			c{"get_trend", map[string]any{"siteId": site}})
	}
	for _, scan := range []string{f.latestID, f.previousID, edgeScanID} {
		out = append(out, c{"get_page_details", map[string]any{"scanId": scan}}, c{"get_page_details", map[string]any{"scanId": scan, "strategy": "desktop"}},
			c{"get_lcp_elements", map[string]any{"scanId": scan}}, c{"generate_client_report", map[string]any{"scanId": scan}})
	}
	out = append(out, c{"compare_scans", map[string]any{"fromScanId": f.previousID, "toScanId": f.latestID}},
		c{"compare_scans", map[string]any{"fromScanId": f.previousID, "toScanId": f.latestID, "pagePath": "/", "strategy": "mobile"}})
	out = append(out, c{"list_sites", map[string]any{}}, c{"get_page_details", map[string]any{"scanId": edgeScanID, "pagePath": "/bare"}},
		c{"get_page_details", map[string]any{"scanId": edgeScanID, "pagePath": "/broken"}})
	return out
}

// TestStructuredContentMatchesOutputSchema: from 2025-06-18 every successful call carries
// structuredContent equal to its JSON text and valid against the tool's outputSchema from
// tools/list, which declares every field (additionalProperties false): on the demo data and on
// edge data (no scan, a failed page, null CrUX, null scores).
func TestStructuredContentMatchesOutputSchema(t *testing.T) {
	f := newFixture(t, memory.New())
	edge, edgeScan, empty := edgeSite(t, f)
	for _, version := range []string{"2025-06-18", "2025-11-25", ModernVersion} {
		t.Run(version, func(t *testing.T) {
			schemas := map[string]map[string]any{}
			var list map[string]any
			if version == ModernVersion {
				_, list = f.modern(t, "tools/list", "", "")
			} else {
				_, list = f.send(t, f.userID, map[string]string{"MCP-Protocol-Version": version}, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			}
			for _, x := range list["result"].(map[string]any)["tools"].([]any) {
				tl := x.(map[string]any)
				schemas[tl["name"].(string)] = tl["outputSchema"].(map[string]any)
			}
			successes := 0
			for _, c := range everyCall(f, edge, edgeScan, empty) {
				args, _ := json.Marshal(c.args)
				params := `"name":"` + c.tool + `","arguments":` + string(args)
				var status int
				var m map[string]any
				if version == ModernVersion {
					status, m = f.modern(t, "tools/call", c.tool, params)
				} else {
					status, m = f.send(t, f.userID, map[string]string{"MCP-Protocol-Version": version}, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{`+params+`}}`)
				}
				r, _ := m["result"].(map[string]any)
				if status != 200 || r == nil {
					t.Fatalf("%s %s: status %d %v", c.tool, args, status, m)
				}
				if r["isError"] == true {
					if r["structuredContent"] != nil {
						t.Errorf("%s %s: a tool error with structuredContent", c.tool, args)
					}
					continue
				}
				successes++
				content := r["content"].([]any)
				var fromText any
				json.Unmarshal([]byte(content[0].(map[string]any)["text"].(string)), &fromText)
				if _, ok := reflect.Zero(toolIndex[c.tool].Handler.Output).Interface().(summarizer); ok {
					if text := content[0].(map[string]any)["text"].(string); fromText != nil || text == "" {
						t.Errorf("%s %s: the text is not a summary in words: %.200s", c.tool, args, text)
					}
				} else if !reflect.DeepEqual(fromText, r["structuredContent"]) {
					t.Errorf("%s %s: structuredContent is not the text's JSON", c.tool, args)
				}
				if problem := conforms(schemas[c.tool], r["structuredContent"], "$"); problem != "" {
					t.Errorf("%s %s: structuredContent does not match its outputSchema: %s", c.tool, args, problem)
				}
				wantLinks := 0
				if c.tool == "generate_client_report" {
					wantLinks = 1
				}
				if len(content) != 1+wantLinks {
					t.Errorf("%s: %d content items, want %d", c.tool, len(content), 1+wantLinks)
				}
				if wantLinks == 1 {
					link := content[1].(map[string]any)
					if link["type"] != "resource_link" || link["uri"] != r["structuredContent"].(map[string]any)["url"] || link["name"] == "" {
						t.Errorf("resource_link = %v", link)
					}
				}
			}
			if successes < 20 {
				t.Errorf("only %d successful calls: the edge data is not exercised", successes)
			}
		})
	}
}

// TestConformsCatchesUndeclaredFields proves the check above has teeth: a payload with a field
// its schema does not declare, a missing required field, or a wrong type is caught.
func TestConformsCatchesUndeclaredFields(t *testing.T) {
	schema := outputSchema(reflect.TypeFor[clientReport]())
	ok := map[string]any{"url": "u", "token": "t", "expiresInDays": 3.0}
	if p := conforms(schema, ok, "$"); p != "" {
		t.Fatalf("a good payload fails: %s", p)
	}
	for name, bad := range map[string]map[string]any{
		"undeclared field": {"url": "u", "token": "t", "expiresInDays": 3.0, "secret": "x"},
		"missing field":    {"url": "u", "token": "t"},
		"wrong type":       {"url": "u", "token": "t", "expiresInDays": "3"},
		"not an integer":   {"url": "u", "token": "t", "expiresInDays": 3.5},
	} {
		if conforms(schema, bad, "$") == "" {
			t.Errorf("%s: not caught", name)
		}
	}
}

// TestOutputSchemasDeclareEveryPayloadField: each tool's outputSchema is derived from the type
// its handler returns, so a field added to a payload type appears in the schema; every nested
// object is closed, so a payload cannot carry what the schema does not name.
func TestOutputSchemasDeclareEveryPayloadField(t *testing.T) {
	for _, tl := range tools {
		s := outputSchema(tl.Handler.Output)
		if s["type"] != "object" {
			t.Errorf("%s: outputSchema type %v, want object", tl.Name, s["type"])
		}
		var walk func(s map[string]any, path string)
		walk = func(s map[string]any, path string) {
			if props, ok := s["properties"].(map[string]any); ok {
				if s["additionalProperties"] != false {
					t.Errorf("%s %s: an object that is not closed", tl.Name, path)
				}
				for k, v := range props {
					walk(v.(map[string]any), path+"."+k)
				}
			}
			if items, ok := s["items"].(map[string]any); ok {
				walk(items, path+"[]")
			}
		}
		walk(s, tl.Name)
		fields := jsonFields(tl.Handler.Output)
		props := s["properties"].(map[string]any)
		if len(fields) != len(props) {
			t.Errorf("%s: %d JSON fields, %d properties", tl.Name, len(fields), len(props))
		}
	}
}

// conforms checks v against the JSON Schema subset outputSchema writes and returns the first
// problem, or "".
func conforms(s map[string]any, v any, path string) string {
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []string:
		types = t
	case []any:
		for _, x := range t {
			types = append(types, x.(string))
		}
	case nil:
		return "" // any value
	}
	got := "object"
	switch x := v.(type) {
	case nil:
		got = "null"
	case bool:
		got = "boolean"
	case string:
		got = "string"
	case float64:
		got = "number"
		if x == math.Trunc(x) && slices.Contains(types, "integer") {
			got = "integer"
		}
	case []any:
		got = "array"
	}
	if !slices.Contains(types, got) {
		return fmt.Sprintf("%s is %s, want %s", path, got, strings.Join(types, " or "))
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asStrings(s["required"]) {
			if _, ok := x[r]; !ok {
				return fmt.Sprintf("%s.%s is required but missing", path, r)
			}
		}
		for k, val := range x {
			if p, ok := props[k]; ok {
				if problem := conforms(p.(map[string]any), val, path+"."+k); problem != "" {
					return problem
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Sprintf("%s.%s is not declared by the schema", path, k)
				}
			case map[string]any:
				if problem := conforms(ap, val, path+"."+k); problem != "" {
					return problem
				}
			}
		}
	case []any:
		if items, ok := s["items"].(map[string]any); ok {
			for i, val := range x {
				if problem := conforms(items, val, fmt.Sprintf("%s[%d]", path, i)); problem != "" {
					return problem
				}
			}
		}
	}
	return ""
}

func asStrings(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, s := range x {
			out = append(out, s.(string))
		}
		return out
	}
	return nil
}

// BenchmarkToolsCallPerVersion measures one tools/call (get_page_details, the largest payload)
// through ServeRequest in each era on the memory store: what the typed envelope (structuredContent
// beside the text, and for 2026-07-28 the _meta and header checks) costs over 2025-03-26's.
func BenchmarkToolsCallPerVersion(b *testing.B) {
	f := newFixture(b, memory.New())
	params := `"name":"get_page_details","arguments":{"scanId":"` + f.latestID + `"}`
	for _, version := range []string{"2025-03-26", "2025-06-18", "2025-11-25", ModernVersion} {
		b.Run(version, func(b *testing.B) {
			h := http.Header{"Mcp-Protocol-Version": {version}}
			body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + params + `}}`
			if version == ModernVersion {
				h.Set("Mcp-Method", "tools/call")
				h.Set("Mcp-Name", "get_page_details")
				body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + modernMeta + `,` + params + `}}`
			}
			req := Request{UserID: f.userID, Header: h, Body: []byte(body)}
			b.ReportAllocs()
			for b.Loop() {
				if status, out := f.srv.ServeRequest(allScopes, req); status != 200 {
					b.Fatalf("status %d: %s", status, out)
				}
			}
		})
	}
}

// BenchmarkGetLatestScanRequest is the request of the side-by-side load runs
// (.ci/mcp-vs-lhci.sh): get_latest_scan with no MCP-Protocol-Version header, whole, through
// ServeRequest (JSON-RPC decoding, the era, arguments, the store read, encoding), on the
// memory store (the service's own CPU) and on Postgres (with DATABASE_URL).
func BenchmarkGetLatestScanRequest(b *testing.B) {
	for _, name := range []string{"memory", "postgres"} {
		b.Run(name, func(b *testing.B) {
			var st store.Store = memory.New()
			if name == "postgres" {
				st = storetest.Postgres(b)
			}
			f := newFixture(b, st)
			req := Request{UserID: f.userID, Header: http.Header{},
				Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"` + f.demo.SiteID + `"}}}`)}
			b.ReportAllocs()
			for b.Loop() {
				if status, out := f.srv.ServeRequest(allScopes, req); status != 200 {
					b.Fatalf("status %d: %s", status, out)
				}
			}
		})
	}
}

// TestIsModernWithoutDecoding holds isModern's shortcut (a body without a backslash and without
// the reserved key is legacy, undecoded) to what the full decode answers, escaped keys included.
func TestIsModernWithoutDecoding(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + ModernVersion + `"}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"` + ModernVersion + `"}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"\u005fmeta":{"io.modelcontextprotocol\u002fprotocolVersion":"2099-01-01"}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\"b"}}`, false},
	} {
		if got := isModern("", []byte(c.body)); got != c.want {
			t.Errorf("isModern(%s) = %v, want %v", c.body, got, c.want)
		}
	}
}
