package mcp

import (
	"context"
	"strings"
	"testing"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestToolGolden pins every tool's payload on the demo data (two real scans of the demo site),
// on both stores: the memory store must give Postgres's answers.
func TestToolGolden(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			site, latest := f.demo.SiteID, f.latestID
			ids := map[string]string{site: "<siteId>", latest: "<latestScanId>", f.previousID: "<previousScanId>", f.userID: "<workspaceId>"}
			cases := []struct {
				golden, tool string
				args         map[string]any
			}{
				{"list_sites", "list_sites", map[string]any{}},
				{"get_latest_scan", "get_latest_scan", map[string]any{"siteId": site}},
				{"get_page_details_worst_mobile", "get_page_details", map[string]any{"scanId": latest}},
				{"get_page_details_pricing_desktop", "get_page_details", map[string]any{"scanId": latest, "pagePath": "/pricing", "strategy": "desktop"}},
				{"get_lcp_elements", "get_lcp_elements", map[string]any{"scanId": latest}},
				{"get_lcp_elements_desktop", "get_lcp_elements", map[string]any{"scanId": latest, "strategy": "desktop"}},
				{"get_third_party_scripts", "get_third_party_scripts", map[string]any{"siteId": site}},
				{"get_accessibility_issues", "get_accessibility_issues", map[string]any{"siteId": site}},
				{"get_accessibility_issues_serious", "get_accessibility_issues", map[string]any{"siteId": site, "severity": "serious"}},
				{"get_regression_report", "get_regression_report", map[string]any{"siteId": site}},
				{"get_trend", "get_trend", map[string]any{"siteId": site}},
				{"get_trend_limit_1", "get_trend", map[string]any{"siteId": site, "limit": 1}},
			}
			for _, c := range cases {
				t.Run(c.golden, func(t *testing.T) {
					golden(t, c.golden, textOf(t, f.tool(t, f.userID, c.tool, c.args)), ids)
				})
			}
		})
	}
}

func TestGenerateClientReport(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			cases := []struct {
				name      string
				args      map[string]any
				title     string
				days      int
				neverEnds bool
			}{
				{"defaults", map[string]any{}, "Demo Site Performance Report", 30, false},
				{"title and 7 days", map[string]any{"title": "Q4 speed review for Acme", "expiresInDays": 7}, "Q4 speed review for Acme", 7, false},
				{"never expires", map[string]any{"expiresInDays": 0}, "Demo Site Performance Report", 0, true},
				{"365 days, 200 characters", map[string]any{"expiresInDays": 365, "title": strings.Repeat("é", 200)}, strings.Repeat("é", 200), 365, false},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					c.args["scanId"] = f.latestID
					result := f.tool(t, f.userID, "generate_client_report", c.args)
					p := payload(t, result)
					token, _ := p["token"].(string)
					if len(token) < 43 || p["url"] != testBase+"/report/"+token || p["expiresInDays"] != float64(c.days) || len(p) != 3 {
						t.Fatalf("payload = %v", p)
					}
					if c.name == "defaults" {
						golden(t, "generate_client_report", textOf(t, result), map[string]string{token: "<token>"})
					}
					r, err := f.st.ReportByHash(context.Background(), store.HashSecret(token))
					if err != nil {
						t.Fatalf("report not stored under the token's hash: %v", err)
					}
					if r.TokenHash == token || r.ScanID != f.latestID || r.UserID != f.userID || r.Title != c.title {
						t.Errorf("report = %+v", r)
					}
					if c.neverEnds != (r.ExpiresAt == nil) || r.ExpiresAt != nil && !r.ExpiresAt.Equal(f.now.AddDate(0, 0, c.days)) {
						t.Errorf("expires at %v, want %d days after %v", r.ExpiresAt, c.days, f.now)
					}
				})
			}
		})
	}
}

// TestToolDocs: the connect guide lists every tool once, each with a title and an example prompt.
func TestToolDocs(t *testing.T) {
	docs := ToolDocs()
	if len(docs) != len(tools) || len(docs) != 13 {
		t.Fatalf("%d docs for %d tools, want 13", len(docs), len(tools))
	}
	for i, d := range docs {
		if d.Name != tools[i].Name || d.Title == "" || d.Example == "" {
			t.Errorf("doc %d = %+v", i, d)
		}
	}
}
