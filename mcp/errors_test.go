package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// TestOwnership: a second user gets "not found or not owned" on every tool for the first user's
// ids, and list_sites shows only its own sites (interface rule 1, "Every tool reads only the
// authenticated user's own data").
func TestOwnership(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			site, scan := f.demo.SiteID, f.latestID
			cases := []struct {
				tool string
				args map[string]any
				want toolError
			}{
				{"get_latest_scan", map[string]any{"siteId": site}, errSiteNotFound},
				{"get_page_details", map[string]any{"scanId": scan}, errScanNotFound},
				{"get_page_details", map[string]any{"scanId": scan, "pagePath": "/", "strategy": "desktop"}, errScanNotFound},
				{"get_lcp_elements", map[string]any{"scanId": scan}, errScanNotFound},
				{"get_third_party_scripts", map[string]any{"siteId": site}, errSiteNotFound},
				{"get_accessibility_issues", map[string]any{"siteId": site, "severity": "critical"}, errSiteNotFound},
				{"get_regression_report", map[string]any{"siteId": site}, errSiteNotFound},
				{"get_trend", map[string]any{"siteId": site, "limit": 5}, errSiteNotFound},
				{"generate_client_report", map[string]any{"scanId": scan}, errScanNotFound},
			}
			for _, c := range cases {
				t.Run(c.tool, func(t *testing.T) {
					r := f.tool(t, f.otherUser, c.tool, c.args)
					if r["isError"] != true || textOf(t, r) != string(c.want) {
						t.Errorf("result = %v, want isError %q", r, c.want)
					}
				})
			}
			p := payload(t, f.tool(t, f.otherUser, "list_sites", nil))
			sites, _ := p["sites"].([]any)
			if p["count"] != 1.0 || len(sites) != 1 || sites[0].(map[string]any)["id"] != f.otherSite {
				t.Errorf("second user's list_sites = %v", p)
			}
			reports, _ := f.st.ReportsOf(t.Context(), f.otherUser)
			if len(reports) != 0 {
				t.Errorf("a report was created for another user's scan: %v", reports)
			}
		})
	}
}

// TestToolErrors covers every tool failure that travels as an isError result.
func TestToolErrors(t *testing.T) {
	f := newFixture(t, memory.New())
	unknown := store.NewID()
	cases := []struct {
		name, tool string
		userID     string
		args       map[string]any
		want       string
	}{
		{"unknown site", "get_latest_scan", "", map[string]any{"siteId": unknown}, string(errSiteNotFound)},
		{"unknown scan", "get_lcp_elements", "", map[string]any{"scanId": unknown}, string(errScanNotFound)},
		{"site id given as scan id", "get_page_details", "", map[string]any{"scanId": "<site>"}, string(errScanNotFound)},
		{"page not in the scan", "get_page_details", "", map[string]any{"scanId": "<scan>", "pagePath": "/nope"}, `No mobile result for page "/nope" in this scan.`},
		{"no completed scan: latest", "get_latest_scan", "other", map[string]any{"siteId": "<otherSite>"}, string(errNoScanYet)},
		{"no completed scan: third parties", "get_third_party_scripts", "other", map[string]any{"siteId": "<otherSite>"}, string(errNoScanYet)},
		{"no completed scan: accessibility", "get_accessibility_issues", "other", map[string]any{"siteId": "<otherSite>"}, string(errNoScanYet)},
		{"no completed scan: regressions", "get_regression_report", "other", map[string]any{"siteId": "<otherSite>"}, string(errNoScanYet)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.args {
				switch v {
				case "<site>":
					c.args[k] = f.demo.SiteID
				case "<scan>":
					c.args[k] = f.latestID
				case "<otherSite>":
					c.args[k] = f.otherSite
				}
			}
			user := f.userID
			if c.userID == "other" {
				user = f.otherUser
			}
			r := f.tool(t, user, c.tool, c.args)
			if r["isError"] != true || !strings.HasPrefix(textOf(t, r), c.want) {
				t.Errorf("result = %v, want isError %q", r, c.want)
			}
		})
	}
	t.Run("trend of a site without scans is empty", func(t *testing.T) {
		p := payload(t, f.tool(t, f.otherUser, "get_trend", map[string]any{"siteId": f.otherSite}))
		if p["count"] != 0.0 || len(p["scans"].([]any)) != 0 {
			t.Errorf("payload = %v", p)
		}
	})
}

// TestInvalidArguments: every schema rule is enforced before the tool runs, as -32602.
func TestInvalidArguments(t *testing.T) {
	f := newFixture(t, memory.New())
	site, scan := f.demo.SiteID, f.latestID
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"get_latest_scan", map[string]any{}, "siteId is required"},
		{"get_latest_scan", map[string]any{"siteId": 12345}, "siteId must be a string"},
		{"get_latest_scan", map[string]any{"siteId": nil}, "siteId must be a string, got null"},
		{"get_latest_scan", map[string]any{"siteId": "not-a-uuid"}, `siteId must be a uuid such as`},
		{"get_trend", map[string]any{"siteId": "mcp-check-no-such-site"}, `siteId must be a uuid`},
		{"get_regression_report", map[string]any{"siteId": site[:35] + "g"}, `siteId must be a uuid`},
		{"get_page_details", map[string]any{"scanId": "scan_x"}, `scanId must be a uuid`},
		{"generate_client_report", map[string]any{"scanId": ""}, `scanId must be a uuid`},
		{"get_latest_scan", map[string]any{"siteId": site, "extra": 1}, `unknown argument "extra"`},
		{"list_sites", map[string]any{"siteId": site}, `unknown argument "siteId" (expected cursor, query)`},
		{"list_sites", map[string]any{"cursor": "page-2"}, `cursor`},
		{"list_sites", map[string]any{"query": strings.Repeat("x", 101)}, `query must be at most 100 characters`},
		{"get_page_details", map[string]any{"pagePath": "/"}, "scanId is required"},
		{"get_page_details", map[string]any{"scanId": scan, "strategy": "tablet"}, "strategy must be one of mobile, desktop"},
		{"get_page_details", map[string]any{"scanId": scan, "pagePath": ""}, "pagePath must be at least 1 characters"},
		{"get_lcp_elements", map[string]any{"scanId": scan, "strategy": "MOBILE"}, "strategy must be one of"},
		{"get_accessibility_issues", map[string]any{"siteId": site, "severity": "high"}, "severity must be one of critical, serious, moderate, minor, all"},
		{"get_trend", map[string]any{"siteId": site, "limit": 0}, "limit must be at least 1"},
		{"get_trend", map[string]any{"siteId": site, "limit": 51}, "limit must be at most 50"},
		{"get_trend", map[string]any{"siteId": site, "limit": 2.5}, "limit must be an integer"},
		{"get_trend", map[string]any{"siteId": site, "limit": "5"}, "limit must be an integer, got a string"},
		{"generate_client_report", map[string]any{"scanId": scan, "title": strings.Repeat("x", 201)}, "title must be at most 200 characters"},
		{"generate_client_report", map[string]any{"scanId": scan, "title": ""}, "title must be at least 1 characters"},
		{"generate_client_report", map[string]any{"scanId": scan, "expiresInDays": 366}, "expiresInDays must be at most 365"},
		{"generate_client_report", map[string]any{"scanId": scan, "expiresInDays": -1}, "expiresInDays must be at least 0"},
		{"generate_client_report", map[string]any{"scanId": scan, "expiresInDays": true}, "expiresInDays must be an integer, got a boolean"},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.want, func(t *testing.T) {
			params, _ := json.Marshal(map[string]any{"name": c.tool, "arguments": c.args})
			status, m := f.rpc(t, f.userID, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+string(params)+`}`)
			e, _ := m["error"].(map[string]any)
			if status != 200 || e == nil || e["code"] != -32602.0 || !strings.HasPrefix(e["message"].(string), "Invalid arguments: "+c.want) {
				t.Errorf("status %d, response %v, want -32602 %q", status, m, c.want)
			}
		})
	}
	reports, _ := f.st.ReportsOf(t.Context(), f.userID)
	if len(reports) != 0 {
		t.Errorf("invalid calls created reports: %v", reports)
	}
}

// Each tool names the scope it needs in the tool table; a credential without it gets a 403
// that the handlers package turns into an insufficient_scope challenge, so clients can step up
// (MCP 2025-11-25 authorization, "Scope challenge handling").
func TestToolScopes(t *testing.T) {
	f := newFixture(t, memory.New())
	readOnly := store.WithScope(context.Background(), store.ScopeRead)
	call := func(ctx context.Context, name, args string) (int, string) {
		status, out := f.srv.Serve(ctx, f.userID, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":`+args+`}}`))
		return status, string(out)
	}
	for _, tl := range tools {
		t.Run(tl.Name+" needs "+tl.Scope+", and is read-only exactly when that is mcp:read", func(t *testing.T) {
			if tl.Scope != store.ScopeRead && tl.Scope != store.ScopeWrite {
				t.Fatalf("scope %q", tl.Scope)
			}
			if tl.ReadOnly != (tl.Scope == store.ScopeRead) {
				t.Errorf("ReadOnly %v with scope %s", tl.ReadOnly, tl.Scope)
			}
		})
	}
	report := `{"scanId":"` + f.latestID + `"}`
	t.Run("a read-only credential calling generate_client_report gets 403 and no report", func(t *testing.T) {
		status, out := call(readOnly, "generate_client_report", report)
		if status != 403 || !strings.Contains(out, `"code":-32003`) || !strings.Contains(out, "mcp:write") {
			t.Errorf("status %d %s, want 403 naming mcp:write", status, out)
		}
	})
	t.Run("a context without any scope may not publish either", func(t *testing.T) {
		if status, out := call(context.Background(), "generate_client_report", report); status != 403 {
			t.Errorf("status %d %s, want 403", status, out)
		}
	})
	t.Run("a read-only credential still reads", func(t *testing.T) {
		if status, out := call(readOnly, "list_sites", `{}`); status != 200 || strings.Contains(out, `"error"`) {
			t.Errorf("status %d %s", status, out)
		}
	})
	t.Run("a batch holding a call it may not make is 403 as a whole", func(t *testing.T) {
		body := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"generate_client_report","arguments":` + report + `}}]`
		if status, out := f.srv.Serve(readOnly, f.userID, []byte(body)); status != 403 {
			t.Errorf("status %d %s, want 403", status, out)
		}
	})
	t.Run("every protocol version answers the read-only credential 403 with -32003", func(t *testing.T) {
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},`
		for _, c := range []struct{ version, method, name, body string }{
			{"2025-06-18", "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate_client_report","arguments":` + report + `}}`},
			{"2025-11-25", "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate_client_report","arguments":` + report + `}}`},
			{"2026-07-28", "tools/call", "generate_client_report", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `"name":"generate_client_report","arguments":` + report + `}}`},
		} {
			h := http.Header{"Mcp-Protocol-Version": {c.version}}
			if c.method != "" {
				h.Set("Mcp-Method", c.method)
				h.Set("Mcp-Name", c.name)
			}
			status, out := f.srv.ServeRequest(readOnly, Request{UserID: f.userID, Header: h, Body: []byte(c.body)})
			if status != 403 || !strings.Contains(string(out), `"code":-32003`) {
				t.Errorf("%s: status %d %s, want 403 with -32003", c.version, status, out)
			}
		}
	})
	t.Run("a credential with mcp:write publishes", func(t *testing.T) {
		if status, out := call(allScopes, "generate_client_report", report); status != 200 || !strings.Contains(out, "/report/") {
			t.Errorf("status %d %s", status, out)
		}
	})
}

// Report titles are shown to whoever opens the link: the domain's display-text rule applies,
// as an invalid argument.
func TestReportTitleRefusesInvisibleCharacters(t *testing.T) {
	f := newFixture(t, memory.New())
	for name, title := range map[string]string{
		"a right-to-left override": "Invoice\u202Egnp.exe",
		"a NUL byte":               "Report\x00",
		"a Hangul filler":          "Report\u3164",
		"a zero-width space":       "Re\u200Bport",
	} {
		t.Run(name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]any{"scanId": f.latestID, "title": title})
			status, m := f.rpc(t, f.userID, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate_client_report","arguments":`+string(args)+`}}`)
			e, _ := m["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if status != 200 || e["code"] != float64(CodeInvalidParams) || !strings.HasPrefix(msg, "Invalid arguments: title must not contain") {
				t.Errorf("status %d, %v; want -32602 Invalid arguments: title must not contain ...", status, m)
			}
		})
	}
}
