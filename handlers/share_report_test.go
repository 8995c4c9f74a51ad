package handlers

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"sitepulse/scanner/platform"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestShareReport: "Share a report" on the scan page makes the scan's client report with the MCP
// tool's rules, answers 303 to the Reports list, which shows the link once as a notice and,
// since it is kept sealed, again in the list with a copy button; a reload makes nothing.
func TestShareReport(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newUIFixtureWith(t, 0, b.Open(t), func(d *Deps) { d.ChannelKeys = platform.RandomKeys() })
			scanPage := "/sites/" + f.site + "/scans/" + f.scan
			_, body := f.a.get(scanPage)
			contains(t, body, "Share a report")
			contains(t, body, `action="`+scanPage+`/reports"`)

			resp, _ := f.a.postCSRF(scanPage+"/reports", url.Values{"title": {"For ACME"}, "expires": {"7"}})
			wantStatus(t, resp, http.StatusSeeOther)
			loc := resp.Header.Get("Location")
			if !strings.HasPrefix(loc, "/reports?notice=") || strings.Contains(loc, "/report/") {
				t.Fatalf("Location %q, want the Reports list naming a notice, never the link", loc)
			}
			_, body = f.a.get(loc)
			contains(t, body, "Report “For ACME” is ready")
			link := regexp.MustCompile(`id="notice-secret" class="mono" type="text" readonly value="http://sitepulse.test(/report/[^"]+)"`).FindStringSubmatch(body)
			if link == nil {
				t.Fatalf("no report link in the notice:\n%s", body)
			}
			contains(t, body, `data-copy="notice-secret"`)
			if resp, _ := f.ts.browser(t).get(link[1]); resp.StatusCode != http.StatusOK {
				t.Errorf("the report's link answers %d, want 200", resp.StatusCode)
			}
			// Shown once: the same address again has no notice, but the list has the link.
			_, body = f.a.get(loc)
			if strings.Contains(body, "is ready") {
				t.Error("the notice is shown a second time")
			}
			contains(t, body, `readonly value="http://sitepulse.test`+link[1]+`"`)
			reps, _ := f.ts.store.ReportsOf(context.Background(), f.a.userID)
			if len(reps) != 1 || reps[0].Title != "For ACME" || reps[0].ExpiresAt == nil || !reps[0].ExpiresAt.Equal(f.ts.now.AddDate(0, 0, 7)) {
				t.Errorf("reports %+v, want one, For ACME, expiring in 7 days", reps)
			}
			if strings.Contains(reps[0].TokenSealed, strings.TrimPrefix(link[1], "/report/")) {
				t.Error("the token is stored in the clear")
			}

			// A report kept hashed only (made before links were sealed) says so.
			old := store.Report{ID: store.NewID(), TokenHash: store.HashSecret("old"), ScanID: f.scan, UserID: f.a.userID, Title: "Old one", CreatedAt: f.ts.now}
			must(t, f.ts.store.CreateReport(context.Background(), old))
			_, body = f.a.get("/reports")
			contains(t, body, "Can't be shown again")

			// Bad input and strangers: no report.
			resp, _ = f.a.postCSRF(scanPage+"/reports", url.Values{"expires": {"9999"}})
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			resp, _ = f.a.postCSRF(scanPage+"/reports", url.Values{"title": {"Q4\u202e"}, "expires": {"30"}})
			wantStatus(t, resp, http.StatusSeeOther)
			if loc := resp.Header.Get("Location"); loc != scanPage+"?done=report-title#share" {
				t.Errorf("an invisible character: Location %q", loc)
			}
			resp, _ = f.b.postCSRF(scanPage+"/reports", url.Values{"expires": {"30"}})
			wantStatus(t, resp, http.StatusNotFound)
			if reps, _ := f.ts.store.ReportsOf(context.Background(), f.a.userID); len(reps) != 2 {
				t.Errorf("%d reports, want 2", len(reps))
			}
		})
	}
}
