package handlers

import (
	"context"
	"strings"
	"testing"

	"sitepulse/store/storetest"
)

// TestStatementsPerRequest counts the SQL statements each read sends to Postgres (queries,
// execs, BEGIN and COMMIT; a statement's preparation is not counted), the first time and
// again, and fails when a count grows past the one recorded here: issue 25's budget of
// statements per request. Lower a number when a change makes it smaller.
func TestStatementsPerRequest(t *testing.T) {
	st, counted := storetest.CountingPostgres(t)
	f := newAPIFixture(t, st)
	a := f.a
	scans, err := st.CompletedScans(context.Background(), a.userID, a.siteID, 2)
	if err != nil || len(scans) != 2 {
		t.Fatalf("the demo's scans: %v %v", scans, err)
	}
	previous := scans[1].ID
	mcp := func(tool, arg, id string) string {
		args := "{}"
		if arg != "" {
			args = `{"` + arg + `":"` + id + `"}`
		}
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	cases := []struct {
		name                 string
		method, path         string
		body                 string
		c                    cred
		wantFirst, wantAgain int
	}{
		// The export and every MCP tool read in one statement with the membership inside
		// (store.Reads), after the session or the access token: 2 (issue 25). The site page is
		// the session, the site with the member's role (SiteAndWorkspace) and SiteView's two,
		// its trend read from per-scan summaries: 4. Cold, one more: whether any workspace has
		// a single sign-on provider of its own (ssoOn), which a process asks once a ruleTTL.
		{"site page", "GET", "/sites/" + a.siteID, "", cookie(a.session), 5, 4},
		// The sites list (a triage board, issue 37): the session, the workspaces and one read of
		// a page of sites with their latest scans and triage (SiteListingsPage).
		{"sites list", "GET", "/", "", cookie(a.session), 3, 3},
		// The export also writes its line of the security log (issue 47): one INSERT, the site's
		// workspace read with the export itself.
		{"export", "GET", "/api/sites/" + a.siteID + "/export", "", cookie(a.session), 3, 3},
		{"export JSON", "GET", "/api/sites/" + a.siteID + "/export?format=json", "", cookie(a.session), 3, 3},
		{"budget check", "POST", "/api/external/budget-check", `{"siteId":"` + a.siteID + `"}`, bearer(a.apiKey), 3, 1}, // 3 cold (key, its use, the inputs' load): the site page before it no longer loads the inputs
		// A CI pipeline's check of a given scan (issue 35): the key, the scan, its publish, the
		// budgets, the rules, its metrics, and the previous scan's runs and its own with what
		// explains them (PreviousPairs), which give each regression its cause: as many as
		// before the causes (CompletedScans and PageMetricsOf were two as well).
		{"budget check of a scan (CI)", "POST", "/api/external/budget-check", `{"siteId":"` + a.siteID + `","scanId":"` + a.scanID + `"}`, bearer(a.apiKey), 12, 11},
		{"MCP list_sites", "POST", "/api/mcp", mcp("list_sites", "", ""), bearer(a.accessToken), 2, 2},
		{"MCP get_latest_scan", "POST", "/api/mcp", mcp("get_latest_scan", "siteId", a.siteID), bearer(a.accessToken), 2, 2},
		{"MCP get_page_details", "POST", "/api/mcp", mcp("get_page_details", "scanId", a.scanID), bearer(a.accessToken), 2, 2},
		{"MCP get_lcp_elements", "POST", "/api/mcp", mcp("get_lcp_elements", "scanId", a.scanID), bearer(a.accessToken), 2, 2},
		{"MCP get_third_party_scripts", "POST", "/api/mcp", mcp("get_third_party_scripts", "siteId", a.siteID), bearer(a.accessToken), 2, 2},
		{"MCP get_accessibility_issues", "POST", "/api/mcp", mcp("get_accessibility_issues", "siteId", a.siteID), bearer(a.accessToken), 2, 2},
		{"MCP get_regression_report", "POST", "/api/mcp", mcp("get_regression_report", "siteId", a.siteID), bearer(a.accessToken), 2, 2},
		{"MCP get_trend", "POST", "/api/mcp", mcp("get_trend", "siteId", a.siteID), bearer(a.accessToken), 2, 2},
		{"MCP get_scan", "POST", "/api/mcp", mcp("get_scan", "scanId", a.scanID), cred{bearer: a.accessToken, mcpVersion: "2025-06-18"}, 2, 2},
		{"MCP generate_client_report", "POST", "/api/mcp", mcp("generate_client_report", "scanId", a.scanID), bearer(a.accessToken), 2, 2},
		// From 2025-06-18 the regressions carry their confirmations and causes: the results'
		// runs and both scans' explain data in one statement (store.ComparePairs), read once per
		// pair of scans and kept (a completed scan never changes): 3 cold, 2 again.
		{"MCP get_regression_report 2025-06-18", "POST", "/api/mcp", mcp("get_regression_report", "siteId", a.siteID), cred{bearer: a.accessToken, mcpVersion: "2025-06-18"}, 3, 2},
		// compare_scans: the token, both scans and their runs in one statement (ComparePairs),
		// and the pictures of the filmstrips it carries in one more (RunImages).
		{"MCP compare_scans", "POST", "/api/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"compare_scans","arguments":{"fromScanId":"` + previous + `","toScanId":"` + a.scanID + `"}}}`, cred{bearer: a.accessToken, mcpVersion: "2025-06-18"}, 3, 3},
		// With an API key as with a token (issue 36), and fewer: the key (with its use, recorded
		// once a minute; the process then answers the key from its last lookup for half a
		// second, postgres.KeyCacheFor, and this fixture's clock stands still), then the tool's
		// read. The first call of a site (or scan) also reads its workspace, which the key must
		// be of: a site never moves, so the process remembers it (mcp.homes).
		{"MCP list_sites with an API key", "POST", "/api/mcp", mcp("list_sites", "", ""), bearer(a.apiKey), 3, 1},
		{"MCP get_latest_scan with an API key", "POST", "/api/mcp", mcp("get_latest_scan", "siteId", a.siteID), bearer(a.apiKey), 4, 1},
		{"MCP get_page_details with an API key", "POST", "/api/mcp", mcp("get_page_details", "scanId", a.scanID), bearer(a.apiKey), 5, 1},
		{"MCP get_lcp_elements with an API key", "POST", "/api/mcp", mcp("get_lcp_elements", "scanId", a.scanID), bearer(a.apiKey), 5, 1},
		{"MCP get_third_party_scripts with an API key", "POST", "/api/mcp", mcp("get_third_party_scripts", "siteId", a.siteID), bearer(a.apiKey), 4, 1},
		{"MCP get_accessibility_issues with an API key", "POST", "/api/mcp", mcp("get_accessibility_issues", "siteId", a.siteID), bearer(a.apiKey), 4, 1},
		{"MCP get_regression_report with an API key", "POST", "/api/mcp", mcp("get_regression_report", "siteId", a.siteID), bearer(a.apiKey), 4, 1},
		{"MCP get_trend with an API key", "POST", "/api/mcp", mcp("get_trend", "siteId", a.siteID), bearer(a.apiKey), 4, 1},
		{"MCP get_scan with an API key", "POST", "/api/mcp", mcp("get_scan", "scanId", a.scanID), cred{bearer: a.apiKey, mcpVersion: "2025-06-18"}, 5, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, want := range []int{c.wantFirst, c.wantAgain} {
				contentType := ""
				if c.body != "" {
					contentType = "application/json"
				}
				counted.Reset()
				resp, body := f.do(t, c.method, c.path, contentType, c.body, c.c)
				if resp.StatusCode != 200 || strings.Contains(body, `"isError":true`) || (c.path == "/api/mcp" && !strings.Contains(body, `"result"`)) {
					t.Fatalf("status %d: %.300s", resp.StatusCode, body)
				}
				sent := counted.Sent()
				if len(sent) > want {
					t.Errorf("request %d sent %d statements, want at most %d:\n%s", i+1, len(sent), want, strings.Join(sent, "\n"))
				} else {
					t.Logf("request %d: %d statements:\n%s", i+1, len(sent), strings.Join(sent, "\n"))
				}
			}
		})
	}
}
