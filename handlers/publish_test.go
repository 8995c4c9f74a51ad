package handlers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/platform/platformtest"
	"sitepulse/store/storetest"
)

// TestPublishRecordsWhoPublishedWhat: both shapes of site_publish record who published (a name,
// or an id when there is none), when, to which domains, and the scan the publish started; a
// publish while a scan is in flight is recorded without one; odd fields are dropped, not fatal.
func TestPublishRecordsWhoPublishedWhat(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			w := newWebhookRig(t, b.Open(t), webhookSecret)
			ts := millis(w.now)
			body := w.webflowEvent()
			if status, got := w.postWebflow(body, ts, platformtest.Sign(webhookSecret, ts, []byte(body))); status != 200 {
				t.Fatalf("webflow publish: %d %s", status, got)
			}
			scans := w.scans()
			if len(scans) != 1 {
				t.Fatalf("%d scans, want 1", len(scans))
			}
			pubs, err := w.st.PublishesOfScans(ctx, w.user.ID, []string{scans[0].ID})
			if err != nil {
				t.Fatal(err)
			}
			p := pubs[scans[0].ID]
			if p.PublishedBy != "Ada" || !p.PublishedOn.Equal(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)) ||
				strings.Join(p.Domains, ",") != "sample.webflow.io,sample.test" || p.SiteID != w.site.ID {
				t.Errorf("webflow publish recorded as %+v", p)
			}

			// The interface's shape, while the first scan is in flight: kept, with no scan.
			for _, extra := range []string{
				`,"publishedBy":{"id":"usr_42"},"publishedOn":"2026-11-02T09:30:00Z","domains":["a.test"]`,
				`,"publishedBy":"Bea","publishedOn":17,"domains":"x"`,
				`,"publishedBy":{"displayName":"Eve\u202e"},"domains":[1,"b.test"]`,
			} {
				body := fmt.Sprintf(`{"siteId":%q,"_id":"evt-%x"%s}`, w.site.PlatformSiteID, len(extra), extra)
				if status, got := w.post(body, sign(webhookSecret, body)); status != 200 {
					t.Fatalf("publish %s: %d %s", extra, status, got)
				}
			}
			all, err := w.st.Publishes(ctx, w.user.ID, w.site.ID, time.Time{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range all {
				got = append(got, fmt.Sprintf("%s@%s %v scan=%t", p.PublishedBy, p.PublishedOn.Format(time.RFC3339), p.Domains, p.ScanID != ""))
			}
			now := w.now.UTC().Format(time.RFC3339)
			want := []string{
				"Ada@2026-11-01T12:00:00Z [sample.webflow.io sample.test] scan=true",
				"usr_42@2026-11-02T09:30:00Z [a.test] scan=false",
				"Bea@" + now + " [] scan=false",
				"@" + now + " [b.test] scan=false",
			}
			sort.Strings(got) // two publishes share a time; order aside, the rows must match
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("publishes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
