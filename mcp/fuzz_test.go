package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"sitepulse/store/memory"
)

// FuzzServe feeds the JSON-RPC decoder arbitrary bodies as the demo user (id types,
// batches, invalid UTF-8, duplicate keys, type confusion, oversize). Whatever arrives, the answer
// is 200, 202 or 400; 202 has no body; anything else is JSON-RPC 2.0: a response object (or, for
// a batch, an array of them) with a string, number or null id and exactly one of result and
// error; 400 carries only a parse or invalid-request error; nothing is ever an internal error.
func FuzzServe(f *testing.F) {
	fx := newFixture(f, memory.New())
	site, scan := fx.demo.SiteID, fx.latestID
	call := func(name, args string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":-0.5e3,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","method":"tools/list"}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_sites","arguments":"x"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},3,[],null]`,
		`[]`, `[[]]`, `null`, `"x"`, `1`, `{}`, "", "\xff\xfe", `{"jsonrpc":"2.0","id":"\xff","method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\u0000","method":"\u0000"}`,
		call("list_sites", `{}`),
		call("get_latest_scan", `{"siteId":"`+site+`"}`),
		call("get_page_details", `{"scanId":"`+scan+`","pagePath":"/","strategy":"desktop"}`),
		call("get_page_details", `{"scanId":"`+scan+`","pagePath":"/../\u0000"}`),
		call("get_lcp_elements", `{"scanId":"`+scan+`","strategy":"mobile"}`),
		call("get_third_party_scripts", `{"siteId":"`+site+`"}`),
		call("get_accessibility_issues", `{"siteId":"`+site+`","severity":"critical"}`),
		call("get_regression_report", `{"siteId":"`+site+`"}`),
		call("get_trend", `{"siteId":"`+site+`","limit":9223372036854775808}`),
		call("get_trend", `{"siteId":"`+site+`","limit":-1}`),
		call("generate_client_report", `{"scanId":"`+scan+`","title":"t","expiresInDays":1e9}`),
		call("get_latest_scan", `{"siteId":"`+fx.otherSite+`"}`),
		call("get_latest_scan", `{"siteId":"not-a-uuid","siteId":"`+site+`"}`),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		status, out := fx.srv.Serve(allScopes, fx.userID, body)
		checkAnswer(t, body, status, out)
	})
}

// FuzzServeRequest is FuzzServe with the transport headers fuzzed too: the protocol version
// (legacy, modern, unknown), Mcp-Method and Mcp-Name, beside 2026-07-28 bodies with and without
// their _meta. The same answers hold; a modern refusal is 400 (-32602, -32020, -32022) or 404
// (-32601).
func FuzzServeRequest(f *testing.F) {
	fx := newFixture(f, memory.New())
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, s := range []struct{ version, method, name, body string }{
		{"2026-07-28", "server/discover", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`},
		{"2026-07-28", "tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`},
		{"2026-07-28", "tools/call", "list_sites", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"list_sites","arguments":{}}}`},
		{"2026-07-28", "tools/call", "=?base64?Z2V0X3RyZW5k?=", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"get_trend","arguments":{"limit":0}}}`},
		{"2026-07-28", "tools/call", "=?base64?", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7},"name":"x"}}`},
		{"v999", "server/discover", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"", "", "", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":""}}}`},
		{"2025-11-25", "", "", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`},
		{"2025-06-18", "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_trend","arguments":{"siteId":1}}}`},
		{"1999-01-01", "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"2026-07-28", "notifications/x", "", `{"jsonrpc":"2.0","method":"notifications/x","params":{` + meta + `}}`},
	} {
		f.Add(s.version, s.method, s.name, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, version, method, name string, body []byte) {
		h := http.Header{}
		for k, v := range map[string]string{"MCP-Protocol-Version": version, "Mcp-Method": method, "Mcp-Name": name} {
			if v != "" {
				h.Set(k, v)
			}
		}
		status, out := fx.srv.ServeRequest(allScopes, Request{UserID: fx.userID, Header: h, Body: body})
		checkAnswer(t, body, status, out)
	})
}

// checkAnswer holds the fuzz invariants: 200, 202, 400 or 404; 202 without a body; otherwise
// JSON-RPC 2.0 responses with a valid id and exactly one of result and error; 404 only for an
// unknown method; no internal error.
func checkAnswer(t *testing.T, body []byte, status int, out []byte) {
	t.Helper()
	switch status {
	case 202:
		if out != nil {
			t.Fatalf("202 with a body: %s", out)
		}
		return
	case 200, 400, 404:
	default:
		t.Fatalf("status %d for %q", status, body)
	}
	var responses []map[string]json.RawMessage
	if bytes.HasPrefix(out, []byte("[")) {
		if status != 200 || !bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
			t.Fatalf("an array answer (%d) to a non-batch %q", status, body)
		}
		if err := json.Unmarshal(out, &responses); err != nil || len(responses) == 0 {
			t.Fatalf("batch answer %s: %v", out, err)
		}
	} else {
		var r map[string]json.RawMessage
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("answer is not a JSON object: %s", out)
		}
		responses = append(responses, r)
	}
	for _, r := range responses {
		if string(r["jsonrpc"]) != `"2.0"` {
			t.Fatalf("jsonrpc %s in %s", r["jsonrpc"], out)
		}
		switch id := r["id"]; {
		case len(id) == 0:
			t.Fatalf("no id in %s", out)
		case string(id) == "null", id[0] == '"':
		default:
			var n json.Number
			if err := json.Unmarshal(id, &n); err != nil {
				t.Fatalf("id %s is neither string, number nor null", id)
			}
		}
		_, hasResult := r["result"]
		e, hasError := r["error"]
		if hasResult == hasError {
			t.Fatalf("want exactly one of result and error: %s", out)
		}
		if !hasError {
			if status != 200 {
				t.Fatalf("a result with status %d: %s", status, out)
			}
			continue
		}
		var rpcErr struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(e, &rpcErr); err != nil || rpcErr.Message == "" {
			t.Fatalf("error object %s", e)
		}
		switch rpcErr.Code {
		case CodeParseError, CodeInvalidRequest:
			if status != 400 && len(responses) == 1 && !bytes.HasPrefix(out, []byte("[")) {
				t.Fatalf("status %d for error %d", status, rpcErr.Code)
			}
		case CodeHeaderMismatch, CodeUnsupportedProtocolVersion:
			if status != 400 {
				t.Fatalf("status %d for error %d", status, rpcErr.Code)
			}
		case CodeMethodNotFound:
			if status == 400 {
				t.Fatalf("400 for error %d", rpcErr.Code)
			}
		case CodeInvalidParams:
			if status == 404 {
				t.Fatalf("404 for error %d", rpcErr.Code)
			}
		default:
			t.Fatalf("error code %d for %q: %s", rpcErr.Code, body, out)
		}
		if status == 404 && rpcErr.Code != CodeMethodNotFound {
			t.Fatalf("404 for error %d", rpcErr.Code)
		}
	}
}
