package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sitepulse/store"
	"sitepulse/store/memory"
)

// goldenStep is one request of a recorded session: its name, its body, and whether the second
// user (who owns a site with no scan) sends it.
type goldenStep struct {
	name, body string
	asOther    bool
}

// session20250326 is what a 2025-03-26 client sends: the handshake, the tool list, every tool
// on the demo data and on edge data (another user's site, a site with no scan), the error
// paths and a batch. Its answers are pinned byte for byte in testdata/session-2025-03-26.golden,
// recorded before the server learnt later protocol versions: a 2025-03-26 client must never see
// a byte change.
func session20250326(f *fixture) []goldenStep {
	site, latest, previous := f.demo.SiteID, f.latestID, f.previousID
	call := func(id int, name, args string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args)
	}
	return []goldenStep{
		{"initialize", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"golden","version":"1"}}}`, false},
		{"initialized notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, false},
		{"ping", `{"jsonrpc":"2.0","id":"p","method":"ping"}`, false},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false},
		{"list_sites", call(2, "list_sites", `{}`), false},
		{"get_latest_scan", call(3, "get_latest_scan", `{"siteId":"`+site+`"}`), false},
		{"get_page_details worst", call(4, "get_page_details", `{"scanId":"`+latest+`"}`), false},
		{"get_page_details pricing desktop", call(5, "get_page_details", `{"scanId":"`+latest+`","pagePath":"/pricing","strategy":"desktop"}`), false},
		{"get_page_details unknown page", call(6, "get_page_details", `{"scanId":"`+latest+`","pagePath":"/nope"}`), false},
		{"get_lcp_elements", call(7, "get_lcp_elements", `{"scanId":"`+previous+`","strategy":"desktop"}`), false},
		{"get_third_party_scripts", call(8, "get_third_party_scripts", `{"siteId":"`+site+`"}`), false},
		{"get_accessibility_issues", call(9, "get_accessibility_issues", `{"siteId":"`+site+`","severity":"serious"}`), false},
		{"get_regression_report", call(10, "get_regression_report", `{"siteId":"`+site+`"}`), false},
		{"get_trend", call(11, "get_trend", `{"siteId":"`+site+`","limit":5}`), false},
		{"generate_client_report", call(12, "generate_client_report", `{"scanId":"`+latest+`","title":"Golden","expiresInDays":7}`), false},
		{"another user's site", call(13, "get_latest_scan", `{"siteId":"`+f.otherSite+`"}`), false},
		{"a site with no scan (as its owner)", call(14, "get_regression_report", `{"siteId":"`+f.otherSite+`"}`), true},
		{"unknown scan", call(15, "generate_client_report", `{"scanId":"`+store.NewID()+`"}`), false},
		{"missing argument", call(16, "get_trend", `{}`), false},
		{"limit out of range", call(17, "get_trend", `{"siteId":"`+site+`","limit":0}`), false},
		{"mistyped argument", call(18, "generate_client_report", `{"scanId":"`+latest+`","expiresInDays":"7"}`), false},
		{"unknown argument", call(19, "list_sites", `{"x":1}`), false},
		{"unknown tool", call(20, "drop_tables", `{}`), false},
		{"unknown method", `{"jsonrpc":"2.0","id":21,"method":"resources/list"}`, false},
		{"batch", `[{"jsonrpc":"2.0","id":22,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},` + call(23, "list_sites", `{}`) + `]`, false},
		{"batch of notifications", `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, false},
		{"not JSON", `{"jsonrpc":`, false},
		{"invalid request", `{"jsonrpc":"1.0","id":24,"method":"ping"}`, false},
	}
}

var reportToken = regexp.MustCompile(`/report/([A-Za-z0-9_-]{43})`)

// recordSession runs steps through send and renders every answer: status and the exact body,
// with the ids and the report token of this run replaced by names.
func recordSession(t *testing.T, f *fixture, steps []goldenStep, send func(userID, body string) (int, []byte)) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, s := range steps {
		user := f.userID
		if s.asOther {
			user = f.otherUser
		}
		status, body := send(user, s.body)
		fmt.Fprintf(&out, "### %s\n%d\n%s\n\n", s.name, status, body)
	}
	text := out.String()
	for _, m := range reportToken.FindAllStringSubmatch(text, -1) {
		text = strings.ReplaceAll(text, m[1], "<token>")
	}
	for id, label := range map[string]string{f.demo.SiteID: "<siteId>", f.latestID: "<latestScanId>", f.previousID: "<previousScanId>", f.otherSite: "<otherSiteId>", f.userID: "<workspaceId>"} {
		text = strings.ReplaceAll(text, id, label)
	}
	return []byte(text)
}

// checkGolden compares got with testdata/<name>; -update rewrites it.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./mcp -run %s -update to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %.600s\nwant: %.600s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: %d lines, want %d", path, len(gl), len(wl))
	}
}

// TestSession20250326Golden: a 2025-03-26 session is byte-identical to the one recorded before
// later protocol versions were added, whether its requests carry no MCP-Protocol-Version header
// (as 2025-03-26 defines), that version's header, or 2024-11-05's (always accepted).
func TestSession20250326Golden(t *testing.T) {
	for _, header := range []string{"", "2025-03-26", "2024-11-05"} {
		t.Run("header "+header, func(t *testing.T) {
			f := newFixture(t, memory.New())
			h := http.Header{}
			if header != "" {
				h.Set("MCP-Protocol-Version", header)
			}
			got := recordSession(t, f, session20250326(f), func(userID, body string) (int, []byte) {
				return f.srv.ServeRequest(allScopes, Request{UserID: userID, Header: h, Body: []byte(body)})
			})
			if header == "" {
				checkGolden(t, "session-2025-03-26.golden", got)
				return
			}
			want, err := os.ReadFile(filepath.Join("testdata", "session-2025-03-26.golden"))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("the session with header %s differs from the golden one (%v)", header, err)
			}
		})
	}
}

// TestSessionGoldenLaterVersions pins the same session as a 2025-06-18 and a 2025-11-25 client
// sees it: the envelopes those versions add (outputSchema, structuredContent, resource_link,
// icons, tool-error validation, refused batches), for review in one diff.
func TestSessionGoldenLaterVersions(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			f := newFixture(t, memory.New())
			steps := session20250326(f)
			steps[0].body = strings.Replace(steps[0].body, "2025-03-26", version, 1)
			h := http.Header{"Mcp-Protocol-Version": {version}}
			got := recordSession(t, f, steps, func(userID, body string) (int, []byte) {
				return f.srv.ServeRequest(allScopes, Request{UserID: userID, Header: h, Body: []byte(body)})
			})
			checkGolden(t, "session-"+version+".golden", got)
		})
	}
}

// TestSessionGoldenModern pins the same requests as a 2026-07-28 client sends them: each with
// its _meta and the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers (initialize and ping,
// which that version removed, are 404; batches are refused).
func TestSessionGoldenModern(t *testing.T) {
	f := newFixture(t, memory.New())
	got := recordSession(t, f, session20250326(f), func(userID, body string) (int, []byte) {
		h := http.Header{"Mcp-Protocol-Version": {ModernVersion}}
		var m map[string]any
		if json.Unmarshal([]byte(body), &m) == nil && m["method"] != nil {
			params, _ := m["params"].(map[string]any)
			if params == nil {
				params = map[string]any{}
			}
			params["_meta"] = map[string]any{metaProtocolVersion: ModernVersion, metaClientCapabilities: map[string]any{},
				"io.modelcontextprotocol/clientInfo": map[string]any{"name": "golden", "version": "1"}}
			m["params"] = params
			h.Set("Mcp-Method", m["method"].(string))
			if name, ok := params["name"].(string); ok {
				h.Set("Mcp-Name", name)
			}
			b, _ := json.Marshal(m)
			body = string(b)
		}
		return f.srv.ServeRequest(allScopes, Request{UserID: userID, Header: h, Body: []byte(body)})
	})
	checkGolden(t, "session-2026-07-28.golden", got)
}
