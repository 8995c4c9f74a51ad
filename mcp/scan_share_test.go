package mcp

import (
	"context"
	"strings"
	"testing"

	"sitepulse/scanner/psi"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestStartScanPastItsShareOfTheDay: with the real quota on both stores, start_scan refused
// because the key's day is past the mark and the account has taken its share (issue 44) says
// which limit and when it lifts, and starts nothing.
func TestStartScanPastItsShareOfTheDay(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			ctx := context.Background()
			site, err := f.st.Site(ctx, f.userID, f.demo.SiteID)
			if err != nil {
				t.Fatal(err)
			}
			// A day of 10 audits shared past 5, 4 kept for newcomers: what is left to share is 1.
			q := psi.NewAccountQuota(store.AuditLimits{Workspace: 100, Account: 100, Day: 10, Mark: 5, Reserve: 4, Newcomer: 1}, f.st, nil)
			if err := q.Take(site.WorkspaceID, f.now, false); err != nil { // the demo account audited today
				t.Fatal(err)
			}
			for range 4 { // another account spends the day to the mark
				if err := q.Take(f.otherUser, f.now, false); err != nil {
					t.Fatal(err)
				}
			}
			f.srv.quota = q
			r := f.call2025(t, allScopes, "start_scan", map[string]any{"siteId": f.demo.SiteID})
			text := textOf(t, r)
			if r["isError"] != true || !strings.Contains(text, psi.ShareMark) || !strings.Contains(text, "until 23 Nov 2026, 00:00 UTC") || !strings.Contains(text, "Retry after") {
				t.Fatalf("start_scan past its share of the day = %v, want the limit (%s) and when it lifts", r, psi.ShareMark)
			}
			if scans, _ := f.st.ScansOf(ctx, f.userID, f.demo.SiteID, 10); len(scans) != 2 {
				t.Fatalf("%d scans: a refused start_scan enqueued one", len(scans))
			}
			t.Logf("%s: %s", b.Name, text)
		})
	}
}
