package handlers

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"sitepulse/store"
)

// TestUISchedule: the edit form sets a site's schedule, which starts a period from now and
// shows on the site page with its next run; a schedule that is not offered is refused.
func TestUISchedule(t *testing.T) { eachBackend(t, 0, testUISchedule) }

func testUISchedule(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	edit := func(schedule string) (*http.Response, string) {
		return f.a.postCSRF("/sites/"+f.site, url.Values{"name": {"Demo Site"}, "domain": {"demo.sitepulse.test"},
			"platformSiteId": {"demo-site"}, "schedule": {schedule}})
	}
	resp, body := f.a.get("/sites/" + f.site)
	contains(t, body, "Scanned on publish and on demand")

	resp, _ = edit("daily")
	wantStatus(t, resp, http.StatusSeeOther)
	site, err := f.ts.store.Site(ctx, f.a.userID, f.site)
	if err != nil {
		t.Fatal(err)
	}
	if site.Schedule != store.ScheduleDaily || site.NextScanAt == nil || !site.NextScanAt.Equal(f.ts.now.Add(24*time.Hour)) {
		t.Fatalf("site schedule %q next %v, want daily a day from now", site.Schedule, site.NextScanAt)
	}
	_, body = f.a.get("/sites/" + f.site)
	contains(t, body, `Scanned daily and on publish · next scheduled scan <time datetime="2026-11-02T12:00:00Z">2 Nov 2026, 12:00 UTC</time>`)
	_, body = f.a.get("/sites/" + f.site + "/edit")
	contains(t, body, `<option value="daily" selected>`)

	// Saving again with the same schedule keeps the next run where it was.
	f.ts.now = f.ts.now.Add(time.Hour)
	resp, _ = edit("daily")
	wantStatus(t, resp, http.StatusSeeOther)
	if again, _ := f.ts.store.Site(ctx, f.a.userID, f.site); !again.NextScanAt.Equal(*site.NextScanAt) {
		t.Errorf("next scan moved to %v on an unchanged schedule", again.NextScanAt)
	}

	resp, body = edit("hourly")
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	contains(t, body, "Choose off, daily or weekly.")

	resp, _ = edit("off")
	wantStatus(t, resp, http.StatusSeeOther)
	if off, _ := f.ts.store.Site(ctx, f.a.userID, f.site); off.Schedule != store.ScheduleOff || off.NextScanAt != nil {
		t.Errorf("schedule off: %q next %v", off.Schedule, off.NextScanAt)
	}
}
