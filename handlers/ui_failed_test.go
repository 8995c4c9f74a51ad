package handlers

import (
	"context"
	"html"
	"net/http"
	"testing"

	"sitepulse/store"
)

// TestUIFailedScan: a scan stopped by its deadline shows as failed, with its reason, on the site
// page and on its own page; the results of the latest completed scan stay on show.
func TestUIFailedScan(t *testing.T) { eachBackend(t, 0, testUIFailedScan) }

func testUIFailedScan(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	sc := store.Scan{ID: store.NewID(), SiteID: f.site, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.ts.now}
	if err := f.ts.store.EnqueueScan(ctx, sc, store.KindScan, f.ts.now); err != nil {
		t.Fatal(err)
	}
	reason := "PageSpeed Insights could not be reached: check the network or PAGESPEED_API_URL. The scan was stopped 30 minutes after it started."
	if err := f.ts.store.ExpireScan(ctx, sc.ID, reason, f.ts.now); err != nil {
		t.Fatal(err)
	}
	resp, body := f.a.get("/sites/" + f.site)
	wantStatus(t, resp, http.StatusOK)
	for _, w := range []string{"The last scan failed.", html.EscapeString(reason), "/sites/" + f.site + "/scans/" + sc.ID, "Latest scan"} {
		contains(t, body, w)
	}
	resp, body = f.a.get("/sites/" + f.site + "/scans/" + sc.ID)
	wantStatus(t, resp, http.StatusOK)
	for _, w := range []string{"This scan failed.", html.EscapeString(reason)} {
		contains(t, body, w)
	}
}

// TestUIFailedScanReadsAsSentences: the pipeline's reason starts in lower case ("no page could be
// audited ..."); after "This scan failed." it is a sentence of its own, capitalised and ended.
func TestUIFailedScanReadsAsSentences(t *testing.T) {
	eachBackend(t, 0, func(t *testing.T, f *uiFixture) {
		ctx := context.Background()
		sc := store.Scan{ID: store.NewID(), SiteID: f.site, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.ts.now}
		must(t, f.ts.store.EnqueueScan(ctx, sc, store.KindScan, f.ts.now))
		must(t, f.ts.store.ExpireScan(ctx, sc.ID, "no page could be audited (2 of 2 failed); / mobile: the audit timed out", f.ts.now))
		_, body := f.a.get("/sites/" + f.site + "/scans/" + sc.ID)
		contains(t, body, "<strong>This scan failed.</strong> No page could be audited (2 of 2 failed); / mobile: the audit timed out.</p>")
		_, body = f.a.get("/sites/" + f.site)
		contains(t, body, "<strong>The last scan failed.</strong> No page could be audited")
	})
}
