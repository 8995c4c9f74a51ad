package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"sitepulse/store/memory"
)

// TestProtocol covers the JSON-RPC and MCP rows of the interface (methods, Errors, Versioning).
func TestProtocol(t *testing.T) {
	f := newFixture(t, memory.New())
	cases := []struct {
		name       string
		body       string
		status     int
		wantCode   float64 // JSON-RPC error code, 0 for a result
		wantMsg    string  // prefix of the error message
		wantID     any
		wantResult string // a substring of the encoded result
	}{
		{"initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
			200, 0, "", 1.0, `"capabilities":{"tools":{}},"instructions"`},
		{"initialize answers 2025-11-25 to a version it does not speak", `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2099-01-01"}}`,
			200, 0, "", 2.0, `"protocolVersion":"2025-11-25"`},
		{"serverInfo", `{"jsonrpc":"2.0","id":"s","method":"initialize","params":{}}`,
			200, 0, "", "s", `"serverInfo":{"name":"sitepulse","title":"SitePulse performance data","version":"0.1.0"}`},
		{"ping is empty", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, 200, 0, "", 3.0, `{}`},
		{"tools/list without initialize", `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`, 200, 0, "", "a", `"readOnlyHint":true`},
		{"string id kept", `{"jsonrpc":"2.0","id":"x-1","method":"ping"}`, 200, 0, "", "x-1", `{}`},
		{"zero id kept", `{"jsonrpc":"2.0","id":0,"method":"ping"}`, 200, 0, "", 0.0, `{}`},
		{"negative fractional id kept", `{"jsonrpc":"2.0","id":-1.5,"method":"ping"}`, 200, 0, "", -1.5, `{}`},
		{"notification is 202", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 202, 0, "", nil, ""},
		{"unknown notification is 202", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, 202, 0, "", nil, ""},
		{"a client response is 202", `{"jsonrpc":"2.0","id":5,"result":{}}`, 202, 0, "", nil, ""},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"resources/list"}`, 200, -32601, "Unknown method: resources/list", 4.0, ""},
		{"not JSON", `{"jsonrpc": "2.0", "id": 1, "method": `, 400, -32700, "Parse error", nil, ""},
		{"empty body", ``, 400, -32700, "Parse error", nil, ""},
		{"empty batch", `[]`, 400, -32600, "Invalid Request", nil, ""},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":6,"method":"ping"}`, 400, -32600, "Invalid Request", 6.0, ""},
		{"missing jsonrpc", `{"id":6,"method":"ping"}`, 400, -32600, "Invalid Request", 6.0, ""},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, 400, -32600, "Invalid Request", nil, ""},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, 400, -32600, "Invalid Request", nil, ""},
		{"method not a string", `{"jsonrpc":"2.0","id":7,"method":1}`, 400, -32600, "Invalid Request", nil, ""},
		{"no method", `{"jsonrpc":"2.0","id":7}`, 400, -32600, "Invalid Request", 7.0, ""},
		{"a scalar", `42`, 400, -32600, "Invalid Request", nil, ""},
		{"params an array", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":[1]}`, 200, -32602, "Invalid arguments: ", 8.0, ""},
		{"tools/call without name", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}`, 200, -32602, "Invalid arguments: ", 9.0, ""},
		{"unknown tool", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"drop_tables"}}`, 200, -32602, "Invalid arguments: unknown tool", 10.0, ""},
		{"arguments not an object", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"list_sites","arguments":[]}}`, 200, -32602, "Invalid arguments: arguments must be an object", 11.0, ""},
		{"null arguments", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"list_sites","arguments":null}}`, 200, 0, "", 12.0, `"type":"text"`},
		{"no arguments", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"list_sites"}}`, 200, 0, "", 13.0, `"type":"text"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, m := f.rpc(t, f.userID, c.body)
			if status != c.status {
				t.Fatalf("status %d, want %d (%v)", status, c.status, m)
			}
			if c.status == 202 {
				if m != nil {
					t.Fatalf("202 with a body: %v", m)
				}
				return
			}
			if m["jsonrpc"] != "2.0" || m["id"] != c.wantID {
				t.Errorf("jsonrpc %v id %#v, want id %#v", m["jsonrpc"], m["id"], c.wantID)
			}
			if c.wantCode != 0 {
				e, _ := m["error"].(map[string]any)
				if e == nil || e["code"] != c.wantCode || !strings.HasPrefix(e["message"].(string), c.wantMsg) || m["result"] != nil {
					t.Fatalf("error %v result %v, want code %v message %q...", e, m["result"], c.wantCode, c.wantMsg)
				}
				return
			}
			b, _ := json.Marshal(m["result"])
			if m["error"] != nil || !strings.Contains(string(b), c.wantResult) {
				t.Errorf("result %s error %v, want it to contain %s", b, m["error"], c.wantResult)
			}
		})
	}
}

func TestBatch(t *testing.T) {
	f := newFixture(t, memory.New())
	cases := []struct {
		name   string
		body   string
		status int
		ids    []any // response ids in order; nil for 202
		codes  []float64
	}{
		{"two requests", `[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"tools/list"}]`, 200, []any{"b1", "b2"}, []float64{0, 0}},
		{"notifications only", `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, 202, nil, nil},
		{"a request and a notification", `[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 200, []any{1.0}, []float64{0}},
		{"invalid members answered one by one", `[1,{"jsonrpc":"2.0","id":2,"method":"nope"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`, 200, []any{nil, 2.0, 3.0}, []float64{-32600, -32601, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, out := f.srv.Serve(allScopes, f.userID, []byte(c.body))
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, out)
			}
			if c.ids == nil {
				if out != nil {
					t.Fatalf("body %s", out)
				}
				return
			}
			var got []map[string]any
			if err := json.Unmarshal(out, &got); err != nil || len(got) != len(c.ids) {
				t.Fatalf("body %s", out)
			}
			for i, r := range got {
				code := 0.0
				if e, ok := r["error"].(map[string]any); ok {
					code = e["code"].(float64)
				}
				if r["id"] != c.ids[i] || code != c.codes[i] {
					t.Errorf("response %d = %v, want id %v code %v", i, r, c.ids[i], c.codes[i])
				}
			}
		})
	}
}

// TestToolsList checks the table against the interface: nine tools, a description, an object
// schema with the spec's required and optional arguments and bounds, readOnlyHint.
func TestToolsList(t *testing.T) {
	f := newFixture(t, memory.New())
	_, m := f.rpc(t, f.userID, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var list struct {
		Tools []struct {
			Name        string
			Description string
			InputSchema Schema
			Annotations struct{ ReadOnlyHint bool }
		}
	}
	b, _ := json.Marshal(m["result"])
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		required, optional []string
		readOnly           bool
	}{
		"list_sites":               {nil, []string{"cursor", "query"}, true},
		"get_latest_scan":          {[]string{"siteId"}, nil, true},
		"get_page_details":         {[]string{"scanId"}, []string{"pagePath", "strategy"}, true},
		"get_lcp_elements":         {[]string{"scanId"}, []string{"strategy"}, true},
		"get_third_party_scripts":  {[]string{"siteId"}, nil, true},
		"get_accessibility_issues": {[]string{"siteId"}, []string{"severity"}, true},
		"get_regression_report":    {[]string{"siteId"}, nil, true},
		"get_trend":                {[]string{"siteId"}, []string{"limit"}, true},
		"generate_client_report":   {[]string{"scanId"}, []string{"title", "expiresInDays"}, false},
	}
	if len(list.Tools) != len(want) {
		t.Fatalf("%d tools, want %d", len(list.Tools), len(want))
	}
	for _, tl := range list.Tools {
		w, ok := want[tl.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tl.Name)
			continue
		}
		s := tl.InputSchema
		if len(tl.Description) < 80 || s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s: description %q, schema %+v", tl.Name, tl.Description, s)
		}
		if strings.Join(s.Required, ",") != strings.Join(w.required, ",") || len(s.Properties) != len(w.required)+len(w.optional) {
			t.Errorf("%s: required %v, properties %v", tl.Name, s.Required, sortedKeys(s.Properties))
		}
		for _, id := range []string{"siteId", "scanId"} {
			if p := s.Properties[id]; p != nil && (p.Type != "string" || p.Format != "uuid") {
				t.Errorf("%s.%s = %+v", tl.Name, id, p)
			}
		}
		if tl.Annotations.ReadOnlyHint != w.readOnly {
			t.Errorf("%s: readOnlyHint %v", tl.Name, tl.Annotations.ReadOnlyHint)
		}
	}
	byName := map[string]Schema{}
	for _, tl := range list.Tools {
		byName[tl.Name] = tl.InputSchema
	}
	bounds := []struct {
		tool, arg     string
		min, max, def any
	}{
		{"get_trend", "limit", 1, 50, 20.0},
		{"generate_client_report", "expiresInDays", 0, 365, 30.0},
	}
	for _, bd := range bounds {
		p := byName[bd.tool].Properties[bd.arg]
		if p.Type != "integer" || *p.Minimum != bd.min || *p.Maximum != bd.max || p.Default != bd.def {
			t.Errorf("%s.%s = %+v", bd.tool, bd.arg, p)
		}
	}
	if p := byName["generate_client_report"].Properties["title"]; *p.MaxLength != 200 {
		t.Errorf("title = %+v", p)
	}
	if p := byName["get_accessibility_issues"].Properties["severity"]; strings.Join(p.Enum, ",") != "critical,serious,moderate,minor,all" || p.Default != "all" {
		t.Errorf("severity = %+v", p)
	}
	for _, name := range []string{"get_page_details", "get_lcp_elements"} {
		if p := byName[name].Properties["strategy"]; strings.Join(p.Enum, ",") != "mobile,desktop" || p.Default != "mobile" {
			t.Errorf("%s.strategy = %+v", name, p)
		}
	}
}
